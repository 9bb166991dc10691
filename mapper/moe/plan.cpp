#include "mapper/moe/plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "common/dtype.hpp"
#include "common/integer_math.hpp"

namespace tessera::mapper::moe {

namespace {

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
  // Every row block stores one H tile per ffn tile.
  int h_stores = 0;
  for (int64_t f = 0; f < width; ++h_stores) f += std::min(tiles.n, s.ffn - (shared ? f % s.ffn : f));
  for (size_t j = 0; j < blocks.size(); ++j) {
    if (j == 0) gate_up(blocks[0].first, blocks[0].second);
    if (j + 1 < blocks.size()) gate_up(blocks[j + 1].first, blocks[j + 1].second);
    down(blocks[j].first, blocks[j].second, h_stores);
  }
}

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

}  // namespace

Rows rows_of(const std::vector<int64_t>& counts) {
  Rows rows;
  rows.offsets.assign(counts.size() + 1, 0);
  for (size_t e = 0; e < counts.size(); ++e) rows.offsets[e + 1] = rows.offsets[e] + counts[e];
  rows.kept = rows.offsets.back();
  return rows;
}

// Builds the plan of a mapping for per-expert kept counts (`routing` when the program is lowered: the rows
// of each expert's share follow it; the estimate needs only the counts).
Plan plan_of(const MoeStage& stage, const Mapping& mapping, const arch::ArchSpec& spec,
             const std::vector<int64_t>& counts, const Tensors& t) {
  const ops::MoeShape& s = stage.shape();
  const MoeStage::Choice& choice = MoeStage::choice_of(mapping);
  const Tiles tiles{choice.tile_m, choice.tile_n, choice.tile_k};
  const int cores = spec.mesh.rows * spec.mesh.cols;
  const MoeStage::Placement placement = choice.placement;
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

GemmBuffers gemm_buffers(SramCursor& sram, const Tiles& tile, int64_t w_tensors, int64_t element,
                         int64_t out_element, int64_t route_cols) {
  GemmBuffers b;
  for (auto& a : b.a) a = sram.take(tile.m * tile.k * element);
  for (auto& pair : b.w)
    for (int64_t i = 0; i < w_tensors; ++i) pair[i] = sram.take(tile.k * tile.n * element);
  for (auto& pair : b.acc)
    for (int64_t i = 0; i < w_tensors; ++i) pair[i] = sram.take(tile.m * tile.n * 4);
  for (auto& out : b.out) out = sram.take(tile.m * (route_cols > 0 ? route_cols : tile.n) * out_element);
  if (route_cols > 0) b.r = sram.take(tile.m * route_cols * 4);
  return b;
}

Layout layout_of(const MoeStage& stage, int64_t tm, int64_t tn, int64_t tk) {
  const ops::MoeShape& s = stage.shape();
  const int64_t element = size_bytes(stage.dtype());
  Layout layout;
  SramCursor sram;
  layout.router = gemm_buffers(sram, Tiles{stage.router_rows(), s.experts, tk}, 1, element, 4, s.top_k);
  layout.experts = gemm_buffers(sram, Tiles{tm, tn, tk}, s.swiglu() ? 2 : 1, element, element, 0);
  SramCursor after;
  const int64_t cr = stage.combine_rows(), cc = stage.combine_cols();
  for (auto& g : layout.combine.g) g = after.take(cr * s.top_k * 4);
  for (auto& x : layout.combine.x) x = after.take(cr * s.top_k * cc * element);
  for (auto& y : layout.combine.y) y = after.take(cr * cc * element);
  for (auto& o : layout.combine.out) o = after.take(cr * cc * element);
  layout.end = static_cast<int64_t>(std::max(sram.at, after.at));
  return layout;
}

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

A2aPlan a2a_plan(const MoeStage& stage, const ops::MoeRouting& routing, int cores) {
  const ops::MoeShape& s = stage.shape();
  A2aPlan plan;
  plan.home_tokens = ceil_div(s.tokens, cores);
  plan.homes = static_cast<int>(ceil_div(s.tokens, plan.home_tokens));
  plan.owner.assign(static_cast<size_t>(s.experts), -1);
  plan.cores.resize(static_cast<size_t>(cores));
  std::vector<int64_t> counts(static_cast<size_t>(s.experts));
  for (int64_t e = 0; e < s.experts; ++e) counts[static_cast<size_t>(e)] = routing.count(e);
  const auto shares = stage.place(counts, MoeStage::whole, 1, cores);
  for (size_t c = 0; c < shares.size(); ++c) {
    A2aPlan::Core& core = plan.cores[c];
    for (const MoeStage::Share& share : shares[c]) {
      plan.owner[static_cast<size_t>(share.expert)] = static_cast<int>(c);
      A2aPlan::Expert expert{share.expert, static_cast<int64_t>(core.rows.size()), share.rows};
      const int64_t first = routing.expert_offsets[static_cast<size_t>(share.expert)];
      for (int64_t i = 0; i < share.rows; ++i) {
        const int64_t token = routing.expert_tokens[static_cast<size_t>(first + i)];
        int64_t slot = 0;
        while (routing.routes[static_cast<size_t>(token * s.top_k + slot)].expert != share.expert) ++slot;
        core.rows.push_back(A2aPlan::Row{token, slot});
      }
      core.most_rows = std::max(core.most_rows, share.rows);
      core.experts.push_back(expert);
    }
  }
  return plan;
}

int64_t A2aPlan::remote_routes() const {
  int64_t remote = 0;
  for (size_t c = 0; c < cores.size(); ++c)
    for (const Row& row : cores[c].rows) remote += home_of(row.token) != static_cast<int>(c) ? 1 : 0;
  return remote;
}

A2aLayout a2a_layout(const MoeStage& stage, const A2aPlan& plan, int core, int64_t tf, int64_t tk) {
  const ops::MoeShape& s = stage.shape();
  const int64_t e = size_bytes(stage.dtype()), nw = s.swiglu() ? 2 : 1;
  const A2aPlan::Core& c = plan.cores[static_cast<size_t>(core)];
  const int64_t hb = plan.home_tokens, r = std::max<int64_t>(1, c.most_rows),
                rows = std::max<int64_t>(1, static_cast<int64_t>(c.rows.size()));
  A2aLayout layout;
  SramCursor sram;
  layout.router = gemm_buffers(sram, Tiles{hb, s.experts, tk}, 1, e, 4, s.top_k);
  layout.xh = sram.take(hb * s.hidden * e);
  layout.slots = sram.take(hb * s.top_k * s.hidden * e);
  layout.g = sram.take(hb * s.top_k * 4);
  layout.out = sram.take(hb * s.hidden * e);
  // An expert's rounded Y rows take the place of its X rows: they are written after its last gate/up GEMM.
  layout.xr = layout.yb = sram.take(rows * s.hidden * e);
  for (auto& pair : layout.w)
    for (int64_t i = 0; i < nw; ++i) pair[i] = sram.take(tk * tf * e);
  for (auto& pair : layout.acc)
    for (int64_t i = 0; i < nw; ++i) pair[i] = sram.take(r * tf * 4);
  for (auto& h : layout.h) h = sram.take(r * tf * e);
  for (auto& wd : layout.wd) wd = sram.take(tf * tf * e);
  layout.yacc = sram.take(r * s.hidden * 4);
  layout.end = static_cast<int64_t>(sram.at);
  return layout;
}

}  // namespace tessera::mapper::moe
