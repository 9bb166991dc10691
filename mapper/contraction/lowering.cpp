#include "mapper/contraction/lowering.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

#include "mapper/contraction/buffers.hpp"
#include "mapper/contraction/core_walk.hpp"
#include "mapper/contraction/plan.hpp"
#include "mapper/contraction/stage.hpp"
#include "mapper/kit/dma_engines.hpp"
#include "mapper/kit/program_builder.hpp"
#include "mapper/kit/program_header.hpp"
#include "mapper/kit/vector_stage.hpp"

namespace tessera::mapper {

namespace {

class Lowering {
 public:
  Lowering(const ops::Op& op, uint64_t seed, const Mapping& mapping, const arch::ArchSpec& spec)
      : op_(op), seed_(seed), mapping_(mapping), stage_(stage_of(mapping)), spec_(spec) {
    names_of_ = Names{semaphores_.name("a_full"), semaphores_.name("w_full"), semaphores_.name("o_free"),
                      semaphores_.name("o_done"), semaphores_.name("rdy"),    semaphores_.name("psum"),
                      semaphores_.name("e_full"), semaphores_.name("e_free"), semaphores_.name("v_done")};
    contraction_ = plan_contraction(mapping, spec);
    for (int tensor : {kA, kW}) {
      const EngineGroup& group = contraction_.load_group(tensor);
      for (int engine = group.first; engine < group.first + group.count; ++engine)
        free_names_[tensor].push_back(
            semaphores_.name(engine_semaphore(tensor == kA ? "a_free" : "w_free", "", group, engine)));
    }
    plan_ = plan_buffers(mapping, spec);
    element_ = size_bytes(op.dtype);
    accumulator_type_ = stage_.shape().o_dtype();
    fused_ = mapping.epilogue && mapping.fusion == Fusion::fused;
    // A fused epilogue's result is stored from the E buffer in the output's type; else O's accumulators.
    stored_type_ = fused_ ? mapping.epilogue->out_dtype() : accumulator_type_;
    stored_row_bytes_ = fused_ ? plan_.e_row_bytes : plan_.o_row_bytes;
    unfused_ = mapping.epilogue && mapping.fusion == Fusion::unfused;
    array_ = mapping.epilogue && mapping.fusion == Fusion::array;
    TESSERA_ASSERT(!unfused_ || mapping.epilogue_pass, "an unfused epilogue has its pass");
  }

  arch::Program run(const std::string& name) {
    declare(name);
    for (int ik = 0; ik < mapping_.split_k; ++ik)
      for (int im = 0; im < mapping_.split_m; ++im)
        for (int in = 0; in < mapping_.split_n; ++in) {
          CorePlace place;
          place.im = im, place.in = in, place.ik = ik;
          place.index = logical_to_core(im, in, ik, mapping_);
          const int coords[3] = {im, in, ik};
          place.iterations = iterations_of(mapping_, contraction_.parts, coords, stage_.shape().groups);
          places_.push_back(std::move(place));
        }
    keyed_.resize(places_.size());
    for (int tensor : {kA, kW}) {
      first_use_[tensor].resize(places_.size());
      last_use_[tensor].resize(places_.size());
      for (size_t p = 0; p < places_.size(); ++p) {
        first_use_[tensor][p].assign(places_[p].iterations.size(), FirstUse{});
        last_use_[tensor][p].assign(places_[p].iterations.size(), LastUse{});
      }
    }
    // About a PE instruction, a load of each operand and a store per iteration, at most: no regrowth.
    for (size_t p = 0; p < places_.size(); ++p) keyed_[p].reserve(places_[p].iterations.size() * 3 + 8);
    // Operands first: every core's PE waits and frees depend on its issuer's loads.
    for (size_t p = 0; p < places_.size(); ++p) {
      lower_operand(p, kA);
      lower_operand(p, kW);
    }
    for (size_t p = 0; p < places_.size(); ++p) lower_compute_and_output(p);
    // An output whose tiles are stored as partial sums and added to later holds dense values while it does:
    // it is moved raw (ops/density.hpp), as the cost model counts it.
    if (stores_partial_sums_) program_.tensors[static_cast<size_t>(tensor_[kO])].density = 1.0;
    for (size_t p = 0; p < places_.size(); ++p) {
      arch::CoreProgram core;
      core.coord = arch::core_coord(places_[p].index, spec_.mesh);
      core.instructions = in_key_order(keyed_[p]);
      program_.cores.push_back(std::move(core));
    }
    // Unfused: after every core's stores of Z (the barrier), the epilogue's pass turns Z into O.
    if (unfused_) {
      VectorTensors tensors;
      tensors.x = tensor_[kO];
      tensors.y = tile_tensor_;
      if (bias_tensor_ >= 0) tensors.parameters.push_back(bias_tensor_);
      tensors.o = output_tensor_;
      append_vector_pass(program_, *mapping_.epilogue_pass, spec_, tensors,
                         PassLinks{"e_", "z_stored", z_stores_, {}});
    }
    std::sort(program_.cores.begin(), program_.cores.end(),
              [](const arch::CoreProgram& a, const arch::CoreProgram& b) { return a.coord < b.coord; });
    program_.number_semaphores_by_appearance();
    return std::move(program_);
  }

