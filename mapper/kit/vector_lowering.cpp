// The vector stage's lowering (mapper/kit/vector_stage.hpp): each core's share of the units in row blocks,
// each block loaded (X cut into row blocks over the load engines, then Y's runs), mapped by one vec
// instruction and stored (cut into row blocks over the store engines), through one or two buffers of each.
#include <fmt/format.h>

#include <algorithm>

#include "arch/topology.hpp"
#include "mapper/kit/dma_engines.hpp"
#include "mapper/kit/program_builder.hpp"
#include "mapper/kit/program_header.hpp"
#include "mapper/kit/vector_plan.hpp"
#include "mapper/kit/vector_stage.hpp"

namespace tessera::mapper {

namespace {

// One pass appended to the cores of a program.
class PassLowering {
 public:
  PassLowering(arch::Program& program, const Mapping& mapping, const arch::ArchSpec& spec,
               const VectorTensors& tensors, const PassLinks& links)
      : program_(program),
        mapping_(mapping),
        stage_(vector_stage_of(mapping)),
        spec_(spec),
        tensors_(tensors),
        links_(links),
        semaphores_(program, links.prefix),
        buffers_(buffers_of(stage_, mapping.tile_m, mapping.double_buffer_inputs, spec)),
        engines_(pass_engines_of(stage_, mapping.tile_m, spec)),
        element_(size_bytes(stage_.dtype())),
        y_element_(size_bytes(stage_.y_dtype())),
        out_element_(size_bytes(stage_.out_dtype())) {}

  // Returns the stores appended.
  int run() {
    for (int core = 0; core < mapping_.split_m; ++core) {
      const int64_t first = core * mapping_.tile_n, last = std::min(stage_.units(), first + mapping_.tile_n);
      if (first >= last) continue;
      lower_core(core, first, last);
    }
    return stores_;
  }

 private:
  // A core's share of the units: its blocks (first unit, units) and its instructions, and which of its DMA
  // engines have issued their first load.
  struct Share {
    int core = 0;
    std::vector<std::pair<int64_t, int64_t>> blocks;
    std::vector<arch::Instruction>* list = nullptr;
    std::vector<char> started;
  };

  // Units [first, last) on `core`, appended to what the core already runs.
  void lower_core(int core, int64_t first, int64_t last) {
    Share share;
    share.core = core;
    // The core's blocks: at most tile_m units, never across an image (pool).
    for (int64_t unit = first; unit < last;) {
      const int64_t units = std::min({mapping_.tile_m, last - unit, stage_.units_left_in_image(unit)});
      share.blocks.emplace_back(unit, units);
      unit += units;
    }
    const arch::Coord coord = arch::core_coord(core, spec_.mesh);
    auto found = std::find_if(program_.cores.begin(), program_.cores.end(),
                              [&](const arch::CoreProgram& existing) { return existing.coord == coord; });
    if (found == program_.cores.end()) {
      program_.cores.emplace_back();
      program_.cores.back().coord = coord;
      found = program_.cores.end() - 1;
    }
    share.list = &found->instructions;
    share.started.assign(static_cast<size_t>(spec_.core.dma.engines), links_.barrier_count == 0 ? 1 : 0);
    lower_row_parameters(share);
    const auto buffers = static_cast<size_t>(buffers_.count);
    for (size_t t = 0; t < share.blocks.size() && t < buffers; ++t) lower_load(share, t);
    for (size_t t = 0; t < share.blocks.size(); ++t) {
      lower_map(share, t);
      lower_stores(share, t);
      if (t + buffers < share.blocks.size()) lower_load(share, t + buffers);
    }
  }

  // The first load on each engine: on the load group's first engine it waits for the barrier, and each
  // other engine's waits for that one (a `go` semaphore), so that the barrier's signals are taken once.
  void start(Share& share, int engine, arch::Waits& waits, arch::Signals& signals) {
    if (share.started[static_cast<size_t>(engine)]) return;
    share.started[static_cast<size_t>(engine)] = 1;
    const EngineGroup& loads = engines_.loads;
    if (engine != loads.first) {
      waits.push_back(arch::SemaphoreWait{semaphores_.on_engine("go", 0, loads, engine), 1});
      return;
    }
    waits.insert(waits.begin(), Semaphores(program_).wait(links_.barrier, links_.barrier_count));
    for (int other = loads.first + 1; other < loads.first + loads.count; ++other)
      signals.push_back(semaphores_.on_engine("go", 0, loads, other));
  }

  // The row parameters (gamma, beta, a bias row), once, on the load group's first engine.
  void lower_row_parameters(Share& share) {
    const auto parameter_rows = static_cast<int64_t>(tensors_.parameters.size());
    for (int64_t p = 0; p < parameter_rows; ++p) {
      arch::DmaLoad load;
      load.source = arch::TensorRegion{tensors_.parameters[static_cast<size_t>(p)], 0, 1, 0, stage_.cols()};
      load.sram_address = buffers_.parameters() + static_cast<uint64_t>(p * stage_.cols() * element_);
      arch::Waits waits;
      arch::Signals signals = {semaphores_.here("p_full")};
      start(share, engines_.loads.first, waits, signals);
      share.list->push_back(make_instruction(dma_queue(engines_.loads.first), load, waits, signals));
    }
  }

