// The tile jobs of a MoE layer's program (mapper/moe/stage.hpp): what the estimate walks and the lowering
// emits, built in one place from the mapping and the experts' row counts — the router's token blocks, each
// share's GEMM tiles, the combine's blocks — and the SRAM buffers they use.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "arch/isa/region.hpp"
#include "arch/spec.hpp"
#include "mapper/kit/dma_engines.hpp"
#include "mapper/kit/sram_cursor.hpp"
#include "mapper/mapping.hpp"
#include "mapper/moe/stage.hpp"
#include "ops/moe_routing.hpp"
#include "ops/op.hpp"

namespace tessera::mapper::moe {

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

Rows rows_of(const std::vector<int64_t>& counts);

struct Tiles {
  int64_t m = 0, n = 0, k = 0;
};

// Phases 1 and 2 of every core, and phase 3's blocks.
struct Plan {
  std::vector<std::vector<TileJob>> work;        // per core: router jobs, then expert jobs
  std::vector<std::vector<CombineJob>> combine;  // per core
  int cores = 0;
};

// Builds the plan of a mapping for per-expert kept counts (the lowering's from the seed's routing, the
// estimate's from MoeStage::expected_counts); `t` names the program's tensors.
Plan plan_of(const MoeStage& stage, const Mapping& mapping, const arch::ArchSpec& spec,
             const std::vector<int64_t>& counts, const Tensors& t);

struct GemmBuffers {
  uint64_t a[2] = {}, w[2][2] = {}, acc[2][2] = {}, out[2] = {}, r = 0;
};

// A GEMM's buffers taken from `sram`: two A chunks, two sets of W chunks and of fp32 accumulators
// (`w_tensors` each: gate and up, or one) and two output tiles; with `route_cols` > 0 the router's, whose
// output is the routing's `route_cols` gate weights a row and whose `r` holds its block's chosen experts.
GemmBuffers gemm_buffers(SramCursor& sram, const Tiles& tile, int64_t w_tensors, int64_t element,
                         int64_t out_element, int64_t route_cols);

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

Layout layout_of(const MoeStage& stage, int64_t tm, int64_t tn, int64_t tk);

// The routing of an op's seeded inputs, computed once per (op, seed): the search sizes the all-to-all form
// by it, and every candidate lowers by it (a 4096-token router takes seconds in float64).
std::shared_ptr<const ops::MoeRouting> routing_of(const ops::Op& op, uint64_t seed);

// The all-to-all form (MoeStage::a2a): token t's home is core t / home_tokens, which routes it and combines
// its output; each expert lives on one core (whole placement), which holds its routes' X rows in SRAM, in
// expert order then token order, sent from the tokens' homes over the NoC (loaded from DRAM where the home is
// the expert's core), and sends each route's output row back to its slot on the home core.
struct A2aPlan {
  struct Row {
    int64_t token = 0, slot = 0;  // the route (token, slot j of its top_k)
  };
  struct Expert {
    int64_t expert = 0, first = 0, rows = 0;  // its rows of the core's
  };
  struct Core {
    std::vector<Row> rows;
    std::vector<Expert> experts;
    int64_t most_rows = 0;  // of one expert
  };
  int64_t home_tokens = 0;
  int homes = 0;           // cores with home tokens: 0 .. homes - 1
  std::vector<int> owner;  // per expert: its core (-1: no tokens)
  std::vector<Core> cores;
  int home_of(int64_t token) const { return static_cast<int>(token / home_tokens); }
  // Routes whose expert is not on the token's home core: each crosses the mesh twice (X there, Y back).
  int64_t remote_routes() const;
};
A2aPlan a2a_plan(const MoeStage& stage, const ops::MoeRouting& routing, int cores);

// A core's SRAM in the all-to-all form: the router's buffers, its home tokens' X rows, their routes' slots, G
// and the output; its experts' rows (X received, then each expert's Y rounded in its X rows' place); W
// chunks, the gate/up accumulators, an H chunk, down W tiles and the Y accumulator of one expert's rows; two
// sets of gate/up accumulators and H chunks, so that chunk j + 1's GEMMs run while chunk j is activated.
struct A2aLayout {
  GemmBuffers router;
  uint64_t xh = 0, slots = 0, g = 0, out = 0, xr = 0, yb = 0, w[2][2] = {}, acc[2][2] = {}, h[2] = {},
           wd[2] = {}, yacc = 0;
  int64_t end = 0;
};
A2aLayout a2a_layout(const MoeStage& stage, const A2aPlan& plan, int core, int64_t tf, int64_t tk);

}  // namespace tessera::mapper::moe