 private:
  // The op line names the op's workload entry; the tensors are the op's (input_generator.hpp fixes their
  // ids), declared as the stage's operands (a convolution's A may be the im2col view of its input X, its W
  // the block-diagonal view of packed groups).
  void declare(const std::string& name) {
    start_program(program_, name, op_, seed_, spec_);
    TensorDeclarer declarer;
    declarer.add = [&](arch::TensorDecl tensor) { return add_tensor(program_, std::move(tensor)); };
    // Unfused, the stage's output is the raw Z; the epilogue's pass writes O.
    declarer.declared = [&](const ops::TensorDesc& desc) {
      arch::TensorDecl tensor = declared_tensor(desc, seed_);
      // Z is the raw output, before the epilogue: dense.
      if (unfused_ && desc.is_output) tensor.name = "Z", tensor.dtype = accumulator_type_, tensor.density = 1;
      return tensor;
    };
    const std::array<int, 3> operands = stage_.declare_operands(op_, declarer);
    for (int tensor : {kA, kW, kO}) tensor_[tensor] = operands[tensor];
    output_tensor_ = tensor_[kO];
    if (!mapping_.epilogue) return;
    // The epilogue's operands (a bias row B, a tile: the residual R or a SwiGLU's up projection U), and O
    // after them when Z is the stage's.
    for (const ops::TensorDesc& desc : ops::tensors_of(op_)) {
      if (desc.name == "B") bias_tensor_ = add_tensor(program_, declared_tensor(desc, seed_));
      if (desc.name == "R" || desc.name == "U")
        tile_tensor_ = add_tensor(program_, declared_tensor(desc, seed_));
      if (desc.is_output && unfused_) output_tensor_ = add_tensor(program_, declared_tensor(desc, seed_));
    }
  }

  TileFrame frame() const {
    TileFrame frame;
    frame.parts = contraction_.parts;
    frame.tensors = {tensor_[kA], tensor_[kW], tensor_[kO]};
    frame.buffers = &plan_;
    return frame;
  }

  void emit(size_t place, double key, arch::QueueId queue, arch::Operation operation, arch::Waits waits,
            arch::Signals signals) {
    keyed_[place].push_back(
        Keyed{key, make_instruction(queue, std::move(operation), std::move(waits), std::move(signals))});
  }

  // The core that issues the loads of `tensor` for the core at `place`: the first core of its sharing group
  // when the tensor is multicast, else the core itself.
  size_t issuer_of(size_t place, int tensor) const {
    if (!contraction_.multicast[tensor]) return place;
    const CorePlace& core = places_[place];
    const int issuer = tensor == kA ? logical_to_core(core.im, 0, core.ik, mapping_)
                                    : logical_to_core(0, core.in, core.ik, mapping_);
    for (size_t p = 0; p < places_.size(); ++p)
      if (places_[p].index == issuer) return p;
    return place;
  }

  std::vector<size_t> group_of(size_t issuer, int tensor) const {
    if (!contraction_.multicast[tensor]) return {issuer};
    std::vector<size_t> members;
    for (size_t p = 0; p < places_.size(); ++p)
      if (issuer_of(p, tensor) == issuer) members.push_back(p);
    return members;
  }

  // One DMA load of a tile: a row block of one of the stage's pieces of it, and the engine that carries it.
  struct LoadBlock {
    arch::TensorRegion region;
    uint64_t offset = 0;
    int engine = 0;
  };

  // The blocks of a load of `tensor`: each piece the stage loads it in, cut into row blocks dealt round the
  // tensor's engine group (mapper/kit/dma_engines.hpp).
  std::vector<LoadBlock> load_blocks(int tensor, const Residency& load) const {
    const int64_t pitch = tensor == kA ? plan_.a_row_bytes : plan_.w_row_bytes;
    std::vector<LoadBlock> blocks;
    EngineDealer dealer(contraction_.load_group(tensor), spec_.core.dma);
    for (const auto& [region, offset] :
         stage_.tile_loads(frame(), tensor, load.key_a, load.key_b, load.group)) {
      for (const DealtBlock& dealt : dealer.deal(region.rows, region.cols * element_)) {
        arch::TensorRegion part = region;
        part.row += dealt.rows.first;
        part.rows = dealt.rows.rows;
        blocks.push_back(
            LoadBlock{part, offset + static_cast<uint64_t>(dealt.rows.first * pitch), dealt.engine});
      }
    }
    return blocks;
  }

