// vec scale_rows: each row of an attention accumulator times its step's correction or its final 1/sum.
#include "arch/isa/vector_kinds/shared.hpp"

namespace tessera::arch {

namespace {

void scale_rows_passes(const VectorWork& work, VectorPasses& passes) {
  // The accumulator's rows times the step's correction (or 1/sum: the reciprocal is a scalar per row).
  VectorPass scale = simple_pass("x * the row's factor", 1);
  scale.output_writes = 1;
  scale.row_statistic_reads = 1;
  passes.add(scale);
}

}  // namespace

VectorKindInfo scale_rows_kind_info() {
  using namespace vec_option;
  VectorKindInfo info =
      tile_kind(options({g, by}), 0,
                "x=ADDR o=ADDR g=ADDR rows=R cols=C dtype=DT [out=DT] by=alpha|inverse_sum", false);
  info.operands.g = GRole::statistics_read;
  return with_rules(info, &scale_rows_passes);
}

}  // namespace tessera::arch
