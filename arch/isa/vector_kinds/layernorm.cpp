// vec layernorm: each row [of X + Y] normalised by its mean and variance, times gamma plus beta.
#include "arch/isa/vector_kinds/shared.hpp"

namespace tessera::arch {

namespace {

void layernorm_passes(const VectorWork& work, VectorPasses& passes) {
  VectorPass sum = simple_pass(work.norm_adds_tile ? "x + y kept in o, row sum (mean)" : "row sum (mean)",
                               work.norm_adds_tile ? 2 : 1);
  sum.reduces = true;
  passes.add(sum);
  VectorPass deviations = simple_pass("row sum of squared deviations (variance)", 3);  // sub, mul, add
  deviations.reduces = true;
  deviations.depends = true;
  passes.add(deviations);
  VectorPass normalise = simple_pass("(x - mean) * rstd * gamma + beta", 4);  // sub, mul, mul, add
  normalise.parameter_reads = 2;
  normalise.output_writes = 1;
  normalise.depends = true;
  normalise.scalar_special = true;  // rsqrt of the variance
  passes.add(normalise);
  read_norm_sum_back(work, passes);
}

}  // namespace

VectorKindInfo layernorm_kind_info() {
  using namespace vec_option;  // fn=add: the tile at y added to X before normalising (a residual)
  VectorKindInfo info = tile_kind(options({g, b, eps}), options({fn, y, y_pitch}),
                                  "g=ADDR b=ADDR eps=E [fn=add y=ADDR [y_pitch=B]]", true);
  info.operands = {XRows::rows, YRole::residual, GRole::parameter_row, BRole::parameter_row};
  return with_rules(info, &layernorm_passes, nullptr, &check_norm);
}

}  // namespace tessera::arch