  // How many engines carry a load's blocks: each waits once for its buffer to be freed.
  static int engines_used(const std::vector<LoadBlock>& blocks, const EngineGroup& group) {
    return static_cast<int>(std::min<int64_t>(group.count, static_cast<int64_t>(blocks.size())));
  }

  // Loads of A or W for the core at `place`, if it issues them, and the PE-side waits and frees are recorded
  // for every core of the group.
  void lower_operand(size_t place, int tensor) {
    if (issuer_of(place, tensor) != place) return;
    const std::vector<size_t> members = group_of(place, tensor);
    const std::vector<Residency> loads = residencies(places_[place].iterations, tensor);
    const int buffers = tensor == kA ? plan_.a_count : plan_.w_count;
    const int full = tensor == kA ? names_of_.a_full : names_of_.w_full;
    const int issuer_core = places_[place].index;
    const EngineGroup& group = contraction_.load_group(tensor);
    std::vector<int> destinations;
    for (size_t member : members) destinations.push_back(places_[member].index);
    // How many engines each load uses (with one engine in the group, one): the frees after a buffer's last
    // use go to those of the load that reuses it.
    std::vector<int> engines(loads.size(), 1);
    if (group.count > 1)
      for (size_t j = 0; j < loads.size(); ++j)
        engines[j] = engines_used(load_blocks(tensor, loads[j]), group);
    // Each engine of the group frees buffers through its own semaphore (free_names_): an engine that carries
    // no block of one load must not take the free meant for one that does.
    const std::vector<int>& free_names = free_names_[tensor];
    std::vector<char> waited(static_cast<size_t>(group.count));
    for (size_t j = 0; j < loads.size(); ++j) {
      const int buffer = static_cast<int>(j % buffers);
      const Residency& load = loads[j];
      std::fill(waited.begin(), waited.end(), 0);
      const std::vector<LoadBlock> blocks = load_blocks(tensor, load);
      for (const LoadBlock& block : blocks) {
        arch::DmaLoad operation;
        operation.source = block.region;
        operation.sram_address =
            (tensor == kA ? plan_.a_address(buffer) : plan_.w_address(buffer)) + block.offset;
        const int64_t pitch = tensor == kA ? plan_.a_row_bytes : plan_.w_row_bytes;
        operation.sram_pitch_bytes = pitch_unless_packed(pitch, operation.source.cols * element_);
        if (members.size() > 1) operation.destinations = destinations;
        // The first block on each engine waits for the buffer (each engine runs ahead on its own).
        const auto slot = static_cast<size_t>(block.engine - group.first);
        arch::Waits waits;
        if (j >= static_cast<size_t>(buffers) && !waited[slot])
          waits.push_back(arch::SemaphoreWait{semaphores_.at(free_names[slot], buffer),
                                              static_cast<int>(members.size())});
        waited[slot] = 1;
        // A load may run as far ahead as its buffer allows: key it just before the iteration `buffers - 1`
        // earlier.
        const double key = static_cast<double>(load.first) - (buffers - 1) - 0.5;
        emit(place, key, dma_queue(block.engine), operation, std::move(waits),
             {semaphores_.at(full, buffer)});
      }
      // Every member's PE waits for this load's blocks at its first use and frees the buffer after its last
      // use, to each engine of the later load that reuses it.
      for (size_t member : members) {
        const std::vector<Residency>& member_loads = member_residencies(member, tensor);
        const Residency& use = member_loads[j];
        FirstUse& first = first_use_[tensor][member][use.first];
        if (first.buffer < 0) first = FirstUse{buffer, static_cast<int>(blocks.size())};
        LastUse& last = last_use_[tensor][member][use.last];
        if (j + buffers < loads.size() && last.buffer < 0)
          last = LastUse{buffer, member == place ? arch::kSameCore : issuer_core, engines[j + buffers]};
      }
    }
  }

  const std::vector<Residency>& member_residencies(size_t member, int tensor) {
    auto& cache = residency_cache_[tensor];
    auto found = cache.find(member);
    if (found == cache.end())
      found = cache.emplace(member, residencies(places_[member].iterations, tensor)).first;
    return found->second;
  }

