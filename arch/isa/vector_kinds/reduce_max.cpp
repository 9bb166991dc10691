// vec reduce_max: each row's max, one output element per row.
#include "arch/isa/vector_kinds/shared.hpp"

namespace tessera::arch {

namespace {

void reduce_max_passes(const VectorWork&, VectorPasses& passes) {
  add_row_reduction("row max", passes);
}

}  // namespace

VectorKindInfo reduce_max_kind_info() {
  return row_reduction_kind(&reduce_max_passes);
}

}  // namespace tessera::arch
