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
  VectorKindInfo info;
  info.kind = VectorKind::reduce_max;
  info.mnemonic = "reduce_max";
  info.required = kTileOptions;
  info.optional = kStorageOptions;
  info.operands.o_cols = OutputCols::one;
  info.shares_tile_syntax = true;
  info.add_passes = &reduce_max_passes;
  return info;
}

}  // namespace tessera::arch
