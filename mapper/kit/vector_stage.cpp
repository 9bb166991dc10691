// The vector stage (mapper/kit/vector_stage.hpp): what it is for each vector op kind, its blocks' rows and
// instructions, its estimate and its search; its lowering is vector_lowering.cpp's.
#include "mapper/kit/vector_stage.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>

#include "arch/figures.hpp"
#include "arch/isa/vector_kinds/vector_kind_info.hpp"
#include "arch/noc.hpp"
#include "arch/timing/compression.hpp"
#include "arch/timing/vector_timing.hpp"
#include "common/integer_math.hpp"
#include "mapper/kit/dma_engines.hpp"
#include "mapper/kit/vector_plan.hpp"
#include "mapper/search.hpp"
#include "ops/kinds/elementwise.hpp"
#include "ops/kinds/norm.hpp"
#include "ops/kinds/pool.hpp"
#include "ops/kinds/rope.hpp"
#include "ops/kinds/softmax.hpp"

namespace tessera::mapper {

std::shared_ptr<const VectorStage> VectorStage::of(const ops::Op& op) {
  auto stage = std::make_shared<VectorStage>();
  stage->dtype_ = stage->out_dtype_ = op.dtype;
  if (const auto* softmax = op.as<ops::SoftmaxShape>()) {
    stage->kind_ = arch::VectorKind::softmax;
    stage->rows_ = softmax->rows, stage->cols_ = softmax->cols;
    stage->scale_ = softmax->scale;
    stage->causal_ = softmax->causal == ops::Causal::yes;
  } else if (const auto* norm = op.as<ops::NormShape>()) {
    stage->kind_ =
        op.kind_name() == std::string("layernorm") ? arch::VectorKind::layernorm : arch::VectorKind::rmsnorm;
    stage->rows_ = norm->rows, stage->cols_ = norm->cols;
    stage->eps_ = norm->eps;
    if (norm->adds_residual()) {  // the norm of X + R: R streams beside X, added by the instruction's first
                                  // pass
      stage->chain_ = {arch::VecFn::add};
      stage->y_tile_ = true;
    }
  } else if (const auto* elementwise = op.as<ops::ElementwiseShape>()) {
    stage->kind_ = arch::VectorKind::map;
    stage->rows_ = elementwise->rows, stage->cols_ = elementwise->cols;
    stage->chain_ = {elementwise->fn};  // one element function, the op's
    stage->y_row_ = elementwise->fn == ops::ElementwiseFn::bias;
    stage->y_tile_ = !stage->y_row_ && ops::elementwise_inputs(elementwise->fn) == 2;
  } else if (const auto* rope = op.as<ops::RopeShape>()) {
    // A token per row; its table row streams beside X as the Y tile.
    stage->kind_ = arch::VectorKind::rope;
    stage->rows_ = rope->rows(), stage->cols_ = rope->cols();
    stage->seq_ = rope->seq, stage->head_dim_ = rope->head_dim, stage->rotary_dim_ = rope->rotary();
    stage->interleaved_ = rope->style == ops::RopeStyle::interleaved;
    stage->y_tile_ = true;
    stage->y_dtype_ = DType::fp32;
    stage->y_cols_ = rope->rotary();
    stage->units_ = stage->rows_;
    return stage;
  } else if (const auto* pool = op.as<ops::PoolShape>()) {
    if (op.dtype == DType::int8) return nullptr;  // the vector unit computes on floats
    stage->kind_ = arch::VectorKind::pool;
    stage->out_dtype_ = accumulator_of(op.dtype);
    stage->cols_ = pool->c;
    stage->h_ = pool->h, stage->w_ = pool->w, stage->p_ = pool->p(), stage->q_ = pool->q();
    stage->r_ = pool->r, stage->s_ = pool->s, stage->stride_ = pool->stride, stage->pad_ = pool->pad;
    stage->average_ = pool->mode == ops::PoolMode::avg;
    stage->rows_ = pool->n * stage->p_ * stage->q_;
    stage->units_ = pool->n * stage->p_;
    return stage;
  } else {
    return nullptr;
  }
  stage->units_ = stage->rows_;
  stage->y_dtype_ = op.dtype;
  stage->y_cols_ = stage->y_tile_ ? stage->cols_ : 0;
  return stage;
}

std::shared_ptr<const VectorStage> VectorStage::epilogue_pass(const EpilogueWork& epilogue) {
  auto stage = std::make_shared<VectorStage>();
  stage->kind_ = arch::VectorKind::map;
  stage->dtype_ = epilogue.dtype();
  stage->out_dtype_ = epilogue.out_dtype();
  stage->rows_ = stage->units_ = epilogue.rows();
  stage->cols_ = epilogue.cols();
  stage->chain_ = epilogue.chain();
  stage->y_tile_ = epilogue.tile();
  stage->y_row_ = epilogue.bias();
  stage->y_dtype_ = stage->dtype_;
  stage->y_cols_ = stage->y_tile_ ? stage->cols_ : 0;
  return stage;
}

bool VectorStage::norm_adds_tile() const {
  return arch::info_of(kind_).operands.y == arch::YRole::residual && y_tile_;
}

std::shared_ptr<const VectorStage> VectorStage::norm_alone() const {
  auto stage = std::make_shared<VectorStage>(*this);
  stage->chain_.clear();
  stage->y_tile_ = false;
  stage->y_cols_ = 0;
  return stage;
}

std::shared_ptr<const VectorStage> VectorStage::residual_add_pass() const {
  auto stage = std::make_shared<VectorStage>();
  stage->kind_ = arch::VectorKind::map;
  stage->dtype_ = stage->out_dtype_ = dtype_;
  stage->rows_ = stage->units_ = rows_;
  stage->cols_ = cols_;
  stage->chain_ = {arch::VecFn::add};
  stage->y_tile_ = true;
  stage->y_dtype_ = dtype_;
  stage->y_cols_ = cols_;
  return stage;
}

int64_t VectorStage::units_left_in_image(int64_t first_unit) const {
  return kind_ == arch::VectorKind::pool ? p_ - first_unit % p_ : units_ - first_unit;
}

VectorStage::Rows VectorStage::x_rows(int64_t first_unit, int64_t units) const {
  if (kind_ != arch::VectorKind::pool) return {first_unit, units};
  const int64_t image = first_unit / p_, y0 = first_unit % p_;
  const int64_t top = std::max<int64_t>(0, y0 * stride_ - pad_);
  const int64_t bottom = std::min(h_, (y0 + units - 1) * stride_ - pad_ + r_);
  return {(image * h_ + top) * w_, (bottom - top) * w_};
}

VectorStage::Rows VectorStage::o_rows(int64_t first_unit, int64_t units) const {
  if (kind_ != arch::VectorKind::pool) return {first_unit, units};
  return {first_unit * q_, units * q_};
}

int64_t VectorStage::x_elements(int64_t first_unit, int64_t units) const {
  return x_rows(first_unit, units).count * cols_;
}
int64_t VectorStage::x_elements_in_blocks(int64_t per_core, int64_t block) const {
  if (kind_ != arch::VectorKind::pool) return rows_ * cols_;
  // A pool's blocks re-read their halo rows: walk the blocks (a few per image), the lowering's way.
  int64_t total = 0;
  for (int64_t first = 0; first < units_; first += per_core) {
    const int64_t last = std::min(units_, first + per_core);
    for (int64_t unit = first; unit < last;) {
      const int64_t units = std::min({block, last - unit, units_left_in_image(unit)});
      total += x_elements(unit, units);
      unit += units;
    }
  }
  return total;
}

std::vector<VectorStage::Rows> VectorStage::y_runs(int64_t first_unit, int64_t units) const {
  if (!y_tile_) return {};
  if (kind_ != arch::VectorKind::rope) return {x_rows(first_unit, units)};
  std::vector<Rows> runs;
  for (int64_t unit = first_unit; unit < first_unit + units;) {
    const int64_t token = unit % seq_, count = std::min(seq_ - token, first_unit + units - unit);
    runs.push_back({token, count});
    unit += count;
  }
  return runs;
}

int64_t VectorStage::y_elements(int64_t units) const {
  return y_tile_ ? units * y_cols_ : 0;
}
int64_t VectorStage::row_parameter_elements() const {
  // Gamma and beta rows of a norm, or an epilogue's bias row.
  const arch::VectorOperandRoles& operands = arch::info_of(kind_).operands;
  const int64_t parameter_rows =
      (operands.g == arch::GRole::parameter_row ? 1 : 0) + (operands.b == arch::BRole::parameter_row ? 1 : 0);
  return (parameter_rows > 0 ? parameter_rows : y_row_ ? 1 : 0) * cols_;
}
int64_t VectorStage::o_elements(int64_t units) const {
  return o_rows(0, units).count * cols_;
}

arch::VecOp VectorStage::block(int64_t first_unit, int64_t units) const {
  arch::VecOp op = arch::VecOp::on_tile(kind_, dtype_, out_dtype_, units, cols_);
  op.chain = chain_;
  op.scale = scale_;
  op.eps = eps_;
  if (kind_ == arch::VectorKind::softmax && causal_) op.causal_shift = first_unit + cols_ - rows_;
  if (kind_ == arch::VectorKind::pool) {
    const int64_t y0 = first_unit % p_;
    const int64_t top = std::max<int64_t>(0, y0 * stride_ - pad_);
    op.ih = x_rows(first_unit, units).count / w_;
    op.iw = w_;
    op.e = units;
    op.q = q_;
    op.r = r_, op.s = s_, op.stride = stride_;
    op.pad_top = top - (y0 * stride_ - pad_);
    op.pad_left = pad_;
    op.average = average_;
    op.rows = units * q_;
  }
  return op;
}

arch::VectorWork VectorStage::work(int64_t first_unit, int64_t units) const {
  if (kind_ == arch::VectorKind::rope)
    return arch::operation_as<arch::VecRope>(instruction(first_unit, units, {})).work();
  return block(first_unit, units).work();
}

arch::Operation VectorStage::instruction(int64_t first_unit, int64_t units, const BlockAddresses& at) const {
  if (kind_ == arch::VectorKind::rope) {
    arch::VecRope rope;
    rope.dtype = dtype_;
    rope.x_address = at.x, rope.y_address = at.y, rope.o_address = at.o;
    rope.rows = units;
    rope.cols = cols_;
    rope.head_dim = head_dim_, rope.rotary_dim = rotary_dim_;
    rope.interleaved = interleaved_;
    return rope;
  }
  arch::VecOp op = block(first_unit, units);
  op.x_address = at.x;
  op.o_address = at.o;
  if (y_tile_) op.y_address = at.y;
  // Only the addresses the kind reads, so that the program's text (which writes no others) reads back as
  // this very instruction.
  const arch::VectorOperandRoles& operands = arch::info_of(kind_).operands;
  if (operands.g == arch::GRole::parameter_row) op.g_address = at.parameters;
  if (op.uses_b())
    op.b_address =
        operands.b == arch::BRole::bias_step
            ? at.parameters                                                       // a bias row
            : at.parameters + static_cast<uint64_t>(cols_ * size_bytes(dtype_));  // beta after gamma
  return op;
}

namespace {

// An unfused norm of X + R: the pass X + R -> T over every core, a barrier, then the norm over T: one after
// the other; T goes to DRAM and comes back.
Cost evaluate_with_prologue(const Mapping& mapping, const arch::ArchSpec& spec, double output_fraction) {
  Mapping main = mapping;
  main.prologue_pass = nullptr;
  Cost cost = evaluate_vector(main, spec, output_fraction);
  const Cost first = evaluate_vector(*mapping.prologue_pass, spec);
  cost.cycles += first.cycles;
  cost.compute_cycles += first.compute_cycles;
  cost.dma_cycles += first.dma_cycles;
  cost.dram_cycles += first.dram_cycles;
  cost.overhead_cycles += first.overhead_cycles;
  for (size_t tensor = 0; tensor < cost.dram_bytes_by_tensor.size(); ++tensor)
    cost.dram_bytes_by_tensor[tensor] += first.dram_bytes_by_tensor[tensor];
  cost.dram_bytes += first.dram_bytes;
  cost.sram_bytes += first.sram_bytes;
  cost.energy_pj += first.energy_pj;
  return cost;
}

}  // namespace

Cost evaluate_vector(const Mapping& mapping, const arch::ArchSpec& spec, double output_fraction) {
  if (mapping.prologue_pass) return evaluate_with_prologue(mapping, spec, output_fraction);
  const VectorStage& stage = vector_stage_of(mapping);
  const int64_t per_core = mapping.tile_n, block = mapping.tile_m;
  const int cores = cores_used(stage.units(), per_core);
  const int64_t blocks = ceil_div(per_core, block);
  const arch::VectorTiming vector = arch::vector_timing(*spec.core.vector, stage.work(0, block));
  const int64_t element = size_bytes(stage.dtype()), out_element = size_bytes(stage.out_dtype());
  const int64_t y_element = size_bytes(stage.y_dtype());
  const auto [load_bytes, raw_store_bytes] = block_bytes(stage, block);
  // A coded output's stores move its code: the DMA engine's issue and the DRAM see the coded bytes.
  const int64_t store_bytes = arch::coded_bytes(raw_store_bytes, output_fraction);
  const arch::DmaSpec& dma = spec.core.dma;
  auto transfer = [&](int64_t bytes, int descriptors) {
    return descriptors * int64_t{dma.setup_cycles} +
           static_cast<int64_t>(std::ceil(static_cast<double>(bytes) / dma.bytes_per_cycle));
  };
  // Each block's X load and O store cut into row blocks over their engines (mapper/kit/dma_engines.hpp).
  const PassEngines engines = pass_engines_of(stage, block, spec);
  const int64_t x_blocks =
                    blocks_of(stage.x_rows(0, block).count, stage.cols() * element, engines.loads, dma),
                o_blocks =
                    blocks_of(stage.o_rows(0, block).count, stage.cols() * out_element, engines.stores, dma);
  auto spread = [&](int64_t bytes, int descriptors, int64_t blocks) {
    return descriptors * int64_t{dma.setup_cycles} +
           static_cast<int64_t>(std::ceil(static_cast<double>(bytes) / dma.bytes_per_cycle / blocks));
  };
  const int64_t load = spread(load_bytes, 1 + static_cast<int>(stage.y_runs(0, block).size()), x_blocks);
  const int64_t store = spread(store_bytes, 1, o_blocks);
  // The DRAM's time for bytes every core moves at once: a transfer takes the longer of it and its DMA time.
  auto dram_time = [&](int64_t bytes) {
    return static_cast<int64_t>(std::ceil(static_cast<double>(bytes * cores) / spec.dram.bytes_per_cycle));
  };
  const int64_t dram = dram_time(load_bytes + store_bytes);
  const int64_t dma_per_block = dma.engines > 1 ? std::max(load, store) : load + store;
  const int64_t load_time = std::max(load, dram_time(load_bytes)),
                store_time = std::max(store, dram_time(store_bytes));
  // A block's X lands a DRAM round trip (latency, the routers to the core and back) after its load is
  // issued. With two buffers the load is issued when the block before last frees its buffer, so in steady
  // state a block starts (round trip + load + the vector unit's time on a block) / 2 after the one before;
  // with one the whole trip is exposed. Leaving it out had a pass of small blocks (an unfused epilogue's
  // 1 KiB blocks) at a third of its simulated cycles (scripts/cost-vs-sim.py).
  const double round_trip =
      spec.dram.latency_cycles + (arch::dram_round_trip_hops(spec) + 1) * spec.noc.router_latency_cycles;
  const int64_t trip = static_cast<int64_t>(std::ceil(round_trip));
  const int64_t step =
      mapping.double_buffer_inputs
          ? std::max({vector.cycles, dma_per_block, dram, (trip + load_time + vector.cycles + 1) / 2})
          : vector.cycles + load_time + store_time + trip;
  Cost cost;
  cost.compute_cycles = blocks * vector.cycles;
  cost.dma_cycles = blocks * dma_per_block;
  cost.dram_cycles = blocks * dram;
  cost.overhead_cycles = int64_t{spec.dram.latency_cycles} + load + store +
                         transfer(stage.row_parameter_elements() * element, 1);
  cost.cycles = blocks * step + cost.overhead_cycles;
  cost.bound = cost.compute_cycles >= std::max(cost.dma_cycles, cost.dram_cycles) ? Bound::compute
               : cost.dram_cycles >= cost.dma_cycles                              ? Bound::dram
                                                                                  : Bound::dma;
  // DRAM bytes: every block's X (a pool's halo rows again), Y and O; the row parameters once per core.
  const int64_t x_total = stage.x_elements_in_blocks(per_core, block);
  cost.dram_bytes_by_tensor = {
      x_total * element,
      stage.y_elements(stage.units()) * y_element + stage.row_parameter_elements() * cores * element,
      arch::coded_bytes(stage.o_elements(stage.units()) * out_element, output_fraction)};
  cost.dram_bytes =
      cost.dram_bytes_by_tensor[0] + cost.dram_bytes_by_tensor[1] + cost.dram_bytes_by_tensor[2];
  // The SRAM side of the DMA moves the values, raw.
  const int64_t dma_sram_bytes = cost.dram_bytes_by_tensor[0] + cost.dram_bytes_by_tensor[1] +
                                 stage.o_elements(stage.units()) * out_element;
  // The row parameters are of the op's type; a rope's parameters, its table rows, are fp32.
  const int64_t parameter_element = stage.kind() == arch::VectorKind::rope ? y_element : element;
  const arch::VectorSramTraffic sram = arch::vector_sram_traffic(
      stage.work(0, block), arch::VectorElementBytes{element, out_element, parameter_element});
  cost.sram_bytes = (sram.read_bytes + sram.write_bytes) * ceil_div(stage.units(), block) + dma_sram_bytes;
  arch::EnergyCounts counts;
  counts.sram_bytes = static_cast<double>(cost.sram_bytes);
  counts.dram_bytes = static_cast<double>(cost.dram_bytes);
  counts.cycles = cost.cycles;
  cost.energy_pj = arch::energy_pj(spec, counts);
  return cost;
}

namespace {

// Every legal (cores, rows per block, buffering) of `stage`, scored; the best `limit` kept. Throws InputError
// when none fits.
DataflowSearch search_blocks(const std::shared_ptr<const VectorStage>& stage, const arch::ArchSpec& spec,
                             const SearchOptions& options, int64_t& evaluated,
                             const std::function<void(Mapping&)>& complete) {
  const size_t limit = static_cast<size_t>(std::max(1, options.keep_per_dataflow));
  DataflowSearch search;
  search.stage_kind = "vector";
  search.label_text = "vec";
  std::string smallest_need;
  const int64_t units = stage->units();
  // Per core: a power of two of the cores (or all of them), each taking an equal share of the units.
  std::vector<int> core_counts;
  for (int cores = 1; cores < spec.mesh.cores(); cores *= 2) core_counts.push_back(cores);
  core_counts.push_back(spec.mesh.cores());
  uint64_t index = 0;
  for (int cores : core_counts) {
    const int64_t per_core = ceil_div(units, std::min<int64_t>(cores, units));
    if (cores > 1 && cores_used(units, per_core) < cores && cores != spec.mesh.cores()) continue;
    std::vector<int64_t> blocks;
    const int64_t largest = std::min(per_core, stage->units_left_in_image(0));
    for (int64_t block = 1; block < largest; block *= 2) blocks.push_back(block);
    blocks.push_back(largest);
    for (int64_t block : blocks) {
      for (bool double_buffer : {true, false}) {
        const VectorBuffers buffers = buffers_of(*stage, block, double_buffer, spec);
        if (buffers.total() > spec.core.sram.bytes) {
          if (smallest_need.empty() && block == 1 && !double_buffer)
            smallest_need = fmt::format("a block of one row needs {} KiB of SRAM, the core has {} KiB",
                                        ceil_div(buffers.total(), 1024), spec.core.sram.kib);
          continue;
        }
        if (!arch::vector_work_problem(*spec.core.vector, stage->work(0, block)).empty()) continue;
        Mapping mapping;
        mapping.form = stage;
        mapping.split_m = cores_used(units, per_core);
        mapping.tile_n = per_core;
        mapping.tile_m = block;
        mapping.double_buffer_inputs = mapping.double_buffer_output = double_buffer;
        if (complete) complete(mapping);
        Candidate candidate{mapping, evaluate_vector(mapping, spec), index++};
        ++evaluated;
        ++search.legal;
        keep_pareto(search.front, candidate);
        keep_best(search.best, std::move(candidate), limit, options.objective);
      }
    }
  }
  if (search.legal == 0) {
    const std::string field = "core.sram.kib";
    const SourceLocation where = options.locate_field ? options.locate_field(field) : SourceLocation{};
    throw InputError(
        where, field,
        fmt::format("no legal mapping for {}: {}", options.op_description,
                    smallest_need.empty() ? "no block fits the vector unit's limits" : smallest_need),
        "give the core more SRAM, or make the rows shorter");
  }
  return search;
}

}  // namespace

SearchResult search_vector(const std::shared_ptr<const VectorStage>& stage, const arch::ArchSpec& spec,
                           const SearchOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  int64_t evaluated = 0;
  SearchResult result;
  result.objective = options.objective;
  if (!stage->norm_adds_tile()) {
    result.per_dataflow.push_back(search_blocks(stage, spec, options, evaluated, nullptr));
  } else {
    // A norm of X + R, searched both ways side by side: fused (one instruction reads both tiles), and
    // unfused (the best pass X + R -> T over every core, a barrier, then the norm of T).
    std::optional<InputError> fused_error;
    try {
      DataflowSearch fused = search_blocks(stage, spec, options, evaluated,
                                           [](Mapping& mapping) { mapping.fusion = Fusion::fused; });
      fused.fusion = Fusion::fused;
      fused.label_text = "vec fused";
      result.per_dataflow.push_back(std::move(fused));
    } catch (const InputError& error) {
      fused_error = error;  // its two input tiles may not fit where the unfused passes' do
    }
    try {
      const DataflowSearch add = search_blocks(stage->residual_add_pass(), spec, options, evaluated, nullptr);
      const auto prologue = std::make_shared<const Mapping>(add.best.front().mapping);
      DataflowSearch unfused =
          search_blocks(stage->norm_alone(), spec, options, evaluated, [&](Mapping& mapping) {
            mapping.fusion = Fusion::unfused;
            mapping.prologue_pass = prologue;
          });
      unfused.fusion = Fusion::unfused;
      unfused.label_text = "vec unfused";
      result.per_dataflow.push_back(std::move(unfused));
    } catch (const InputError&) {
      if (fused_error) throw *fused_error;
    }
  }
  result.evaluated = evaluated;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return result;
}

}  // namespace tessera::mapper
