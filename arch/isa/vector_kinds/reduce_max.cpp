// vec reduce_max: each row's max, one output element per row.
#include "arch/isa/vector_kinds/shared.hpp"

namespace tessera::arch {

namespace {

void reduce_max_passes(const VectorWork& work, VectorPasses& passes) {
  VectorPass reduce = simple_pass("row max", 1);
  reduce.reduces = true;
  reduce.writes_row_statistic = true;
  passes.add(reduce);
}

}  // namespace

VectorKindInfo reduce_max_kind_info() {
  VectorKindInfo info = tile_kind(0, 0, "", true);
  info.operands.o_cols = OutputCols::one;  // one element per row
  return with_rules(info, &reduce_max_passes);
}

}  // namespace tessera::arch