  // The store side of a core's output tiles: each tile's store is cut into row blocks dealt round the store
  // engines (one block, when its sum waits for the other cores' partial sums: that wait is taken once); a
  // block waits on its engine's own semaphores, so that an engine with no block of one store cannot take
  // another's signal.
  struct OutputStores {
    const EngineGroup* group = nullptr;
    std::vector<int64_t> blocks,
        first_block;                   // per residency of O: its store's blocks, the first one's number
    std::vector<int> engine_names[2];  // per engine slot: o_done's, v_done's handle (-1: not yet)
  };

  OutputStores output_stores(size_t place, const std::vector<Residency>& outputs) {
    const CorePlace& core = places_[place];
    OutputStores stores;
    stores.group = &store_group_of(place);
    stores.blocks.assign(outputs.size(), 1);
    stores.first_block.assign(outputs.size(), 0);
    for (size_t r = 0; r < outputs.size(); ++r) {
      const TileIteration& last = core.iterations[outputs[r].last];
      if (mapping_.split_k == 1)
        stores.blocks[r] = blocks_of(contraction_.parts[0].tile_size(last.m_tile) * stage_.pixels_per_m(),
                                     contraction_.parts[1].tile_size(last.n_tile) * size_bytes(stored_type_),
                                     *stores.group, spec_.core.dma);
      if (r > 0) stores.first_block[r] = stores.first_block[r - 1] + stores.blocks[r - 1];
    }
    return stores;
  }

  // The semaphore `name` (o_done or v_done) of the engine that takes block `block` of store r, its name
  // interned once per engine.
  arch::SemaphoreRef store_semaphore(OutputStores& stores, int name, size_t r, int64_t block, int buffer) {
    const EngineGroup& group = *stores.group;
    const int engine = group.engine(stores.first_block[r] + block);
    std::vector<int>& names = stores.engine_names[name == names_of_.v_done ? 1 : 0];
    const auto slot = static_cast<size_t>(engine - group.first);
    if (slot >= names.size()) names.resize(slot + 1, -1);
    if (names[slot] < 0)
      names[slot] = semaphores_.name(engine_semaphore(semaphores_.text(name), "", group, engine));
    return semaphores_.at(names[slot], buffer);
  }

  // Output tile r of a core (its residency of O) in its O buffer: whether an earlier tile used the buffer
  // (and how many blocks of that tile's store drain it), whether a later one will.
  struct OutputTile {
    size_t r = 0;
    const Residency* output = nullptr;
    size_t previous_last = 0;  // the iteration that finished the tile before (0 for the first)
    int buffer = 0;
    int drained_by = 1;
    bool reuses_buffer = false, buffer_reused_later = false;
  };

  // A core's loads of A and W, and the one in use at the iteration lowered (current_buffer).
  struct OperandCursor {
    const std::vector<Residency>* uses[2] = {nullptr, nullptr};
    size_t in_use[2] = {0, 0};
  };

  // The PE instructions of the core at `place`, and what becomes of each finished output tile: its store
  // (after a fused epilogue's vec map), or a k split's send to the root core.
  void lower_compute_and_output(size_t place) {
    const std::vector<Residency> outputs = residencies(places_[place].iterations, kO);
    OutputStores stores = output_stores(place, outputs);
    OperandCursor cursor;
    cursor.uses[kA] = &member_residencies(place, kA);
    cursor.uses[kW] = &member_residencies(place, kW);
    std::map<std::tuple<int64_t, int64_t, int64_t>, int>
        visits;  // O tile -> residencies so far (revisits add)
    const auto buffers = static_cast<size_t>(plan_.o_count);
    for (size_t r = 0; r < outputs.size(); ++r) {
      OutputTile tile;
      tile.r = r;
      tile.output = &outputs[r];
      tile.previous_last = r > 0 ? outputs[r - 1].last : 0;
      tile.buffer = static_cast<int>(r % buffers);
      tile.reuses_buffer = r >= buffers;
      // The blocks of the store that last drained this buffer: each signals its freeing.
      tile.drained_by = tile.reuses_buffer ? static_cast<int>(stores.blocks[r - buffers]) : 1;
      tile.buffer_reused_later = r + buffers < outputs.size();
      lower_tile_compute(place, tile, stores, cursor);
      const FinishedTile finished = finished_tile(place, *tile.output);
      if (mapping_.split_k > 1 && places_[place].ik != 0)
        lower_partial_sum_send(place, tile, finished);
      else
        lower_output_store(place, tile, finished, stores, outputs, visits);
    }
  }

