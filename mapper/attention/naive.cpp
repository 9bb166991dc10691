#include "mapper/attention/naive.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "arch/isa/vec_op.hpp"
#include "mapper/attention/program.hpp"
#include "mapper/kit/instruction_timer.hpp"
#include "mapper/kit/program_builder.hpp"
#include "mapper/kit/program_header.hpp"

namespace tessera::mapper {

namespace {

using Block = AttentionStage::QBlock;

// The SRAM of the three passes, each its own (they run side by side on a core's successive blocks): S pass: Q
// block, two K tiles, two fp32 S tiles and two S tiles in the op's type; softmax pass: two chunks of S rows
// (softmax in place, so P leaves from where S came in); P V pass: two P tiles, two V tiles, the fp32
// accumulator and the output block.
struct NaiveBuffers {
  uint64_t q = 0, k[2] = {}, s_accumulator[2] = {}, s_out[2] = {};
  uint64_t chunk[2] = {};
  uint64_t p[2] = {}, v[2] = {}, accumulator = 0, out = 0;
  uint64_t end = 0;
};

NaiveBuffers naive_buffers(const AttentionStage& stage, int64_t rows, int64_t cols, int64_t softmax_rows) {
  const int64_t element = size_bytes(stage.dtype()), d = stage.shape().head_dim, keys = stage.shape().seq_kv;
  NaiveBuffers b;
  SramCursor sram;
  b.q = sram.take(rows * d * element);
  for (int i = 0; i < 2; ++i) b.k[i] = sram.take(cols * d * element);
  for (int i = 0; i < 2; ++i) b.s_accumulator[i] = sram.take(rows * cols * 4);
  for (int i = 0; i < 2; ++i) b.s_out[i] = sram.take(rows * cols * element);
  for (int i = 0; i < 2; ++i) b.chunk[i] = sram.take(softmax_rows * keys * element);
  for (int i = 0; i < 2; ++i) b.p[i] = sram.take(rows * cols * element);
  for (int i = 0; i < 2; ++i) b.v[i] = sram.take(cols * d * element);
  b.accumulator = sram.take(rows * d * 4);
  b.out = sram.take(rows * d * element);
  b.end = sram.at;
  return b;
}

struct NaiveTiling {
  int64_t rows = 0, cols = 0, softmax_rows = 0;
  int cores = 0;
};

NaiveTiling tiling_of(const Mapping& mapping) {
  const AttentionStage::Choice& t = AttentionStage::choice_of(mapping);
  return NaiveTiling{t.block_rows, t.block_cols, t.softmax_rows, static_cast<int>(t.cores)};
}

// A core's blocks: an even share, in order (as the flash form shares them).
std::pair<size_t, size_t> blocks_of_core(int core, int cores, size_t blocks) {
  return {static_cast<size_t>(core) * blocks / static_cast<size_t>(cores),
          static_cast<size_t>(core + 1) * blocks / static_cast<size_t>(cores)};
}

// The causal shift of the softmax of rows [r0, r0 + rows) of `block` over its keys_seen columns, where some
// row may not see them all; kNoCausalMask where every row sees every column.
int64_t chunk_shift(const AttentionStage& stage, const Block& block, int64_t r0, int64_t keys) {
  if (!stage.masked()) return arch::kNoCausalMask;
  const int64_t shift = stage.causal_shift(block, 0) + r0;
  return keys - 1 > shift ? shift : arch::kNoCausalMask;
}

}  // namespace

int64_t naive_sram_bytes(const AttentionStage& stage, int64_t rows, int64_t cols, int64_t softmax_rows) {
  return static_cast<int64_t>(naive_buffers(stage, rows, cols, softmax_rows).end);
}

int64_t naive_softmax_rows(const AttentionStage& stage, int64_t rows, int64_t cols, int64_t sram_bytes) {
  for (int64_t softmax_rows = rows; softmax_rows >= 1; softmax_rows /= 2)
    if (naive_sram_bytes(stage, rows, cols, softmax_rows) <= sram_bytes) return softmax_rows;
  return 0;
}

int64_t naive_intermediate_bytes(const AttentionStage& stage, int64_t block_rows) {
  int64_t elements = 0;
  for (const Block& block : stage.q_blocks(block_rows)) elements += block.rows * stage.keys_seen(block);
  return 4 * elements * size_bytes(stage.dtype());
}

std::string describe_naive(const Mapping& mapping) {
  const NaiveTiling t = tiling_of(mapping);
  return fmt::format(
      "naive {} cores {} q blocks of {} rows, k/v tiles of {}, softmax over {} rows of S at a time; S and P "
      "through DRAM",
      arch::name_of(mapping.dataflow), t.cores, t.rows, t.cols, t.softmax_rows);
}

Cost evaluate_naive(const AttentionStage& stage, const Mapping& mapping, const arch::ArchSpec& spec) {
  const ops::AttentionShape& a = stage.shape();
  const NaiveTiling t = tiling_of(mapping);
  const int64_t d = a.head_dim, element = size_bytes(stage.dtype());
  const InstructionTimer timer(spec);
  const arch::VectorSpec& vector = *spec.core.vector;
  const arch::DmaSpec& dma = spec.core.dma;
  const int64_t tokens_per_block = a.paged() ? a.kv_cache.block_tokens : t.cols;
  const int64_t kv_descriptors = std::max<int64_t>(1, ceil_div(t.cols, tokens_per_block));
  // A pass's work of one block on each unit of its core; `loads` and `stores` on the DMA engines.
  struct Work {
    int64_t pe = 0, vec = 0, loads = 0, stores = 0;
    Work& operator+=(const Work& other) {
      pe += other.pe, vec += other.vec, loads += other.loads, stores += other.stores;
      return *this;
    }
  };
  const std::vector<Block> blocks = stage.q_blocks(t.rows);
  struct BlockWork {
    Work s, softmax, pv;
  };
  std::vector<BlockWork> work;
  int64_t kv_bytes = 0;
  for (const Block& block : blocks) {
    const int64_t keys = stage.keys_seen(block), tiles = ceil_div(keys, t.cols),
                  chunks = ceil_div(block.rows, t.softmax_rows);
    const int64_t chunk_rows = std::min(t.softmax_rows, block.rows);
    const int64_t s_tile = block.rows * t.cols * element;
    BlockWork w;
    w.s.pe = tiles * timer.matmul(mapping.dataflow, block.rows, t.cols, d).interval;
    w.s.vec = tiles * vector_cycles(vector, arch::VectorKind::map, block.rows, t.cols, 1);
    w.s.loads = transfer_cycles(dma, block.rows * d * element, 1) +
                tiles * transfer_cycles(dma, t.cols * d * element, kv_descriptors);
    w.s.stores = tiles * transfer_cycles(dma, s_tile, 1);
    w.softmax.vec =
        chunks * vector_cycles(vector, arch::VectorKind::softmax, chunk_rows, keys, stage.masked() ? 1 : 0);
    w.softmax.loads = w.softmax.stores = chunks * transfer_cycles(dma, chunk_rows * keys * element, 1);
    w.pv.pe = tiles * timer.matmul(mapping.dataflow, block.rows, d, t.cols).interval;
    w.pv.vec = vector_cycles(vector, arch::VectorKind::map, block.rows, d, 1);
    w.pv.loads = tiles * (transfer_cycles(dma, s_tile, 1) +
                          transfer_cycles(dma, t.cols * d * element, kv_descriptors));
    w.pv.stores = transfer_cycles(dma, block.rows * d * element, 1);
    work.push_back(w);
    kv_bytes += 2 * keys * d * element;
  }
  // Per core, step s runs block s's S pass, block s-1's softmax and block s-2's P V side by side: the step
  // takes its busiest unit's time (both DMA directions on one engine where the core has one).
  std::vector<int64_t> core_cycles(static_cast<size_t>(t.cores), 0), core_pe(core_cycles),
      core_vec(core_cycles), core_dma(core_cycles);
  for (int core = 0; core < t.cores; ++core) {
    const auto [first, last] = blocks_of_core(core, t.cores, blocks.size());
    const size_t count = last - first;
    for (size_t step = 0; step < count + 2; ++step) {
      Work in_flight;
      if (step < count) in_flight += work[first + step].s;
      if (step >= 1 && step - 1 < count) in_flight += work[first + step - 1].softmax;
      if (step >= 2) in_flight += work[first + step - 2].pv;
      const int64_t dma_time =
          dma.engines > 1 ? std::max(in_flight.loads, in_flight.stores) : in_flight.loads + in_flight.stores;
      const auto c = static_cast<size_t>(core);
      core_cycles[c] += std::max({in_flight.pe, in_flight.vec, dma_time});
      core_pe[c] += in_flight.pe;
      core_vec[c] += in_flight.vec;
      core_dma[c] += in_flight.loads + in_flight.stores;
    }
  }
  Cost cost;
  const int64_t q_bytes = a.batch * a.heads * a.seq_q * d * element;
  const int64_t intermediate_bytes = naive_intermediate_bytes(stage, t.rows);
  cost.dram_bytes_by_tensor = {q_bytes, kv_bytes, q_bytes};
  cost.dram_bytes = 2 * q_bytes + kv_bytes + intermediate_bytes;
  cost.compute_cycles = *std::max_element(core_pe.begin(), core_pe.end());
  cost.vector_cycles = *std::max_element(core_vec.begin(), core_vec.end());
  cost.dma_cycles = *std::max_element(core_dma.begin(), core_dma.end());
  attention::finish_cost(cost, core_cycles, a, spec);
  return cost;
}

namespace {

// rows x cols fp32 values at `from` times `scale`, rounded to `dtype` at `to`: S = scale * Q K^T, or O (scale
// 1).
arch::VecOp round_op(uint64_t from, uint64_t to, int64_t rows, int64_t cols, double scale, DType dtype) {
  arch::VecOp round = arch::VecOp::on_tile(arch::VectorKind::map, DType::fp32, dtype, rows, cols, from, to);
  round.chain = {arch::VecFn::scale};
  round.scale = scale;
  return round;
}

// Each pass of each block is a list of parts, each part instructions in program order: a tile's (or a
// chunk's) loads, then its compute and store, the loads one tile ahead so that on one DMA engine the next
// tile's loads are queued before this tile's store. Every wait is on a signal of an earlier part of the same
// pass, or of an earlier step: the parts' order is one every queue can follow, whatever the queues.
using Part = std::vector<arch::Instruction>;
struct Pass {
  std::vector<Part> loads, rest;  // per tile or chunk
};

std::vector<Part> parts_of(Pass pass) {
  std::vector<Part> parts;
  if (pass.loads.empty()) return parts;
  parts.push_back(std::move(pass.loads[0]));
  for (size_t i = 0; i < pass.rest.size(); ++i) {
    if (i + 1 < pass.loads.size()) parts.push_back(std::move(pass.loads[i + 1]));
    parts.push_back(std::move(pass.rest[i]));
  }
  return parts;
}

// One K/V tile of a block's S or P V pass: keys [k0, k0 + cols), the core's n-th tile of the pass (its
// double buffers' parity), the block's first and last, the runs of K (V) rows it reads.
struct NaiveTile {
  int64_t k0 = 0, cols = 0, n = 0;
  bool first = false, last = false;
  std::vector<attention::Run> runs;
  int buffer() const { return static_cast<int>(n % 2); }
};

// The naive form's program (lower_naive), core by core: each block's S, softmax and P V passes, pipelined.
// A double buffer's semaphores are "name[0]" and "name[1]", those of its tile (chunk, block) n "name[n % 2]".
class NaiveLowering {
 public:
  NaiveLowering(const AttentionStage& stage, const Mapping& mapping, const arch::ArchSpec& spec,
                arch::Program& program, const attention::ProgramTensors& tensors);
  // Core `core`'s program, where it has blocks: step s runs block s's S pass, block s-1's softmax and block
  // s-2's P V.
  void lower_core(int core);

