#include "mapper/moe_stage.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <numeric>

#include "arch/isa/vec_op.hpp"
#include "arch/isa/vec_route.hpp"
#include "arch/timing/vector_timing.hpp"
#include "mapper/attention_program.hpp"
#include "mapper/cost_model.hpp"
#include "mapper/instruction_timer.hpp"
#include "mapper/program_header.hpp"
#include "mapper/search.hpp"
#include "ops/tensor.hpp"

namespace tessera::mapper {

namespace {

using attention::ceil_div;
using attention::SramCursor;

constexpr int64_t kTileMChoices[] = {32, 64, 128, 256};
constexpr int64_t kTileNChoices[] = {64, 128, 256};
constexpr int64_t kTileKChoices[] = {64, 128, 256};
// The router's logits of a token block are one accumulator tile: all experts in one row (vec route sees them
// all). More experts than this are not mapped.
constexpr int64_t kMostRouterExperts = 1024;

// The origin of an operand's region: chunk c of the contraction reads A columns [col + c0, ...) and W rows
// [row + c0, ...).
struct Operand {
  int tensor = -1;
  int64_t row = 0, col = 0;
  bool gathered = false;  // through a row-gather view: a DMA descriptor a row
};

enum class Epilogue : uint8_t { route, activate, round };

// One output tile of a GEMM: m x n over a contraction of k, chunked by the mapping's tile_k (the router's by
// its own), its result turned by the epilogue and stored at `out`.
struct TileJob {
  int64_t m = 0, n = 0, k = 0, chunk = 0;
  Operand a;
  std::vector<Operand> w;  // one, or gate and up
  Epilogue epilogue = Epilogue::round;
  arch::TensorRegion out;
  int64_t route_row = 0;  // route: the block's first token (rows of R and G)
  int h_waits = 0;        // the job's first A load waits for this many stores of H (its row block's)
  bool stores_h = false;  // its store is one of them
};

// A token block of the combine on one core, and its hidden chunks.
struct CombineJob {
  int64_t first = 0, rows = 0, col = 0, cols = 0;
  bool first_chunk = false, last_chunk = false;
};

// The program's tensors (placeholders in the estimate: only the gathers' flags matter there).
struct Tensors {
  int x = 0, wr = 1, wg = 2, wu = 3, wd = 4, sg = 5, su = 6, sd = 7, r = 8, g = 9, h = 10, hs = 11, y = 12,
      o = 13, xg = 14, yg = 15;
};

// What the experts' rows are: per expert its first row in the kept order (expert_offsets).
struct Rows {
  std::vector<int64_t> offsets;  // experts + 1
  int64_t kept = 0;
};

Rows rows_of(const std::vector<int64_t>& counts) {
  Rows rows;
  rows.offsets.assign(counts.size() + 1, 0);
  for (size_t e = 0; e < counts.size(); ++e) rows.offsets[e + 1] = rows.offsets[e] + counts[e];
  rows.kept = rows.offsets.back();
  return rows;
}

struct Tiles {
  int64_t m = 0, n = 0, k = 0;
};

// Phase 2's jobs of one share: its row blocks, each H = act(A Wg) * (A Wu) by tiles of ffn columns, then
// Y = H Wd by tiles of hidden columns; block j's down GEMMs after block j + 1's gate/up ones, so that the
// wait for block j's H stores hides under them.
void append_share_jobs(const ops::MoeShape& s, const MoeStage::Share& share, const Rows& rows,
                       const Tensors& t, const Tiles& tiles, std::vector<TileJob>& jobs) {
  const bool shared = share.expert == MoeStage::kShared;
  const int64_t width = shared ? s.shared_experts * s.ffn : s.ffn;  // H's columns
  const int64_t a_row = shared ? share.first : rows.offsets[static_cast<size_t>(share.expert)] + share.first;
  const int64_t h_row = a_row;  // H (routed) and HS (shared) rows follow A's
  const int64_t y_row = shared ? rows.kept + share.first : a_row;
  const int h_tensor = shared ? t.hs : t.h;
  std::vector<std::pair<int64_t, int64_t>> blocks;
  for (int64_t r = 0; r < share.rows; r += tiles.m) blocks.emplace_back(r, std::min(tiles.m, share.rows - r));
  auto gate_up = [&](int64_t r, int64_t m) {
    for (int64_t f = 0; f < width;) {
      // A tile never spans two shared experts: each one's columns are tiled on their own.
      const int64_t expert = shared ? f / s.ffn : share.expert, within = shared ? f % s.ffn : f;
      const int64_t n = std::min(tiles.n, s.ffn - within);
      TileJob job;
      job.m = m, job.n = n, job.k = s.hidden, job.chunk = tiles.k;
      job.a = shared ? Operand{t.x, share.first + r, 0, false} : Operand{t.xg, a_row + r, 0, true};
      const int64_t w_row = expert * s.hidden;
      if (s.swiglu()) job.w.push_back(Operand{shared ? t.sg : t.wg, w_row, within, false});
      job.w.push_back(Operand{shared ? t.su : t.wu, w_row, within, false});
      job.epilogue = Epilogue::activate;
      job.out = arch::TensorRegion{h_tensor, h_row + r, m, f, n};
      job.stores_h = true;
      jobs.push_back(std::move(job));
      f += n;
    }
  };
  auto down = [&](int64_t r, int64_t m, int waits) {
    for (int64_t c = 0; c < s.hidden; c += tiles.n) {
      TileJob job;
      job.m = m, job.n = std::min(tiles.n, s.hidden - c), job.k = width, job.chunk = tiles.k;
      job.a = Operand{h_tensor, h_row + r, 0, false};
      // W_down's rows of expert e: e * ffn + f; the shared experts' S_down rows are H's columns.
      job.w.push_back(Operand{shared ? t.sd : t.wd, shared ? 0 : share.expert * s.ffn, c, false});
      job.epilogue = Epilogue::round;
      job.out = arch::TensorRegion{t.y, y_row + r, m, c, job.n};
      job.h_waits = c == 0 ? waits : 0;
      jobs.push_back(std::move(job));
    }
  };
  std::vector<int> h_stores;
  for (const auto& [r, m] : blocks) {
    int count = 0;
    for (int64_t f = 0; f < width;) {
      const int64_t within = shared ? f % s.ffn : f;
      f += std::min(tiles.n, s.ffn - within);
      ++count;
    }
    h_stores.push_back(count);
  }
  for (size_t j = 0; j < blocks.size(); ++j) {
    if (j == 0) gate_up(blocks[0].first, blocks[0].second);
    if (j + 1 < blocks.size()) gate_up(blocks[j + 1].first, blocks[j + 1].second);
    down(blocks[j].first, blocks[j].second, h_stores[j]);
  }
}

// Phases 1 and 2 of every core, and phase 3's blocks.
struct Plan {
  std::vector<std::vector<TileJob>> work;        // per core: router jobs, then expert jobs
  std::vector<std::vector<CombineJob>> combine;  // per core
  int cores = 0;
};

// Token blocks [first, first + rows) of `total` dealt to cores in contiguous shares.
std::vector<std::vector<std::pair<int64_t, int64_t>>> deal_blocks(int64_t total, int64_t block, int cores) {
  std::vector<std::vector<std::pair<int64_t, int64_t>>> per_core(static_cast<size_t>(cores));
  const int64_t blocks = ceil_div(total, block);
  for (int64_t b = 0; b < blocks; ++b) {
    const auto core = static_cast<size_t>(b * cores / blocks);
    per_core[core].emplace_back(b * block, std::min(block, total - b * block));
  }
  return per_core;
}

struct GemmBuffers {
  uint64_t a[2] = {}, w[2][2] = {}, acc[2][2] = {}, out[2] = {}, r = 0;
};

GemmBuffers gemm_buffers(SramCursor& sram, int64_t m, int64_t n, int64_t k, int64_t nw, int64_t element,
                         int64_t out_element, int64_t route_cols) {
  GemmBuffers b;
  for (auto& a : b.a) a = sram.take(m * k * element);
  for (auto& pair : b.w)
    for (int64_t i = 0; i < nw; ++i) pair[i] = sram.take(k * n * element);
  for (auto& pair : b.acc)
    for (int64_t i = 0; i < nw; ++i) pair[i] = sram.take(m * n * 4);
  for (auto& out : b.out) out = sram.take(m * (route_cols > 0 ? route_cols : n) * out_element);
  if (route_cols > 0) b.r = sram.take(m * route_cols * 4);
  return b;
}

struct CombineBuffers {
  uint64_t g[2] = {}, x[2] = {}, y[2] = {}, out[2] = {};
};

// The SRAM of a core: the router's and the experts' buffers side by side (a core's phases 1 and 2 overlap at
// their seam), the combine's from address 0 (it starts after the barrier, when every earlier use is over).
struct Layout {
  GemmBuffers router, experts;
  CombineBuffers combine;
  int64_t end = 0;
};

Layout layout_of(const MoeStage& stage, int64_t tm, int64_t tn, int64_t tk) {
  const ops::MoeShape& s = stage.shape();
  const int64_t element = size_bytes(stage.dtype());
  Layout layout;
  SramCursor sram;
  layout.router = gemm_buffers(sram, stage.router_rows(), s.experts, tk, 1, element, 4, s.top_k);
  layout.experts = gemm_buffers(sram, tm, tn, tk, s.swiglu() ? 2 : 1, element, element, 0);
  SramCursor after;
  const int64_t cr = stage.combine_rows(), cc = stage.combine_cols();
  for (auto& g : layout.combine.g) g = after.take(cr * s.top_k * 4);
  for (auto& x : layout.combine.x) x = after.take(cr * s.top_k * cc * element);
  for (auto& y : layout.combine.y) y = after.take(cr * cc * element);
  for (auto& o : layout.combine.out) o = after.take(cr * cc * element);
  layout.end = static_cast<int64_t>(std::max(sram.at, after.at));
  return layout;
}

}  // namespace

std::shared_ptr<const MoeStage> MoeStage::of(const ops::Op& op) {
  const auto* shape = op.as<ops::MoeShape>();
  if (!shape) return nullptr;
  auto stage = std::make_shared<MoeStage>();
  stage->shape_ = *shape;
  stage->dtype_ = op.dtype;
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

namespace {

// Builds the plan of a mapping for per-expert kept counts (`routing` when the program is lowered: the rows
// of each expert's share follow it; the estimate needs only the counts).
Plan plan_of(const MoeStage& stage, const Mapping& mapping, const arch::ArchSpec& spec,
             const std::vector<int64_t>& counts, const Tensors& t) {
  const ops::MoeShape& s = stage.shape();
  const Tiles tiles{mapping.graph_tiling.values[MoeStage::kTileM],
                    mapping.graph_tiling.values[MoeStage::kTileN],
                    mapping.graph_tiling.values[MoeStage::kTileK]};
  const int cores = spec.mesh.rows * spec.mesh.cols;
  const auto placement = static_cast<MoeStage::Placement>(mapping.graph_tiling.values[MoeStage::kPlacement]);
  Plan plan;
  plan.cores = cores;
  plan.work.resize(static_cast<size_t>(cores));
  plan.combine.resize(static_cast<size_t>(cores));
  const Rows rows = rows_of(counts);
  // Phase 1: the router's token blocks.
  const auto router = deal_blocks(s.tokens, stage.router_rows(), cores);
  for (size_t c = 0; c < router.size(); ++c)
    for (const auto& [first, count] : router[c]) {
      TileJob job;
      job.m = count, job.n = s.experts, job.k = s.hidden, job.chunk = tiles.k;
      job.a = Operand{t.x, first, 0, false};
      job.w.push_back(Operand{t.wr, 0, 0, false});
      job.epilogue = Epilogue::route;
      job.route_row = first;
      job.out = arch::TensorRegion{t.g, first, count, 0, s.top_k};
      plan.work[c].push_back(std::move(job));
    }
  // Phase 2: the experts' shares.
  const auto shares = stage.place(counts, placement, tiles.m, cores);
  for (size_t c = 0; c < shares.size(); ++c)
    for (const MoeStage::Share& share : shares[c]) append_share_jobs(s, share, rows, t, tiles, plan.work[c]);
  // Phase 3: the combine's token blocks, by hidden chunks.
  const auto combine = deal_blocks(s.tokens, stage.combine_rows(), cores);
  for (size_t c = 0; c < combine.size(); ++c)
    for (const auto& [first, count] : combine[c])
      for (int64_t col = 0; col < s.hidden; col += stage.combine_cols()) {
        const int64_t cols = std::min(stage.combine_cols(), s.hidden - col);
        plan.combine[c].push_back(CombineJob{first, count, col, cols, col == 0, col + cols >= s.hidden});
      }
  return plan;
}

}  // namespace

Cost MoeStage::evaluate(const Mapping& mapping, const arch::ArchSpec& spec) const {
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
      arch::VecRoute route;
      route.rows = job.m;
      route.experts = s.experts;
      route.top_k = s.top_k;
      route.sigmoid = s.routing.scoring == ops::MoeScoring::sigmoid;
      route.groups = s.routing.groups;
      route.topk_groups = s.routing.topk_groups;
      cycles = arch::vector_timing(vector, route.work()).cycles;
    } else {
      const int64_t extra = job.epilogue == Epilogue::activate ? (s.swiglu() ? 6 : 5) : 1;
      cycles = attention::vector_cycles(vector, arch::VectorKind::map, job.m, job.n, extra);
    }
    return vectors[key] = cycles;
  };
  Cost cost;
  std::vector<int64_t> busy(static_cast<size_t>(plan.cores), 0), pe(busy), vecs(busy), dmas(busy);
  int64_t dram = 0;
  for (size_t c = 0; c < plan.work.size(); ++c)
    for (const TileJob& job : plan.work[c]) {
      const int64_t nw = static_cast<int64_t>(job.w.size());
      int64_t tile_pe = 0, tile_dma = 0, tile = 0;
      for (int64_t k0 = 0; k0 < job.k; k0 += job.chunk) {
        const int64_t k = std::min(job.chunk, job.k - k0);
        const int64_t chunk_pe = nw * matmul(job.m, job.n, k);
        const int64_t a_bytes = job.m * k * e, w_bytes = nw * k * job.n * e;
        const int64_t chunk_dma = attention::transfer_cycles(dma, a_bytes, job.a.gathered ? job.m : 1) +
                                  attention::transfer_cycles(dma, w_bytes, nw);
        tile_pe += chunk_pe;
        tile_dma += chunk_dma;
        tile += std::max(chunk_pe, chunk_dma);
        dram += a_bytes + w_bytes;
      }
      const int64_t out_bytes = job.epilogue == Epilogue::route ? job.m * s.top_k * 4 : job.m * job.n * e;
      const int64_t store = attention::transfer_cycles(dma, out_bytes, 1);
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
          attention::transfer_cycles(dma, x_bytes, job.rows * s.top_k * kept / (s.tokens * s.top_k)) +
          (y_bytes > 0 ? attention::transfer_cycles(dma, y_bytes, 1) : 0) +
          (g_bytes > 0 ? attention::transfer_cycles(dma, g_bytes, 1) : 0);
      arch::VecOp op = sum_shape;
      op.rows = job.rows;
      op.cols = job.cols;
      if (y_bytes > 0) op.chain = {arch::VecFn::add};
      const int64_t sum = arch::vector_timing(vector, op.work()).cycles;
      const int64_t store = attention::transfer_cycles(dma, job.rows * job.cols * e, 1);
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
  cost.dram_cycles = static_cast<int64_t>(std::ceil(static_cast<double>(dram) / spec.dram.bytes_per_cycle));
  cost.overhead_cycles = int64_t{spec.dram.latency_cycles} * 4;  // the barrier's round trips
  cost.cycles = std::max(before + *std::max_element(after.begin(), after.end()), cost.dram_cycles) +
                cost.overhead_cycles;
  const int64_t most = std::max({cost.compute_cycles, cost.vector_cycles, cost.dma_cycles, cost.dram_cycles});
  cost.bound = most == cost.compute_cycles  ? Bound::compute
               : most == cost.vector_cycles ? Bound::vector
               : most == cost.dram_cycles   ? Bound::dram
                                            : Bound::dma;
  cost.pe_utilization =
      static_cast<double>(macs_) / (static_cast<double>(cost.cycles) * spec.core.pe_array.rows *
                                    spec.core.pe_array.cols * spec.mesh.rows * spec.mesh.cols);
  cost.energy_pj =
      static_cast<double>(dram) * spec.energy_pj.dram_byte + static_cast<double>(macs_) * spec.energy_pj.mac;
  return cost;
}

SearchResult MoeStage::search(const std::shared_ptr<const StageGraph>& self, const arch::ArchSpec& spec,
                              const SearchOptions& options) const {
  const auto started = std::chrono::steady_clock::now();
  SearchResult result;
  const size_t keep = static_cast<size_t>(std::max(1, options.keep_per_dataflow));
  auto fail = [&](const std::string& field, const std::string& message, const std::string& hint) {
    const SourceLocation where = options.locate_field ? options.locate_field(field) : SourceLocation{};
    throw InputError(where, field,
                     fmt::format("no legal mapping for {}: {}", options.op_description, message), hint);
  };
  if (shape_.experts > kMostRouterExperts)
    fail("",
         fmt::format("the router's logits of {} experts do not fit one accumulator row (at most {})",
                     shape_.experts, kMostRouterExperts),
         "split the experts over several layers");
  int64_t smallest = 0;
  for (int64_t placement : {whole, split}) {
    for (arch::Dataflow dataflow : options.dataflows) {
      if (dataflow == arch::Dataflow::rs) continue;
      DataflowSearch row;
      row.dataflow = dataflow;
      row.stage_kind = "moe";
      row.label_text = fmt::format("{} {}", placement == whole ? "ep" : "ep-split", arch::name_of(dataflow));
      for (int64_t m : kTileMChoices)
        for (int64_t n : kTileNChoices)
          for (int64_t k : kTileKChoices) {
            const int64_t bytes = sram_bytes(m, n, k);
            if (smallest == 0 || bytes < smallest) smallest = bytes;
            if (bytes > spec.core.sram.bytes) continue;
            Mapping mapping;
            mapping.graph = self;
            mapping.dataflow = dataflow;
            mapping.graph_tiling.values[kTileM] = m;
            mapping.graph_tiling.values[kTileN] = n;
            mapping.graph_tiling.values[kTileK] = k;
            mapping.graph_tiling.values[kPlacement] = placement;
            Candidate candidate;
            candidate.mapping = mapping;
            candidate.cost = evaluate(mapping, spec);
            candidate.index = static_cast<uint64_t>(row.legal);
            ++row.legal;
            ++result.evaluated;
            keep_best(row.best, std::move(candidate), keep);
          }
      if (row.legal == 0)
        row.why_none = Infeasibility{"core.sram.kib",
                                     fmt::format("the smallest tiles need {} KiB of SRAM, the "
                                                 "core has {} KiB",
                                                 ceil_div(smallest, 1024), spec.core.sram.bytes / 1024)};
      result.per_dataflow.push_back(std::move(row));
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

std::string MoeStage::label(const Mapping& mapping) const {
  return fmt::format("{} {}", mapping.graph_tiling.values[kPlacement] == whole ? "ep" : "ep-split",
                     arch::name_of(mapping.dataflow));
}

std::string MoeStage::describe(const Mapping& mapping) const {
  const auto& v = mapping.graph_tiling.values;
  return fmt::format("{} tiles {}x{}x{}, router blocks {}, combine blocks {}x{}", label(mapping), v[kTileM],
                     v[kTileN], v[kTileK], router_rows(), combine_rows(), combine_cols());
}

namespace {

// The routing of an op's seeded inputs, computed once per (op, seed): every candidate of a search lowers by
// it, and a 4096-token router takes seconds in float64.
std::shared_ptr<const ops::MoeRouting> routing_of(const ops::Op& op, uint64_t seed) {
  static std::mutex mutex;
  static std::map<std::pair<std::string, uint64_t>, std::shared_ptr<const ops::MoeRouting>> cache;
  std::string key = fmt::format("{}#{}", op.index, op.shape_text());
  for (const auto& [name, value] : ops::entry_of(op)) key += fmt::format(";{}={}", name, value);
  std::lock_guard<std::mutex> lock(mutex);
  auto found = cache.find({key, seed});
  if (found != cache.end()) return found->second;
  if (cache.size() > 16) cache.clear();
  auto routing = std::make_shared<const ops::MoeRouting>(ops::moe_routing_from_seed(op, seed, 2));
  cache.emplace(std::make_pair(key, seed), routing);
  return routing;
}

// Emits a core's GEMM tile jobs with double-buffered operand chunks and accumulators. Semaphores are named
// with `prefix`; a store's instruction index is appended to `stores`.
class JobEmitter {
 public:
  JobEmitter(arch::Program& program, std::vector<arch::Instruction>& list, const MoeStage& stage,
             arch::Dataflow dataflow, const arch::ArchSpec& spec, std::string prefix)
      : program_(program),
        list_(list),
        stage_(stage),
        dataflow_(dataflow),
        prefix_(std::move(prefix)),
        store_queue_{arch::QueueKind::dma, spec.core.dma.engines > 1 ? 1 : 0} {}

  void emit(const std::vector<TileJob>& jobs, const GemmBuffers& b, int route_tensor,
            std::vector<size_t>& stores) {
    const ops::MoeShape& s = stage_.shape();
    const DType dtype = stage_.dtype();
    for (size_t t = 0; t < jobs.size(); ++t) {
      const TileJob& job = jobs[t];
      const int nw = static_cast<int>(job.w.size());
      const int tb = static_cast<int>(t % 2);
      if (job.epilogue == Epilogue::route) {
        // The block's chosen experts, beside its logits.
        arch::DmaLoad load;
        load.source = arch::TensorRegion{route_tensor, job.route_row, job.m, 0, s.top_k};
        load.sram_address = b.r;
        std::vector<arch::SemaphoreWait> waits;
        if (routes_ > 0) waits.push_back(wait("r_free"));
        list_.push_back(make_instruction(load_queue_, load, waits, {signal("r_full")}));
        ++routes_;
      }
      for (int64_t k0 = 0; k0 < job.k; k0 += job.chunk, ++chunks_) {
        const int64_t k = std::min(job.chunk, job.k - k0);
        const int cb = static_cast<int>(chunks_ % 2);
        {
          arch::DmaLoad load;
          load.source = arch::TensorRegion{job.a.tensor, job.a.row, job.m, job.a.col + k0, k};
          load.sram_address = b.a[cb];
          std::vector<arch::SemaphoreWait> waits;
          if (chunks_ >= 2) waits.push_back(wait(indexed("a_free", cb)));
          if (k0 == 0 && job.h_waits > 0)
            waits.push_back(arch::SemaphoreWait{semaphore("h_stored"), job.h_waits});
          list_.push_back(make_instruction(load_queue_, load, waits, {signal(indexed("a_full", cb))}));
        }
        for (int i = 0; i < nw; ++i) {
          arch::DmaLoad load;
          load.source =
              arch::TensorRegion{job.w[static_cast<size_t>(i)].tensor, job.w[static_cast<size_t>(i)].row + k0,
                                 k, job.w[static_cast<size_t>(i)].col, job.n};
          load.sram_address = b.w[cb][i];
          std::vector<arch::SemaphoreWait> waits;
          if (i == 0 && chunks_ >= 2) waits.push_back(wait(indexed("w_free", cb)));
          list_.push_back(make_instruction(load_queue_, load, waits, {signal(indexed("w_full", cb))}));
        }
        for (int i = 0; i < nw; ++i) {
          arch::PeMatmul mm;
          mm.dataflow = dataflow_;
          mm.dtype = dtype;
          mm.a_address = b.a[cb];
          mm.w_address = b.w[cb][i];
          mm.o_address = b.acc[tb][i];
          mm.m = job.m, mm.n = job.n, mm.k = k;
          mm.accumulate = k0 > 0;
          std::vector<arch::SemaphoreWait> waits;
          if (i == 0) {
            waits.push_back(wait(indexed("a_full", cb)));
            waits.push_back(arch::SemaphoreWait{semaphore(indexed("w_full", cb)), nw});
            if (k0 == 0 && t >= 2) waits.push_back(wait(indexed("acc_free", tb)));
          }
          std::vector<arch::SemaphoreRef> signals;
          if (i == nw - 1) {
            signals = {signal(indexed("a_free", cb)), signal(indexed("w_free", cb))};
            if (k0 + k >= job.k) signals.push_back(signal(indexed("acc_full", tb)));
          }
          list_.push_back(make_instruction(pe_queue_, mm, waits, signals));
        }
      }
      // The epilogue: the accumulators become the stored tile.
      std::vector<arch::SemaphoreWait> waits = {wait(indexed("acc_full", tb))};
      if (t >= 2) waits.push_back(wait(indexed("out_free", tb)));
      std::vector<arch::SemaphoreRef> signals = {signal(indexed("acc_free", tb)),
                                                 signal(indexed("out_full", tb))};
      if (job.epilogue == Epilogue::route) {
        waits.push_back(wait("r_full"));
        signals.push_back(signal("r_free"));
        arch::VecRoute route;
        route.x_address = b.acc[tb][0];
        route.i_address = b.r;
        route.o_address = b.out[tb];
        route.rows = job.m;
        route.experts = s.experts;
        route.top_k = s.top_k;
        route.sigmoid = s.routing.scoring == ops::MoeScoring::sigmoid;
        route.groups = s.routing.groups;
        route.topk_groups = s.routing.topk_groups;
        route.scaling = s.routing.routed_scaling;
        list_.push_back(make_instruction(vec_queue_, route, waits, signals));
      } else {
        arch::VecOp op;
        op.kind = arch::VectorKind::map;
        op.dtype = DType::fp32;
        op.out_dtype = dtype;
        op.x_address = b.acc[tb][0];
        op.o_address = b.out[tb];
        op.rows = job.m;
        op.cols = job.n;
        if (job.epilogue == Epilogue::round) {
          op.chain = {arch::VecFn::scale};
        } else if (s.swiglu()) {
          op.chain = {arch::VecFn::swiglu};
          op.y_address = b.acc[tb][1];
        } else {
          op.chain = {arch::VecFn::gelu};
        }
        list_.push_back(make_instruction(vec_queue_, op, waits, signals));
      }
      arch::DmaStore store;
      store.sram_address = b.out[tb];
      store.destination = job.out;
      std::vector<arch::SemaphoreRef> stored = {signal(indexed("out_free", tb))};
      if (job.stores_h) stored.push_back(semaphore("h_stored"));
      stores.push_back(list_.size());
      list_.push_back(make_instruction(store_queue_, store, {wait(indexed("out_full", tb))}, stored));
    }
  }

 private:
  arch::SemaphoreRef semaphore(const std::string& name) const {
    return arch::SemaphoreRef{program_.semaphore_id(prefix_ + name), arch::kSameCore};
  }
  arch::SemaphoreRef signal(const std::string& name) const { return semaphore(name); }
  arch::SemaphoreWait wait(const std::string& name) const { return arch::SemaphoreWait{semaphore(name), 1}; }
  static std::string indexed(const char* name, int index) { return fmt::format("{}[{}]", name, index); }

  arch::Program& program_;
  std::vector<arch::Instruction>& list_;
  const MoeStage& stage_;
  arch::Dataflow dataflow_;
  std::string prefix_;
  arch::QueueId load_queue_{arch::QueueKind::dma, 0}, store_queue_, pe_queue_{arch::QueueKind::pe, 0},
      vec_queue_{arch::QueueKind::vec, 0};
  int64_t chunks_ = 0, routes_ = 0;
};

}  // namespace

arch::Program MoeStage::lower(const ops::Op& op, uint64_t seed, const Mapping& mapping,
                              const arch::ArchSpec& spec, const std::string& program_name) const {
  const ops::MoeShape& s = shape_;
  const std::shared_ptr<const ops::MoeRouting> routing = routing_of(op, seed);
  std::vector<int64_t> counts(static_cast<size_t>(s.experts));
  for (int64_t e = 0; e < s.experts; ++e) counts[static_cast<size_t>(e)] = routing->count(e);
  const Rows rows = rows_of(counts);
  const int64_t element = size_bytes(dtype_);

  arch::Program program;
  start_program(program, program_name, op, seed, spec);
  Tensors t;
  auto intermediate = [&](const char* name, DType dtype, int64_t tensor_rows, int64_t cols) {
    arch::TensorDecl tensor;
    tensor.name = name;
    tensor.dtype = dtype;
    tensor.rows = std::max<int64_t>(1, tensor_rows);
    tensor.cols = cols;
    tensor.role = arch::TensorRole::output;
    return add_tensor(program, tensor);
  };
  arch::TensorDecl output;
  for (const ops::TensorDesc& desc : ops::tensors_of(op)) {
    if (desc.name == "P") continue;  // the forced deal: the host's routing follows it
    if (desc.is_output) {
      output = declared_tensor(desc, seed);
      continue;
    }
    const int index = add_tensor(program, declared_tensor(desc, seed));
    (desc.name == "X"        ? t.x
     : desc.name == "Wr"     ? t.wr
     : desc.name == "W_gate" ? t.wg
     : desc.name == "W_up"   ? t.wu
     : desc.name == "W_down" ? t.wd
     : desc.name == "S_gate" ? t.sg
     : desc.name == "S_up"   ? t.su
                             : t.sd) = index;
  }
  // R: each token's chosen experts, by falling weight (the routing's), for vec route.
  {
    arch::TensorDecl r;
    r.name = "R";
    r.dtype = DType::int32;
    r.rows = s.tokens;
    r.cols = s.top_k;
    r.role = arch::TensorRole::input;
    std::vector<int64_t> values(static_cast<size_t>(s.tokens * s.top_k));
    for (size_t i = 0; i < values.size(); ++i) values[i] = routing->routes[i].expert;
    r.values = std::move(values);
    t.r = add_tensor(program, r);
  }
  t.g = intermediate("G", DType::fp32, s.tokens, s.top_k);
  t.h = intermediate("H", dtype_, rows.kept, s.ffn);
  if (s.shared_experts > 0) t.hs = intermediate("HS", dtype_, s.tokens, s.shared_experts * s.ffn);
  t.y = intermediate("Y", dtype_, rows.kept + (s.shared_experts > 0 ? s.tokens : 0), s.hidden);
  // The gathers: X's rows in expert order (the permutation), and each token's routes' rows of Y.
  {
    arch::TensorDecl xg;
    xg.name = "XG";
    xg.dtype = dtype_;
    xg.rows = std::max<int64_t>(1, rows.kept);
    xg.cols = s.hidden;
    xg.role = arch::TensorRole::view;
    xg.row_gather = arch::RowGatherView{t.x, routing->expert_tokens};
    if (rows.kept == 0) xg.row_gather->rows = {-1};
    t.xg = add_tensor(program, xg);
    arch::TensorDecl yg;
    yg.name = "YG";
    yg.dtype = dtype_;
    yg.rows = s.tokens * s.top_k;
    yg.cols = s.hidden;
    yg.role = arch::TensorRole::view;
    std::vector<int64_t> gathered(static_cast<size_t>(s.tokens * s.top_k), -1);
    std::vector<int64_t> next(rows.offsets.begin(), rows.offsets.end() - 1);
    // Expert e's kept tokens are in token order: walking the tokens in order meets them in order.
    for (int64_t token = 0; token < s.tokens; ++token)
      for (int64_t j = 0; j < s.top_k; ++j) {
        const ops::MoeRoute& route = routing->routes[static_cast<size_t>(token * s.top_k + j)];
        if (route.kept)
          gathered[static_cast<size_t>(token * s.top_k + j)] = next[static_cast<size_t>(route.expert)]++;
      }
    yg.row_gather = arch::RowGatherView{t.y, std::move(gathered)};
    t.yg = add_tensor(program, yg);
  }
  t.o = add_tensor(program, output);  // the last tensor: the one the numerics check reads

  const Plan plan = plan_of(*this, mapping, spec, counts, t);
  const int64_t tm = mapping.graph_tiling.values[kTileM], tn = mapping.graph_tiling.values[kTileN],
                tk = mapping.graph_tiling.values[kTileK];
  const Layout layout = layout_of(*this, mapping.graph_tiling.values[kTileM],
                                  mapping.graph_tiling.values[kTileN], mapping.graph_tiling.values[kTileK]);
  const GemmBuffers& router = layout.router;
  const GemmBuffers& experts = layout.experts;
  const CombineBuffers& buffers = layout.combine;

  // Phases 1 and 2 per core, then the barrier: each core's last store waits for its others and tells every
  // combining core.
  std::vector<int> combining, working;
  for (int c = 0; c < plan.cores; ++c) {
    if (!plan.combine[static_cast<size_t>(c)].empty()) combining.push_back(c);
    if (!plan.work[static_cast<size_t>(c)].empty()) working.push_back(c);
  }
  std::vector<std::vector<arch::Instruction>> lists(static_cast<size_t>(plan.cores));
  for (int c : working) {
    auto& list = lists[static_cast<size_t>(c)];
    std::vector<TileJob> router_jobs, expert_jobs;
    for (const TileJob& job : plan.work[static_cast<size_t>(c)])
      (job.epilogue == Epilogue::route ? router_jobs : expert_jobs).push_back(job);
    std::vector<size_t> stores;
    JobEmitter(program, list, *this, mapping.dataflow, spec, "r_").emit(router_jobs, router, t.r, stores);
    JobEmitter(program, list, *this, mapping.dataflow, spec, "e_").emit(expert_jobs, experts, t.r, stores);
    for (size_t i = 0; i + 1 < stores.size(); ++i)
      list[stores[i]].signals.push_back(arch::SemaphoreRef{program.semaphore_id("stored"), arch::kSameCore});
    arch::Instruction& last = list[stores.back()];
    if (stores.size() > 1)
      last.waits.push_back(
          arch::SemaphoreWait{arch::SemaphoreRef{program.semaphore_id("stored"), arch::kSameCore},
                              static_cast<int>(stores.size() - 1)});
    for (int to : combining)
      last.signals.push_back(
          arch::SemaphoreRef{program.semaphore_id("experts_done"), to == c ? arch::kSameCore : to});
  }
  // Phase 3: the combine.
  const arch::QueueId load_queue{arch::QueueKind::dma, 0},
      store_queue{arch::QueueKind::dma, spec.core.dma.engines > 1 ? 1 : 0},
      vec_queue{arch::QueueKind::vec, 0};
  auto semaphore = [&](const std::string& name) {
    return arch::SemaphoreRef{program.semaphore_id("c_" + name), arch::kSameCore};
  };
  auto wait = [&](const std::string& name) { return arch::SemaphoreWait{semaphore(name), 1}; };
  for (int c : combining) {
    auto& list = lists[static_cast<size_t>(c)];
    const auto& jobs = plan.combine[static_cast<size_t>(c)];
    int64_t blocks = 0;
    for (size_t i = 0; i < jobs.size(); ++i) {
      const CombineJob& job = jobs[i];
      const int b = static_cast<int>(i % 2);
      const int gb = static_cast<int>((blocks - (job.first_chunk ? 0 : 1)) % 2);
      std::vector<arch::SemaphoreWait> barrier;
      if (i == 0)
        barrier.push_back(
            arch::SemaphoreWait{arch::SemaphoreRef{program.semaphore_id("experts_done"), arch::kSameCore},
                                static_cast<int>(working.size())});
      if (job.first_chunk) {
        arch::DmaLoad load;
        load.source = arch::TensorRegion{t.g, job.first, job.rows, 0, s.top_k};
        load.sram_address = buffers.g[gb];
        std::vector<arch::SemaphoreWait> waits = barrier;
        barrier.clear();
        if (blocks >= 2) waits.push_back(wait(fmt::format("g_free[{}]", gb)));
        list.push_back(make_instruction(load_queue, load, waits, {semaphore(fmt::format("g_full[{}]", gb))}));
        ++blocks;
      }
      arch::DmaLoad x;
      x.source = arch::TensorRegion{t.yg, job.first * s.top_k, job.rows * s.top_k, job.col, job.cols};
      x.sram_address = buffers.x[b];
      std::vector<arch::SemaphoreWait> waits = barrier;
      if (i >= 2) waits.push_back(wait(fmt::format("x_free[{}]", b)));
      list.push_back(make_instruction(load_queue, x, waits, {semaphore(fmt::format("x_full[{}]", b))}));
      if (s.shared_experts > 0) {
        arch::DmaLoad y;
        y.source = arch::TensorRegion{t.y, rows.kept + job.first, job.rows, job.col, job.cols};
        y.sram_address = buffers.y[b];
        list.push_back(make_instruction(load_queue, y, {}, {semaphore(fmt::format("x_full[{}]", b))}));
      }
      arch::VecOp sum;
      sum.kind = arch::VectorKind::weighted_sum;
      sum.dtype = dtype_;
      sum.out_dtype = dtype_;
      sum.x_address = buffers.x[b];
      sum.g_address = buffers.g[gb];
      sum.o_address = buffers.out[b];
      sum.rows = job.rows;
      sum.cols = job.cols;
      sum.parts = s.top_k;
      if (s.shared_experts > 0) sum.y_address = buffers.y[b], sum.chain = {arch::VecFn::add};
      std::vector<arch::SemaphoreWait> sum_waits = {
          arch::SemaphoreWait{semaphore(fmt::format("x_full[{}]", b)), s.shared_experts > 0 ? 2 : 1}};
      if (job.first_chunk) sum_waits.push_back(wait(fmt::format("g_full[{}]", gb)));
      if (i >= 2) sum_waits.push_back(wait(fmt::format("out_free[{}]", b)));
      std::vector<arch::SemaphoreRef> signals = {semaphore(fmt::format("x_free[{}]", b)),
                                                 semaphore(fmt::format("out_full[{}]", b))};
      if (job.last_chunk) signals.push_back(semaphore(fmt::format("g_free[{}]", gb)));
      list.push_back(make_instruction(vec_queue, sum, sum_waits, signals));
      arch::DmaStore store;
      store.sram_address = buffers.out[b];
      store.destination = arch::TensorRegion{t.o, job.first, job.rows, job.col, job.cols};
      list.push_back(make_instruction(store_queue, store, {wait(fmt::format("out_full[{}]", b))},
                                      {semaphore(fmt::format("out_free[{}]", b))}));
    }
  }
  for (int c = 0; c < plan.cores; ++c) {
    if (lists[static_cast<size_t>(c)].empty()) continue;
    program.cores.emplace_back();
    program.cores.back().coord = arch::core_coord(c, spec.mesh);
    program.cores.back().instructions = std::move(lists[static_cast<size_t>(c)]);
  }
  std::sort(program.cores.begin(), program.cores.end(),
            [](const arch::CoreProgram& a, const arch::CoreProgram& b) { return a.coord < b.coord; });
  program.number_semaphores_by_appearance();
  return program;
}

}  // namespace tessera::mapper
