#include "mapper/attention/stage.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <functional>
#include <iterator>
#include <optional>
#include <utility>

#include "arch/isa/vec_op.hpp"
#include "mapper/attention/naive.hpp"
#include "mapper/attention/program.hpp"
#include "mapper/cost.hpp"
#include "mapper/kit/dma_engines.hpp"
#include "mapper/kit/instruction_timer.hpp"
#include "mapper/kit/program_header.hpp"
#include "mapper/search.hpp"
#include "ops/tensor.hpp"

namespace tessera::mapper {

namespace {

using attention::Buffers;
using attention::buffers_of;
using attention::kMostKvBuffers;
using attention::kMostScoreBuffers;

constexpr int64_t kBlockRowChoices[] = {16, 32, 64, 128, 256};
// A multicast core's block count in words ("two a core").
constexpr const char* kCountWords[] = {"no", "one", "two", "three", "four"};
static_assert(std::size(kCountWords) == attention::kMostBlocksPerCore + 1, "a word for every block count");
constexpr int64_t kBlockColChoices[] = {16, 32, 64, 128, 256, 512};

}  // namespace

const AttentionStage::Choice& AttentionStage::choice_of(const Mapping& mapping) {
  return mapping.choice.as<Choice>();
}

std::shared_ptr<const AttentionStage> AttentionStage::of(const ops::Op& op) {
  const auto* shape = op.as<ops::AttentionShape>();
  if (!shape) return nullptr;
  auto stage = std::make_shared<AttentionStage>();
  stage->shape_ = *shape;
  stage->dtype_ = op.dtype;
  stage->masked_ = shape->mask == ops::AttentionMask::causal && shape->seq_q > 1;
  return stage;
}

std::vector<AttentionStage::QBlock> AttentionStage::q_blocks(int64_t block_rows) const {
  const ops::AttentionShape& a = shape_;
  const int64_t group = a.group();
  std::vector<QBlock> blocks;
  for (int64_t b = 0; b < a.batch; ++b)
    for (int64_t g = 0; g < a.kv_heads; ++g) {
      const int64_t first = (b * a.heads + g * group) * a.seq_q;  // the group's q heads are adjacent rows
      if (masked_) {
        for (int64_t h = 0; h < group; ++h)
          for (int64_t s = 0; s < a.seq_q; s += block_rows)
            blocks.push_back(QBlock{b, g, first + h * a.seq_q + s, std::min(block_rows, a.seq_q - s), s});
      } else {
        for (int64_t r = 0; r < group * a.seq_q; r += block_rows)
          blocks.push_back(QBlock{b, g, first + r, std::min(block_rows, group * a.seq_q - r), 0});
      }
    }
  return blocks;
}

std::vector<AttentionStage::Stream> AttentionStage::streams(int64_t block_rows, int64_t block_cols,
                                                            int cores) const {
  const std::vector<QBlock> blocks = q_blocks(block_rows);
  std::vector<Stream> result;
  for (size_t first = 0; first < blocks.size();) {
    size_t last = first;
    while (last < blocks.size() && blocks[last].b == blocks[first].b && blocks[last].g == blocks[first].g)
      ++last;
    const size_t count = last - first, per_round = static_cast<size_t>(cores);
    if (count > attention::kMostBlocksPerCore * per_round) return {};
    std::vector<size_t> order(count);
    for (size_t i = 0; i < count; ++i) order[i] = first + i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t x, size_t y) { return keys_seen(blocks[x]) > keys_seen(blocks[y]); });
    // Rounds of one block a core, heaviest first, dealt there and back (round 1 from the last core): a core
    // with a heavier block of one round has a lighter one of the next.
    Stream stream;
    stream.slots.resize(per_round);
    for (size_t i = 0; i < count; ++i) {
      const size_t round = i / per_round, at = i % per_round;
      stream.slots[round % 2 == 0 ? at : per_round - 1 - at].push_back(order[i]);
    }
    stream.keys = keys_seen(blocks[order.front()]);
    stream.tiles = ceil_div(stream.keys, block_cols);
    result.push_back(std::move(stream));
    first = last;
  }
  return result;
}

