// Attention's plain and split flash forms lowered to tile programs (mapper/attention/stage.hpp): a core's
// flash loop over the tiles of its blocks' ranges (append_flash_core), the plain form's cores (lower) and the
// block stores the forms share; the multicast form's lowering is mapper/attention/multicast.cpp's.
#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "arch/isa/vec_op.hpp"
#include "mapper/attention/naive.hpp"
#include "mapper/attention/program.hpp"
#include "mapper/attention/stage.hpp"
#include "mapper/kit/dma_engines.hpp"
#include "mapper/kit/program_builder.hpp"
#include "mapper/kit/program_header.hpp"
#include "ops/tensor.hpp"

namespace tessera::mapper {

namespace {

using attention::Buffers;
using attention::buffers_of;
using attention::ProgramTensors;
using attention::TileLoads;

}  // namespace

// One core's flash loop (append_flash_core): every load cut into row blocks dealt round the load engines, in
// the order they are queued (a block's Q before its first tile's K and V), then the core's DMA, PE array and
// vector unit instructions, queue by queue.
class AttentionStage::FlashCore {
 public:
  FlashCore(const AttentionStage& stage, const FlashProgram& flash, const std::vector<FlashTile>& tiles,
            std::vector<arch::Instruction>& list);
  // DMA: per tile, its block's Q (before the block's first tile), then its K and V.
  void append_loads();
  // PE: S of tile t, then P V of tile t - 1 (the next tile's S runs under this tile's softmax); a block's
  // last P V signals `last_pv_signal`.
  void append_matmuls(const std::string& last_pv_signal);
  // Vector unit: per tile the online softmax, then (after the previous P V) the accumulator's rescale; after
  // a block's last tile t, finish_block(t).
  void append_vector(const std::function<void(size_t)>& finish_block);

 private:
  void append_q_load(size_t t);
  void append_s(size_t t);
  void append_pv(size_t t, const std::string& last_pv_signal);
  // The frees of a buffer go to the engines of its next load (none left: the first engine's, unwaited).
  void add_frees(const std::string& name, const std::string& index, const std::vector<int>& next_engines,
                 arch::Signals& signals) const;

