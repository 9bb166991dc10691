#include "mapper/moe/stage.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <numeric>

#include "arch/figures.hpp"
#include "arch/isa/vec_op.hpp"
#include "arch/isa/vec_route.hpp"
#include "arch/timing/vector_timing.hpp"
#include "common/integer_math.hpp"
#include "mapper/cost.hpp"
#include "mapper/kit/instruction_timer.hpp"
#include "mapper/kit/program_header.hpp"
#include "mapper/kit/unit_cycles.hpp"
#include "mapper/moe/plan.hpp"
#include "mapper/search.hpp"
#include "ops/tensor.hpp"

namespace tessera::mapper {

using namespace moe;  // NOLINT: the plan's types

namespace {

constexpr int64_t kTileMChoices[] = {32, 64, 128, 256};
constexpr int64_t kTileNChoices[] = {64, 128, 256};
constexpr int64_t kTileKChoices[] = {64, 128, 256};
// The router's logits of a token block are one accumulator tile: all experts in one row (vec route sees them
// all). More experts than this are not mapped.
constexpr int64_t kMostRouterExperts = 1024;

}  // namespace

const MoeStage::Choice& MoeStage::choice_of(const Mapping& mapping) {
  return mapping.choice.as<Choice>();
}

std::shared_ptr<const MoeStage> MoeStage::of(const ops::Op& op) {
  const auto* shape = op.as<ops::MoeShape>();
  if (!shape) return nullptr;
  auto stage = std::make_shared<MoeStage>();
  stage->shape_ = *shape;
  stage->dtype_ = op.dtype;
  stage->op_ = op;
  stage->macs_ = op.macs();
  return stage;
}

int64_t MoeStage::router_rows() const {
  return std::min<int64_t>(shape_.tokens, 64);
}

int64_t MoeStage::combine_rows() const {
  return std::min<int64_t>(shape_.tokens, std::max<int64_t>(1, 128 / shape_.top_k));
}

int64_t MoeStage::combine_cols() const {
  return std::min<int64_t>(shape_.hidden, 256);
}

arch::VecRoute MoeStage::route_op(int64_t rows) const {
  arch::VecRoute route;
  route.rows = rows;
  route.experts = shape_.experts;
  route.top_k = shape_.top_k;
  route.sigmoid = shape_.routing.scoring == ops::MoeScoring::sigmoid;
  route.groups = shape_.routing.groups;
  route.topk_groups = shape_.routing.topk_groups;
  route.scaling = shape_.routing.routed_scaling;
  return route;
}

std::vector<int64_t> MoeStage::expected_counts() const {
  const ops::MoeRoutingRule rule = shape_.rule();
  const int64_t capacity = rule.capacity();
  std::vector<int64_t> counts(static_cast<size_t>(shape_.experts), 0);
  if (rule.forced()) {
    const std::vector<int64_t> forced =
        rule.options.counts.empty()
            ? ops::moe_zipf_counts(shape_.tokens, shape_.experts, shape_.top_k, rule.options.alpha)
            : rule.options.counts;
    for (size_t e = 0; e < counts.size(); ++e) counts[e] = std::min(forced[e], capacity);
    return counts;
  }
  // A balanced router: the assignments spread evenly, each expert at most its capacity.
  const int64_t kept = std::min(shape_.tokens * shape_.top_k, shape_.experts * capacity);
  for (int64_t e = 0; e < shape_.experts; ++e)
    counts[static_cast<size_t>(e)] = kept / shape_.experts + (e < kept % shape_.experts ? 1 : 0);
  return counts;
}

std::vector<std::vector<MoeStage::Share>> MoeStage::place(const std::vector<int64_t>& counts,
                                                          Placement placement, int64_t tile_m,
                                                          int cores) const {
  // The items: each routed expert with tokens, and the shared experts over every token.
  std::vector<Share> items;
  int64_t total = 0;
  for (size_t e = 0; e < counts.size(); ++e)
    if (counts[e] > 0) items.push_back(Share{static_cast<int64_t>(e), 0, counts[e]}), total += counts[e];
  if (shape_.shared_experts > 0) {
    items.push_back(Share{kShared, 0, shape_.tokens});
    total += shape_.tokens * shape_.shared_experts;
  }
  // A shared row costs `shared_experts` routed rows.
  auto weight = [&](const Share& share) {
    return share.expert == kShared ? share.rows * shape_.shared_experts : share.rows;
  };
  if (placement == split) {
    // No part larger than an even share of the rows, in whole row blocks.
    const int64_t most = std::max<int64_t>(tile_m, ceil_div(ceil_div(total, cores), tile_m) * tile_m);
    std::vector<Share> parts;
    for (const Share& item : items) {
      const int64_t per_row = item.expert == kShared ? shape_.shared_experts : 1;
      const int64_t part_rows = std::max<int64_t>(tile_m, most / per_row / tile_m * tile_m);
      for (int64_t first = 0; first < item.rows; first += part_rows)
        parts.push_back(Share{item.expert, first, std::min(part_rows, item.rows - first)});
    }
    items = std::move(parts);
  }
  // Longest processing time first: the heaviest item to the least loaded core (ties: the lower core; items
  // of equal weight in expert order).
  std::stable_sort(items.begin(), items.end(),
                   [&](const Share& a, const Share& b) { return weight(a) > weight(b); });
  std::vector<std::vector<Share>> per_core(static_cast<size_t>(cores));
  std::vector<int64_t> load(static_cast<size_t>(cores), 0);
  for (const Share& item : items) {
    const auto core = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    per_core[core].push_back(item);
    load[core] += ceil_div(weight(item), tile_m) * tile_m;
  }
  return per_core;
}

int64_t MoeStage::sram_bytes(int64_t tile_m, int64_t tile_n, int64_t tile_k) const {
  return layout_of(*this, tile_m, tile_n, tile_k).end;
}

PassEngines MoeStage::job_engines(const Mapping& mapping, const arch::ArchSpec& spec) const {
  const ops::MoeShape& s = shape_;
  const Choice& choice = choice_of(mapping);
  const auto tile_m = static_cast<double>(std::max<int64_t>(1, choice.tile_m)),
             tile_n = static_cast<double>(std::max<int64_t>(1, choice.tile_n));
  const double nw = s.swiglu() ? 2 : 1;
  return pass_engines(spec.core.dma, (tile_m + nw * tile_n) * static_cast<double>(s.hidden), tile_m * tile_n);
}

PassEngines MoeStage::combine_engines(const arch::ArchSpec& spec) const {
  return pass_engines(spec.core.dma, static_cast<double>(shape_.top_k + (shape_.shared_experts > 0 ? 1 : 0)),
                      1.0);
}

PassEngines MoeStage::a2a_engines(const arch::ArchSpec& spec, int64_t home_tokens) const {
  const ops::MoeShape& s = shape_;
  const double weights = static_cast<double>((s.swiglu() ? 3 : 2) * s.hidden) * static_cast<double>(s.ffn);
  return pass_engines(spec.core.dma, weights,
                      static_cast<double>(std::max<int64_t>(1, home_tokens) * s.hidden));
}

Cost MoeStage::estimate(const Mapping& mapping, const arch::ArchSpec& spec) const {
  return evaluate(mapping, spec);
}

Cost MoeStage::evaluate(const Mapping& mapping, const arch::ArchSpec& spec) const {
  if (choice_of(mapping).placement == a2a) return evaluate_a2a(mapping, spec);
  return evaluate_counts(mapping, spec, expected_counts());
}

Cost MoeStage::evaluate_counts(const Mapping& mapping, const arch::ArchSpec& spec,
                               const std::vector<int64_t>& counts) const {
  const ops::MoeShape& s = shape_;
  const Plan plan = plan_of(*this, mapping, spec, counts, Tensors{});
  const int64_t kept = std::accumulate(counts.begin(), counts.end(), int64_t{0});
  const InstructionTimer timer(spec);
  const arch::DmaSpec& dma = spec.core.dma;
  const arch::VectorSpec& vector = *spec.core.vector;
  const int64_t e = size_bytes(dtype_);
  std::map<std::array<int64_t, 3>, int64_t> matmuls;
  auto matmul = [&](int64_t m, int64_t n, int64_t k) {
    const std::array<int64_t, 3> key{m, n, k};
    auto found = matmuls.find(key);
    if (found != matmuls.end()) return found->second;
    return matmuls[key] = timer.matmul(mapping.dataflow, m, n, k).interval;
  };
  std::map<std::array<int64_t, 3>, int64_t> vectors;
  auto vec = [&](const TileJob& job) {
    const std::array<int64_t, 3> key{static_cast<int64_t>(job.epilogue), job.m, job.n};
    auto found = vectors.find(key);
    if (found != vectors.end()) return found->second;
    int64_t cycles = 0;
    if (job.epilogue == Epilogue::route) {
      cycles = arch::vector_timing(vector, route_op(job.m).work()).cycles;
    } else {
      const int64_t extra = job.epilogue == Epilogue::activate ? (s.swiglu() ? 6 : 5) : 1;
      cycles = vector_cycles(vector, arch::VectorKind::map, job.m, job.n, extra);
    }
    return vectors[key] = cycles;
  };
  Cost cost;
  const PassEngines jobs = job_engines(mapping, spec), combine = combine_engines(spec);
  std::vector<int64_t> busy(static_cast<size_t>(plan.cores), 0), pe(busy), vecs(busy), dmas(busy);
  int64_t dram = 0;
  for (size_t c = 0; c < plan.work.size(); ++c)
    for (const TileJob& job : plan.work[c]) {
      const int64_t nw = static_cast<int64_t>(job.w.size());
      int64_t tile_pe = 0, tile_dma = 0, tile = 0;
      // The k chunks: job.k / job.chunk whole ones, alike, and the rest.
      const auto add_chunks = [&](int64_t k, int64_t count) {
        if (k <= 0 || count <= 0) return;
        const int64_t chunk_pe = nw * matmul(job.m, job.n, k);
        const int64_t a_bytes = job.m * k * e, w_bytes = nw * k * job.n * e;
        // A (a descriptor a gathered row) and W cut into row blocks over the load engines.
        const int64_t a_blocks = job.a.gathered ? job.m : blocks_of(job.m, k * e, jobs.loads, dma);
        const int64_t chunk_dma =
            spread_cycles(dma, jobs.loads, a_bytes, a_blocks) +
            spread_cycles(dma, jobs.loads, w_bytes, nw * blocks_of(k, job.n * e, jobs.loads, dma));
        tile_pe += count * chunk_pe;
        tile_dma += count * chunk_dma;
        tile += count * std::max(chunk_pe, chunk_dma);
        dram += count * (a_bytes + w_bytes);
      };
      add_chunks(job.chunk, job.k / job.chunk);
      add_chunks(job.k % job.chunk, 1);
      const int64_t out_bytes = job.epilogue == Epilogue::route ? job.m * s.top_k * 4 : job.m * job.n * e;
      const int64_t store =
          spread_cycles(dma, jobs.stores, out_bytes, blocks_of(job.m, out_bytes / job.m, jobs.stores, dma));
      const int64_t epilogue = vec(job);
      dram += out_bytes + (job.epilogue == Epilogue::route ? job.m * s.top_k * 4 : 0);
      // Two accumulators: the epilogue and the store run under the next tile's GEMMs.
      busy[c] += std::max(tile, epilogue) + (dma.engines > 1 ? 0 : store);
      pe[c] += tile_pe;
      vecs[c] += epilogue;
      dmas[c] += tile_dma + store;
    }
  // Phase 3 after the barrier: every core's phases 1 and 2 done.
  const int64_t before = *std::max_element(busy.begin(), busy.end());
  std::vector<int64_t> after(busy.size(), 0);
  const arch::VecOp sum_shape = [&] {
    arch::VecOp op;
    op.kind = arch::VectorKind::weighted_sum;
    op.parts = s.top_k;
    return op;
  }();
  for (size_t c = 0; c < plan.combine.size(); ++c)
    for (const CombineJob& job : plan.combine[c]) {
      // A dropped route's row is zeros: no DRAM (the estimate spreads the drops evenly over the blocks).
      const int64_t x_bytes = job.rows * s.top_k * job.cols * e * kept / (s.tokens * s.top_k);
      const int64_t y_bytes = s.shared_experts > 0 ? job.rows * job.cols * e : 0;
      const int64_t g_bytes = job.first_chunk ? job.rows * s.top_k * 4 : 0;
      const int64_t load =
          spread_cycles(dma, combine.loads, x_bytes, job.rows * s.top_k * kept / (s.tokens * s.top_k)) +
          (y_bytes > 0 ? spread_cycles(dma, combine.loads, y_bytes,
                                       blocks_of(job.rows, job.cols * e, combine.loads, dma))
                       : 0) +
          (g_bytes > 0 ? spread_cycles(dma, combine.loads, g_bytes,
                                       blocks_of(job.rows, s.top_k * 4, combine.loads, dma))
                       : 0);
      arch::VecOp op = sum_shape;
      op.rows = job.rows;
      op.cols = job.cols;
      if (y_bytes > 0) op.chain = {arch::VecFn::add};
      const int64_t sum = arch::vector_timing(vector, op.work()).cycles;
      const int64_t store = spread_cycles(dma, combine.stores, job.rows * job.cols * e,
                                          blocks_of(job.rows, job.cols * e, combine.stores, dma));
      after[c] += std::max(load, sum) + (dma.engines > 1 ? 0 : store);
      vecs[c] += sum;
      dmas[c] += load + store;
      dram += x_bytes + y_bytes + g_bytes + job.rows * job.cols * e;
    }
  cost.dram_bytes = dram;
  const int64_t x_bytes = s.tokens * s.hidden * e;
  const int64_t weight_bytes = dram - 2 * x_bytes;
  cost.dram_bytes_by_tensor = {x_bytes, std::max<int64_t>(0, weight_bytes), x_bytes};
  cost.compute_cycles = *std::max_element(pe.begin(), pe.end());
  cost.vector_cycles = *std::max_element(vecs.begin(), vecs.end());
  cost.dma_cycles = *std::max_element(dmas.begin(), dmas.end());
  finish_estimate(cost,
                  {before + *std::max_element(after.begin(), after.end()), cores_with_work(busy),
                   static_cast<double>(macs_), 4},  // 4: the barriers' round trips
                  spec);
  return cost;
}

Cost MoeStage::evaluate_a2a(const Mapping& mapping, const arch::ArchSpec& spec) const {
  const ops::MoeShape& s = shape_;
  const Choice& choice = choice_of(mapping);
  const auto routing = routing_of(op_, static_cast<uint64_t>(choice.seed));
  const int cores = spec.mesh.rows * spec.mesh.cols;
  const A2aPlan plan = a2a_plan(*this, *routing, cores);
  const int64_t tf = choice.tile_n, tk = choice.tile_k;
  const InstructionTimer timer(spec);
  const arch::DmaSpec& dma = spec.core.dma;
  const arch::VectorSpec& vector = *spec.core.vector;
  const int64_t e = size_bytes(dtype_), nw = s.swiglu() ? 2 : 1, hb = plan.home_tokens;
  const int64_t row_bytes = s.hidden * e;
  const double link = spec.noc.link_bytes_per_cycle;
  const PassEngines engines = a2a_engines(spec, hb);
  const EngineGroup& loads = engines.loads;
  Cost cost;
  std::vector<int64_t> busy(static_cast<size_t>(cores), 0), pe(busy), vecs(busy), dmas(busy);
  int64_t dram = 0;
  for (int c = 0; c < cores; ++c) {
    const auto at = static_cast<size_t>(c);
    const A2aPlan::Core& core = plan.cores[at];
    int64_t noc = 0, home_vec = 0;
    if (c < plan.homes) {
      const int64_t tokens = std::min(hb, s.tokens - c * hb);
      // Its tokens' X rows, the router (A and Wr by chunks, R, G stored and loaded back), the combine, O.
      for (int64_t k0 = 0; k0 < s.hidden; k0 += tk) {
        const int64_t k = std::min(tk, s.hidden - k0);
        pe[at] += timer.matmul(mapping.dataflow, tokens, s.experts, k).interval;
        dmas[at] +=
            spread_cycles(dma, loads, tokens * k * e + k * s.experts * e,
                          blocks_of(tokens, k * e, loads, dma) + blocks_of(k, s.experts * e, loads, dma));
        dram += tokens * k * e + k * s.experts * e;
      }
      const arch::VecRoute route = route_op(tokens);
      arch::VecOp sum;
      sum.kind = arch::VectorKind::weighted_sum;
      sum.rows = tokens, sum.cols = s.hidden, sum.parts = s.top_k;
      home_vec =
          arch::vector_timing(vector, route.work()).cycles + arch::vector_timing(vector, sum.work()).cycles;
      dmas[at] += spread_cycles(dma, loads, tokens * row_bytes, blocks_of(tokens, row_bytes, loads, dma)) +
                  transfer_cycles(dma, 3 * tokens * s.top_k * 4, 3) +
                  spread_cycles(dma, engines.stores, tokens * row_bytes,
                                blocks_of(tokens, row_bytes, engines.stores, dma));
      dram += 2 * tokens * row_bytes + 3 * tokens * s.top_k * 4;
    }
    for (const A2aPlan::Row& row : core.rows) {
      const bool remote = plan.home_of(row.token) != c;
      noc += remote ? 2 * row_bytes : 0;  // in, and back out
      if (!remote) dmas[at] += transfer_cycles(dma, row_bytes, 1), dram += row_bytes;
    }
    for (const A2aPlan::Expert& expert : core.experts) {
      const int64_t r = expert.rows;
      for (int64_t f = 0; f < s.ffn; f += tf) {
        const int64_t n = std::min(tf, s.ffn - f);
        for (int64_t k0 = 0; k0 < s.hidden; k0 += tk) {
          const int64_t k = std::min(tk, s.hidden - k0);
          pe[at] += nw * timer.matmul(mapping.dataflow, r, n, k).interval;
          dmas[at] += spread_cycles(dma, loads, nw * k * n * e, nw * blocks_of(k, n * e, loads, dma));
        }
        for (int64_t h = 0; h < s.hidden; h += tf) {
          const int64_t cols = std::min(tf, s.hidden - h);
          pe[at] += timer.matmul(mapping.dataflow, r, cols, n).interval;
          dmas[at] += spread_cycles(dma, loads, n * cols * e, blocks_of(n, cols * e, loads, dma));
        }
        vecs[at] += vector_cycles(vector, arch::VectorKind::map, r, n, s.swiglu() ? 6 : 5);
      }
      vecs[at] += vector_cycles(vector, arch::VectorKind::map, r, s.hidden, 1);
      dram += (nw + 1) * s.hidden * s.ffn * e;
    }
    vecs[at] += home_vec;
    busy[at] = std::max({pe[at], dmas[at], vecs[at]}) + static_cast<int64_t>(static_cast<double>(noc) / link);
  }
  cost.dram_bytes = dram;
  cost.noc_bytes = 2 * plan.remote_routes() * row_bytes;
  cost.dram_bytes_by_tensor = {s.tokens * row_bytes, dram - 2 * s.tokens * row_bytes, s.tokens * row_bytes};
  cost.compute_cycles = *std::max_element(pe.begin(), pe.end());
  cost.vector_cycles = *std::max_element(vecs.begin(), vecs.end());
  cost.dma_cycles = *std::max_element(dmas.begin(), dmas.end());
  cost.noc_cycles = static_cast<int64_t>(static_cast<double>(cost.noc_bytes) / link / cores);
  finish_estimate(cost,
                  {*std::max_element(busy.begin(), busy.end()), cores_with_work(busy),
                   static_cast<double>(macs_), 4},  // 4: the barriers' round trips
                  spec);
  return cost;
}

int64_t MoeStage::a2a_noc_bytes(const Mapping& mapping, const arch::ArchSpec& spec) const {
  const auto routing = routing_of(op_, static_cast<uint64_t>(choice_of(mapping).seed));
  return 2 * a2a_plan(*this, *routing, spec.mesh.rows * spec.mesh.cols).remote_routes() * shape_.hidden *
         size_bytes(dtype_);
}

void MoeStage::prepare_lowering(const ops::Op& op, uint64_t seed) const {
  routing_of(op, seed);  // cached per (op, seed): a 4096-token DeepSeek-V3 router takes seconds in float64
}

SearchResult MoeStage::search(const std::shared_ptr<const Form>& self, const arch::ArchSpec& spec,
                              const SearchOptions& options) const {
  require_pe_dtype(dtype_, spec, options);
  const auto started = std::chrono::steady_clock::now();
  SearchResult result;
  const size_t keep = static_cast<size_t>(std::max(1, options.keep_per_dataflow));
  auto fail = [&](const std::string& field, const std::string& message, const std::string& hint) {
    const SourceLocation where = options.locate_field ? options.locate_field(field) : SourceLocation{};
    throw InputError(where, field,
                     fmt::format("no legal mapping for {}: {}", options.op_description, message), hint);
  };
  // Scores a mapping of the row's dataflow and keeps it if it ranks among the row's best.
  auto add = [&](DataflowSearch& row, Mapping mapping) {
    mapping.form = self;
    mapping.dataflow = row.dataflow;
    Candidate candidate;
    candidate.mapping = mapping;
    candidate.cost = evaluate(mapping, spec);
    candidate.index = static_cast<uint64_t>(row.legal);
    ++row.legal;
    ++result.evaluated;
    keep_pareto(row.front, candidate);
    keep_best(row.best, std::move(candidate), keep, options.objective);
  };
  if (shape_.experts > kMostRouterExperts)
    fail("",
         fmt::format("the router's logits of {} experts do not fit one accumulator row (at most {})",
                     shape_.experts, kMostRouterExperts),
         "split the experts over several layers");
  int64_t smallest = 0;
  for (Placement placement : {whole, split}) {
    for (arch::Dataflow dataflow : options.dataflows) {
      if (dataflow == arch::Dataflow::rs) continue;
      DataflowSearch row;
      row.dataflow = dataflow;
      row.stage_kind = "moe";
      row.label_text = fmt::format("{} {}", form_name(placement), arch::name_of(dataflow));
      for (int64_t m : kTileMChoices)
        for (int64_t n : kTileNChoices)
          for (int64_t k : kTileKChoices) {
            const int64_t bytes = sram_bytes(m, n, k);
            if (smallest == 0 || bytes < smallest) smallest = bytes;
            if (bytes > spec.core.sram.bytes) continue;
            Mapping mapping;
            Choice choice;
            choice.tile_m = m, choice.tile_n = n, choice.tile_k = k;
            choice.placement = placement;
            mapping.choice = choice;
            add(row, mapping);
          }
      if (row.legal == 0)
        row.why_none = Infeasibility{"core.sram.kib",
                                     fmt::format("the smallest tiles need {} KiB of SRAM, the "
                                                 "core has {} KiB",
                                                 ceil_div(smallest, 1024), spec.core.sram.bytes / 1024)};
      result.per_dataflow.push_back(std::move(row));
    }
  }
  // The all-to-all form, where the workload's seed gives the routing, nothing is dropped and there is no
  // shared expert, and every core's rows fit its SRAM; listed only where it fits.
  if (options.seed && shape_.capacity_factor == 0 && shape_.shared_experts == 0) {
    const int cores = spec.mesh.rows * spec.mesh.cols;
    const A2aPlan plan = a2a_plan(*this, *routing_of(op_, *options.seed), cores);
    for (arch::Dataflow dataflow : options.dataflows) {
      if (dataflow == arch::Dataflow::rs) continue;
      DataflowSearch row;
      row.dataflow = dataflow;
      row.stage_kind = "moe";
      row.label_text = fmt::format("{} {}", form_name(a2a), arch::name_of(dataflow));
      for (int64_t n : kTileNChoices)
        for (int64_t k : kTileKChoices) {
          bool fits = true;
          for (int c = 0; c < cores && fits; ++c)
            fits = a2a_layout(*this, plan, c, n, k).end <= spec.core.sram.bytes;
          if (!fits) continue;
          Mapping mapping;
          Choice choice;
          choice.tile_n = n, choice.tile_k = k;
          choice.placement = a2a;
          choice.seed = static_cast<int64_t>(*options.seed);
          mapping.choice = choice;
          add(row, mapping);
        }
      if (row.legal > 0) result.per_dataflow.push_back(std::move(row));
    }
  }
  const bool any = std::any_of(result.per_dataflow.begin(), result.per_dataflow.end(),
                               [](const DataflowSearch& row) { return row.legal > 0; });
  if (!any)
    fail("core.sram.kib",
         result.per_dataflow.empty() ? std::string("no dataflow but rs requested")
                                     : result.per_dataflow.front().why_none.message,
         "give the core more SRAM (core.sram.kib)");
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return result;
}

const char* MoeStage::form_name(Placement placement) {
  return placement == whole ? "ep" : placement == split ? "ep-split" : "ep-a2a";
}

std::string MoeStage::label(const Mapping& mapping) const {
  return fmt::format("{} {}", form_name(choice_of(mapping).placement), arch::name_of(mapping.dataflow));
}

std::string MoeStage::describe(const Mapping& mapping) const {
  const Choice& v = choice_of(mapping);
  if (v.placement == a2a)
    return fmt::format("{} ffn chunks {}, k chunks {}, each expert's rows in its core's SRAM", label(mapping),
                       v.tile_n, v.tile_k);
  return fmt::format("{} tiles {}x{}x{}, router blocks {}, combine blocks {}x{}", label(mapping), v.tile_m,
                     v.tile_n, v.tile_k, router_rows(), combine_rows(), combine_cols());
}

NamedValues MoeStage::fields(const Mapping& mapping, const Cost&) const {
  const Choice& v = choice_of(mapping);
  if (v.placement == a2a)
    return {{"form", std::string(form_name(a2a))},
            {"placement", std::string("all-to-all")},
            {"tile.n", v.tile_n},
            {"tile.k", v.tile_k},
            {"routing_seed", v.seed}};
  return {{"form", std::string(form_name(v.placement))},
          {"placement", std::string(v.placement == whole ? "whole experts" : "split experts")},
          {"tile.m", v.tile_m},
          {"tile.n", v.tile_n},
          {"tile.k", v.tile_k},
          {"router_block_rows", router_rows()},
          {"combine_block.rows", combine_rows()},
          {"combine_block.cols", combine_cols()}};
}

}  // namespace tessera::mapper