int AttentionStage::multicast_score_buffers(int64_t block_rows, int64_t block_cols, int blocks, int kv,
                                            const arch::ArchSpec& spec) const {
  const int64_t with_three =
      static_cast<int64_t>(buffers_of(block_rows, block_cols, shape_.head_dim, dtype_,
                                      attention::BufferCounts::multicast(blocks, kv, kMostScoreBuffers))
                               .end);
  return with_three <= spec.core.sram.bytes ? kMostScoreBuffers : 2;
}

int AttentionStage::blocks_per_core(const std::vector<Stream>& streams) {
  size_t most = 1;
  for (const Stream& stream : streams)
    for (const std::vector<size_t>& slots : stream.slots) most = std::max(most, slots.size());
  return static_cast<int>(most);
}

int64_t AttentionStage::keys_seen(const QBlock& block) const {
  if (!masked_) return shape_.seq_kv;
  return std::min(shape_.seq_kv, block.query + block.rows - 1 + shape_.seq_kv - shape_.seq_q + 1);
}

int64_t AttentionStage::causal_shift(const QBlock& block, int64_t k0) const {
  return block.query + shape_.seq_kv - shape_.seq_q - k0;
}

bool AttentionStage::tile_masked(const QBlock& block, int64_t k0, int64_t cols) const {
  return masked_ && k0 + cols - 1 > causal_shift(block, k0) + k0;
}

const char* AttentionStage::form_name(Form form) {
  return form == naive         ? "naive"
         : form == flash_mc    ? "flash-mc"
         : form == flash_split ? "flash-split"
                               : "flash";
}

std::string AttentionStage::label(const Mapping& mapping) const {
  return std::string(form_name(choice_of(mapping).form)) + " " + arch::name_of(mapping.dataflow);
}

std::string AttentionStage::describe(const Mapping& mapping) const {
  const Choice& t = choice_of(mapping);
  if (t.form == naive) return describe_naive(mapping);
  if (t.form == flash_split) return describe_split(mapping);
  if (t.form == flash_mc) {
    const int per_core = blocks_per_core(streams(t.block_rows, t.block_cols, static_cast<int>(t.cores)));
    return fmt::format(
        "flash-mc {} cores {} q blocks of {} rows ({} a core), k/v tiles of {} multicast, {} k/v buffers",
        arch::name_of(mapping.dataflow), t.cores, t.block_rows, kCountWords[per_core], t.block_cols,
        std::max<int64_t>(2, t.kv_buffers));
  }
  return fmt::format("flash {} cores {} q blocks of {} rows, k/v tiles of {} db=kv,s,p",
                     arch::name_of(mapping.dataflow), t.cores, t.block_rows, t.block_cols);
}

NamedValues AttentionStage::fields(const Mapping& mapping, const Cost&) const {
  const Choice& t = choice_of(mapping);
  NamedValues values = {{"form", std::string(form_name(t.form))},
                        {"cores", t.cores},
                        {"q_block_rows", t.block_rows},
                        {"kv_tile_keys", t.block_cols}};
  if (t.form == flash_mc) {
    values.push_back({"kv_buffers", std::max<int64_t>(2, t.kv_buffers)});
    values.push_back({"multicast", true});
  }
  if (t.form == flash_split) values.push_back({"kv_splits", t.splits});
  if (t.form == naive) values.push_back({"softmax_rows", t.softmax_rows});
  return values;
}

int64_t AttentionStage::tile_load_cycles(const Mapping& mapping, const arch::ArchSpec& spec,
                                         const EngineGroup& group, int64_t keys) const {
  const int64_t cols = choice_of(mapping).block_cols;
  const int64_t tokens_per_block = shape_.paged() ? shape_.kv_cache.block_tokens : cols;
  const int64_t row_bytes = shape_.head_dim * size_bytes(dtype_);
  // Its runs (a page's keys, or the whole tile), each cut into row blocks over the group.
  const int64_t runs = 2 * std::max<int64_t>(1, ceil_div(keys, tokens_per_block)),
                run_rows = std::min(keys, tokens_per_block);
  return spread_cycles(spec.core.dma, group, 2 * keys * row_bytes,
                       runs * blocks_of(run_rows, row_bytes, group, spec.core.dma));
}

