// vec reduce_sum: each row's sum, one output element per row.
#include "arch/isa/vector_kinds/shared.hpp"

namespace tessera::arch {

namespace {

void reduce_sum_passes(const VectorWork& work, VectorPasses& passes) {
  VectorPass reduce = simple_pass("row sum", 1);
  reduce.reduces = true;
  reduce.writes_row_statistic = true;
  passes.add(reduce);
}

}  // namespace

VectorKindInfo reduce_sum_kind_info() {
  VectorKindInfo info = tile_kind(0, 0, "", true);
  info.operands.o_cols = OutputCols::one;  // one element per row
  return with_rules(info, &reduce_sum_passes);
}

}  // namespace tessera::arch