  // Block t's loads and stores: X cut into row blocks, then Y's runs, dealt round the load engines from the
  // first; O cut into row blocks over the store engines.
  int64_t x_blocks(const Share& share, size_t t) const {
    const auto [unit, units] = share.blocks[t];
    return blocks_of(stage_.x_rows(unit, units).count, stage_.cols() * element_, engines_.loads,
                     spec_.core.dma);
  }
  int64_t load_pieces(const Share& share, size_t t) const {
    const auto [unit, units] = share.blocks[t];
    return x_blocks(share, t) +
           (tensors_.y >= 0 ? static_cast<int64_t>(stage_.y_runs(unit, units).size()) : 0);
  }
  int64_t store_blocks(const Share& share, size_t t) const {
    const auto [unit, units] = share.blocks[t];
    return blocks_of(stage_.o_rows(unit, units).count, stage_.cols() * out_element_, engines_.stores,
                     spec_.core.dma);
  }

  // Block t's loads into its buffer, each engine's first one waiting for the buffer to be freed by the
  // block before that used it.
  void lower_load(Share& share, size_t t) {
    const auto buffers = static_cast<size_t>(buffers_.count);
    const int buffer = static_cast<int>(t % buffers);
    const auto [unit, units] = share.blocks[t];
    std::vector<char> waited(static_cast<size_t>(spec_.core.dma.engines), 0);
    int64_t dealt = 0;
    auto emit = [&](const arch::DmaLoad& load) {
      const int engine = engines_.loads.engine(dealt++);
      arch::Waits waits;
      arch::Signals signals = {semaphores_.here(fmt::format("x_full[{}]", buffer))};
      if (t >= buffers && !waited[static_cast<size_t>(engine)])
        waits.push_back(
            arch::SemaphoreWait{semaphores_.on_engine("x_free", buffer, engines_.loads, engine), 1});
      waited[static_cast<size_t>(engine)] = 1;
      start(share, engine, waits, signals);
      share.list->push_back(make_instruction(dma_queue(engine), load, waits, signals));
    };
    const VectorStage::Rows rows = stage_.x_rows(unit, units);
    const int64_t count = x_blocks(share, t);
    for (int64_t block = 0; block < count; ++block) {
      const RowBlock part = row_block(rows.count, count, block);
      arch::DmaLoad x;
      x.source = arch::TensorRegion{tensors_.x, rows.first + part.first, part.rows, 0, stage_.cols()};
      x.sram_address = buffers_.x(buffer) + static_cast<uint64_t>(part.first * stage_.cols() * element_);
      emit(x);
    }
    // Y's runs one after another in its buffer: a tile beside X, or a rope's table rows.
    int64_t y_row = 0;
    for (const VectorStage::Rows& run :
         tensors_.y >= 0 ? stage_.y_runs(unit, units) : std::vector<VectorStage::Rows>{}) {
      arch::DmaLoad y;
      y.source = arch::TensorRegion{tensors_.y, run.first, run.count, 0, stage_.y_cols()};
      y.sram_address = buffers_.y(buffer) + static_cast<uint64_t>(y_row * stage_.y_cols() * y_element_);
      y_row += run.count;
      emit(y);
    }
  }

  // Block t's vec instruction: it waits for the block's loads (the first block also for the row
  // parameters) and for its O buffer's store before, and signals each block of its store and, where a later
  // block reuses its X buffer, each engine of that block's loads.
  void lower_map(Share& share, size_t t) {
    const auto buffers = static_cast<size_t>(buffers_.count);
    const int buffer = static_cast<int>(t % buffers);
    const auto [unit, units] = share.blocks[t];
    const arch::Operation op =
        stage_.instruction(unit, units,
                           VectorStage::BlockAddresses{buffers_.x(buffer), buffers_.y(buffer),
                                                       buffers_.o(buffer), buffers_.parameters()});
    arch::Waits waits = {
        semaphores_.wait(fmt::format("x_full[{}]", buffer), static_cast<int>(load_pieces(share, t)))};
    const auto parameter_rows = static_cast<int>(tensors_.parameters.size());
    if (t == 0 && parameter_rows > 0) waits.push_back(semaphores_.wait("p_full", parameter_rows));
    if (t >= buffers)
      waits.push_back(semaphores_.wait(fmt::format("o_free[{}]", buffer),
                                       static_cast<int>(store_blocks(share, t - buffers))));
    arch::Signals signals;
    const int64_t stored_in = store_blocks(share, t);
    for (int64_t block = 0; block < stored_in; ++block)
      signals.push_back(
          semaphores_.on_engine("o_full", buffer, engines_.stores, engines_.stores.engine(block)));
    if (t + buffers < share.blocks.size()) {
      const int64_t next_engines = std::min<int64_t>(engines_.loads.count, load_pieces(share, t + buffers));
      for (int64_t slot = 0; slot < next_engines; ++slot)
        signals.push_back(
            semaphores_.on_engine("x_free", buffer, engines_.loads, engines_.loads.engine(slot)));
    }
    share.list->push_back(make_instruction(vec_queue(), op, waits, signals));
  }