int64_t AttentionStage::block_transfer_cycles(const arch::ArchSpec& spec, const EngineGroup& group,
                                              const QBlock& block) const {
  const int64_t row_bytes = shape_.head_dim * size_bytes(dtype_);
  return spread_cycles(spec.core.dma, group, block.rows * row_bytes,
                       blocks_of(block.rows, row_bytes, group, spec.core.dma));
}

PassEngines AttentionStage::flash_engines(const Mapping& mapping, const arch::ArchSpec& spec) const {
  const int64_t rows = choice_of(mapping).block_rows, row_bytes = shape_.head_dim * size_bytes(dtype_);
  return pass_engines(spec.core.dma, static_cast<double>((rows + 2 * shape_.seq_kv) * row_bytes),
                      static_cast<double>(rows * row_bytes));
}

AttentionStage::TileStep AttentionStage::tile_step(CoreCycles& work, const Mapping& mapping,
                                                   const arch::ArchSpec& spec, const PassEngines& engines,
                                                   const InstructionTimer& timer, const QBlock& block,
                                                   int64_t k0, int64_t keys, bool rescale,
                                                   bool loads_its_tiles) const {
  const StepKey key{block.rows, keys, tile_masked(block, k0, keys), rescale, loads_its_tiles};
  for (const auto& [known, step] : work.known_steps)
    if (known == key) return step;
  const int64_t d = shape_.head_dim;
  const arch::VectorSpec& vector = *spec.core.vector;
  TileStep step;
  step.pe = timer.matmul(mapping.dataflow, block.rows, keys, d).interval +
            timer.matmul(mapping.dataflow, block.rows, d, keys).interval;
  step.vec = vector_cycles(vector, arch::VectorKind::online_softmax, block.rows, keys, key.masked ? 2 : 1) +
             (rescale ? vector_cycles(vector, arch::VectorKind::scale_rows, block.rows, d, 0) : 0);
  step.load = loads_its_tiles ? tile_load_cycles(mapping, spec, engines.loads, keys) : 0;
  work.known_steps.emplace_back(key, step);
  return step;
}

void AttentionStage::add_flash_range(CoreCycles& work, size_t core, const Mapping& mapping,
                                     const arch::ArchSpec& spec, const PassEngines& engines,
                                     const InstructionTimer& timer, const QBlock& block, int64_t begin,
                                     int64_t end, bool loads_its_tiles) const {
  const int64_t cols = choice_of(mapping).block_cols;
  for (int64_t k0 = begin; k0 < end; k0 += cols) {
    const TileStep step = tile_step(work, mapping, spec, engines, timer, block, k0, std::min(cols, end - k0),
                                    k0 > begin, loads_its_tiles);
    work.cycles[core] += step.cycles();
    work.pe[core] += step.pe;
    work.vec[core] += step.vec;
    work.dma[core] += step.load;
  }
  const int64_t q_load = block_transfer_cycles(spec, engines.loads, block);
  work.cycles[core] += q_load;
  work.dma[core] += q_load;
}

int64_t AttentionStage::add_block_finish(CoreCycles& work, size_t core, const arch::ArchSpec& spec,
                                         const PassEngines& engines, const QBlock& block) const {
  const int64_t finish =
      vector_cycles(*spec.core.vector, arch::VectorKind::scale_rows, block.rows, shape_.head_dim, 0);
  const int64_t store = block_transfer_cycles(spec, engines.stores, block);
  work.vec[core] += finish;
  work.dma[core] += store;
  return finish + (spec.core.dma.engines > 1 ? 0 : store);
}

