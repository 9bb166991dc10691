// vec online_softmax: one K/V tile's step of flash attention's running softmax, its running max, sum and
// correction kept per row at g.
#include "arch/isa/vector_kinds/shared.hpp"

namespace tessera::arch {

namespace {

void online_softmax_passes(const VectorWork& work, VectorPasses& passes) {
  // The row max of this tile [scaled, masked]; the new running max is the larger of it and the old one.
  VectorPass max = simple_pass("row max of x*scale", 1 + work.softmax_extra_simple_ops);
  max.reduces = true;
  passes.add(max);
  // p = exp(x*scale - new max) to the output tile (the next matmul's operand), its row sum; then per row
  // the correction exp(old max - new max) and the running sum (a scalar special function each row).
  VectorPass exp = exp_pass("p = exp(x*scale - max), row sum", work);
  exp.row_statistic_reads = work.online_first ? 0 : 2;  // the old max and sum
  exp.row_statistic_writes = 3;                         // max, sum, correction
  passes.add(exp);
}

}  // namespace

VectorKindInfo online_softmax_kind_info() {
  using namespace vec_option;
  VectorKindInfo info = tile_kind(
      options({g}), options({scale, causal_shift, first}),
      "x=ADDR o=ADDR g=ADDR rows=R cols=C dtype=DT [out=DT] [scale=S] [causal_shift=N] [first=yes]", false);
  info.operands.g = GRole::statistics_updated;
  return with_rules(info, &online_softmax_passes, &softmax_work_problem, &check_softmax_scale);
}

}  // namespace tessera::arch
