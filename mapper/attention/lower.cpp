// Attention's flash forms lowered to tile programs (mapper/attention/stage.hpp): the plain and split forms
// per core (lower), the multicast form's streams of K/V tiles loaded once and multicast (lower_multicast),
// and the steps they share.
#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <optional>
#include <utility>

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
using attention::Run;

// A K/V tile's loads into buffer `buffer`: the K blocks, then the V blocks (its runs dealt round `group`),
// each block one descriptor. The first block of each on each engine waits for `frees` frees of the buffer
// (0: none); every block signals the buffer full, on each of `destinations` for a multicast (empty: the
// issuing core).
void append_tile_loads(std::vector<arch::Instruction>& list, arch::Program& program, const EngineGroup& group,
                       const ProgramTensors& tensors, const Buffers& buffers, int buffer,
                       const std::vector<Run>& runs, const std::vector<attention::RunBlock>& k_blocks,
                       const std::vector<attention::RunBlock>& v_blocks, int64_t d, int64_t element,
                       int frees, const std::vector<int>& destinations) {
  attention::append_kv_loads(list, program, group, tensors, "k", buffer, buffers.k[buffer], runs, k_blocks, d,
                             element, frees, destinations);
  attention::append_kv_loads(list, program, group, tensors, "v", buffer, buffers.v[buffer], runs, v_blocks, d,
                             element, frees, destinations);
}

}  // namespace

arch::Program AttentionStage::lower(const ops::Op& op, uint64_t seed, const Mapping& mapping,
                                    const arch::ArchSpec& spec, const std::string& program_name) const {
  const Choice& choice = choice_of(mapping);
  if (choice.form == flash_mc) return lower_multicast(op, seed, mapping, spec, program_name);
  if (choice.form == naive) return lower_naive(*this, op, seed, mapping, spec, program_name);
  if (choice.form == flash_split) return lower_split(op, seed, mapping, spec, program_name);
  const ops::AttentionShape& a = shape_;
  const int64_t rows = choice.block_rows, cols = choice.block_cols;
  const int cores = static_cast<int>(choice.cores);
  const int64_t d = a.head_dim;
  const Buffers buffers = buffers_of(rows, cols, d, dtype_);
  arch::Program program;
  const ProgramTensors tensors = attention::start_attention_program(program, program_name, op, seed, spec, a);
  const PassEngines engines = flash_engines(mapping, spec);
  const int64_t row_bytes = d * size_bytes(dtype_);
  const Semaphores semaphores(program);
  const std::vector<QBlock> blocks = q_blocks(rows);
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
          out_full_signals(program, engines.stores, pieces)));
      append_block_store(list, program, engines.stores, pieces, tensors, block, buffers.out, "out_free");
      last_store_pieces = static_cast<int64_t>(pieces.size());
    };
    append_flash_core(list, program, tensors, buffers, mapping.dataflow, spec.core.dma, engines.loads, blocks,
                      tiles, finish_block);
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

void AttentionStage::append_block_store(std::vector<arch::Instruction>& list, arch::Program& program,
                                        const EngineGroup& stores, const std::vector<DealtBlock>& pieces,
                                        const ProgramTensors& tensors, const QBlock& block, uint64_t out,
                                        const std::string& free_signal) const {
  const int64_t d = shape_.head_dim, row_bytes = d * size_bytes(dtype_);
  const Semaphores semaphores(program);
  for (const DealtBlock& piece : pieces) {
    arch::DmaStore store;
    store.sram_address = out + static_cast<uint64_t>(piece.rows.first * row_bytes);
    store.destination =
        arch::TensorRegion{tensors.o, block.first_row + piece.rows.first, piece.rows.rows, 0, d};
    arch::Signals signals;
    if (!free_signal.empty()) signals.push_back(semaphores.here(free_signal));
    list.push_back(make_instruction(dma_queue(piece.engine), store,
                                    {semaphores.wait(engine_semaphore("out_full", "", stores, piece.engine))},
                                    signals));
  }
}