Cost AttentionStage::flash_cost(const arch::ArchSpec& spec, const CoreCycles& work, int64_t kv_bytes,
                                int64_t q_reload_bytes, int64_t reduction_bytes) const {
  const ops::AttentionShape& a = shape_;
  Cost cost;
  const int64_t q_bytes = a.batch * a.heads * a.seq_q * a.head_dim * size_bytes(dtype_);
  cost.dram_bytes_by_tensor = {q_bytes + q_reload_bytes, kv_bytes, q_bytes};
  cost.dram_bytes = 2 * q_bytes + q_reload_bytes + kv_bytes;
  cost.reduction_bytes = reduction_bytes;
  cost.compute_cycles = *std::max_element(work.pe.begin(), work.pe.end());
  cost.vector_cycles = *std::max_element(work.vec.begin(), work.vec.end());
  cost.dma_cycles = *std::max_element(work.dma.begin(), work.dma.end());
  cost.noc_cycles = *std::max_element(work.noc.begin(), work.noc.end());
  attention::finish_cost(cost, *std::max_element(work.cycles.begin(), work.cycles.end()), a, spec);
  return cost;
}

Cost AttentionStage::estimate(const Mapping& mapping, const arch::ArchSpec& spec) const {
  return evaluate(mapping, spec);
}

Cost AttentionStage::evaluate(const Mapping& mapping, const arch::ArchSpec& spec) const {
  const Choice& choice = choice_of(mapping);
  if (choice.form == naive) return evaluate_naive(*this, mapping, spec);
  if (choice.form == flash_split) return evaluate_split(mapping, spec);
  const InstructionTimer timer(spec);
  const PassEngines engines = flash_engines(mapping, spec);
  if (choice.form == flash_mc) return multicast_cost(mapping, spec, timer, engines);
  const int cores = static_cast<int>(choice.cores);
  const int64_t d = shape_.head_dim, element = size_bytes(dtype_);
  const std::vector<QBlock> blocks = q_blocks(choice.block_rows);
  CoreCycles work(cores);
  int64_t kv_bytes = 0;
  // A block's part: its tiles' steps and Q load, its last rescale and store.
  for (size_t i = 0; i < blocks.size(); ++i) {
    const size_t core = i * static_cast<size_t>(cores) / blocks.size();
    const QBlock& block = blocks[i];
    add_flash_range(work, core, mapping, spec, engines, timer, block, 0, keys_seen(block), true);
    work.cycles[core] += add_block_finish(work, core, spec, engines, block);
    kv_bytes += 2 * keys_seen(block) * d * element;
  }
  return flash_cost(spec, work, kv_bytes, 0, 0);
}