  // The PE instructions of output tile `tile`'s iterations on the core at `place`, with their operands'
  // waits and frees; at the tile's first, the loads of a fused epilogue's or the output path's operands; at
  // its last, the finished tile's signals (through the output path's post, when the array applies the
  // epilogue).
  void lower_tile_compute(size_t place, const OutputTile& tile, OutputStores& stores, OperandCursor& cursor) {
    const CorePlace& core = places_[place];
    const Residency& output = *tile.output;
    const int buffer = tile.buffer;
    const bool k_split = mapping_.split_k > 1;
    const bool root = core.ik == 0;
    for (size_t i = output.first; i <= output.last; ++i) {
      const TileIteration& it = core.iterations[i];
      const PeOperands tile_operands =
          operands(current_buffer(kA, *cursor.uses[kA], i, cursor.in_use[kA]),
                   current_buffer(kW, *cursor.uses[kW], i, cursor.in_use[kW]), buffer, i != output.first);
      arch::Waits waits;
      arch::Signals signals;
      if (i == output.first && tile.reuses_buffer)
        waits.push_back({semaphores_.at(names_of_.o_free, buffer), fused_ ? 1 : tile.drained_by});
      // A fused epilogue's operands, freed by the blocks of a store; the output path's bias slice, freed
      // once by the post that reads it.
      if (i == output.first && ((fused_ && (!k_split || root)) || (array_ && mapping_.epilogue->bias())))
        lower_epilogue_loads(place, tile.r, output, buffer, tile.previous_last, array_ ? 1 : tile.drained_by);
      for (int tensor : {kA, kW}) {
        if (const FirstUse& first = first_use_[tensor][place][i]; first.buffer >= 0)
          waits.push_back({semaphores_.at(tensor == kA ? names_of_.a_full : names_of_.w_full, first.buffer),
                           first.blocks});
        if (const LastUse& last = last_use_[tensor][place][i]; last.buffer >= 0)
          for (int slot = 0; slot < last.engines; ++slot)
            signals.push_back(
                semaphores_.at(free_names_[tensor][static_cast<size_t>(slot)], last.buffer, last.core));
      }
      // The output path's post follows the tile's last PE instruction and gives the signals it would have.
      arch::Signals post_signals;
      if (i == output.last) {
        // The epilogue's vec map (fused) or a k split's send to the root core takes the plain semaphore;
        // a store's blocks their engines'.
        const bool stored_here = !fused_ && !(k_split && !root);
        arch::Signals& done = array_ ? post_signals : signals;
        for (int64_t block = 0; block < (stored_here ? stores.blocks[tile.r] : 1); ++block)
          done.push_back(stored_here ? store_semaphore(stores, names_of_.o_done, tile.r, block, buffer)
                                     : semaphores_.at(names_of_.o_done, buffer));
        if (k_split && root)
          for (const CorePlace& sender : places_)
            if (sender.im == core.im && sender.in == core.in && sender.ik != 0)
              signals.push_back(semaphores_.at(names_of_.rdy, buffer, sender.index));
      }
      // A tile of several parts (images) runs an instruction per part, in order on the one queue: the first
      // takes the waits, the last gives the signals.
      const int64_t parts = stage_.pe_parts();
      for (int64_t part = 0; part < parts; ++part)
        emit(place, static_cast<double>(i), pe_queue(), stage_.pe_operation(frame(), it, tile_operands, part),
             part == 0 ? std::move(waits) : arch::Waits{},
             part + 1 == parts ? std::move(signals) : arch::Signals{});
      if (array_ && i == output.last)
        lower_post(place, output, buffer, tile.buffer_reused_later, post_signals);
    }
  }

  // A finished output tile: its last iteration, its rows (its m rows' pixels) and columns, its rows' pitch
  // in the O buffer, and the key its send or store is queued at (after that iteration).
  struct FinishedTile {
    const TileIteration* last = nullptr;
    int64_t rows = 0, cols = 0, pitch = 0;
    double key = 0;
  };

  FinishedTile finished_tile(size_t place, const Residency& output) const {
    FinishedTile finished;
    finished.last = &places_[place].iterations[output.last];
    finished.rows = contraction_.parts[0].tile_size(finished.last->m_tile) * stage_.pixels_per_m();
    finished.cols = contraction_.parts[1].tile_size(finished.last->n_tile);
    finished.pitch = pitch_unless_packed(plan_.o_row_bytes, finished.cols * size_bytes(accumulator_type_));
    finished.key = static_cast<double>(output.last) + 0.5;
    return finished;
  }

