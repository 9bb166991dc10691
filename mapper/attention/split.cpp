// Attention's split-KV form (flash-decoding): mapper/attention/stage.hpp, "The split-KV form". A decode step
// has few Q blocks (batch x kv heads, the G q heads of a kv head stacked), each streaming the whole K/V
// cache: one core a block leaves cores idle and each busy one a long run of tiles. Split, each block's keys
// run on `splits` cores at once; the partial results meet on the block's first core over the NoC.
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <memory>

#include "arch/isa/noc_send.hpp"
#include "arch/noc.hpp"
#include "arch/timing/vector_timing.hpp"
#include "arch/topology.hpp"
#include "mapper/attention/stage.hpp"
#include "mapper/cost.hpp"
#include "mapper/kit/instruction_timer.hpp"
#include "mapper/kit/program_builder.hpp"
#include "mapper/kit/program_header.hpp"
#include "mapper/mapping.hpp"

namespace tessera::mapper {

using attention::Buffers;
using attention::buffers_of;
using attention::ProgramTensors;

namespace {

// Decode: the queries of a step (a few, with speculative decoding) — a split pays off where the keys are
// many against the rows.
constexpr int64_t kMostDecodeQueries = 16;

constexpr int64_t kStatisticsBytes = arch::VecOp::kRowStatistics * 4;

// A send over the NoC of `rows` rows of `row_bytes` bytes from `address` to `to` on core `core`.
arch::NocSend noc_send(uint64_t address, int64_t rows, int64_t row_bytes, int core, uint64_t to) {
  arch::NocSend send;
  send.source_address = address;
  send.rows = rows;
  send.row_bytes = row_bytes;
  send.destination_core = core;
  send.destination_address = to;
  return send;
}

}  // namespace

std::vector<AttentionStage::SplitPart> AttentionStage::split_parts(int64_t block_rows, int64_t block_cols,
                                                                   int64_t splits) const {
  const std::vector<QBlock> blocks = q_blocks(block_rows);
  std::vector<SplitPart> parts;
  for (size_t i = 0; i < blocks.size(); ++i) {
    // An even share of the block's tiles a range: its keys, the last range's cut at the last key seen.
    const int64_t keys = keys_seen(blocks[i]), tiles = ceil_div(keys, block_cols);
    for (int64_t s = 0; s < splits; ++s) {
      SplitPart part;
      part.block = i;
      part.split = s;
      part.begin = s * tiles / splits * block_cols;
      part.end = std::min(keys, (s + 1) * tiles / splits * block_cols);
      part.core = static_cast<int>(static_cast<int64_t>(i) * splits + s);
      part.merging_core = static_cast<int>(static_cast<int64_t>(i) * splits);
      parts.push_back(part);
    }
  }
  return parts;
}

std::vector<int64_t> AttentionStage::split_choices(int64_t block_rows, int64_t block_cols, int cores) const {
  std::vector<int64_t> choices;
  if (shape_.seq_q > kMostDecodeQueries) return choices;
  const std::vector<QBlock> blocks = q_blocks(block_rows);
  const int64_t most = cores / static_cast<int64_t>(blocks.size());  // a core a range
  int64_t fewest_tiles = std::numeric_limits<int64_t>::max();  // of any block: a range takes at least one
  for (const QBlock& block : blocks)
    fewest_tiles = std::min(fewest_tiles, ceil_div(keys_seen(block), block_cols));
  for (int64_t splits = 2; splits <= std::min(most, fewest_tiles); splits *= 2) choices.push_back(splits);
  if (most >= 2 && most <= fewest_tiles && (choices.empty() || choices.back() != most))
    choices.push_back(most);
  return choices;
}

int64_t AttentionStage::partial_bytes(const QBlock& block) const {
  return block.rows * (shape_.head_dim * 4 + kStatisticsBytes);
}

arch::VecOp AttentionStage::merge_op(const QBlock& block, uint64_t partials, uint64_t statistics,
                                     uint64_t out, int64_t parts) const {
  arch::VecOp op = arch::VecOp::on_tile(arch::VectorKind::merge_partials, DType::fp32, dtype_, block.rows,
                                        shape_.head_dim, partials, out);
  op.g_address = statistics;
  op.parts = parts;
  return op;
}

Cost AttentionStage::evaluate_split(const Mapping& mapping, const arch::ArchSpec& spec) const {
  const Choice& choice = choice_of(mapping);
  const int64_t rows = choice.block_rows, cols = choice.block_cols, splits = choice.splits;
  const int cores = static_cast<int>(choice.cores);
  const int64_t d = shape_.head_dim, element = size_bytes(dtype_);
  const InstructionTimer timer(spec);
  const std::vector<QBlock> blocks = q_blocks(rows);
  const std::vector<SplitPart> parts = split_parts(rows, cols, splits);
  CoreCycles work(cores);
  const PassEngines engines = flash_engines(mapping, spec);
  const FlashCosting costing{mapping, spec, timer, engines, true};
  int64_t kv_bytes = 0, q_reload_bytes = 0, reduction_bytes = 0;
  const std::unique_ptr<arch::NocModel> noc = arch::make_noc(spec);  // the fabric's routes
  for (size_t first = 0; first < parts.size(); first += static_cast<size_t>(splits)) {
    const QBlock& block = blocks[parts[first].block];
    int64_t arrivals = 0;  // when the last partial has reached the merging core
    const size_t merging = static_cast<size_t>(parts[first].merging_core);
    for (size_t p = first; p < first + static_cast<size_t>(splits); ++p) {
      const SplitPart& part = parts[p];
      const size_t core = static_cast<size_t>(part.core);
      // The range's flash loop, its tiles streamed by its core, each tile's step as the plain form's.
      add_flash_range(work, core, costing, block, part.begin, part.end);
      kv_bytes += 2 * (part.end - part.begin) * d * element;
      if (part.split == 0) continue;
      q_reload_bytes += block.rows * d * element;  // every range's core loads the block's Q
      // Its accumulator and statistics, two sends on the NoC engine (a setup each, the bytes at the engine's
      // rate), through the routers of the route to the merging core.
      const int64_t hops = noc->hops(part.core, part.merging_core);
      const int64_t send = transfer_cycles(spec.core.dma, block.rows * d * 4, 1) +
                           transfer_cycles(spec.core.dma, block.rows * kStatisticsBytes, 1) +
                           (hops + 1) * int64_t{spec.noc.router_latency_cycles};
      work.cycles[core] += send;
      const int64_t link_cycles = ceil_div(partial_bytes(block), spec.noc.link_bytes_per_cycle);
      work.noc[core] += link_cycles;
      work.noc[merging] += link_cycles;
      reduction_bytes += partial_bytes(block);
      arrivals = std::max(arrivals, work.cycles[core]);
    }
    // The merge once its own range is done and every partial is in, then the store (under the next work
    // where a second DMA engine takes it, as the plain form's).
    const int64_t merge =
        arch::vector_timing(*spec.core.vector, merge_op(block, 0, 0, 0, splits).work()).cycles;
    const int64_t store = block_transfer_cycles(spec, engines.stores, block);
    work.cycles[merging] =
        std::max(work.cycles[merging], arrivals) + merge + (spec.core.dma.engines > 1 ? 0 : store);
    work.vec[merging] += merge;
    work.dma[merging] += store;
  }
  return flash_cost(spec, work, kv_bytes, q_reload_bytes, reduction_bytes);
}

arch::Program AttentionStage::lower_split(const ops::Op& op, uint64_t seed, const Mapping& mapping,
                                          const arch::ArchSpec& spec, const std::string& program_name) const {
  const Choice& choice = choice_of(mapping);
  const int64_t rows = choice.block_rows, cols = choice.block_cols, splits = choice.splits;
  const int64_t d = shape_.head_dim;
  const Buffers buffers = buffers_of(rows, cols, d, dtype_, attention::BufferCounts::split(splits));
  arch::Program program;
  const ProgramTensors tensors =
      attention::start_attention_program(program, program_name, op, seed, spec, shape_);
  const std::vector<QBlock> blocks = q_blocks(rows);
  const std::vector<SplitPart> parts = split_parts(rows, cols, splits);
  const PassEngines engines = flash_engines(mapping, spec);
  const Semaphores semaphores(program);
  const FlashProgram flash{program, tensors, buffers, mapping.dataflow, spec.core.dma, engines, blocks};
  for (const SplitPart& part : parts) {
    program.cores.emplace_back();
    program.cores.back().coord = arch::core_coord(part.core, spec.mesh);
    auto& list = program.cores.back().instructions;
    const QBlock& block = blocks[part.block];
    std::vector<FlashTile> tiles;
    append_flash_tiles(tensors, blocks, part.block, part.begin, part.end, cols, tiles);
    // Part s's accumulator and statistics are slot s of the merging core's (the merging core's own, slot 0,
    // where its flash loop leaves them).
    const uint64_t accumulator_bytes = static_cast<uint64_t>(block.rows * d * 4),
                   statistics_bytes = static_cast<uint64_t>(block.rows * kStatisticsBytes);
    auto finish_block = [&](size_t) {
      if (part.split == 0) {
        const int others = static_cast<int>(splits - 1);
        EngineDealer stores(engines.stores, spec.core.dma);
        const std::vector<DealtBlock> pieces = stores.deal(block.rows, d * size_bytes(dtype_));
        list.push_back(make_instruction(
            vec_queue(), merge_op(block, buffers.accumulator, buffers.statistics, buffers.out, splits),
            {semaphores.wait("pv_done"), semaphores.wait("part_in", 2 * others)},
            out_full_signals(flash, pieces)));
        append_block_store(list, flash, pieces, block, "");
        return;
      }
      const uint64_t slot = static_cast<uint64_t>(part.split);
      list.push_back(make_instruction(noc_queue(),
                                      noc_send(buffers.accumulator, block.rows, d * 4, part.merging_core,
                                               buffers.accumulator + slot * accumulator_bytes),
                                      {semaphores.wait("partial_done")},
                                      {semaphores.at("part_in", part.merging_core)}));
      list.push_back(
          make_instruction(noc_queue(),
                           noc_send(buffers.statistics, block.rows, kStatisticsBytes, part.merging_core,
                                    buffers.statistics + slot * statistics_bytes),
                           {}, {semaphores.at("part_in", part.merging_core)}));
    };
    // The merge (vector unit) waits for the last P V's pv_done in order after the rescales; the sends (NoC
    // queue) for a signal of their own.
    append_flash_core(list, flash, tiles, finish_block, part.split == 0 ? "pv_done" : "partial_done");
  }
  program.number_semaphores_by_appearance();
  return program;
}

std::string AttentionStage::describe_split(const Mapping& mapping) const {
  const Choice& t = choice_of(mapping);
  const int64_t rows = t.block_rows, cols = t.block_cols, splits = t.splits;
  const std::vector<QBlock> blocks = q_blocks(rows);
  int64_t longest = 0, reduction_bytes = 0;
  for (const SplitPart& part : split_parts(rows, cols, splits)) {
    longest = std::max(longest, part.end - part.begin);
    if (part.split > 0) reduction_bytes += partial_bytes(blocks[part.block]);
  }
  return fmt::format(
      "flash-split {} cores {}: {} q blocks of {} rows, each block's keys split {} ways keep {} cores busy "
      "(one "
      "core a block: {}), at most {} keys a core in k/v tiles of {}; {} partial results (fp32 accumulator "
      "and row statistics) sent over the NoC to their block's first core and merged there: {} bytes",
      arch::name_of(mapping.dataflow), t.cores, blocks.size(), rows, splits, t.cores, blocks.size(), longest,
      cols, static_cast<int64_t>(blocks.size()) * (splits - 1), reduction_bytes);
}

}  // namespace tessera::mapper