 private:
  // A pass of block i, as parts.
  std::vector<Part> s_pass(size_t i);
  std::vector<Part> softmax_pass(size_t i);
  std::vector<Part> pv_pass(size_t i);
  // The core's n-th tile of its pass, keys from k0 of `block`.
  NaiveTile tile_of(const Block& block, int64_t k0, int64_t n) const;
  // An S pass's tile: its loads (the block's Q before its first tile, then K), then S, its rounding and
  // store.
  Part s_loads(size_t i, const NaiveTile& tile);
  Part s_rest(size_t i, const NaiveTile& tile);
  // A P V pass's tile: its loads (P, then V), then P V and, after the last, O's rounding and store.
  Part pv_loads(size_t i, const NaiveTile& tile);
  Part pv_rest(size_t i, const NaiveTile& tile);

  const AttentionStage& stage_;
  const arch::ArchSpec& spec_;
  const arch::Dataflow dataflow_;
  const NaiveTiling tiling_;
  const NaiveBuffers buffers_;
  arch::Program& program_;
  const attention::ProgramTensors& tensors_;
  const int s_tensor_, p_tensor_;
  const arch::QueueId load_queue_, store_queue_;
  const EngineGroup load_group_{0, 1};
  EngineDealer load_dealer_;
  const attention::KvLoader loader_;
  const Semaphores semaphores_;
  IndexedSemaphores ids_;
  const std::vector<Block> blocks_;
  size_t first_ = 0;                                 // the core's first block
  int64_t s_tiles_ = 0, chunks_ = 0, pv_tiles_ = 0;  // over the core so far: the double buffers' parity
};

NaiveLowering::NaiveLowering(const AttentionStage& stage, const Mapping& mapping, const arch::ArchSpec& spec,
                             arch::Program& program, const attention::ProgramTensors& tensors)
    : stage_(stage),
      spec_(spec),
      dataflow_(mapping.dataflow),
      tiling_(tiling_of(mapping)),
      buffers_(naive_buffers(stage, tiling_.rows, tiling_.cols, tiling_.softmax_rows)),
      program_(program),
      tensors_(tensors),
      s_tensor_(tensors.intermediates[0]),
      p_tensor_(tensors.intermediates[1]),
      load_queue_(dma_queue(0)),
      store_queue_(dma_queue(spec.core.dma.engines > 1 ? 1 : 0)),
      load_dealer_(load_group_, spec.core.dma),
      loader_{program, tensors, load_group_, stage.shape().head_dim, size_bytes(stage.dtype())},
      semaphores_(program),
      ids_(program),
      blocks_(stage.q_blocks(tiling_.rows)) {}

void NaiveLowering::lower_core(int core) {
  const auto [first, last] = blocks_of_core(core, tiling_.cores, blocks_.size());
  if (first == last) return;
  program_.cores.emplace_back();
  program_.cores.back().coord = arch::core_coord(core, spec_.mesh);
  std::vector<arch::Instruction>& list = program_.cores.back().instructions;
  first_ = first;
  s_tiles_ = chunks_ = pv_tiles_ = 0;
  // Step s: block s's S pass, block s-1's softmax and block s-2's P V, their parts interleaved evenly (a
  // part's place: its index over its pass's count), so that each unit has the three passes' work in turn.
  const size_t count = last - first;
  for (size_t step = 0; step < count + 2; ++step) {
    std::vector<std::vector<Part>> passes;
    if (step < count) passes.push_back(s_pass(first + step));
    if (step >= 1 && step - 1 < count) passes.push_back(softmax_pass(first + step - 1));
    if (step >= 2) passes.push_back(pv_pass(first + step - 2));
    std::vector<std::pair<double, Part*>> order;
    for (std::vector<Part>& pass : passes)
      for (size_t p = 0; p < pass.size(); ++p)
        order.emplace_back((static_cast<double>(p) + 0.5) / static_cast<double>(pass.size()), &pass[p]);
    std::stable_sort(order.begin(), order.end(),
                     [](const auto& x, const auto& y) { return x.first < y.first; });
    for (const auto& [key, part] : order)
      for (arch::Instruction& instruction : *part) list.push_back(std::move(instruction));
  }
}

NaiveTile NaiveLowering::tile_of(const Block& block, int64_t k0, int64_t n) const {
  const int64_t keys = stage_.keys_seen(block), cols = std::min(tiling_.cols, keys - k0);
  return NaiveTile{k0,
                   cols,
                   n,
                   k0 == 0,
                   k0 + tiling_.cols >= keys,
                   attention::kv_runs(stage_.shape(), tensors_.table, block.b, block.g, k0, cols)};
}

std::vector<Part> NaiveLowering::s_pass(size_t i) {
  const int64_t keys = stage_.keys_seen(blocks_[i]);
  Pass pass;
  for (int64_t k0 = 0; k0 < keys; k0 += tiling_.cols, ++s_tiles_) {
    const NaiveTile tile = tile_of(blocks_[i], k0, s_tiles_);
    pass.loads.push_back(s_loads(i, tile));
    pass.rest.push_back(s_rest(i, tile));
  }
  return parts_of(std::move(pass));
}

Part NaiveLowering::s_loads(size_t i, const NaiveTile& tile) {
  const Block& block = blocks_[i];
  const int buffer = tile.buffer();
  Part loads;
  if (tile.first) {
    arch::DmaLoad load;
    load.source = arch::TensorRegion{tensors_.q, block.first_row, block.rows, 0, stage_.shape().head_dim};
    load.sram_address = buffers_.q;
    arch::Waits waits;
    if (i != first_) waits.push_back(semaphores_.wait("q_free"));
    loads.push_back(make_instruction(load_queue_, load, waits, {semaphores_.here("q_full")}));
  }
  attention::append_kv_loads(loads, loader_, {"k", buffer, buffers_.k[buffer]}, tile.runs,
                             attention::deal_runs(load_dealer_, tile.runs, loader_.d * loader_.element),
                             tile.n >= 2 ? 1 : 0, {});
  return loads;
}

Part NaiveLowering::s_rest(size_t i, const NaiveTile& tile) {
  const Block& block = blocks_[i];
  const int buffer = tile.buffer();
  Part rest;
  arch::PeMatmul scores =
      stage_.matmul_op(dataflow_, buffers_.q, buffers_.k[buffer], buffers_.s_accumulator[buffer], block.rows,
                       tile.cols, stage_.shape().head_dim);
  scores.w_transposed = true;
  arch::Waits waits = {ids_.wait("k_full", buffer, static_cast<int>(tile.runs.size()))};
  if (tile.first) waits.push_back(semaphores_.wait("q_full"));
  if (tile.n >= 2) waits.push_back(ids_.wait("s_accumulator_free", buffer));
  arch::Signals signals = {ids_.here("s_accumulator_full", buffer), ids_.here("k_free", buffer)};
  if (tile.last) signals.push_back(semaphores_.here("q_free"));
  rest.push_back(make_instruction(pe_queue(), scores, waits, signals));
  // S = scale * Q K^T in the op's type.
  arch::Waits round_waits = {ids_.wait("s_accumulator_full", buffer)};
  if (tile.n >= 2) round_waits.push_back(ids_.wait("s_out_free", buffer));
  rest.push_back(make_instruction(
      vec_queue(),
      round_op(buffers_.s_accumulator[buffer], buffers_.s_out[buffer], block.rows, tile.cols,
               stage_.shape().effective_scale(), stage_.dtype()),
      round_waits, {ids_.here("s_accumulator_free", buffer), ids_.here("s_out_full", buffer)}));
  arch::DmaStore store;
  store.sram_address = buffers_.s_out[buffer];
  store.destination = arch::TensorRegion{s_tensor_, block.first_row, block.rows, tile.k0, tile.cols};
  rest.push_back(make_instruction(store_queue_, store, {ids_.wait("s_out_full", buffer)},
                                  {ids_.here("s_out_free", buffer), ids_.here("s_stored", i % 2)}));
  return rest;
}

std::vector<Part> NaiveLowering::softmax_pass(size_t i) {
  const Block& block = blocks_[i];
  const int64_t keys = stage_.keys_seen(block);
  const int s_stores = static_cast<int>(ceil_div(keys, tiling_.cols));
  Pass pass;
  for (int64_t r0 = 0; r0 < block.rows; r0 += tiling_.softmax_rows, ++chunks_) {
    const int64_t rows = std::min(tiling_.softmax_rows, block.rows - r0), parity = chunks_ % 2;
    const uint64_t chunk = buffers_.chunk[parity];
    arch::DmaLoad load;
    load.source = arch::TensorRegion{s_tensor_, block.first_row + r0, rows, 0, keys};
    load.sram_address = chunk;
    arch::Waits waits;
    if (r0 == 0) waits.push_back(ids_.wait("s_stored", i % 2, s_stores));
    if (chunks_ >= 2) waits.push_back(ids_.wait("chunk_free", parity));
    pass.loads.push_back({make_instruction(store_queue_, load, waits, {ids_.here("chunk_full", parity)})});
    arch::VecOp softmax = arch::VecOp::on_tile(arch::VectorKind::softmax, stage_.dtype(), stage_.dtype(),
                                               rows, keys, chunk, chunk);
    softmax.causal_shift = chunk_shift(stage_, block, r0, keys);
    Part rest = {make_instruction(vec_queue(), softmax, {ids_.wait("chunk_full", parity)},
                                  {ids_.here("chunk_done", parity)})};
    arch::DmaStore store;
    store.sram_address = chunk;
    store.destination = arch::TensorRegion{p_tensor_, block.first_row + r0, rows, 0, keys};
    rest.push_back(make_instruction(store_queue_, store, {ids_.wait("chunk_done", parity)},
                                    {ids_.here("chunk_free", parity), ids_.here("p_stored", i % 2)}));
    pass.rest.push_back(std::move(rest));
  }
  return parts_of(std::move(pass));
}

std::vector<Part> NaiveLowering::pv_pass(size_t i) {
  const int64_t keys = stage_.keys_seen(blocks_[i]);
  Pass pass;
  for (int64_t k0 = 0; k0 < keys; k0 += tiling_.cols, ++pv_tiles_) {
    const NaiveTile tile = tile_of(blocks_[i], k0, pv_tiles_);
    pass.loads.push_back(pv_loads(i, tile));
    pass.rest.push_back(pv_rest(i, tile));
  }
  return parts_of(std::move(pass));
}

Part NaiveLowering::pv_loads(size_t i, const NaiveTile& tile) {
  const Block& block = blocks_[i];
  const int buffer = tile.buffer();
  const int p_stores = static_cast<int>(ceil_div(block.rows, tiling_.softmax_rows));
  Part loads;
  arch::DmaLoad load;
  load.source = arch::TensorRegion{p_tensor_, block.first_row, block.rows, tile.k0, tile.cols};
  load.sram_address = buffers_.p[buffer];
  arch::Waits waits;
  if (tile.first) waits.push_back(ids_.wait("p_stored", i % 2, p_stores));
  if (tile.n >= 2) waits.push_back(ids_.wait("p_free", buffer));
  loads.push_back(make_instruction(load_queue_, load, waits, {ids_.here("p_full", buffer)}));
  attention::append_kv_loads(loads, loader_, {"v", buffer, buffers_.v[buffer]}, tile.runs,
                             attention::deal_runs(load_dealer_, tile.runs, loader_.d * loader_.element),
                             tile.n >= 2 ? 1 : 0, {});
  return loads;
}

Part NaiveLowering::pv_rest(size_t i, const NaiveTile& tile) {
  const Block& block = blocks_[i];
  const int64_t d = stage_.shape().head_dim;
  const int buffer = tile.buffer();
  Part rest;
  arch::PeMatmul pv = stage_.matmul_op(dataflow_, buffers_.p[buffer], buffers_.v[buffer],
                                       buffers_.accumulator, block.rows, d, tile.cols);
  pv.accumulate = !tile.first;
  arch::Waits waits = {ids_.wait("v_full", buffer, static_cast<int>(tile.runs.size())),
                       ids_.wait("p_full", buffer)};
  if (tile.first && i != first_) waits.push_back(semaphores_.wait("accumulator_free"));
  arch::Signals signals = {ids_.here("p_free", buffer), ids_.here("v_free", buffer)};
  if (tile.last) signals.push_back(semaphores_.here("pv_done"));
  rest.push_back(make_instruction(pe_queue(), pv, waits, signals));
  if (!tile.last) return rest;
  arch::Waits round_waits = {semaphores_.wait("pv_done")};
  if (i != first_) round_waits.push_back(semaphores_.wait("out_free"));
  rest.push_back(make_instruction(
      vec_queue(), round_op(buffers_.accumulator, buffers_.out, block.rows, d, 1.0, stage_.dtype()),
      round_waits, {semaphores_.here("accumulator_free"), semaphores_.here("out_full")}));
  arch::DmaStore store;
  store.sram_address = buffers_.out;
  store.destination = arch::TensorRegion{tensors_.o, block.first_row, block.rows, 0, d};
  rest.push_back(
      make_instruction(store_queue_, store, {semaphores_.wait("out_full")}, {semaphores_.here("out_free")}));
  return rest;
}

}  // namespace

arch::Program lower_naive(const AttentionStage& stage, const ops::Op& op, uint64_t seed,
                          const Mapping& mapping, const arch::ArchSpec& spec,
                          const std::string& program_name) {
  const ops::AttentionShape& a = stage.shape();
  // S and P: the scores and the probabilities, [b * h * seq_q, seq_kv] in the op's type, written by the
  // program and read back by it.
  std::vector<arch::TensorDecl> intermediates;
  for (const char* name : {"S", "P"}) {
    arch::TensorDecl tensor;
    tensor.name = name;
    tensor.dtype = stage.dtype();
    tensor.rows = a.batch * a.heads * a.seq_q;
    tensor.cols = a.seq_kv;
    tensor.role = arch::TensorRole::output;
    intermediates.push_back(tensor);
  }
  arch::Program program;
  const attention::ProgramTensors tensors =
      attention::start_attention_program(program, program_name, op, seed, spec, a, intermediates);
  NaiveLowering lowering(stage, mapping, spec, program, tensors);
  for (int core = 0; core < tiling_of(mapping).cores; ++core) lowering.lower_core(core);
  program.number_semaphores_by_appearance();
  return program;
}

}  // namespace tessera::mapper