  // Block t's store in row blocks over the store engines, each waiting for the vec instruction's signal
  // to its engine; they free the O buffer for a later block, and signal a later pass's barrier.
  void lower_stores(Share& share, size_t t) {
    const auto buffers = static_cast<size_t>(buffers_.count);
    const int buffer = static_cast<int>(t % buffers);
    const auto [unit, units] = share.blocks[t];
    const bool reused = t + buffers < share.blocks.size();
    const VectorStage::Rows rows = stage_.o_rows(unit, units);
    const int64_t stored_in = store_blocks(share, t);
    for (int64_t block = 0; block < stored_in; ++block) {
      const RowBlock part = row_block(rows.count, stored_in, block);
      const int engine = engines_.stores.engine(block);
      arch::DmaStore store;
      store.sram_address =
          buffers_.o(buffer) + static_cast<uint64_t>(part.first * stage_.cols() * out_element_);
      store.destination =
          arch::TensorRegion{tensors_.o, rows.first + part.first, part.rows, 0, stage_.cols()};
      arch::Signals signals;
      if (reused) signals.push_back(semaphores_.here(fmt::format("o_free[{}]", buffer)));
      signal_every_core(program_, links_.stored.name, links_.stored.cores, share.core, signals);
      ++stores_;
      share.list->push_back(make_instruction(
          dma_queue(engine), store,
          {arch::SemaphoreWait{semaphores_.on_engine("o_full", buffer, engines_.stores, engine), 1}},
          std::move(signals)));
    }
  }

  arch::Program& program_;
  const Mapping& mapping_;
  const VectorStage& stage_;
  const arch::ArchSpec& spec_;
  const VectorTensors& tensors_;
  const PassLinks& links_;
  Semaphores semaphores_;  // the pass's, with its prefix
  VectorBuffers buffers_;
  PassEngines engines_;
  int64_t element_ = 0, y_element_ = 0, out_element_ = 0;
  int stores_ = 0;
};

}  // namespace

arch::Program lower_vector(const ops::Op& op, uint64_t seed, const Mapping& mapping,
                           const arch::ArchSpec& spec, const std::string& program_name) {
  const VectorStage& stage = vector_stage_of(mapping);
  arch::Program program;
  start_program(program, program_name, op, seed, spec);
  // The op's tensors in its order: X, then a second input (a tile Y, or a bias row, gamma), beta, O last.
  std::vector<int> inputs;
  VectorTensors tensors;
  // An unfused norm of X + R: the sum T, an output of the program declared before O (O is last).
  int sum_tensor = -1;
  for (const ops::TensorDesc& desc : ops::tensors_of(op)) {
    if (desc.is_output && mapping.prologue_pass) {
      arch::TensorDecl sum = declared_tensor(desc, seed);
      sum.name = "T";
      sum_tensor = add_tensor(program, sum);
    }
    const int tensor = add_tensor(program, declared_tensor(desc, seed));
    (desc.is_output ? tensors.o : inputs.emplace_back()) = tensor;
  }
  tensors.x = inputs.at(0);
  if (mapping.prologue_pass) {
    // Unfused norm of X + R: X + R -> T on the first pass's cores, every store signalling each core of the
    // norm's pass, which starts once all of them have landed and normalises T into O.
    const int stores = append_vector_pass(program, *mapping.prologue_pass, spec,
                                          VectorTensors{tensors.x, inputs.at(1), {}, sum_tensor},
                                          PassLinks{"a_", "", 0, StoreSignal{"t_stored", mapping.split_m}});
    VectorTensors norm;
    norm.x = sum_tensor;
    norm.parameters.assign(inputs.begin() + 2, inputs.end());
    norm.o = tensors.o;
    append_vector_pass(program, mapping, spec, norm, PassLinks{"n_", "t_stored", stores, {}});
  } else {
    const bool y_tile = stage.y_elements(1) > 0;
    if (y_tile) tensors.y = inputs.at(1);
    tensors.parameters.assign(inputs.begin() + (y_tile ? 2 : 1), inputs.end());
    append_vector_pass(program, mapping, spec, tensors, PassLinks{});
  }
  std::sort(program.cores.begin(), program.cores.end(),
            [](const arch::CoreProgram& a, const arch::CoreProgram& b) { return a.coord < b.coord; });
  program.number_semaphores_by_appearance();
  return program;
}

int append_vector_pass(arch::Program& program, const Mapping& mapping, const arch::ArchSpec& spec,
                       const VectorTensors& tensors, const PassLinks& links) {
  return PassLowering(program, mapping, spec, tensors, links).run();
}

}  // namespace tessera::mapper