  // A k split's partial sums of a finished tile, sent by the core at `place` (not its group's root) into the
  // root's O buffer to be added there, once the root has made the buffer ready for them.
  void lower_partial_sum_send(size_t place, const OutputTile& tile, const FinishedTile& finished) {
    const CorePlace& core = places_[place];
    const int buffer = tile.buffer;
    arch::NocSend send;
    send.source_address = plan_.o_address(buffer);
    send.source_pitch_bytes = finished.pitch;
    send.rows = finished.rows;
    send.row_bytes = finished.cols * size_bytes(accumulator_type_);
    send.destination_core = logical_to_core(core.im, core.in, 0, mapping_);
    send.destination_address = plan_.o_address(buffer);
    send.destination_pitch_bytes = finished.pitch;
    send.accumulate = true;
    send.accumulate_dtype = accumulator_type_;
    arch::Signals signals = {semaphores_.at(names_of_.psum, buffer, send.destination_core)};
    if (tile.buffer_reused_later) signals.push_back(semaphores_.at(names_of_.o_free, buffer));
    emit(place, finished.key, noc_queue(), send,
         {{semaphores_.at(names_of_.o_done, buffer), 1}, {semaphores_.at(names_of_.rdy, buffer), 1}},
         std::move(signals));
  }

  // The store of a finished tile by the core at `place`, in row blocks over the store engines: of the O
  // buffer, or (fused) of the E buffer its epilogue's vec map writes. A tile met again later (`visits`) adds
  // its partial sums to the stored ones.
  void lower_output_store(size_t place, const OutputTile& tile, const FinishedTile& finished,
                          OutputStores& stores, const std::vector<Residency>& outputs,
                          std::map<std::tuple<int64_t, int64_t, int64_t>, int>& visits) {
    const TileIteration& last = *finished.last;
    const int buffer = tile.buffer;
    const int64_t rows = finished.rows, cols = finished.cols;
    double store_key = finished.key;
    const arch::TensorRegion destination = stage_.output_region(frame(), last, rows, cols);
    TESSERA_ASSERT(destination.rows == rows, "an output tile's rows are its region's");
    // The first residency of an output tile writes it; a later one adds its partial sums to it.
    const bool accumulate = visits[{last.group, last.m_tile, last.n_tile}]++ > 0;
    stores_partial_sums_ = stores_partial_sums_ || accumulate;
    const int64_t blocks = stores.blocks[tile.r];
    uint64_t source = plan_.o_address(buffer);
    int ready = names_of_.o_done;
    arch::Signals signals;  // every block's
    if (fused_) {
      TESSERA_ASSERT(!accumulate, "a fused epilogue's output tiles are finished once");
      lower_epilogue_map(place, tile, finished, stores);
      source = plan_.e_address(buffer);
      ready = names_of_.v_done;
      // Queued after the loads of the next o_count - 1 tiles: a store waiting for a slow vector unit would
      // otherwise hold back the loads the PE array needs meanwhile, and the array would starve on them
      // rather than wait, as it should, for the epilogue to free its O buffer.
      store_key =
          static_cast<double>(outputs[std::min(tile.r + plan_.o_count - 1, outputs.size() - 1)].last) + 0.4;
      if (tile.buffer_reused_later) signals.push_back(semaphores_.at(names_of_.e_free, buffer));
    } else if (tile.buffer_reused_later) {
      signals.push_back(semaphores_.at(names_of_.o_free, buffer));
    }
    if (unfused_) {
      // Every core's vector pass waits for every store of Z.
      z_stores_ += static_cast<int>(blocks);
      signal_every_core(program_, "z_stored", mapping_.epilogue_pass->split_m, places_[place].index, signals);
    }
    for (int64_t block = 0; block < blocks; ++block) {
      const RowBlock part = row_block(rows, blocks, block);
      arch::DmaStore store;
      store.sram_address = source + static_cast<uint64_t>(part.first * stored_row_bytes_);
      store.sram_pitch_bytes = pitch_unless_packed(stored_row_bytes_, cols * size_bytes(stored_type_));
      store.destination = destination;
      store.destination.row += part.first;
      store.destination.rows = part.rows;
      store.accumulate = accumulate;
      arch::Waits waits = {{store_semaphore(stores, ready, tile.r, block, buffer), 1}};
      if (mapping_.split_k > 1 && !fused_)
        waits.push_back({semaphores_.at(names_of_.psum, buffer), mapping_.split_k - 1});
      emit(place, store_key, dma_queue(stores.group->engine(stores.first_block[tile.r] + block)), store,
           std::move(waits), signals);
    }
  }