SearchResult AttentionStage::search(const std::shared_ptr<const mapper::Form>& self,
                                    const arch::ArchSpec& spec, const SearchOptions& options) const {
  require_pe_dtype(dtype_, spec, options);
  const auto started = std::chrono::steady_clock::now();
  const ops::AttentionShape& a = shape_;
  SearchResult result;
  const int machine_cores = spec.mesh.rows * spec.mesh.cols;
  const int64_t most_rows = masked_ ? a.seq_q : a.group() * a.seq_q;
  const size_t keep = static_cast<size_t>(std::max(1, options.keep_per_dataflow));
  int64_t smallest_bytes = 0;
  std::vector<DataflowSearch> multicast_rows, split_rows, naive_rows;  // listed after the plain rows
  // The naive form stores S and P: only where they fit the DRAM tessera models (1 TiB a tensor).
  const bool naive_stored = static_cast<double>(a.batch * a.heads * a.seq_q) * static_cast<double>(a.seq_kv) *
                                static_cast<double>(size_bytes(dtype_)) <=
                            0x1p40;
  for (arch::Dataflow dataflow : options.dataflows) {
    if (dataflow == arch::Dataflow::rs) continue;
    DataflowSearch row, multicast_row, split_row, naive_row;
    row.dataflow = multicast_row.dataflow = split_row.dataflow = naive_row.dataflow = dataflow;
    row.stage_kind = multicast_row.stage_kind = split_row.stage_kind = naive_row.stage_kind = "attention";
    row.label_text = std::string(form_name(flash)) + " " + arch::name_of(dataflow);
    multicast_row.label_text = std::string(form_name(flash_mc)) + " " + arch::name_of(dataflow);
    split_row.label_text = std::string(form_name(flash_split)) + " " + arch::name_of(dataflow);
    naive_row.label_text = std::string(form_name(naive)) + " " + arch::name_of(dataflow);
    for (int64_t rows : kBlockRowChoices) {
      // A block larger than the rows there are only where the next smaller one does not hold them all.
      if (rows != kBlockRowChoices[0] && rows / 2 >= most_rows) continue;
      for (int64_t cols : kBlockColChoices) {
        if (cols != kBlockColChoices[0] && cols / 2 >= a.seq_kv) continue;
        const int64_t block_rows = std::min(rows, most_rows), block_cols = std::min(cols, a.seq_kv);
        const Buffers buffers = buffers_of(block_rows, block_cols, a.head_dim, dtype_);
        if (smallest_bytes == 0 || static_cast<int64_t>(buffers.end) < smallest_bytes)
          smallest_bytes = static_cast<int64_t>(buffers.end);
        const bool flash_fits = static_cast<int64_t>(buffers.end) <= spec.core.sram.bytes;
        const int64_t blocks = static_cast<int64_t>(q_blocks(block_rows).size());
        Mapping mapping;
        mapping.form = self;
        mapping.dataflow = dataflow;
        Choice flash_choice;
        flash_choice.block_rows = block_rows;
        flash_choice.block_cols = block_cols;
        flash_choice.cores = std::min<int64_t>(blocks, machine_cores);
        mapping.choice = flash_choice;
        auto add = [&](DataflowSearch& to, const Mapping& candidate_mapping) {
          Candidate candidate;
          candidate.mapping = candidate_mapping;
          candidate.cost = evaluate(candidate_mapping, spec);
          candidate.index = static_cast<uint64_t>(to.legal);
          ++to.legal;
          ++result.evaluated;
          keep_pareto(to.front, candidate);
          keep_best(to.best, std::move(candidate), keep, options.objective);
        };
        if (flash_fits) add(row, mapping);
        // The multicast form, where every stream's blocks fit kMostBlocksPerCore a core and its buffers fit
        // the SRAM.
        const int cores = static_cast<int>(flash_choice.cores);
        const std::vector<Stream> multicast_streams = flash_fits && cores > 1 && spec.noc.multicast
                                                          ? streams(block_rows, block_cols, machine_cores)
                                                          : std::vector<Stream>{};
        if (!multicast_streams.empty())
          // The most K/V buffers first (at equal cost the deeper one ranks first).
          for (int kv = kMostKvBuffers; kv >= 2; --kv) {
            if (static_cast<int64_t>(
                    buffers_of(block_rows, block_cols, a.head_dim, dtype_,
                               attention::BufferCounts::multicast(blocks_per_core(multicast_streams), kv, 2))
                        .end) > spec.core.sram.bytes)
              continue;
            Mapping multicast = mapping;
            Choice multicast_choice = flash_choice;
            multicast_choice.cores = machine_cores;
            multicast_choice.form = flash_mc;
            multicast_choice.kv_buffers = kv;
            multicast.choice = multicast_choice;
            add(multicast_row, multicast);
          }
        // The split-KV form, where a decode's blocks leave cores idle and the merging core's partials fit.
        for (int64_t splits : split_choices(block_rows, block_cols, machine_cores)) {
          if (static_cast<int64_t>(buffers_of(block_rows, block_cols, a.head_dim, dtype_,
                                              attention::BufferCounts::split(splits))
                                       .end) > spec.core.sram.bytes)
            continue;
          Mapping split = mapping;
          Choice split_choice = flash_choice;
          split_choice.cores = blocks * splits;
          split_choice.form = flash_split;
          split_choice.splits = splits;
          split.choice = split_choice;
          add(split_row, split);
        }
        // The naive form, where a chunk of S rows fits the SRAM beside its passes' tiles.
        const int64_t softmax_rows = naive_softmax_rows(*this, block_rows, block_cols, spec.core.sram.bytes);
        if (naive_stored && softmax_rows > 0) {
          Mapping unfused = mapping;
          Choice naive_choice = flash_choice;
          naive_choice.form = naive;
          naive_choice.softmax_rows = softmax_rows;
          unfused.choice = naive_choice;
          add(naive_row, unfused);
        }
      }
    }
    if (row.legal == 0)
      row.why_none = Infeasibility{"core.sram.kib",
                                   fmt::format("the smallest flash blocks need {} KiB of SRAM, the "
                                               "core has {} KiB",
                                               ceil_div(smallest_bytes, 1024), spec.core.sram.bytes / 1024)};
    result.per_dataflow.push_back(std::move(row));
    if (multicast_row.legal > 0) multicast_rows.push_back(std::move(multicast_row));
    if (split_row.legal > 0) split_rows.push_back(std::move(split_row));
    if (naive_row.legal > 0) naive_rows.push_back(std::move(naive_row));
  }
  for (std::vector<DataflowSearch>* rows : {&multicast_rows, &split_rows, &naive_rows})
    for (DataflowSearch& form_row : *rows) result.per_dataflow.push_back(std::move(form_row));
  const bool any = std::any_of(result.per_dataflow.begin(), result.per_dataflow.end(),
                               [](const DataflowSearch& row) { return row.legal > 0; });
  if (!any) {
    const SourceLocation where =
        options.locate_field ? options.locate_field("core.sram.kib") : SourceLocation{};
    throw InputError(where, "core.sram.kib",
                     fmt::format("no legal mapping for {}: {}", options.op_description,
                                 result.per_dataflow.empty() ? std::string("no dataflow but rs requested")
                                                             : result.per_dataflow.front().why_none.message),
                     "give the core more SRAM (core.sram.kib)");
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return result;
}

arch::PeMatmul AttentionStage::matmul_op(arch::Dataflow dataflow, uint64_t a_address, uint64_t w_address,
                                         uint64_t o_address, int64_t m, int64_t n, int64_t k) const {
  arch::PeMatmul op;
  op.dataflow = dataflow;
  op.dtype = dtype_;
  op.a_address = a_address;
  op.w_address = w_address;
  op.o_address = o_address;
  op.m = m;
  op.n = n;
  op.k = k;
  return op;
}

arch::VecOp AttentionStage::softmax_op(const QBlock& block, int64_t k0, int64_t cols, bool first, uint64_t s,
                                       uint64_t p, uint64_t statistics) const {
  arch::VecOp op;
  op.kind = arch::VectorKind::online_softmax;
  op.dtype = accumulator_of(dtype_);
  op.out_dtype = dtype_;
  op.x_address = s;
  op.o_address = p;
  op.g_address = statistics;
  op.rows = block.rows;
  op.cols = cols;
  op.scale = shape_.effective_scale();
  op.first = first;
  if (tile_masked(block, k0, cols)) op.causal_shift = causal_shift(block, k0);
  return op;
}

arch::VecOp AttentionStage::scale_op(const QBlock& block, uint64_t accumulator, uint64_t out,
                                     uint64_t statistics, bool final) const {
  arch::VecOp op;
  op.kind = arch::VectorKind::scale_rows;
  op.dtype = DType::fp32;
  op.out_dtype = final ? dtype_ : DType::fp32;
  op.x_address = accumulator;
  op.o_address = final ? out : accumulator;
  op.g_address = statistics;
  op.rows = block.rows;
  op.cols = shape_.head_dim;
  op.by_inverse_sum = final;
  return op;
}

Cost AttentionStage::multicast_cost(const Mapping& mapping, const arch::ArchSpec& spec,
                                    const InstructionTimer& timer, const PassEngines& engines) const {
  const Choice& choice = choice_of(mapping);
  const int64_t cols = choice.block_cols;
  const int cores = static_cast<int>(choice.cores);
  const int kv_buffers = static_cast<int>(std::max<int64_t>(2, choice.kv_buffers));
  const int64_t d = shape_.head_dim, element = size_bytes(dtype_);
  const std::vector<QBlock> blocks = q_blocks(choice.block_rows);
  const std::vector<Stream> all = streams(choice.block_rows, cols, cores);
  const PassEngines side{engines.stores, engines.stores};  // a core's Q loads and stores
  const int64_t load = tile_load_cycles(mapping, spec, engines.loads, cols);
  CoreCycles work(cores);
  int64_t kv_bytes = 0;
  // Each core's steps in the lowering's order: per stream, per tile, the core's blocks that see it (a block's
  // last step with its final rescale); the global index of the tile each reads.
  struct Step {
    int64_t tile = 0, cycles = 0;
    int slot = 0;
    int64_t q_load = 0;  // a block's first step: its Q load's cycles (else 0)
    bool last = false;   // a block's last step
  };
  std::vector<std::vector<Step>> steps(static_cast<size_t>(cores));
  std::vector<int> readers;  // per global tile: the cores that read it
  for (size_t si = 0; si < all.size(); ++si) {
    const Stream& stream = all[si];
    for (int64_t j = 0; j < stream.tiles; ++j) {
      const auto t = static_cast<int64_t>(readers.size());
      readers.push_back(0);
      for (size_t c = 0; c < static_cast<size_t>(cores); ++c) {
        bool reads = false;
        for (size_t slot = 0; slot < stream.slots[c].size(); ++slot) {
          const QBlock& block = blocks[stream.slots[c][slot]];
          const int64_t keys = keys_seen(block), k0 = j * cols;
          if (k0 >= keys) continue;
          const TileStep step =
              tile_step(work, mapping, spec, side, timer, block, k0, std::min(cols, keys - k0), j > 0, false);
          int64_t cycles = step.cycles();
          work.pe[c] += step.pe;
          work.vec[c] += step.vec;
          Step entry{t, 0, static_cast<int>(slot), 0, k0 + cols >= keys};
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
  // The lockstep: the leader loads tile t after tile t - 1 and once every core that reads tile t - kv_buffers
  // has freed its buffer; a core's step starts at the later of its previous step's end and its tile's
  // arrival. A core whose blocks see a tile more often than another's falls behind and holds the loads back.
  // A block's Q loads on the core's side engines, one after another, once the block before it in its slot
  // has done its last step (with one block a core, a stream's Q load waits for the previous stream's end).
  const size_t tiles = readers.size();
  std::vector<std::vector<int64_t>> slot_free(static_cast<size_t>(cores),
                                              std::vector<int64_t>(attention::kMostBlocksPerCore, 0));
  std::vector<int64_t> side_free(static_cast<size_t>(cores), 0);
  std::vector<int64_t> arrival(tiles, -1), freed(tiles, 0);
  std::vector<int> pending = readers;
  std::vector<size_t> at(static_cast<size_t>(cores), 0);
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
    for (size_t c = 0; c < static_cast<size_t>(cores); ++c) {
      const std::vector<Step>& list = steps[c];
      for (size_t& i = at[c]; i < list.size() && arrival[static_cast<size_t>(list[i].tile)] >= 0; ++i) {
        const auto t = static_cast<size_t>(list[i].tile);
        const auto slot = static_cast<size_t>(list[i].slot);
        int64_t start = std::max(work.cycles[c], arrival[t]);
        if (list[i].q_load > 0) {
          side_free[c] = std::max(side_free[c], slot_free[c][slot]) + list[i].q_load;
          start = std::max(start, side_free[c]);
        }
        work.cycles[c] = start + list[i].cycles;
        if (list[i].last) slot_free[c][slot] = work.cycles[c];
        if (i + 1 == list.size() || list[i + 1].tile != list[i].tile) {
          --pending[t];
          freed[t] = std::max(freed[t], work.cycles[c]);
        }
        progress = true;
      }
    }
  }
  TESSERA_ASSERT(next == tiles, "every K/V tile of the multicast form is loaded once its buffer is freed");
  return flash_cost(spec, work, kv_bytes, 0, 0);
}

}  // namespace tessera::mapper
