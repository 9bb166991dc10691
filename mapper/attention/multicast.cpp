// Attention's multicast form lowered to a tile program (mapper/attention/stage.hpp, "The multicast form"):
// the leader loads each stream's K/V tiles once and multicasts them to the cores whose blocks see them; each
// core holds up to kMostBlocksPerCore Q blocks of a stream, one a slot, and runs their steps tile by tile.
// Its cost (multicast_cost) follows the same steps in lockstep with the leader's loads.
#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <optional>
#include <utility>

#include "arch/isa/vec_op.hpp"
#include "mapper/attention/program.hpp"
#include "mapper/attention/stage.hpp"
#include "mapper/cost.hpp"
#include "mapper/kit/dma_engines.hpp"
#include "mapper/kit/program_builder.hpp"
#include "mapper/kit/program_header.hpp"
#include "mapper/mapping.hpp"
#include "ops/tensor.hpp"

namespace tessera::mapper {

namespace {

using attention::Buffers;
using attention::buffers_of;
using attention::ProgramTensors;
using attention::TileLoads;

// The multicast form's leader: the core that loads every K/V tile once and multicasts it.
constexpr int kLeader = 0;

// One step of a block on a multicast core: global K/V tile t (tile j of its stream), keys [k0, k0 + cols) of
// q_blocks' block `block`, held in the core's `slot`; the block's first and last step.
struct MulticastItem {
  size_t stream = 0, block = 0;
  int slot = 0;
  int64_t t = 0, k0 = 0, cols = 0;
  bool first = false, last = false;
};

// A multicast core's step, in the lowering's order: a block's step on global K/V tile `tile`, the block in
// the core's `slot`; its cycles (a block's last step with its final rescale and store) and, on a block's
// first step, its Q load's.
struct MulticastStep {
  int64_t tile = 0, cycles = 0;
  int slot = 0;
  int64_t q_load = 0;  // a block's first step: its Q load's cycles (else 0)
  bool last = false;   // a block's last step
};

// The multicast form's lockstep, each core's `cycles` advanced by its `steps`: the leader loads tile t (in
// `load` cycles) after tile t - 1 and once every core that reads tile t - kv_buffers (`readers` of each) has
// freed its buffer; a core's step starts at the later of its previous step's end and its tile's arrival. A
// core whose blocks see a tile more often than another's falls behind and holds the loads back. A block's Q
// loads on the core's side engines, one after another, once the block before it in its slot has done its
// last step (with one block a core, a stream's Q load waits for the previous stream's end).
void run_lockstep(std::vector<int64_t>& cycles, const std::vector<std::vector<MulticastStep>>& steps,
                  const std::vector<int>& readers, int kv_buffers, int64_t load) {
  const size_t cores = steps.size(), tiles = readers.size();
  std::vector<std::vector<int64_t>> slot_free(cores, std::vector<int64_t>(attention::kMostBlocksPerCore, 0));
  std::vector<int64_t> side_free(cores, 0);
  std::vector<int64_t> arrival(tiles, -1), freed(tiles, 0);
  std::vector<int> pending = readers;
  std::vector<size_t> at(cores, 0);
  size_t next = 0;
  for (bool progress = true; progress;) {
    progress = false;
    for (; next < tiles; ++next) {
      const int64_t earliest = next > 0 ? arrival[next - 1] : 0;
      if (next >= static_cast<size_t>(kv_buffers)) {
        const size_t reused = next - static_cast<size_t>(kv_buffers);
        if (pending[reused] > 0) break;
        arrival[next] = std::max(earliest, freed[reused]) + load;
      } else {
        arrival[next] = earliest + load;
      }
      progress = true;
    }
    for (size_t c = 0; c < cores; ++c) {
      const std::vector<MulticastStep>& list = steps[c];
      for (size_t& i = at[c]; i < list.size() && arrival[static_cast<size_t>(list[i].tile)] >= 0; ++i) {
        const auto t = static_cast<size_t>(list[i].tile);
        const auto slot = static_cast<size_t>(list[i].slot);
        int64_t start = std::max(cycles[c], arrival[t]);
        if (list[i].q_load > 0) {
          side_free[c] = std::max(side_free[c], slot_free[c][slot]) + list[i].q_load;
          start = std::max(start, side_free[c]);
        }
        cycles[c] = start + list[i].cycles;
        if (list[i].last) slot_free[c][slot] = cycles[c];
        if (i + 1 == list.size() || list[i + 1].tile != list[i].tile) {
          --pending[t];
          freed[t] = std::max(freed[t], cycles[c]);
        }
        progress = true;
      }
    }
  }
  TESSERA_ASSERT(next == tiles, "every K/V tile of the multicast form is loaded once its buffer is freed");
}

}  // namespace

Cost AttentionStage::multicast_cost(const FlashCosting& costing) const {
  const arch::ArchSpec& spec = costing.spec;
  const PassEngines& engines = costing.engines;
  const Choice& choice = choice_of(costing.mapping);
  const int64_t cols = choice.block_cols;
  const int cores = static_cast<int>(choice.cores);
  const int kv_buffers = static_cast<int>(std::max<int64_t>(2, choice.kv_buffers));
  const int64_t d = shape_.head_dim, element = size_bytes(dtype_);
  const std::vector<QBlock> blocks = q_blocks(choice.block_rows);
  const std::vector<Stream> all = streams(choice.block_rows, cols, cores);
  const int64_t load = tile_load_cycles(costing.mapping, spec, engines.loads, cols);
  CoreCycles work(cores);
  int64_t kv_bytes = 0;
  // Each core's steps in the lowering's order: per stream, per tile, the core's blocks that see it (a block's
  // last step with its final rescale); the global index of the tile each reads.
  std::vector<std::vector<MulticastStep>> steps(static_cast<size_t>(cores));
  std::vector<int> readers;  // per global tile: the cores that read it
  for (const Stream& stream : all) {
    for (int64_t j = 0; j < stream.tiles; ++j) {
      const auto t = static_cast<int64_t>(readers.size());
      readers.push_back(0);
      for (size_t c = 0; c < static_cast<size_t>(cores); ++c) {
        bool reads = false;
        for (size_t slot = 0; slot < stream.slots[c].size(); ++slot) {
          const QBlock& block = blocks[stream.slots[c][slot]];
          const int64_t keys = keys_seen(block), k0 = j * cols;
          if (k0 >= keys) continue;
          const TileStep step = tile_step(work, costing, block, k0, std::min(cols, keys - k0), j > 0);
          int64_t cycles = step.cycles();
          work.pe[c] += step.pe;
          work.vec[c] += step.vec;
          MulticastStep entry{t, 0, static_cast<int>(slot), 0, k0 + cols >= keys};
          if (entry.last) cycles += add_block_finish(work, c, spec, engines, block);
          if (j == 0) {
            entry.q_load = block_transfer_cycles(spec, engines.stores, block);
            work.dma[c] += entry.q_load;
          }
          entry.cycles = cycles;
          steps[c].push_back(entry);
          reads = true;
        }
        if (reads) ++readers.back();
      }
    }
    work.dma[0] += stream.tiles * load;
    kv_bytes += 2 * stream.keys * d * element;
  }
  run_lockstep(work.cycles, steps, readers, kv_buffers, load);
  return flash_cost(spec, work, kv_bytes, 0, 0);
}

// The multicast form's schedule (lower_multicast): its streams, K/V buffers and S and P tiles; per core, its
// items in order (per stream, per tile, its blocks that see the tile); per global tile (the streams' tiles
// one after another), its loads at the leader and the cores that receive it.
struct AttentionStage::MulticastPlan {
  std::vector<Stream> streams;
  int kv_buffers = 2, scores = 2;
  std::vector<std::vector<MulticastItem>> items;  // per core
  std::vector<TileLoads> tiles;                   // per global tile
  std::vector<std::vector<int>> receivers;        // per global tile: the cores that use it
  std::vector<int64_t> stream_first_tile;         // a stream's tiles are first .. first + tiles - 1
};

// One core of the multicast form (lower_multicast): its Q loads and stores dealt round the side engines
// (the store engines), the leader's K/V tile loads (on the leader), S and P V on the PE array, the softmax
// and the rescales on the vector unit.
class AttentionStage::MulticastCore {
 public:
  MulticastCore(const AttentionStage& stage, const FlashProgram& flash, const MulticastPlan& plan, int core,
                IndexedSemaphores& ids);
  // DMA: per stream, the leader's tile loads (multicast), this core's Q loads of the next stream and the
  // stores of this one; the first stream's Q loads first.
  void append_dma();
  // PE: each item's S and its P V, S up to `scores` - 1 items ahead.
  void append_matmuls();
  // Vector unit: each item's softmax and rescale, and each block's final rescale.
  void append_vector();

