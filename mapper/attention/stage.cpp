#include "mapper/attention/stage.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <iterator>
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

AttentionStage::TileStep AttentionStage::tile_step(CoreCycles& work, const FlashCosting& costing,
                                                   const QBlock& block, int64_t k0, int64_t keys,
                                                   bool rescale) const {
  const StepKey key{block.rows, keys, tile_masked(block, k0, keys), rescale, costing.loads_its_tiles};
  for (const auto& [known, step] : work.known_steps)
    if (known == key) return step;
  const int64_t d = shape_.head_dim;
  const arch::Dataflow dataflow = costing.mapping.dataflow;
  const arch::VectorSpec& vector = *costing.spec.core.vector;
  TileStep step;
  step.pe = costing.timer.matmul(dataflow, block.rows, keys, d).interval +
            costing.timer.matmul(dataflow, block.rows, d, keys).interval;
  step.vec = vector_cycles(vector, arch::VectorKind::online_softmax, block.rows, keys, key.masked ? 2 : 1) +
             (rescale ? vector_cycles(vector, arch::VectorKind::scale_rows, block.rows, d, 0) : 0);
  step.load = costing.loads_its_tiles
                  ? tile_load_cycles(costing.mapping, costing.spec, costing.engines.loads, keys)
                  : 0;
  work.known_steps.emplace_back(key, step);
  return step;
}