  // A fused epilogue's vec map on a finished tile: it reads the tile (and frees the O buffer for the next
  // one), writes its result into the E buffer, and each block of the store that drains that waits for it.
  void lower_epilogue_map(size_t place, const OutputTile& tile, const FinishedTile& finished,
                          OutputStores& stores) {
    const int buffer = tile.buffer;
    arch::VecOp vec = mapping_.epilogue->tile_op(finished.rows, finished.cols);
    vec.x_address = plan_.o_address(buffer);
    vec.x_pitch_bytes = finished.pitch;
    vec.o_address = plan_.e_address(buffer);
    vec.o_pitch_bytes = pitch_unless_packed(plan_.e_row_bytes, finished.cols * size_bytes(stored_type_));
    if (vec.uses_y()) vec.y_address = plan_.e_address(buffer), vec.y_pitch_bytes = finished.pitch;
    if (vec.uses_b()) vec.b_address = plan_.bias_address(buffer);
    arch::Waits waits = {{semaphores_.at(names_of_.o_done, buffer), 1}};
    if (mapping_.split_k > 1) waits.push_back({semaphores_.at(names_of_.psum, buffer), mapping_.split_k - 1});
    const int loads = (bias_tensor_ >= 0 ? 1 : 0) + (tile_tensor_ >= 0 ? 1 : 0);
    if (loads > 0)
      waits.push_back({semaphores_.at(names_of_.e_full, buffer), loads});
    else if (tile.reuses_buffer)
      waits.push_back({semaphores_.at(names_of_.e_free, buffer), tile.drained_by});
    arch::Signals signals;
    for (int64_t block = 0; block < stores.blocks[tile.r]; ++block)
      signals.push_back(store_semaphore(stores, names_of_.v_done, tile.r, block, buffer));
    if (tile.buffer_reused_later) signals.push_back(semaphores_.at(names_of_.o_free, buffer));
    emit(place, finished.key, vec_queue(), vec, std::move(waits), std::move(signals));
  }

  // The output path's post on the finished tile of residency `output` (its O buffer `buffer`), after its last
  // PE instruction on the queue: it waits for its bias slice, frees the bias buffer for the tile o_count
  // later, and gives the finished tile's signals (`signals`).
  void lower_post(size_t place, const Residency& output, int buffer, bool buffer_reused_later,
                  arch::Signals signals) {
    const TileIteration& last = places_[place].iterations[output.last];
    arch::PePost post;
    post.dtype = accumulator_type_;
    post.rows = contraction_.parts[0].tile_size(last.m_tile) * stage_.pixels_per_m();
    post.cols = contraction_.parts[1].tile_size(last.n_tile);
    post.o_address = plan_.o_address(buffer);
    post.o_pitch_bytes = pitch_unless_packed(plan_.o_row_bytes, post.cols * size_bytes(accumulator_type_));
    post.steps = *mapping_.epilogue->output_steps();
    arch::Waits waits;
    if (post.has_bias()) {
      post.b_address = plan_.bias_address(buffer);
      waits.push_back({semaphores_.at(names_of_.e_full, buffer), 1});
      if (buffer_reused_later) signals.push_back(semaphores_.at(names_of_.e_free, buffer));
    }
    emit(place, static_cast<double>(output.last), pe_queue(), post, std::move(waits), std::move(signals));
  }

  // A fused epilogue's operands for residency `r` of the core at `place` (its output tile in O buffer
  // `buffer`): the residual tile into the E buffer, the bias row's slice into the bias buffer, on the store
  // engine of the buffer, while the tile computes, once the `drained_by` blocks of the store o_count tiles
  // back have drained the buffer.
  void lower_epilogue_loads(size_t place, size_t r, const Residency& output, int buffer, size_t previous_last,
                            int drained_by) {
    const CorePlace& core = places_[place];
    const TileIteration& last = core.iterations[output.last];
    const int64_t rows = contraction_.parts[0].tile_size(last.m_tile) * stage_.pixels_per_m(),
                  cols = contraction_.parts[1].tile_size(last.n_tile);
    const arch::TensorRegion region = stage_.output_region(frame(), last, rows, cols);
    const int64_t row_bytes = cols * size_bytes(accumulator_type_);
    // Queued right after the store that drains this E buffer (o_count tiles back; fused stores are queued
    // late, see lower_output_store), so that the operands arrive while earlier tiles compute.
    const double key =
        r > 0 ? static_cast<double>(previous_last) + 0.45 : static_cast<double>(output.first) - 0.5;
    const arch::QueueId queue = dma_queue(store_group_of(place).engine(buffer));
    bool first = true;
    auto load = [&](int tensor, arch::TensorRegion source, uint64_t address, int64_t pitch) {
      arch::DmaLoad operation;
      source.tensor = tensor;
      operation.source = source;
      operation.sram_address = address;
      operation.sram_pitch_bytes = pitch;
      arch::Waits waits;
      if (first && r >= static_cast<size_t>(plan_.o_count))
        waits.push_back({semaphores_.at(names_of_.e_free, buffer), drained_by});
      first = false;
      emit(place, key, queue, operation, std::move(waits), {semaphores_.at(names_of_.e_full, buffer)});
    };
    if (tile_tensor_ >= 0)
      load(tile_tensor_, region, plan_.e_address(buffer), pitch_unless_packed(plan_.o_row_bytes, row_bytes));
    if (bias_tensor_ >= 0)
      load(bias_tensor_, arch::TensorRegion{0, 0, 1, region.col, region.cols}, plan_.bias_address(buffer), 0);
  }

