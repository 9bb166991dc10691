// vec reduce_sum: each row's sum, one output element per row.
#include "arch/isa/vector_kinds/shared.hpp"

namespace tessera::arch {

namespace {

void reduce_sum_passes(const VectorWork&, VectorPasses& passes) {
  add_row_reduction("row sum", passes);
}

}  // namespace

VectorKindInfo reduce_sum_kind_info() {
  return row_reduction_kind(&reduce_sum_passes);
}

}  // namespace tessera::arch
