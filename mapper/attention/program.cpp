#include "mapper/attention/program.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "arch/figures.hpp"
#include "arch/isa/vec_op.hpp"
#include "arch/timing/vector_timing.hpp"
#include "common/error.hpp"
#include "mapper/kit/program_builder.hpp"
#include "mapper/kit/program_header.hpp"
#include "mapper/kit/unit_cycles.hpp"
#include "ops/tensor.hpp"

namespace tessera::mapper::attention {

BufferCounts BufferCounts::multicast(int blocks, int kv, int scores) {
  BufferCounts counts;
  counts.blocks = blocks;
  counts.kv = kv;
  counts.scores = scores;
  return counts;
}

BufferCounts BufferCounts::split(int64_t parts) {
  BufferCounts counts;
  counts.parts = parts;
  return counts;
}

Buffers buffers_of(int64_t rows, int64_t cols, int64_t dim, DType dtype, const BufferCounts& counts) {
  const int blocks = counts.blocks, kv = counts.kv, scores = counts.scores;
  const int64_t parts = counts.parts;
  TESSERA_ASSERT(
      blocks >= 1 && blocks <= kMostBlocksPerCore && kv >= 1 && kv <= kMostKvBuffers && scores >= 2 &&
          scores <= kMostScoreBuffers,
      "a flash form's core holds 1 to kMostBlocksPerCore Q blocks, 1 to kMostKvBuffers K/V tiles and "
      "2 to kMostScoreBuffers S and P tiles");
  const int64_t element = size_bytes(dtype);
  Buffers buffers;
  SramCursor sram;
  buffers.q = sram.take(rows * dim * element);
  for (int i = 0; i < kv; ++i) buffers.k[i] = sram.take(cols * dim * element);
  for (int i = 0; i < kv; ++i) buffers.v[i] = sram.take(cols * dim * element);
  for (int i = 0; i < 2; ++i) buffers.s[i] = sram.take(rows * cols * 4);
  for (int i = 0; i < 2; ++i) buffers.p[i] = sram.take(rows * cols * element);
  buffers.accumulator = sram.take(parts * rows * dim * 4);
  buffers.out = sram.take(rows * dim * element);
  buffers.statistics = sram.take(parts * rows * arch::VecOp::kRowStatistics * 4);
  for (int slot = 1; slot < blocks; ++slot) {
    BlockBuffers& more = buffers.more[slot - 1];
    more.q = sram.take(rows * dim * element);
    more.accumulator = sram.take(rows * dim * 4);
    more.out = sram.take(rows * dim * element);
    more.statistics = sram.take(rows * arch::VecOp::kRowStatistics * 4);
  }
  for (int i = 2; i < scores; ++i) {
    buffers.s[i] = sram.take(rows * cols * 4);
    buffers.p[i] = sram.take(rows * cols * element);
  }
  buffers.end = sram.at;
  return buffers;
}

std::vector<Run> kv_runs(const ops::AttentionShape& a, const std::vector<int32_t>& table, int64_t b,
                         int64_t g, int64_t k0, int64_t cols) {
  const bool bshd = a.kv_cache.order == ops::KvOrder::bshd;
  // Keys of one cache block (the whole sequence when not paged) are consecutive rows in either order: a
  // chunk of them at a time, each extending the run before it where it follows on.
  const int64_t chunk = a.paged() ? a.kv_cache.block_tokens : a.seq_kv;
  std::vector<Run> runs;
  for (int64_t key = k0; key < k0 + cols;) {
    const int64_t keys = std::min(chunk - key % chunk, k0 + cols - key);
    const int64_t flat = a.kv_row(b, g, key, table.empty() ? nullptr : table.data());
    const int64_t row = bshd ? flat / a.kv_heads : flat, col = bshd ? (flat % a.kv_heads) * a.head_dim : 0;
    if (!runs.empty() && runs.back().col == col && runs.back().row + runs.back().rows == row) {
      runs.back().rows += keys;
    } else {
      runs.push_back(Run{row, keys, col, key - k0});
    }
    key += keys;
  }
  return runs;
}

ProgramTensors start_attention_program(arch::Program& program, const std::string& name, const ops::Op& op,
                                       uint64_t seed, const arch::ArchSpec& spec,
                                       const ops::AttentionShape& a,
                                       const std::vector<arch::TensorDecl>& intermediates) {
  start_program(program, name, op, seed, spec);
  ProgramTensors tensors;
  for (const ops::TensorDesc& desc : ops::tensors_of(op)) {
    if (desc.name == "BT") {
      const ops::HostTensor bt = ops::generate_input(DType::int32, desc.rows, desc.cols, seed, desc.tensor_id,
                                                     std::nullopt, desc.index_range);
      tensors.table.assign(reinterpret_cast<const int32_t*>(bt.bytes.data()),
                           reinterpret_cast<const int32_t*>(bt.bytes.data()) + desc.rows * desc.cols);
      continue;
    }
    if (desc.is_output)
      for (const arch::TensorDecl& intermediate : intermediates)
        tensors.intermediates.push_back(add_tensor(program, intermediate));
    arch::TensorDecl declared = declared_tensor(desc, seed);
    if ((desc.name == "K" || desc.name == "V") && a.kv_cache.order == ops::KvOrder::bshd) {
      declared.rows /= a.kv_heads;
      declared.cols *= a.kv_heads;
    }
    const int index = add_tensor(program, declared);
    (desc.name == "Q"   ? tensors.q
     : desc.name == "K" ? tensors.k
     : desc.name == "V" ? tensors.v
                        : tensors.o) = index;
  }
  return tensors;
}

std::vector<RunBlock> deal_runs(EngineDealer& dealer, const std::vector<Run>& runs, int64_t row_bytes) {
  std::vector<RunBlock> blocks;
  for (size_t r = 0; r < runs.size(); ++r)
    for (const DealtBlock& block : dealer.deal(runs[r].rows, row_bytes)) blocks.push_back(RunBlock{r, block});
  return blocks;
}

std::vector<int> engines_of(const std::vector<RunBlock>& blocks) {
  std::vector<int> engines;
  for (const RunBlock& block : blocks)
    if (std::find(engines.begin(), engines.end(), block.block.engine) == engines.end())
      engines.push_back(block.block.engine);
  return engines;
}

void append_kv_loads(std::vector<arch::Instruction>& list, const KvLoader& loader, const KvBuffer& buffer,
                     const std::vector<Run>& runs, const std::vector<RunBlock>& blocks, int frees,
                     const std::vector<int>& destinations) {
  const std::string name = buffer.name;
  const int tensor = name == "k" ? loader.tensors.k : loader.tensors.v;
  const int64_t d = loader.d;
  const Semaphores semaphores(loader.program);
  // Every piece signals the tile's one semaphore: named once, not per piece.
  const arch::SemaphoreRef full = semaphores.here(fmt::format("{}_full[{}]", name, buffer.index));
  std::vector<int> waited;
  for (const RunBlock& piece : blocks) {
    const Run& run = runs[piece.run];
    const int engine = piece.block.engine;
    arch::DmaLoad load;
    load.source =
        arch::TensorRegion{tensor, run.row + piece.block.rows.first, piece.block.rows.rows, run.col, d};
    load.sram_address = buffer.sram_address +
                        static_cast<uint64_t>((run.first_key + piece.block.rows.first) * d * loader.element);
    load.destinations = destinations;
    arch::Waits waits;
    if (frees > 0 && std::find(waited.begin(), waited.end(), engine) == waited.end()) {
      waits.push_back(arch::SemaphoreWait{
          semaphores.on_engine(name + "_free", buffer.index, loader.group, engine), frees});
      waited.push_back(engine);
    }
    // The tile is full when its last block lands: the blocks' signals are counted by the consumer.
    list.push_back(make_instruction(dma_queue(engine), load, waits, {full}));
  }
}

TileLoads deal_tile(EngineDealer& dealer, std::vector<Run> runs, int64_t row_bytes) {
  TileLoads tile;
  tile.k = deal_runs(dealer, runs, row_bytes);
  tile.v = deal_runs(dealer, runs, row_bytes);
  tile.runs = std::move(runs);
  return tile;
}

void append_tile_loads(std::vector<arch::Instruction>& list, const KvLoader& loader, const Buffers& buffers,
                       int buffer, const TileLoads& tile, int frees, const std::vector<int>& destinations) {
  append_kv_loads(list, loader, {"k", buffer, buffers.k[buffer]}, tile.runs, tile.k, frees, destinations);
  append_kv_loads(list, loader, {"v", buffer, buffers.v[buffer]}, tile.runs, tile.v, frees, destinations);
}

void finish_cost(Cost& cost, const std::vector<int64_t>& core_cycles, const ops::AttentionShape& a,
                 const arch::ArchSpec& spec) {
  // The op's multiply-accumulates (ops/kinds/attention.cpp's count: the keys each query sees, both matmuls).
  double pairs = 0;
  for (int64_t i = 0; i < a.seq_q; ++i) pairs += static_cast<double>(a.visible_keys(i));
  const double macs = 2.0 * static_cast<double>(a.head_dim) * static_cast<double>(a.batch * a.heads) * pairs;
  finish_estimate(
      cost,
      {*std::max_element(core_cycles.begin(), core_cycles.end()), cores_with_work(core_cycles), macs, 2},
      spec);
}

}  // namespace tessera::mapper::attention
