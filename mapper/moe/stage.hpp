// A mixture-of-experts layer as a stage graph (issue "MoE layers"): the router GEMM (PE array) and the
// routing (softmax or sigmoid scores, top-k, gate weights: `vec route` on the vector unit), the permutation
// (each expert's tokens gathered by the DMA through a row-gather view of X), each expert's gate/up GEMMs with
// their activation (`vec map swiglu|gelu`) and its down GEMM on the ragged rows it received, and the combine
// (the expert outputs of each token gathered back and summed with their gate weights: `vec weighted_sum`,
// plus the shared experts' output). Three phases:
//   1. router: token blocks over every core: logits = X Wr (fp32 accumulator), vec route -> G [tokens,
//   top_k];
//   2. experts: each core its shares of the experts' rows (the placement), H = act(X_e Wg_e) * (X_e Wu_e)
//      staged in DRAM by row block, then Y_e = H Wd_e, rows in expert order (the shared experts as one
//      expert of width shared * ffn over every token, after the routed rows of Y);
//   3. combine, after every core's phase 1 and 2 stores: token blocks over every core, O = sum_j G[t, j]
//      Y[route (t, j)] (+ the shared row), the gathers following the routing (a dropped route: a zero row).
// The routing is decided on the host when the program is written (ops/moe_routing.hpp, float64 logits), so
// that the gathers are static; the program still runs the router and the vector unit's selection, given the
// chosen experts (an int32 table R filled by the program) so that its gate weights are those of the same
// experts (an fp32 near tie cannot flip one).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "arch/isa/vec_route.hpp"
#include "mapper/form.hpp"
#include "mapper/kit/dma_engines.hpp"
#include "ops/kinds/moe.hpp"

namespace tessera::mapper {

class MoeStage final : public Form {
 public:
  // nullptr for an op that is not moe.
  static std::shared_ptr<const MoeStage> of(const ops::Op& op);

  // whole: each expert's rows on one core (expert parallelism: the hottest expert's core is the straggler);
  // split: an expert's rows may be split over cores in row blocks, so that no core holds more than an even
  // share (each part reads the expert's weights again).
  // a2a: whole experts a core, the tokens sent to them and their outputs back over the NoC (all-to-all), the
  // rows held in SRAM (mapper/moe/plan.hpp, A2aPlan): where they fit, for the seed's routing (Choice::seed).
  enum Placement : int64_t { whole = 0, split = 1, a2a = 2 };
  // An MoE mapping's choices (Mapping::choice): the experts' GEMM tiles (rows of a row block, columns of an
  // output tile, the contraction's chunk), the placement and (a2a) the seed whose routing placed the rows.
  struct Choice {
    int64_t tile_m = 0;
    int64_t tile_n = 0;
    int64_t tile_k = 0;
    Placement placement = whole;
    int64_t seed = 0;
    bool operator==(const Choice& other) const {
      return tile_m == other.tile_m && tile_n == other.tile_n && tile_k == other.tile_k &&
             placement == other.placement && seed == other.seed;
    }
  };
  static const Choice& choice_of(const Mapping& mapping);
  // The placement as reports name the form, before the dataflow: "ep", "ep-split", "ep-a2a".
  static const char* form_name(Placement placement);
  static constexpr int64_t kShared = -1;  // the shared experts, as one expert of width shared * ffn

  // A part of the experts' work on one core: rows [first, first + rows) of expert `expert`'s kept tokens (in
  // token order), or of every token for the shared experts.
  struct Share {
    int64_t expert = 0;
    int64_t first = 0;
    int64_t rows = 0;
  };
  // Each core's shares for per-expert kept counts `counts` (largest first to the least loaded core).
  std::vector<std::vector<Share>> place(const std::vector<int64_t>& counts, Placement placement,
                                        int64_t tile_m, int cores) const;
  // The per-expert kept counts the estimate assumes: exact for forced routing; a balanced router's
  // otherwise (the seed's routing is the lowering's).
  std::vector<int64_t> expected_counts() const;
  // Token blocks of the router and of the combine, and the combine's hidden chunk.
  int64_t router_rows() const;
  int64_t combine_rows() const;
  int64_t combine_cols() const;
  // The router's vec route of `rows` tokens (addresses left for the lowering to fill).
  arch::VecRoute route_op(int64_t rows) const;

  const char* family() const override { return "moe"; }
  SearchResult search(const std::shared_ptr<const Form>& self, const arch::ArchSpec& spec,
                      const SearchOptions& options) const override;
  Cost estimate(const Mapping& mapping, const arch::ArchSpec& spec) const override;
  Cost evaluate(const Mapping& mapping, const arch::ArchSpec& spec) const;
  arch::Program lower(const ops::Op& op, uint64_t seed, const Mapping& mapping, const arch::ArchSpec& spec,
                      const std::string& program_name) const override;
  void prepare_lowering(const ops::Op& op, uint64_t seed) const override;  // the routing
  std::string label(const Mapping& mapping) const override;
  std::string describe(const Mapping& mapping) const override;
  NamedValues fields(const Mapping& mapping, const Cost& cost) const override;

  // The DMA engines (mapper/kit/dma_engines.hpp, pass_engines) of the GEMM tile jobs (loads: a tile's A and W
  // over the whole contraction; stores: its output tile), of the combine (loads: a block's top_k gathered
  // rows and the shared row; stores: its output row) and of the all-to-all form's cores (loads: an expert's
  // weights; stores: a home core's output rows).
  PassEngines job_engines(const Mapping& mapping, const arch::ArchSpec& spec) const;
  PassEngines combine_engines(const arch::ArchSpec& spec) const;
  PassEngines a2a_engines(const arch::ArchSpec& spec, int64_t home_tokens) const;

  const ops::MoeShape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  // The SRAM one core needs for the tiles (phases 1 and 2 side by side; phase 3 after them).
  int64_t sram_bytes(int64_t tile_m, int64_t tile_n, int64_t tile_k) const;
  // The cost for given per-expert counts (evaluate's, with expected_counts).
  Cost evaluate_counts(const Mapping& mapping, const arch::ArchSpec& spec,
                       const std::vector<int64_t>& counts) const;
  // The all-to-all form's estimate, and the NoC bytes its routing implies (each route whose expert is not on
  // the token's home core: its X row there, its output row back).
  Cost evaluate_a2a(const Mapping& mapping, const arch::ArchSpec& spec) const;
  int64_t a2a_noc_bytes(const Mapping& mapping, const arch::ArchSpec& spec) const;

 private:
  arch::Program lower_a2a(const ops::Op& op, uint64_t seed, const Mapping& mapping,
                          const arch::ArchSpec& spec, const std::string& program_name) const;
  ops::Op op_;
  ops::MoeShape shape_;
  DType dtype_ = DType::bf16;
  int64_t macs_ = 0;
};

}  // namespace tessera::mapper
