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
using attention::ProgramTensors;
using attention::Run;

constexpr int64_t kBlockRowChoices[] = {16, 32, 64, 128, 256};
// A multicast core's block count in words ("two a core").
constexpr const char* kCountWords[] = {"no", "one", "two", "three", "four"};
static_assert(std::size(kCountWords) == attention::kMostBlocksPerCore + 1, "a word for every block count");
constexpr int64_t kBlockColChoices[] = {16, 32, 64, 128, 256, 512};

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
  const int64_t with_three = static_cast<int64_t>(
      buffers_of(block_rows, block_cols, shape_.head_dim, dtype_, blocks, kv, 1, kMostScoreBuffers).end);
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
            if (static_cast<int64_t>(buffers_of(block_rows, block_cols, a.head_dim, dtype_,
                                                blocks_per_core(multicast_streams), kv)
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
          if (static_cast<int64_t>(buffers_of(block_rows, block_cols, a.head_dim, dtype_, 1, 2, splits).end) >
              spec.core.sram.bytes)
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
  const arch::QueueId vec_queue{arch::QueueKind::vec, 0};
  const PassEngines engines = flash_engines(mapping, spec);
  const int64_t row_bytes = d * size_bytes(dtype_);
  auto semaphore = [&](const std::string& name) {
    return arch::SemaphoreRef{program.semaphore_id(name), arch::kSameCore};
  };
  auto wait = [&](const std::string& name) { return arch::SemaphoreWait{semaphore(name), 1}; };
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
      arch::Waits waits = {wait("pv_done")};
      if (tiles[t].block != first)
        waits.push_back(arch::SemaphoreWait{semaphore("out_free"), static_cast<int>(last_store_pieces)});
      list.push_back(make_instruction(
          vec_queue, scale_op(block, buffers.accumulator, buffers.out, buffers.statistics, true), waits,
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
  for (const DealtBlock& piece : pieces) {
    arch::DmaStore store;
    store.sram_address = out + static_cast<uint64_t>(piece.rows.first * row_bytes);
    store.destination =
        arch::TensorRegion{tensors.o, block.first_row + piece.rows.first, piece.rows.rows, 0, d};
    arch::Signals signals;
    if (!free_signal.empty())
      signals.push_back(arch::SemaphoreRef{program.semaphore_id(free_signal), arch::kSameCore});
    const arch::SemaphoreRef full{
        program.semaphore_id(engine_semaphore("out_full", "", stores, piece.engine)), arch::kSameCore};
    list.push_back(make_instruction(arch::QueueId{arch::QueueKind::dma, piece.engine}, store,
                                    {arch::SemaphoreWait{full, 1}}, signals));
  }
}

arch::Signals AttentionStage::out_full_signals(arch::Program& program, const EngineGroup& stores,
                                               const std::vector<DealtBlock>& pieces) const {
  arch::Signals signals;
  for (int engine : engines_of(pieces))
    signals.push_back(arch::SemaphoreRef{
        program.semaphore_id(engine_semaphore("out_full", "", stores, engine)), arch::kSameCore});
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
  const arch::QueueId pe_queue{arch::QueueKind::pe, 0}, vec_queue{arch::QueueKind::vec, 0};
  auto semaphore = [&](const std::string& name) {
    return arch::SemaphoreRef{program.semaphore_id(name), arch::kSameCore};
  };
  auto wait = [&](const std::string& name) { return arch::SemaphoreWait{semaphore(name), 1}; };
  IndexedSemaphores ids(program);
  auto semaphore_at = [&](const char* name, int64_t index) {
    return arch::SemaphoreRef{ids.id(name, index), arch::kSameCore};
  };
  auto wait_at = [&](const char* name, int64_t index, int count = 1) {
    return arch::SemaphoreWait{semaphore_at(name, index), count};
  };
  auto on_engine = [&](const std::string& name, const std::string& index, int engine) {
    return semaphore(engine_semaphore(name, index, loads, engine));
  };
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
    if (next_engines.empty()) signals.push_back(on_engine(name, index, loads.first));
    for (int engine : next_engines) signals.push_back(on_engine(name, index, engine));
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
          waits.push_back(arch::SemaphoreWait{on_engine("q_free", "", piece.engine), 1});
          waited.push_back(piece.engine);
        }
        list.push_back(make_instruction(arch::QueueId{arch::QueueKind::dma, piece.engine}, load, waits,
                                        {semaphore("q_full")}));
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
    arch::Waits waits = {arch::SemaphoreWait{semaphore_at("k_full", buffer), count_of(k_pieces[t])}};
    if (tile.first) waits.push_back(arch::SemaphoreWait{semaphore("q_full"), count_of(q_pieces[t])});
    if (t >= 2) waits.push_back(wait_at("s_free", buffer));
    arch::Signals signals = {semaphore_at("s_full", buffer)};
    free_signals("k_free", fmt::format("[{}]", buffer),
                 t + 2 < tiles.size() ? attention::engines_of(k_pieces[t + 2]) : std::vector<int>{}, signals);
    if (tile.last)
      free_signals("q_free", "", t + 1 < tiles.size() ? engines_of(q_pieces[t + 1]) : std::vector<int>{},
                   signals);
    list.push_back(make_instruction(pe_queue, s, waits, signals));
  };
  auto pv_matmul = [&](size_t t) {
    const FlashTile& tile = tiles[t];
    const QBlock& block = blocks[tile.block];
    const int buffer = static_cast<int>(t % 2);
    arch::PeMatmul pv = matmul_op(dataflow, buffers.p[buffer], buffers.v[buffer], buffers.accumulator,
                                  block.rows, d, tile.cols);
    pv.accumulate = !tile.first;
    arch::Waits waits = {arch::SemaphoreWait{semaphore_at("v_full", buffer), count_of(v_pieces[t])},
                         wait_at("p_full", buffer)};
    if (!tile.first) waits.push_back(wait("acc_ready"));
    arch::Signals signals = {semaphore(tile.last ? last_pv_signal : "pv_done")};
    free_signals("v_free", fmt::format("[{}]", buffer),
                 t + 2 < tiles.size() ? attention::engines_of(v_pieces[t + 2]) : std::vector<int>{}, signals);
    signals.push_back(semaphore_at("p_free", buffer));
    list.push_back(make_instruction(pe_queue, pv, waits, signals));
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
    arch::Waits waits = {wait_at("s_full", buffer)};
    if (t >= 2) waits.push_back(wait_at("p_free", buffer));
    list.push_back(make_instruction(vec_queue, softmax, waits,
                                    {semaphore_at("s_free", buffer), semaphore_at("p_full", buffer)}));
    if (!tile.first)
      list.push_back(make_instruction(
          vec_queue, scale_op(block, buffers.accumulator, buffers.out, buffers.statistics, false),
          {wait("pv_done")}, {semaphore("acc_ready")}));
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
  const arch::QueueId pe_queue{arch::QueueKind::pe, 0}, vec_queue{arch::QueueKind::vec, 0};
  constexpr int kLeader = 0;  // the core that loads every K/V tile once and multicasts it
  auto here = [&](const std::string& name) {
    return arch::SemaphoreRef{program.semaphore_id(name), arch::kSameCore};
  };
  auto at_leader = [&](const std::string& name) {
    return arch::SemaphoreRef{program.semaphore_id(name), kLeader};
  };
  IndexedSemaphores ids(program);
  auto here_at = [&](const char* name, int64_t index) {
    return arch::SemaphoreRef{ids.id(name, index), arch::kSameCore};
  };
  auto wait_at = [&](const char* name, int64_t index, int count = 1) {
    return arch::SemaphoreWait{here_at(name, index), count};
  };
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
      signals.push_back(at_leader(engine_semaphore(name, index, engines.loads, engine)));
  };
  auto on_side = [&](const std::string& name, const std::string& index, int engine) {
    return here(engine_semaphore(name, index, engines.stores, engine));
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
            waits.push_back(
                arch::SemaphoreWait{on_side("q_free", fmt::format("[{}]", slot), piece.engine), 1});
            waited.push_back(piece.engine);
          }
          list.push_back(make_instruction(arch::QueueId{arch::QueueKind::dma, piece.engine}, load, waits,
                                          {here_at("q_full", slot)}));
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
              arch::QueueId{arch::QueueKind::dma, piece.engine}, store,
              {arch::SemaphoreWait{on_side("out_full", fmt::format("[{}]", slot), piece.engine), 1}},
              {here_at("out_free", slot)}));
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
      if (first_use(u)) waits.push_back(wait_at("k_full", kv, k_count(item.t)));
      if (item.first) waits.push_back(wait_at("q_full", item.slot));
      if (u >= static_cast<size_t>(scores)) waits.push_back(wait_at("s_free", sb));
      arch::Signals signals = {here_at("s_full", sb)};
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
          signals.push_back(on_side("q_free", fmt::format("[{}]", item.slot), engine));
      }
      list.push_back(make_instruction(pe_queue, op, waits, signals));
    };
    auto pv_matmul = [&](size_t u) {
      const Item& item = work[u];
      const QBlock& block = blocks[item.block];
      const int kv = static_cast<int>(item.t % kv_buffers), sb = static_cast<int>(u % scores);
      arch::PeMatmul op = matmul_op(mapping.dataflow, buffers.p[sb], buffers.v[kv], acc_of(item.slot),
                                    block.rows, d, item.cols);
      op.accumulate = !item.first;
      arch::Waits waits;
      if (first_use(u)) waits.push_back(wait_at("v_full", kv, v_count(item.t)));
      waits.push_back(wait_at("p_full", sb));
      if (!item.first) waits.push_back(wait_at("acc_ready", item.slot));
      arch::Signals signals = {here_at("pv_done", item.slot), here_at("p_free", sb)};
      if (last_use(u)) free_at_leader("v_free", item.t, v_pieces, signals);
      list.push_back(make_instruction(pe_queue, op, waits, signals));
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
      arch::Waits final_waits = {wait_at("pv_done", item.slot)};
      if (slot_used[slot])
        final_waits.push_back(wait_at("out_free", item.slot, static_cast<int>(last_stored[slot])));
      slot_used[slot] = 1;
      const std::vector<DealtBlock>& stored = store_pieces[item.stream][slot];
      last_stored[slot] = static_cast<int64_t>(stored.size());
      arch::Signals full;
      for (int engine : engines_of(stored))
        full.push_back(on_side("out_full", fmt::format("[{}]", item.slot), engine));
      list.push_back(make_instruction(
          vec_queue,
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
      arch::Waits waits = {wait_at("s_full", sb)};
      if (u >= static_cast<size_t>(scores)) waits.push_back(wait_at("p_free", sb));
      list.push_back(
          make_instruction(vec_queue, softmax, waits, {here_at("s_free", sb), here_at("p_full", sb)}));
      if (!item.first)
        list.push_back(make_instruction(
            vec_queue, scale_op(block, acc_of(item.slot), out_of(item.slot), stats_of(item.slot), false),
            {wait_at("pv_done", item.slot)}, {here_at("acc_ready", item.slot)}));
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