  const AttentionStage& stage_;
  const FlashProgram& flash_;
  const std::vector<FlashTile>& tiles_;
  std::vector<arch::Instruction>& list_;
  const Semaphores semaphores_;
  IndexedSemaphores ids_;
  const int64_t row_bytes_;
  std::vector<std::vector<DealtBlock>> q_pieces_;  // per tile: its block's Q load (a block's first tile)
  std::vector<TileLoads> loads_;                   // per tile
};

arch::Program AttentionStage::lower(const ops::Op& op, uint64_t seed, const Mapping& mapping,
                                    const arch::ArchSpec& spec, const std::string& program_name) const {
  const Choice& choice = choice_of(mapping);
  if (choice.form == flash_mc) return lower_multicast(op, seed, mapping, spec, program_name);
  if (choice.form == naive) return lower_naive(*this, op, seed, mapping, spec, program_name);
  if (choice.form == flash_split) return lower_split(op, seed, mapping, spec, program_name);
  const int64_t rows = choice.block_rows, cols = choice.block_cols;
  const int cores = static_cast<int>(choice.cores);
  const Buffers buffers = buffers_of(rows, cols, shape_.head_dim, dtype_);
  arch::Program program;
  const ProgramTensors tensors =
      attention::start_attention_program(program, program_name, op, seed, spec, shape_);
  const PassEngines engines = flash_engines(mapping, spec);
  const int64_t row_bytes = shape_.head_dim * size_bytes(dtype_);
  const Semaphores semaphores(program);
  const std::vector<QBlock> blocks = q_blocks(rows);
  const FlashProgram flash{program, tensors, buffers, mapping.dataflow, spec.core.dma, engines, blocks};
  for (int core = 0; core < cores; ++core) {
    // The core's blocks: an even share, in order.
    const size_t first = static_cast<size_t>(core) * blocks.size() / static_cast<size_t>(cores),
                 last = static_cast<size_t>(core + 1) * blocks.size() / static_cast<size_t>(cores);
    if (first == last) continue;
    program.cores.emplace_back();
    program.cores.back().coord = arch::core_coord(core, spec.mesh);
    auto& list = program.cores.back().instructions;
    std::vector<FlashTile> tiles;
    for (size_t i = first; i < last; ++i)
      append_flash_tiles(tensors, blocks, i, 0, keys_seen(blocks[i]), cols, tiles);
    // After a block's last tile, O = accumulator / sum into the output buffer, and its store in row blocks
    // over the store engines (the next block's rescale waits for every block of it).
    EngineDealer store_dealer(engines.stores, spec.core.dma);
    int64_t last_store_pieces = 0;
    auto finish_block = [&](size_t t) {
      const QBlock& block = blocks[tiles[t].block];
      const std::vector<DealtBlock> pieces = store_dealer.deal(block.rows, row_bytes);
      arch::Waits waits = {semaphores.wait("pv_done")};
      if (tiles[t].block != first)
        waits.push_back(semaphores.wait("out_free", static_cast<int>(last_store_pieces)));
      list.push_back(make_instruction(
          vec_queue(), scale_op(block, buffers.accumulator, buffers.out, buffers.statistics, true), waits,
          out_full_signals(flash, pieces)));
      append_block_store(list, flash, pieces, block, "out_free");
      last_store_pieces = static_cast<int64_t>(pieces.size());
    };
    append_flash_core(list, flash, tiles, finish_block);
  }
  program.number_semaphores_by_appearance();
  return program;
}

void AttentionStage::append_flash_tiles(const ProgramTensors& tensors, const std::vector<QBlock>& blocks,
                                        size_t block, int64_t begin, int64_t end, int64_t cols,
                                        std::vector<FlashTile>& tiles) const {
  const QBlock& q = blocks[block];
  for (int64_t k0 = begin; k0 < end; k0 += cols) {
    const int64_t tile_cols = std::min(cols, end - k0);
    tiles.push_back(FlashTile{block, k0, tile_cols, k0 == begin, k0 + cols >= end,
                              attention::kv_runs(shape_, tensors.table, q.b, q.g, k0, tile_cols)});
  }
}

void AttentionStage::append_block_store(std::vector<arch::Instruction>& list, const FlashProgram& flash,
                                        const std::vector<DealtBlock>& pieces, const QBlock& block,
                                        const std::string& free_signal) const {
  const int64_t d = shape_.head_dim, row_bytes = d * size_bytes(dtype_);
  const Semaphores semaphores(flash.program);
  for (const DealtBlock& piece : pieces) {
    arch::DmaStore store;
    store.sram_address = flash.buffers.out + static_cast<uint64_t>(piece.rows.first * row_bytes);
    store.destination =
        arch::TensorRegion{flash.tensors.o, block.first_row + piece.rows.first, piece.rows.rows, 0, d};
    arch::Signals signals;
    if (!free_signal.empty()) signals.push_back(semaphores.here(free_signal));
    list.push_back(make_instruction(
        dma_queue(piece.engine), store,
        {semaphores.wait(engine_semaphore("out_full", "", flash.engines.stores, piece.engine))}, signals));
  }
}

arch::Signals AttentionStage::out_full_signals(const FlashProgram& flash,
                                               const std::vector<DealtBlock>& pieces) const {
  const Semaphores semaphores(flash.program);
  arch::Signals signals;
  for (int engine : engines_of(pieces))
    signals.push_back(semaphores.here(engine_semaphore("out_full", "", flash.engines.stores, engine)));
  return signals;
}

void AttentionStage::append_flash_core(std::vector<arch::Instruction>& list, const FlashProgram& flash,
                                       const std::vector<FlashTile>& tiles,
                                       const std::function<void(size_t)>& finish_block,
                                       const std::string& last_pv_signal) const {
  FlashCore core(*this, flash, tiles, list);
  core.append_loads();
  core.append_matmuls(last_pv_signal);
  core.append_vector(finish_block);
}

AttentionStage::FlashCore::FlashCore(const AttentionStage& stage, const FlashProgram& flash,
                                     const std::vector<FlashTile>& tiles,
                                     std::vector<arch::Instruction>& list)
    : stage_(stage),
      flash_(flash),
      tiles_(tiles),
      list_(list),
      semaphores_(flash.program),
      ids_(flash.program),
      row_bytes_(stage.shape_.head_dim * size_bytes(stage.dtype_)),
      q_pieces_(tiles.size()) {
  EngineDealer dealer(flash.engines.loads, flash.dma);
  loads_.reserve(tiles.size());
  for (size_t t = 0; t < tiles.size(); ++t) {
    if (tiles[t].first) q_pieces_[t] = dealer.deal(flash.blocks[tiles[t].block].rows, row_bytes_);
    loads_.push_back(attention::deal_tile(dealer, tiles[t].runs, row_bytes_));
  }
  // Room for every load piece and, per tile, its matmuls, softmax and rescale and its block's finish (at most
  // a few more): the list grows once, not by copying instructions over and over.
  size_t expected = list.size();
  for (size_t t = 0; t < tiles.size(); ++t)
    expected += q_pieces_[t].size() + loads_[t].k.size() + loads_[t].v.size() + 8;
  list.reserve(expected);
}

void AttentionStage::FlashCore::append_loads() {
  const attention::KvLoader loader{flash_.program, flash_.tensors, flash_.engines.loads,
                                   stage_.shape_.head_dim, size_bytes(stage_.dtype_)};
  for (size_t t = 0; t < tiles_.size(); ++t) {
    if (tiles_[t].first) append_q_load(t);
    attention::append_tile_loads(list_, loader, flash_.buffers, static_cast<int>(t % 2), loads_[t],
                                 t >= 2 ? 1 : 0, {});
  }
}

void AttentionStage::FlashCore::append_q_load(size_t t) {
  const FlashTile& tile = tiles_[t];
  const QBlock& block = flash_.blocks[tile.block];
  std::vector<int> waited;
  for (const DealtBlock& piece : q_pieces_[t]) {
    arch::DmaLoad load;
    load.source = arch::TensorRegion{flash_.tensors.q, block.first_row + piece.rows.first, piece.rows.rows, 0,
                                     stage_.shape_.head_dim};
    load.sram_address = flash_.buffers.q + static_cast<uint64_t>(piece.rows.first * row_bytes_);
    arch::Waits waits;
    // The core's first block's Q buffer is free; a later block's waits for the last S of the one before.
    if (tile.block != tiles_.front().block &&
        std::find(waited.begin(), waited.end(), piece.engine) == waited.end()) {
      waits.push_back(semaphores_.wait(engine_semaphore("q_free", "", flash_.engines.loads, piece.engine)));
      waited.push_back(piece.engine);
    }
    list_.push_back(make_instruction(dma_queue(piece.engine), load, waits, {semaphores_.here("q_full")}));
  }
}

void AttentionStage::FlashCore::append_matmuls(const std::string& last_pv_signal) {
  for (size_t t = 0; t < tiles_.size(); ++t) {
    append_s(t);
    if (t >= 1) append_pv(t - 1, last_pv_signal);
  }
  append_pv(tiles_.size() - 1, last_pv_signal);
}

void AttentionStage::FlashCore::append_s(size_t t) {
  const FlashTile& tile = tiles_[t];
  const QBlock& block = flash_.blocks[tile.block];
  const Buffers& buffers = flash_.buffers;
  const int buffer = static_cast<int>(t % 2);
  arch::PeMatmul scores = stage_.matmul_op(flash_.dataflow, buffers.q, buffers.k[buffer], buffers.s[buffer],
                                           block.rows, tile.cols, stage_.shape_.head_dim);
  scores.w_transposed = true;
  arch::Waits waits = {ids_.wait("k_full", buffer, static_cast<int>(loads_[t].k.size()))};
  if (tile.first) waits.push_back(semaphores_.wait("q_full", static_cast<int>(q_pieces_[t].size())));
  if (t >= 2) waits.push_back(ids_.wait("s_free", buffer));
  arch::Signals signals = {ids_.here("s_full", buffer)};
  add_frees("k_free", fmt::format("[{}]", buffer),
            t + 2 < tiles_.size() ? attention::engines_of(loads_[t + 2].k) : std::vector<int>{}, signals);
  if (tile.last)
    add_frees("q_free", "", t + 1 < tiles_.size() ? engines_of(q_pieces_[t + 1]) : std::vector<int>{},
              signals);
  list_.push_back(make_instruction(pe_queue(), scores, waits, signals));
}

void AttentionStage::FlashCore::append_pv(size_t t, const std::string& last_pv_signal) {
  const FlashTile& tile = tiles_[t];
  const QBlock& block = flash_.blocks[tile.block];
  const Buffers& buffers = flash_.buffers;
  const int buffer = static_cast<int>(t % 2);
  arch::PeMatmul pv = stage_.matmul_op(flash_.dataflow, buffers.p[buffer], buffers.v[buffer],
                                       buffers.accumulator, block.rows, stage_.shape_.head_dim, tile.cols);
  pv.accumulate = !tile.first;
  arch::Waits waits = {ids_.wait("v_full", buffer, static_cast<int>(loads_[t].v.size())),
                       ids_.wait("p_full", buffer)};
  if (!tile.first) waits.push_back(semaphores_.wait("acc_ready"));
  arch::Signals signals = {semaphores_.here(tile.last ? last_pv_signal : "pv_done")};
  add_frees("v_free", fmt::format("[{}]", buffer),
            t + 2 < tiles_.size() ? attention::engines_of(loads_[t + 2].v) : std::vector<int>{}, signals);
  signals.push_back(ids_.here("p_free", buffer));
  list_.push_back(make_instruction(pe_queue(), pv, waits, signals));
}

void AttentionStage::FlashCore::add_frees(const std::string& name, const std::string& index,
                                          const std::vector<int>& next_engines,
                                          arch::Signals& signals) const {
  const EngineGroup& loads = flash_.engines.loads;
  if (next_engines.empty())
    signals.push_back(semaphores_.here(engine_semaphore(name, index, loads, loads.first)));
  for (int engine : next_engines)
    signals.push_back(semaphores_.here(engine_semaphore(name, index, loads, engine)));
}

void AttentionStage::FlashCore::append_vector(const std::function<void(size_t)>& finish_block) {
  const Buffers& buffers = flash_.buffers;
  for (size_t t = 0; t < tiles_.size(); ++t) {
    const FlashTile& tile = tiles_[t];
    const QBlock& block = flash_.blocks[tile.block];
    const int buffer = static_cast<int>(t % 2);
    const arch::VecOp softmax = stage_.softmax_op(block, tile.k0, tile.cols, tile.first, buffers.s[buffer],
                                                  buffers.p[buffer], buffers.statistics);
    arch::Waits waits = {ids_.wait("s_full", buffer)};
    if (t >= 2) waits.push_back(ids_.wait("p_free", buffer));
    list_.push_back(make_instruction(vec_queue(), softmax, waits,
                                     {ids_.here("s_free", buffer), ids_.here("p_full", buffer)}));
    if (!tile.first)
      list_.push_back(make_instruction(
          vec_queue(), stage_.scale_op(block, buffers.accumulator, buffers.out, buffers.statistics, false),
          {semaphores_.wait("pv_done")}, {semaphores_.here("acc_ready")}));
    if (tile.last) finish_block(t);
  }
}

}  // namespace tessera::mapper