arch::Signals AttentionStage::out_full_signals(arch::Program& program, const EngineGroup& stores,
                                               const std::vector<DealtBlock>& pieces) const {
  const Semaphores semaphores(program);
  arch::Signals signals;
  for (int engine : engines_of(pieces))
    signals.push_back(semaphores.here(engine_semaphore("out_full", "", stores, engine)));
  return signals;
}

void AttentionStage::append_flash_core(std::vector<arch::Instruction>& list, arch::Program& program,
                                       const ProgramTensors& tensors, const Buffers& buffers,
                                       arch::Dataflow dataflow, const arch::DmaSpec& dma,
                                       const EngineGroup& loads, const std::vector<QBlock>& blocks,
                                       const std::vector<FlashTile>& tiles,
                                       const std::function<void(size_t)>& finish_block,
                                       const std::string& last_pv_signal) const {
  const int64_t d = shape_.head_dim, element = size_bytes(dtype_);
  const Semaphores semaphores(program);
  IndexedSemaphores ids(program);
  const size_t first = tiles.front().block;
  // Every load cut into row blocks dealt round the load engines, in the order they are queued: a block's Q
  // before its first tile's K and V.
  EngineDealer dealer(loads, dma);
  std::vector<std::vector<DealtBlock>> q_pieces(tiles.size());
  std::vector<std::vector<attention::RunBlock>> k_pieces(tiles.size()), v_pieces(tiles.size());
  for (size_t t = 0; t < tiles.size(); ++t) {
    if (tiles[t].first) q_pieces[t] = dealer.deal(blocks[tiles[t].block].rows, d * element);
    k_pieces[t] = attention::deal_runs(dealer, tiles[t].runs, d * element);
    v_pieces[t] = attention::deal_runs(dealer, tiles[t].runs, d * element);
  }
  // Room for every load piece and, per tile, its matmuls, softmax and rescale and its block's finish (at most
  // a few more): the list grows once, not by copying instructions over and over.
  size_t expected = list.size();
  for (size_t t = 0; t < tiles.size(); ++t)
    expected += q_pieces[t].size() + k_pieces[t].size() + v_pieces[t].size() + 8;
  list.reserve(expected);
  // The frees of a buffer go to the engines of its next load (none left: the first engine's, unwaited).
  auto free_signals = [&](const char* name, const std::string& index, const std::vector<int>& next_engines,
                          arch::Signals& signals) {
    if (next_engines.empty())
      signals.push_back(semaphores.here(engine_semaphore(name, index, loads, loads.first)));
    for (int engine : next_engines)
      signals.push_back(semaphores.here(engine_semaphore(name, index, loads, engine)));
  };
  for (size_t t = 0; t < tiles.size(); ++t) {
    const FlashTile& tile = tiles[t];
    const QBlock& block = blocks[tile.block];
    const int buffer = static_cast<int>(t % 2);
    if (tile.first) {
      std::vector<int> waited;
      for (const DealtBlock& piece : q_pieces[t]) {
        arch::DmaLoad load;
        load.source =
            arch::TensorRegion{tensors.q, block.first_row + piece.rows.first, piece.rows.rows, 0, d};
        load.sram_address = buffers.q + static_cast<uint64_t>(piece.rows.first * d * element);
        arch::Waits waits;
        if (tile.block != first && std::find(waited.begin(), waited.end(), piece.engine) == waited.end()) {
          waits.push_back(semaphores.wait(engine_semaphore("q_free", "", loads, piece.engine)));
          waited.push_back(piece.engine);
        }
        list.push_back(make_instruction(dma_queue(piece.engine), load, waits, {semaphores.here("q_full")}));
      }
    }
    append_tile_loads(list, program, loads, tensors, buffers, buffer, tile.runs, k_pieces[t], v_pieces[t], d,
                      element, t >= 2 ? 1 : 0, {});
  }
  auto count_of = [](const auto& pieces) { return static_cast<int>(pieces.size()); };
  // PE: S of tile t, then P V of tile t - 1 (the next tile's S runs under this tile's softmax).
  auto s_matmul = [&](size_t t) {
    const FlashTile& tile = tiles[t];
    const QBlock& block = blocks[tile.block];
    const int buffer = static_cast<int>(t % 2);
    arch::PeMatmul s =
        matmul_op(dataflow, buffers.q, buffers.k[buffer], buffers.s[buffer], block.rows, tile.cols, d);
    s.w_transposed = true;
    arch::Waits waits = {ids.wait("k_full", buffer, count_of(k_pieces[t]))};
    if (tile.first) waits.push_back(semaphores.wait("q_full", count_of(q_pieces[t])));
    if (t >= 2) waits.push_back(ids.wait("s_free", buffer));
    arch::Signals signals = {ids.here("s_full", buffer)};
    free_signals("k_free", fmt::format("[{}]", buffer),
                 t + 2 < tiles.size() ? attention::engines_of(k_pieces[t + 2]) : std::vector<int>{}, signals);
    if (tile.last)
      free_signals("q_free", "", t + 1 < tiles.size() ? engines_of(q_pieces[t + 1]) : std::vector<int>{},
                   signals);
    list.push_back(make_instruction(pe_queue(), s, waits, signals));
  };
  auto pv_matmul = [&](size_t t) {
    const FlashTile& tile = tiles[t];
    const QBlock& block = blocks[tile.block];
    const int buffer = static_cast<int>(t % 2);
    arch::PeMatmul pv = matmul_op(dataflow, buffers.p[buffer], buffers.v[buffer], buffers.accumulator,
                                  block.rows, d, tile.cols);
    pv.accumulate = !tile.first;
    arch::Waits waits = {ids.wait("v_full", buffer, count_of(v_pieces[t])), ids.wait("p_full", buffer)};
    if (!tile.first) waits.push_back(semaphores.wait("acc_ready"));
    arch::Signals signals = {semaphores.here(tile.last ? last_pv_signal : "pv_done")};
    free_signals("v_free", fmt::format("[{}]", buffer),
                 t + 2 < tiles.size() ? attention::engines_of(v_pieces[t + 2]) : std::vector<int>{}, signals);
    signals.push_back(ids.here("p_free", buffer));
    list.push_back(make_instruction(pe_queue(), pv, waits, signals));
  };
  for (size_t t = 0; t < tiles.size(); ++t) {
    s_matmul(t);
    if (t >= 1) pv_matmul(t - 1);
  }
  pv_matmul(tiles.size() - 1);
  // Vector unit: per tile the online softmax, then (after the previous P V) the accumulator's rescale; after
  // a block's last tile, what finishes the block.
  for (size_t t = 0; t < tiles.size(); ++t) {
    const FlashTile& tile = tiles[t];
    const QBlock& block = blocks[tile.block];
    const int buffer = static_cast<int>(t % 2);
    const arch::VecOp softmax = softmax_op(block, tile.k0, tile.cols, tile.first, buffers.s[buffer],
                                           buffers.p[buffer], buffers.statistics);
    arch::Waits waits = {ids.wait("s_full", buffer)};
    if (t >= 2) waits.push_back(ids.wait("p_free", buffer));
    list.push_back(make_instruction(vec_queue(), softmax, waits,
                                    {ids.here("s_free", buffer), ids.here("p_full", buffer)}));
    if (!tile.first)
      list.push_back(make_instruction(
          vec_queue(), scale_op(block, buffers.accumulator, buffers.out, buffers.statistics, false),
          {semaphores.wait("pv_done")}, {semaphores.here("acc_ready")}));
    if (tile.last) finish_block(t);
  }
}