  PeOperands operands(int a_buffer, int w_buffer, int o_buffer, bool accumulate) const {
    PeOperands operands;
    operands.dataflow = mapping_.dataflow;
    operands.dtype = op_.dtype;
    operands.a_address = plan_.a_address(a_buffer);
    operands.w_address = plan_.w_address(w_buffer);
    operands.o_address = plan_.o_address(o_buffer);
    operands.a_pitch = plan_.a_row_bytes;
    operands.w_pitch = plan_.w_row_bytes;
    operands.o_pitch = plan_.o_row_bytes;
    operands.accumulate = accumulate;
    operands.psum = stage_.shape().psum;
    return operands;
  }

  // The buffer holding the tile of `tensor` that iteration `i` of a core uses, of its `loads` of it
  // (member_residencies). `at` is the caller's cursor into them (iterations are asked for in increasing
  // order): the load in use at i, found by moving on from where it was.
  int current_buffer(int tensor, const std::vector<Residency>& loads, size_t i, size_t& at) const {
    const int buffers = tensor == kA ? plan_.a_count : plan_.w_count;
    while (at + 1 < loads.size() && loads[at + 1].first <= i) ++at;
    TESSERA_ASSERT(loads[at].first <= i && i <= loads[at].last, "iterations are asked for in order");
    return static_cast<int>(at % static_cast<size_t>(buffers));
  }

  // The plan's store engines for the core at `place`, by the elements it loads of A and W.
  const EngineGroup& store_group_of(size_t place) {
    int64_t a = 0, w = 0;
    for (const Residency& load : member_residencies(place, kA))
      a += contraction_.parts[0].tile_size(load.key_a) * contraction_.parts[2].tile_size(load.key_b);
    for (const Residency& load : member_residencies(place, kW))
      w += contraction_.parts[2].tile_size(load.key_a) * contraction_.parts[1].tile_size(load.key_b);
    return contraction_.store_group(a, w);
  }

  const ops::Op& op_;
  uint64_t seed_;
  const Mapping& mapping_;
  const ContractionStage& stage_;
  const arch::ArchSpec& spec_;
  ContractionPlan contraction_;
  BufferPlan plan_;
  int tensor_[3] = {0, 1, 2};                                     // program tensor of A, W, O (unfused: Z)
  bool fused_ = false, unfused_ = false, array_ = false;          // array: in the PE array's output path
  int bias_tensor_ = -1, tile_tensor_ = -1, output_tensor_ = -1;  // tile: R or U
  bool stores_partial_sums_ = false;                              // some store adds to an output tile in DRAM
  int z_stores_ = 0;
  int64_t element_ = 0;
  DType accumulator_type_ = DType::fp32;  // of the partial sums in the O buffers (ContractionShape::o_dtype)
  DType stored_type_ = DType::fp32;       // of the stored output tile
  int64_t stored_row_bytes_ = 0;          // its rows' pitch in SRAM
  arch::Program program_;
  std::vector<CorePlace> places_;
  std::vector<std::vector<Keyed>> keyed_;
  // Semaphore ids by (name, buffer), each name interned once (a dozen kinds, one per engine of a group) and
  // never compared per instruction.
  IndexedSemaphores semaphores_{program_};
  // The plain names' handles in semaphores_ (interned by the constructor).
  struct Names {
    int a_full, w_full, o_free, o_done, rdy, psum, e_full, e_free, v_done;
  } names_of_{};
  // Per operand, per core: iteration -> the buffer it first uses there and the load's blocks to wait for;
  // iteration -> the buffer to free after it, to each engine of the load that reuses it.
  struct FirstUse {
    int buffer = -1;  // none
    int blocks = 0;
  };
  struct LastUse {
    int buffer = -1;  // none
    int core = arch::kSameCore;
    int engines = 1;
  };
  std::vector<std::vector<FirstUse>> first_use_[2];
  std::vector<std::vector<LastUse>> last_use_[2];
  std::vector<int> free_names_[2];  // per engine slot of A's, W's group: a_free, a_free_e1, ... (interned)
  std::map<size_t, std::vector<Residency>> residency_cache_[2];
};

}  // namespace

arch::Program lower_contraction(const ops::Op& op, uint64_t seed, const Mapping& mapping,
                                const arch::ArchSpec& spec, const std::string& program_name) {
  return Lowering(op, seed, mapping, spec).run(program_name);
}

}  // namespace tessera::mapper