void AttentionStage::add_flash_range(CoreCycles& work, size_t core, const FlashCosting& costing,
                                     const QBlock& block, int64_t begin, int64_t end) const {
  const arch::ArchSpec& spec = costing.spec;
  const PassEngines& engines = costing.engines;
  const int64_t cols = choice_of(costing.mapping).block_cols;
  for (int64_t k0 = begin; k0 < end; k0 += cols) {
    const TileStep step = tile_step(work, costing, block, k0, std::min(cols, end - k0), k0 > begin);
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
  attention::finish_cost(cost, work.cycles, a, spec);
  return cost;
}

namespace {

// A dataflow's rows of candidates, one a form: the plain flash form's, and the multicast, split and naive
// forms' (listed after every dataflow's plain row).
struct FormRows {
  DataflowSearch flash, multicast, split, naive;
};

// An attention op's search (AttentionStage::search): on each dataflow, every tiling of every form whose
// buffers fit the SRAM, each candidate evaluated and kept in its form's row.
class FormSearch {
 public:
  FormSearch(const AttentionStage& stage, const std::shared_ptr<const mapper::Form>& self,
             const arch::ArchSpec& spec, const SearchOptions& options, SearchResult& result);
  // The rows of `dataflow`.
  FormRows search(arch::Dataflow dataflow);

 private:
  // The candidates of blocks of `block_rows` rows and K/V tiles of `block_cols` keys, each form's where it
  // fits.
  void add_tiling(FormRows& rows, arch::Dataflow dataflow, int64_t block_rows, int64_t block_cols);
  // `mapping` evaluated, counted and kept in `to`.
  void add(DataflowSearch& to, const Mapping& mapping);
  bool fits(const Buffers& buffers) const {
    return static_cast<int64_t>(buffers.end) <= spec_.core.sram.bytes;
  }

  const AttentionStage& stage_;
  const std::shared_ptr<const mapper::Form>& self_;
  const arch::ArchSpec& spec_;
  const SearchOptions& options_;
  SearchResult& result_;
  const int machine_cores_;
  const size_t keep_;
  bool naive_stored_ = false;   // S and P fit the DRAM (the naive form stores them)
  int64_t smallest_bytes_ = 0;  // the smallest flash buffers of any tiling so far
};

Mapping with_choice(Mapping mapping, const AttentionStage::Choice& choice) {
  mapping.choice = choice;
  return mapping;
}

FormSearch::FormSearch(const AttentionStage& stage, const std::shared_ptr<const mapper::Form>& self,
                       const arch::ArchSpec& spec, const SearchOptions& options, SearchResult& result)
    : stage_(stage),
      self_(self),
      spec_(spec),
      options_(options),
      result_(result),
      machine_cores_(spec.mesh.rows * spec.mesh.cols),
      keep_(static_cast<size_t>(std::max(1, options.keep_per_dataflow))) {
  const ops::AttentionShape& a = stage.shape();
  // The naive form stores S and P: only where they fit the DRAM tessera models (1 TiB a tensor).
  naive_stored_ = static_cast<double>(a.batch * a.heads * a.seq_q) * static_cast<double>(a.seq_kv) *
                      static_cast<double>(size_bytes(stage.dtype())) <=
                  0x1p40;
}

FormRows FormSearch::search(arch::Dataflow dataflow) {
  FormRows rows;
  const std::pair<DataflowSearch*, AttentionStage::Form> forms[] = {
      {&rows.flash, AttentionStage::flash},
      {&rows.multicast, AttentionStage::flash_mc},
      {&rows.split, AttentionStage::flash_split},
      {&rows.naive, AttentionStage::naive}};
  for (const auto& [row, form] : forms) {
    row->dataflow = dataflow;
    row->stage_kind = "attention";
    row->label_text = std::string(AttentionStage::form_name(form)) + " " + arch::name_of(dataflow);
  }
  const ops::AttentionShape& a = stage_.shape();
  const int64_t most_rows = stage_.masked() ? a.seq_q : a.group() * a.seq_q;
  for (int64_t block_rows : kBlockRowChoices) {
    // A block larger than the rows there are only where the next smaller one does not hold them all.
    if (block_rows != kBlockRowChoices[0] && block_rows / 2 >= most_rows) continue;
    for (int64_t block_cols : kBlockColChoices) {
      if (block_cols != kBlockColChoices[0] && block_cols / 2 >= a.seq_kv) continue;
      add_tiling(rows, dataflow, std::min(block_rows, most_rows), std::min(block_cols, a.seq_kv));
    }
  }
  if (rows.flash.legal == 0)
    rows.flash.why_none = Infeasibility{
        "core.sram.kib", fmt::format("the smallest flash blocks need {} KiB of SRAM, the "
                                     "core has {} KiB",
                                     ceil_div(smallest_bytes_, 1024), spec_.core.sram.bytes / 1024)};
  return rows;
}

void FormSearch::add_tiling(FormRows& rows, arch::Dataflow dataflow, int64_t block_rows, int64_t block_cols) {
  const int64_t d = stage_.shape().head_dim;
  const DType dtype = stage_.dtype();
  const Buffers buffers = buffers_of(block_rows, block_cols, d, dtype);
  if (smallest_bytes_ == 0 || static_cast<int64_t>(buffers.end) < smallest_bytes_)
    smallest_bytes_ = static_cast<int64_t>(buffers.end);
  const bool flash_fits = fits(buffers);
  const int64_t blocks = static_cast<int64_t>(stage_.q_blocks(block_rows).size());
  Mapping mapping;
  mapping.form = self_;
  mapping.dataflow = dataflow;
  AttentionStage::Choice flash_choice;
  flash_choice.block_rows = block_rows;
  flash_choice.block_cols = block_cols;
  flash_choice.cores = std::min<int64_t>(blocks, machine_cores_);
  mapping.choice = flash_choice;
  if (flash_fits) add(rows.flash, mapping);
  // The multicast form, where every stream's blocks fit kMostBlocksPerCore a core and its buffers fit the
  // SRAM.
  const std::vector<AttentionStage::Stream> streams =
      flash_fits && flash_choice.cores > 1 && spec_.noc.multicast
          ? stage_.streams(block_rows, block_cols, machine_cores_)
          : std::vector<AttentionStage::Stream>{};
  if (!streams.empty())
    // The most K/V buffers first (at equal cost the deeper one ranks first).
    for (int kv = kMostKvBuffers; kv >= 2; --kv) {
      const attention::BufferCounts counts =
          attention::BufferCounts::multicast(AttentionStage::blocks_per_core(streams), kv, 2);
      if (!fits(buffers_of(block_rows, block_cols, d, dtype, counts))) continue;
      AttentionStage::Choice multicast = flash_choice;
      multicast.cores = machine_cores_;
      multicast.form = AttentionStage::flash_mc;
      multicast.kv_buffers = kv;
      add(rows.multicast, with_choice(mapping, multicast));
    }
  // The split-KV form, where a decode's blocks leave cores idle and the merging core's partials fit.
  for (int64_t splits : stage_.split_choices(block_rows, block_cols, machine_cores_)) {
    if (!fits(buffers_of(block_rows, block_cols, d, dtype, attention::BufferCounts::split(splits)))) continue;
    AttentionStage::Choice split = flash_choice;
    split.cores = blocks * splits;
    split.form = AttentionStage::flash_split;
    split.splits = splits;
    add(rows.split, with_choice(mapping, split));
  }
  // The naive form, where a chunk of S rows fits the SRAM beside its passes' tiles.
  const int64_t softmax_rows = naive_softmax_rows(stage_, block_rows, block_cols, spec_.core.sram.bytes);
  if (naive_stored_ && softmax_rows > 0) {
    AttentionStage::Choice naive = flash_choice;
    naive.form = AttentionStage::naive;
    naive.softmax_rows = softmax_rows;
    add(rows.naive, with_choice(mapping, naive));
  }
}

void FormSearch::add(DataflowSearch& to, const Mapping& mapping) {
  Candidate candidate;
  candidate.mapping = mapping;
  candidate.cost = stage_.evaluate(mapping, spec_);
  candidate.index = static_cast<uint64_t>(to.legal);
  ++to.legal;
  ++result_.evaluated;
  keep_pareto(to.front, candidate);
  keep_best(to.best, std::move(candidate), keep_, options_.objective);
}

}  // namespace

Cost AttentionStage::estimate(const Mapping& mapping, const arch::ArchSpec& spec) const {
  return evaluate(mapping, spec);
}

Cost AttentionStage::evaluate(const Mapping& mapping, const arch::ArchSpec& spec) const {
  const Choice& choice = choice_of(mapping);
  if (choice.form == naive) return evaluate_naive(*this, mapping, spec);
  if (choice.form == flash_split) return evaluate_split(mapping, spec);
  const InstructionTimer timer(spec);
  const PassEngines engines = flash_engines(mapping, spec);
  // The multicast form's cores are sent their tiles; the plain form's load their own.
  const FlashCosting costing{mapping, spec, timer, engines, choice.form != flash_mc};
  if (choice.form == flash_mc) return multicast_cost(costing);
  const int cores = static_cast<int>(choice.cores);
  const int64_t d = shape_.head_dim, element = size_bytes(dtype_);
  const std::vector<QBlock> blocks = q_blocks(choice.block_rows);
  CoreCycles work(cores);
  int64_t kv_bytes = 0;
  // A block's part: its tiles' steps and Q load, its last rescale and store.
  for (size_t i = 0; i < blocks.size(); ++i) {
    const size_t core = i * static_cast<size_t>(cores) / blocks.size();
    const QBlock& block = blocks[i];
    add_flash_range(work, core, costing, block, 0, keys_seen(block));
    work.cycles[core] += add_block_finish(work, core, spec, engines, block);
    kv_bytes += 2 * keys_seen(block) * d * element;
  }
  return flash_cost(spec, work, kv_bytes, 0, 0);
}

SearchResult AttentionStage::search(const std::shared_ptr<const mapper::Form>& self,
                                    const arch::ArchSpec& spec, const SearchOptions& options) const {
  require_pe_dtype(dtype_, spec, options);
  const auto started = std::chrono::steady_clock::now();
  SearchResult result;
  FormSearch forms(*this, self, spec, options, result);
  std::vector<DataflowSearch> multicast_rows, split_rows, naive_rows;  // listed after the plain rows
  for (arch::Dataflow dataflow : options.dataflows) {
    if (dataflow == arch::Dataflow::rs) continue;
    FormRows rows = forms.search(dataflow);
    result.per_dataflow.push_back(std::move(rows.flash));
    if (rows.multicast.legal > 0) multicast_rows.push_back(std::move(rows.multicast));
    if (rows.split.legal > 0) split_rows.push_back(std::move(rows.split));
    if (rows.naive.legal > 0) naive_rows.push_back(std::move(rows.naive));
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
  arch::VecOp op = arch::VecOp::on_tile(arch::VectorKind::online_softmax, accumulator_of(dtype_), dtype_,
                                        block.rows, cols, s, p);
  op.g_address = statistics;
  op.scale = shape_.effective_scale();
  op.first = first;
  if (tile_masked(block, k0, cols)) op.causal_shift = causal_shift(block, k0);
  return op;
}

arch::VecOp AttentionStage::scale_op(const QBlock& block, uint64_t accumulator, uint64_t out,
                                     uint64_t statistics, bool final) const {
  arch::VecOp op =
      arch::VecOp::on_tile(arch::VectorKind::scale_rows, DType::fp32, final ? dtype_ : DType::fp32,
                           block.rows, shape_.head_dim, accumulator, final ? out : accumulator);
  op.g_address = statistics;
  op.by_inverse_sum = final;
  return op;
}

}  // namespace tessera::mapper