 private:
  const std::vector<size_t>& slots(size_t stream) const;
  void append_q_loads(size_t stream);
  void append_stores(size_t stream);
  void append_s(size_t u);
  void append_pv(size_t u);
  void append_finish(size_t u);
  // The first and last item of this core that uses a tile: the one that waits for it, the one that frees it
  // at the leader.
  bool first_use(size_t u) const { return u == 0 || work_[u - 1].t != work_[u].t; }
  bool last_use(size_t u) const { return u + 1 == work_.size() || work_[u + 1].t != work_[u].t; }
  // The engines of the K (V) load that next fills tile t's buffer at the leader (none left: the first load
  // engine).
  std::vector<int> next_k_engines(int64_t t) const;
  std::vector<int> next_v_engines(int64_t t) const;
  // Tile t's K (V) buffer's free at the leader, to each of `next_engines`.
  void free_at_leader(const char* name, int64_t t, const std::vector<int>& next_engines,
                      arch::Signals& signals) const;

  const AttentionStage& stage_;
  const FlashProgram& flash_;
  const MulticastPlan& plan_;
  const int core_;
  const std::vector<MulticastItem>& work_;
  std::vector<arch::Instruction>& list_;
  const Semaphores semaphores_;
  IndexedSemaphores& ids_;
  const int64_t row_bytes_;
  // Per stream, per slot: the row blocks of the block's Q load and of its store, dealt round the side
  // engines in queue order (the first stream's Q loads, then per stream the next stream's Q loads and this
  // one's stores).
  std::vector<std::vector<std::vector<DealtBlock>>> q_pieces_, store_pieces_;
  std::vector<char> q_loaded_;   // per slot: a Q block loaded into it (the next load waits for its free)
  std::vector<char> slot_used_;  // per slot: an earlier block finished in it (the next final rescale waits
                                 // for its store)
  std::vector<int64_t> last_stored_;  // per slot: its last store's blocks
};

arch::Program AttentionStage::lower_multicast(const ops::Op& op, uint64_t seed, const Mapping& mapping,
                                              const arch::ArchSpec& spec,
                                              const std::string& program_name) const {
  const Choice& choice = choice_of(mapping);
  const int64_t rows = choice.block_rows, cols = choice.block_cols;
  const int cores = static_cast<int>(choice.cores);
  MulticastPlan plan;
  plan.kv_buffers = static_cast<int>(std::max<int64_t>(2, choice.kv_buffers));
  plan.streams = streams(rows, cols, cores);
  TESSERA_ASSERT(
      !plan.streams.empty(),
      "a multicast mapping is searched only where its streams fit kMostBlocksPerCore blocks a core");
  const int slots_per_core = blocks_per_core(plan.streams);
  plan.scores = multicast_score_buffers(rows, cols, slots_per_core, plan.kv_buffers, spec);
  const Buffers buffers =
      buffers_of(rows, cols, shape_.head_dim, dtype_,
                 attention::BufferCounts::multicast(slots_per_core, plan.kv_buffers, plan.scores));
  arch::Program program;
  const ProgramTensors tensors =
      attention::start_attention_program(program, program_name, op, seed, spec, shape_);
  const std::vector<QBlock> blocks = q_blocks(rows);
  // The leader's K/V tiles dealt round the load engines; every core's Q loads and stores round the others.
  const PassEngines engines = flash_engines(mapping, spec);
  const FlashProgram flash{program, tensors, buffers, mapping.dataflow, spec.core.dma, engines, blocks};
  plan_multicast(flash, cols, cores, plan);
  for (int c = 0; c < cores; ++c) {
    program.cores.emplace_back();
    program.cores.back().coord = arch::core_coord(c, spec.mesh);
  }
  IndexedSemaphores ids(program);
  for (int c = 0; c < cores; ++c) {
    MulticastCore core(*this, flash, plan, c, ids);
    core.append_dma();
    core.append_matmuls();
    core.append_vector();
  }
  program.number_semaphores_by_appearance();
  return program;
}

void AttentionStage::plan_multicast(const FlashProgram& flash, int64_t cols, int cores,
                                    MulticastPlan& plan) const {
  EngineDealer dealer(flash.engines.loads, flash.dma);
  const int64_t row_bytes = shape_.head_dim * size_bytes(dtype_);
  plan.items.resize(static_cast<size_t>(cores));
  for (size_t si = 0; si < plan.streams.size(); ++si) {
    const Stream& stream = plan.streams[si];
    plan.stream_first_tile.push_back(static_cast<int64_t>(plan.tiles.size()));
    const QBlock& any = flash.blocks[stream.slots[0].front()];  // every block of a stream has its b and g
    for (int64_t j = 0; j < stream.tiles; ++j) {
      const auto t = static_cast<int64_t>(plan.tiles.size());
      plan.tiles.push_back(
          attention::deal_tile(dealer,
                               attention::kv_runs(shape_, flash.tensors.table, any.b, any.g, j * cols,
                                                  std::min(cols, stream.keys - j * cols)),
                               row_bytes));
      plan.receivers.emplace_back();
      for (int c = 0; c < cores; ++c) {
        const std::vector<size_t>& slots = stream.slots[static_cast<size_t>(c)];
        bool uses = false;
        for (size_t slot = 0; slot < slots.size(); ++slot) {
          const int64_t keys = keys_seen(flash.blocks[slots[slot]]), tiles = ceil_div(keys, cols);
          if (j >= tiles) continue;
          plan.items[static_cast<size_t>(c)].push_back(
              MulticastItem{si, slots[slot], static_cast<int>(slot), t, j * cols,
                            std::min(cols, keys - j * cols), j == 0, j == tiles - 1});
          uses = true;
        }
        if (uses) plan.receivers.back().push_back(c);
      }
    }
  }
}

AttentionStage::MulticastCore::MulticastCore(const AttentionStage& stage, const FlashProgram& flash,
                                             const MulticastPlan& plan, int core, IndexedSemaphores& ids)
    : stage_(stage),
      flash_(flash),
      plan_(plan),
      core_(core),
      work_(plan.items[static_cast<size_t>(core)]),
      list_(flash.program.cores[static_cast<size_t>(core)].instructions),
      semaphores_(flash.program),
      ids_(ids),
      row_bytes_(stage.shape_.head_dim * size_bytes(stage.dtype_)),
      q_pieces_(plan.streams.size()),
      store_pieces_(plan.streams.size()) {
  const auto slots_per_core = static_cast<size_t>(blocks_per_core(plan.streams));
  q_loaded_.assign(slots_per_core, 0);
  slot_used_.assign(slots_per_core, 0);
  last_stored_.assign(slots_per_core, 0);
  EngineDealer side(flash.engines.stores, flash.dma);
  auto deal_q = [&](size_t si) {
    for (size_t block : slots(si)) q_pieces_[si].push_back(side.deal(flash.blocks[block].rows, row_bytes_));
  };
  deal_q(0);
  for (size_t si = 0; si < plan.streams.size(); ++si) {
    if (si + 1 < plan.streams.size()) deal_q(si + 1);
    for (size_t block : slots(si))
      store_pieces_[si].push_back(side.deal(flash.blocks[block].rows, row_bytes_));
  }
}

const std::vector<size_t>& AttentionStage::MulticastCore::slots(size_t stream) const {
  return plan_.streams[stream].slots[static_cast<size_t>(core_)];
}

void AttentionStage::MulticastCore::append_dma() {
  const attention::KvLoader loader{flash_.program, flash_.tensors, flash_.engines.loads,
                                   stage_.shape_.head_dim, size_bytes(stage_.dtype_)};
  const int kv_buffers = plan_.kv_buffers;
  append_q_loads(0);
  for (size_t si = 0; si < plan_.streams.size(); ++si) {
    if (core_ == kLeader)
      for (int64_t t = plan_.stream_first_tile[si]; t < plan_.stream_first_tile[si] + plan_.streams[si].tiles;
           ++t) {
        // A buffer's next load waits for every core that received the tile it held to free it.
        const int frees = t >= kv_buffers
                              ? static_cast<int>(plan_.receivers[static_cast<size_t>(t - kv_buffers)].size())
                              : 0;
        attention::append_tile_loads(list_, loader, flash_.buffers, static_cast<int>(t % kv_buffers),
                                     plan_.tiles[static_cast<size_t>(t)], frees,
                                     plan_.receivers[static_cast<size_t>(t)]);
      }
    if (si + 1 < plan_.streams.size()) append_q_loads(si + 1);
    append_stores(si);
  }
}

void AttentionStage::MulticastCore::append_q_loads(size_t stream) {
  const std::vector<size_t>& blocks = slots(stream);
  for (size_t slot = 0; slot < blocks.size(); ++slot) {
    const QBlock& block = flash_.blocks[blocks[slot]];
    std::vector<int> waited;
    for (const DealtBlock& piece : q_pieces_[stream][slot]) {
      arch::DmaLoad load;
      load.source = arch::TensorRegion{flash_.tensors.q, block.first_row + piece.rows.first, piece.rows.rows,
                                       0, stage_.shape_.head_dim};
      load.sram_address = flash_.buffers.block(static_cast<int>(slot)).q +
                          static_cast<uint64_t>(piece.rows.first * row_bytes_);
      arch::Waits waits;
      if (q_loaded_[slot] && std::find(waited.begin(), waited.end(), piece.engine) == waited.end()) {
        waits.push_back(arch::SemaphoreWait{
            semaphores_.on_engine("q_free", static_cast<int64_t>(slot), flash_.engines.stores, piece.engine),
            1});
        waited.push_back(piece.engine);
      }
      list_.push_back(make_instruction(dma_queue(piece.engine), load, waits,
                                       {ids_.here("q_full", static_cast<int64_t>(slot))}));
    }
    q_loaded_[slot] = 1;
  }
}

void AttentionStage::MulticastCore::append_stores(size_t stream) {
  const std::vector<size_t>& blocks = slots(stream);
  for (size_t slot = 0; slot < blocks.size(); ++slot) {
    const QBlock& block = flash_.blocks[blocks[slot]];
    for (const DealtBlock& piece : store_pieces_[stream][slot]) {
      arch::DmaStore store;
      store.sram_address = flash_.buffers.block(static_cast<int>(slot)).out +
                           static_cast<uint64_t>(piece.rows.first * row_bytes_);
      store.destination = arch::TensorRegion{flash_.tensors.o, block.first_row + piece.rows.first,
                                             piece.rows.rows, 0, stage_.shape_.head_dim};
      list_.push_back(
          make_instruction(dma_queue(piece.engine), store,
                           {arch::SemaphoreWait{semaphores_.on_engine("out_full", static_cast<int64_t>(slot),
                                                                      flash_.engines.stores, piece.engine),
                                                1}},
                           {ids_.here("out_free", static_cast<int64_t>(slot))}));
    }
  }
}

void AttentionStage::MulticastCore::append_matmuls() {
  // S of an item runs ahead of the P V of up to `scores` - 1 earlier items, only while it needs the same or
  // the next tile of the same stream as the oldest of them: a core that skips tiles (its blocks see fewer
  // keys than the stream's heaviest) would otherwise hold a P V, and with it the free of a V buffer the
  // leader waits on, behind a tile the leader cannot load yet; and on one DMA engine a stream's stores sit
  // before the next stream's tiles.
  const auto ahead_most = static_cast<size_t>(plan_.scores - 1);
  std::deque<size_t> behind;  // items whose S is queued and P V not yet, oldest first
  for (size_t u = 0; u < work_.size(); ++u) {
    while (!behind.empty() &&
           (work_[u].t > work_[behind.front()].t + 1 || work_[u].stream != work_[behind.front()].stream)) {
      append_pv(behind.front());
      behind.pop_front();
    }
    append_s(u);
    behind.push_back(u);
    if (behind.size() > ahead_most) {
      append_pv(behind.front());
      behind.pop_front();
    }
  }
  for (size_t u : behind) append_pv(u);
}

std::vector<int> AttentionStage::MulticastCore::next_k_engines(int64_t t) const {
  const auto next = static_cast<size_t>(t + plan_.kv_buffers);
  return next < plan_.tiles.size() ? attention::engines_of(plan_.tiles[next].k)
                                   : std::vector<int>{flash_.engines.loads.first};
}

std::vector<int> AttentionStage::MulticastCore::next_v_engines(int64_t t) const {
  const auto next = static_cast<size_t>(t + plan_.kv_buffers);
  return next < plan_.tiles.size() ? attention::engines_of(plan_.tiles[next].v)
                                   : std::vector<int>{flash_.engines.loads.first};
}

void AttentionStage::MulticastCore::free_at_leader(const char* name, int64_t t,
                                                   const std::vector<int>& next_engines,
                                                   arch::Signals& signals) const {
  const std::string index = fmt::format("[{}]", t % plan_.kv_buffers);
  for (int engine : next_engines)
    signals.push_back(semaphores_.at(engine_semaphore(name, index, flash_.engines.loads, engine), kLeader));
}

void AttentionStage::MulticastCore::append_s(size_t u) {
  const MulticastItem& item = work_[u];
  const QBlock& block = flash_.blocks[item.block];
  const int kv_buffer = static_cast<int>(item.t % plan_.kv_buffers),
            score_buffer = static_cast<int>(u % plan_.scores);
  arch::PeMatmul scores =
      stage_.matmul_op(flash_.dataflow, flash_.buffers.block(item.slot).q, flash_.buffers.k[kv_buffer],
                       flash_.buffers.s[score_buffer], block.rows, item.cols, stage_.shape_.head_dim);
  scores.w_transposed = true;
  arch::Waits waits;
  if (first_use(u))
    waits.push_back(
        ids_.wait("k_full", kv_buffer, static_cast<int>(plan_.tiles[static_cast<size_t>(item.t)].k.size())));
  if (item.first) waits.push_back(ids_.wait("q_full", item.slot));
  if (u >= static_cast<size_t>(plan_.scores)) waits.push_back(ids_.wait("s_free", score_buffer));
  arch::Signals signals = {ids_.here("s_full", score_buffer)};
  if (last_use(u)) free_at_leader("k_free", item.t, next_k_engines(item.t), signals);
  if (item.last) {
    // To the engines of this slot's next Q load on this core (none left: the first side engine's).
    std::vector<int> next_engines = {flash_.engines.stores.first};
    for (size_t si = item.stream + 1; si < plan_.streams.size(); ++si)
      if (item.slot < static_cast<int>(q_pieces_[si].size())) {
        next_engines = engines_of(q_pieces_[si][static_cast<size_t>(item.slot)]);
        break;
      }
    for (int engine : next_engines)
      signals.push_back(semaphores_.on_engine("q_free", item.slot, flash_.engines.stores, engine));
  }
  list_.push_back(make_instruction(pe_queue(), scores, waits, signals));
}

void AttentionStage::MulticastCore::append_pv(size_t u) {
  const MulticastItem& item = work_[u];
  const QBlock& block = flash_.blocks[item.block];
  const int kv_buffer = static_cast<int>(item.t % plan_.kv_buffers),
            score_buffer = static_cast<int>(u % plan_.scores);
  arch::PeMatmul pv = stage_.matmul_op(
      flash_.dataflow, flash_.buffers.p[score_buffer], flash_.buffers.v[kv_buffer],
      flash_.buffers.block(item.slot).accumulator, block.rows, stage_.shape_.head_dim, item.cols);
  pv.accumulate = !item.first;
  arch::Waits waits;
  if (first_use(u))
    waits.push_back(
        ids_.wait("v_full", kv_buffer, static_cast<int>(plan_.tiles[static_cast<size_t>(item.t)].v.size())));
  waits.push_back(ids_.wait("p_full", score_buffer));
  if (!item.first) waits.push_back(ids_.wait("acc_ready", item.slot));
  arch::Signals signals = {ids_.here("pv_done", item.slot), ids_.here("p_free", score_buffer)};
  if (last_use(u)) free_at_leader("v_free", item.t, next_v_engines(item.t), signals);
  list_.push_back(make_instruction(pe_queue(), pv, waits, signals));
}

void AttentionStage::MulticastCore::append_vector() {
  // A block's final rescale (O = accumulator / sum, then its store) waits for its last P V: queued after
  // the next item's softmax and rescale where that item is another slot's, so that the vector unit runs the
  // softmax while the PE array runs the P V; right away where it is the same slot's (a new block's first
  // P V overwrites the accumulator the final rescale reads).
  std::optional<size_t> unfinished;  // a block's last item whose final rescale is deferred
  for (size_t u = 0; u < work_.size(); ++u) {
    const MulticastItem& item = work_[u];
    const QBlock& block = flash_.blocks[item.block];
    const attention::BlockBuffers mine = flash_.buffers.block(item.slot);
    const int score_buffer = static_cast<int>(u % plan_.scores);
    const arch::VecOp softmax =
        stage_.softmax_op(block, item.k0, item.cols, item.first, flash_.buffers.s[score_buffer],
                          flash_.buffers.p[score_buffer], mine.statistics);
    arch::Waits waits = {ids_.wait("s_full", score_buffer)};
    if (u >= static_cast<size_t>(plan_.scores)) waits.push_back(ids_.wait("p_free", score_buffer));
    list_.push_back(make_instruction(vec_queue(), softmax, waits,
                                     {ids_.here("s_free", score_buffer), ids_.here("p_full", score_buffer)}));
    if (!item.first)
      list_.push_back(make_instruction(
          vec_queue(), stage_.scale_op(block, mine.accumulator, mine.out, mine.statistics, false),
          {ids_.wait("pv_done", item.slot)}, {ids_.here("acc_ready", item.slot)}));
    if (unfinished) append_finish(*std::exchange(unfinished, std::nullopt));
    if (item.last) {
      if (u + 1 < work_.size() && work_[u + 1].slot != item.slot)
        unfinished = u;
      else
        append_finish(u);
    }
  }
  if (unfinished) append_finish(*unfinished);
}

void AttentionStage::MulticastCore::append_finish(size_t u) {
  const MulticastItem& item = work_[u];
  const auto slot = static_cast<size_t>(item.slot);
  const attention::BlockBuffers mine = flash_.buffers.block(item.slot);
  arch::Waits waits = {ids_.wait("pv_done", item.slot)};
  if (slot_used_[slot])
    waits.push_back(ids_.wait("out_free", item.slot, static_cast<int>(last_stored_[slot])));
  slot_used_[slot] = 1;
  const std::vector<DealtBlock>& stored = store_pieces_[item.stream][slot];
  last_stored_[slot] = static_cast<int64_t>(stored.size());
  arch::Signals full;
  for (int engine : engines_of(stored))
    full.push_back(semaphores_.on_engine("out_full", item.slot, flash_.engines.stores, engine));
  list_.push_back(make_instruction(
      vec_queue(),
      stage_.scale_op(flash_.blocks[item.block], mine.accumulator, mine.out, mine.statistics, true), waits,
      full));
}

}  // namespace tessera::mapper
