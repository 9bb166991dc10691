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
  VectorKindInfo info;
  info.kind = VectorKind::reduce_sum;
  info.mnemonic = "reduce_sum";
  info.required = kTileOptions;
  info.optional = kStorageOptions;
  info.operands.o_cols = OutputCols::one;
  info.shares_tile_syntax = true;
  info.add_passes = &reduce_sum_passes;
  return info;
}

}  // namespace tessera::arch