arch::Program AttentionStage::lower_multicast(const ops::Op& op, uint64_t seed, const Mapping& mapping,
                                              const arch::ArchSpec& spec,
                                              const std::string& program_name) const {
  const ops::AttentionShape& a = shape_;
  const Choice& choice = choice_of(mapping);
  const int64_t rows = choice.block_rows, cols = choice.block_cols;
  const int cores = static_cast<int>(choice.cores);
  const int64_t d = a.head_dim, element = size_bytes(dtype_);
  const int kv_buffers = static_cast<int>(std::max<int64_t>(2, choice.kv_buffers));
  const std::vector<Stream> all = streams(rows, cols, cores);
  TESSERA_ASSERT(
      !all.empty(),
      "a multicast mapping is searched only where its streams fit kMostBlocksPerCore blocks a core");
  const int slots_per_core = blocks_per_core(all);
  const int scores = multicast_score_buffers(rows, cols, slots_per_core, kv_buffers, spec);
  const Buffers buffers = buffers_of(rows, cols, d, dtype_, slots_per_core, kv_buffers, 1, scores);
  const auto ahead_most = static_cast<size_t>(scores - 1);  // S runs this many items ahead of P V
  auto q_of = [&](int slot) { return buffers.block(slot).q; };
  auto acc_of = [&](int slot) { return buffers.block(slot).accumulator; };
  auto out_of = [&](int slot) { return buffers.block(slot).out; };
  auto stats_of = [&](int slot) { return buffers.block(slot).statistics; };
  arch::Program program;
  const ProgramTensors tensors = attention::start_attention_program(program, program_name, op, seed, spec, a);
  const std::vector<QBlock> blocks = q_blocks(rows);
  // The leader's K/V tiles dealt round the load engines; every core's Q loads and stores round the others.
  const PassEngines engines = flash_engines(mapping, spec);
  const int64_t row_bytes = d * element;
  constexpr int kLeader = 0;  // the core that loads every K/V tile once and multicasts it
  const Semaphores semaphores(program);
  IndexedSemaphores ids(program);
  // One step of a block on a core: global K/V tile t (tile j of its stream), the block in `slot`.
  struct Item {
    size_t stream = 0, block = 0;
    int slot = 0;
    int64_t t = 0, k0 = 0, cols = 0;
    bool first = false, last = false;
  };
  std::vector<std::vector<Item>> items(static_cast<size_t>(cores));
  std::vector<std::vector<int>> receivers;  // per global tile: the cores that use it
  std::vector<std::vector<Run>> tile_runs;  // per global tile: its K (and V) rows
  std::vector<int64_t> stream_first_tile;   // a stream's tiles are first .. first + tiles - 1
  for (size_t si = 0; si < all.size(); ++si) {
    stream_first_tile.push_back(static_cast<int64_t>(receivers.size()));
    const QBlock& any = blocks[all[si].slots[0].front()];  // every block of a stream has its b and g
    for (int64_t j = 0; j < all[si].tiles; ++j) {
      const int64_t t = static_cast<int64_t>(receivers.size());
      receivers.emplace_back();
      tile_runs.push_back(attention::kv_runs(a, tensors.table, any.b, any.g, j * cols,
                                             std::min(cols, all[si].keys - j * cols)));
      for (int c = 0; c < cores; ++c) {
        const std::vector<size_t>& slots = all[si].slots[static_cast<size_t>(c)];
        bool uses = false;
        for (size_t slot = 0; slot < slots.size(); ++slot) {
          const int64_t keys = keys_seen(blocks[slots[slot]]), tiles = ceil_div(keys, cols);
          if (j >= tiles) continue;
          items[static_cast<size_t>(c)].push_back(Item{si, slots[slot], static_cast<int>(slot), t, j * cols,
                                                       std::min(cols, keys - j * cols), j == 0,
                                                       j == tiles - 1});
          uses = true;
        }
        if (uses) receivers.back().push_back(c);
      }
    }
  }
  EngineDealer tile_dealer(engines.loads, spec.core.dma);
  std::vector<std::vector<attention::RunBlock>> k_pieces, v_pieces;  // per global tile
  for (const std::vector<Run>& runs : tile_runs) {
    k_pieces.push_back(attention::deal_runs(tile_dealer, runs, row_bytes));
    v_pieces.push_back(attention::deal_runs(tile_dealer, runs, row_bytes));
  }
  auto k_count = [&](int64_t t) { return static_cast<int>(k_pieces[static_cast<size_t>(t)].size()); };
  auto v_count = [&](int64_t t) { return static_cast<int>(v_pieces[static_cast<size_t>(t)].size()); };
  // A K (V) buffer's free at the leader, to each engine of its next load there (none left: the first's).
  auto free_at_leader = [&](const char* name, int64_t t,
                            const std::vector<std::vector<attention::RunBlock>>& pieces,
                            arch::Signals& signals) {
    const int64_t next = t + kv_buffers;
    const std::string index = fmt::format("[{}]", t % kv_buffers);
    const std::vector<int> next_engines = next < static_cast<int64_t>(pieces.size())
                                              ? attention::engines_of(pieces[static_cast<size_t>(next)])
                                              : std::vector<int>{engines.loads.first};
    for (int engine : next_engines)
      signals.push_back(semaphores.at(engine_semaphore(name, index, engines.loads, engine), kLeader));
  };
  for (int c = 0; c < cores; ++c) {
    program.cores.emplace_back();
    program.cores.back().coord = arch::core_coord(c, spec.mesh);
  }
  for (int c = 0; c < cores; ++c) {
    auto& list = program.cores[static_cast<size_t>(c)].instructions;
    const std::vector<Item>& work = items[static_cast<size_t>(c)];
    // Per slot: used by an earlier stream's block on this core (its buffers to free).
    std::vector<char> slot_used(static_cast<size_t>(slots_per_core), 0);
    // Q loads and stores dealt round the side engines, in queue order: the first stream's Q loads, then per
    // stream the next stream's Q loads and this one's stores.
    EngineDealer side(engines.stores, spec.core.dma);
    std::vector<std::vector<std::vector<DealtBlock>>> q_pieces(all.size()), store_pieces(all.size());
    auto deal_q = [&](size_t si) {
      for (size_t block : all[si].slots[static_cast<size_t>(c)])
        q_pieces[si].push_back(side.deal(blocks[block].rows, row_bytes));
    };
    deal_q(0);
    for (size_t si = 0; si < all.size(); ++si) {
      if (si + 1 < all.size()) deal_q(si + 1);
      for (size_t block : all[si].slots[static_cast<size_t>(c)])
        store_pieces[si].push_back(side.deal(blocks[block].rows, row_bytes));
    }
    // DMA: per stream, the leader's tile loads (multicast), this core's Q loads of the next stream and the
    // stores of this one; the first stream's Q loads first.
    auto q_loads = [&](size_t si, std::vector<char>& used) {
      const std::vector<size_t>& slots = all[si].slots[static_cast<size_t>(c)];
      for (size_t slot = 0; slot < slots.size(); ++slot) {
        const QBlock& block = blocks[slots[slot]];
        std::vector<int> waited;
        for (const DealtBlock& piece : q_pieces[si][slot]) {
          arch::DmaLoad load;
          load.source =
              arch::TensorRegion{tensors.q, block.first_row + piece.rows.first, piece.rows.rows, 0, d};
          load.sram_address =
              q_of(static_cast<int>(slot)) + static_cast<uint64_t>(piece.rows.first * row_bytes);
          arch::Waits waits;
          if (used[slot] && std::find(waited.begin(), waited.end(), piece.engine) == waited.end()) {
            waits.push_back(arch::SemaphoreWait{
                semaphores.on_engine("q_free", static_cast<int64_t>(slot), engines.stores, piece.engine), 1});
            waited.push_back(piece.engine);
          }
          list.push_back(make_instruction(dma_queue(piece.engine), load, waits,
                                          {ids.here("q_full", static_cast<int64_t>(slot))}));
        }
        used[slot] = 1;
      }
    };
    std::vector<char> q_used(static_cast<size_t>(slots_per_core), 0);
    q_loads(0, q_used);
    for (size_t si = 0; si < all.size(); ++si) {
      if (c == kLeader)
        for (int64_t t = stream_first_tile[si]; t < stream_first_tile[si] + all[si].tiles; ++t)
          append_tile_loads(
              list, program, engines.loads, tensors, buffers, static_cast<int>(t % kv_buffers),
              tile_runs[static_cast<size_t>(t)], k_pieces[static_cast<size_t>(t)],
              v_pieces[static_cast<size_t>(t)], d, element,
              t >= kv_buffers ? static_cast<int>(receivers[static_cast<size_t>(t - kv_buffers)].size()) : 0,
              receivers[static_cast<size_t>(t)]);
      if (si + 1 < all.size()) q_loads(si + 1, q_used);
      const std::vector<size_t>& slots = all[si].slots[static_cast<size_t>(c)];
      for (size_t slot = 0; slot < slots.size(); ++slot) {
        const QBlock& block = blocks[slots[slot]];
        for (const DealtBlock& piece : store_pieces[si][slot]) {
          arch::DmaStore store;
          store.sram_address =
              out_of(static_cast<int>(slot)) + static_cast<uint64_t>(piece.rows.first * row_bytes);
          store.destination =
              arch::TensorRegion{tensors.o, block.first_row + piece.rows.first, piece.rows.rows, 0, d};
          list.push_back(make_instruction(
              dma_queue(piece.engine), store,
              {arch::SemaphoreWait{
                  semaphores.on_engine("out_full", static_cast<int64_t>(slot), engines.stores, piece.engine),
                  1}},
              {ids.here("out_free", static_cast<int64_t>(slot))}));
        }
      }
    }
    // The first and last item of this core that uses each tile: the one that waits for it, the one that frees
    // it at the leader.
    auto first_use = [&](size_t u) { return u == 0 || work[u - 1].t != work[u].t; };
    auto last_use = [&](size_t u) { return u + 1 == work.size() || work[u + 1].t != work[u].t; };
    auto s_matmul = [&](size_t u) {
      const Item& item = work[u];
      const QBlock& block = blocks[item.block];
      const int kv = static_cast<int>(item.t % kv_buffers), sb = static_cast<int>(u % scores);
      arch::PeMatmul op = matmul_op(mapping.dataflow, q_of(item.slot), buffers.k[kv], buffers.s[sb],
                                    block.rows, item.cols, d);
      op.w_transposed = true;
      arch::Waits waits;
      if (first_use(u)) waits.push_back(ids.wait("k_full", kv, k_count(item.t)));
      if (item.first) waits.push_back(ids.wait("q_full", item.slot));
      if (u >= static_cast<size_t>(scores)) waits.push_back(ids.wait("s_free", sb));
      arch::Signals signals = {ids.here("s_full", sb)};
      if (last_use(u)) free_at_leader("k_free", item.t, k_pieces, signals);
      if (item.last) {
        // To the engines of this slot's next Q load on this core (none left: the first side engine's).
        std::vector<int> next_engines = {engines.stores.first};
        for (size_t si = item.stream + 1; si < all.size(); ++si)
          if (item.slot < static_cast<int>(q_pieces[si].size())) {
            next_engines = engines_of(q_pieces[si][static_cast<size_t>(item.slot)]);
            break;
          }
        for (int engine : next_engines)
          signals.push_back(semaphores.on_engine("q_free", item.slot, engines.stores, engine));
      }
      list.push_back(make_instruction(pe_queue(), op, waits, signals));
    };
    auto pv_matmul = [&](size_t u) {
      const Item& item = work[u];
      const QBlock& block = blocks[item.block];
      const int kv = static_cast<int>(item.t % kv_buffers), sb = static_cast<int>(u % scores);
      arch::PeMatmul op = matmul_op(mapping.dataflow, buffers.p[sb], buffers.v[kv], acc_of(item.slot),
                                    block.rows, d, item.cols);
      op.accumulate = !item.first;
      arch::Waits waits;
      if (first_use(u)) waits.push_back(ids.wait("v_full", kv, v_count(item.t)));
      waits.push_back(ids.wait("p_full", sb));
      if (!item.first) waits.push_back(ids.wait("acc_ready", item.slot));
      arch::Signals signals = {ids.here("pv_done", item.slot), ids.here("p_free", sb)};
      if (last_use(u)) free_at_leader("v_free", item.t, v_pieces, signals);
      list.push_back(make_instruction(pe_queue(), op, waits, signals));
    };
    // S of an item runs ahead of the P V of up to `scores` - 1 earlier items, only while it needs the same or
    // the next tile of the same stream as the oldest of them: a core that skips tiles (its blocks see fewer
    // keys than the stream's heaviest) would otherwise hold a P V, and with it the free of a V buffer the
    // leader waits on, behind a tile the leader cannot load yet; and on one DMA engine a stream's stores sit
    // before the next stream's tiles.
    std::deque<size_t> behind;  // items whose S is queued and P V not yet, oldest first
    for (size_t u = 0; u < work.size(); ++u) {
      while (!behind.empty() &&
             (work[u].t > work[behind.front()].t + 1 || work[u].stream != work[behind.front()].stream)) {
        pv_matmul(behind.front());
        behind.pop_front();
      }
      s_matmul(u);
      behind.push_back(u);
      if (behind.size() > ahead_most) {
        pv_matmul(behind.front());
        behind.pop_front();
      }
    }
    for (size_t u : behind) pv_matmul(u);
    std::vector<int64_t> last_stored(static_cast<size_t>(slots_per_core), 0);  // a slot's last store's blocks
    // A block's final rescale (O = accumulator / sum, then its store) waits for its last P V: queued after
    // the next item's softmax and rescale where that item is another slot's, so that the vector unit runs the
    // softmax while the PE array runs the P V; right away where it is the same slot's (a new block's first
    // P V overwrites the accumulator the final rescale reads).
    auto finish = [&](size_t u) {
      const Item& item = work[u];
      const auto slot = static_cast<size_t>(item.slot);
      arch::Waits final_waits = {ids.wait("pv_done", item.slot)};
      if (slot_used[slot])
        final_waits.push_back(ids.wait("out_free", item.slot, static_cast<int>(last_stored[slot])));
      slot_used[slot] = 1;
      const std::vector<DealtBlock>& stored = store_pieces[item.stream][slot];
      last_stored[slot] = static_cast<int64_t>(stored.size());
      arch::Signals full;
      for (int engine : engines_of(stored))
        full.push_back(semaphores.on_engine("out_full", item.slot, engines.stores, engine));
      list.push_back(make_instruction(
          vec_queue(),
          scale_op(blocks[item.block], acc_of(item.slot), out_of(item.slot), stats_of(item.slot), true),
          final_waits, full));
    };
    std::optional<size_t> unfinished;  // a block's last item whose final rescale is deferred
    for (size_t u = 0; u < work.size(); ++u) {
      const Item& item = work[u];
      const QBlock& block = blocks[item.block];
      const int sb = static_cast<int>(u % scores);
      const arch::VecOp softmax = softmax_op(block, item.k0, item.cols, item.first, buffers.s[sb],
                                             buffers.p[sb], stats_of(item.slot));
      arch::Waits waits = {ids.wait("s_full", sb)};
      if (u >= static_cast<size_t>(scores)) waits.push_back(ids.wait("p_free", sb));
      list.push_back(
          make_instruction(vec_queue(), softmax, waits, {ids.here("s_free", sb), ids.here("p_full", sb)}));
      if (!item.first)
        list.push_back(make_instruction(
            vec_queue(), scale_op(block, acc_of(item.slot), out_of(item.slot), stats_of(item.slot), false),
            {ids.wait("pv_done", item.slot)}, {ids.here("acc_ready", item.slot)}));
      if (unfinished) finish(*std::exchange(unfinished, std::nullopt));
      if (item.last) {
        if (u + 1 < work.size() && work[u + 1].slot != item.slot)
          unfinished = u;
        else
          finish(u);
      }
    }
    if (unfinished) finish(*unfinished);
  }
  program.number_semaphores_by_appearance();
  return program;
}

}  // namespace tessera::mapper
