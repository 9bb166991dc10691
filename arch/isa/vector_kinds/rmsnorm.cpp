// vec rmsnorm: each row [of X + Y] divided by its root mean square, times gamma.
#include "arch/isa/vector_kinds/shared.hpp"

namespace tessera::arch {

namespace {

void rmsnorm_passes(const VectorWork& work, VectorPasses& passes) {
  VectorPass squares =
      simple_pass(work.norm_adds_tile ? "x + y kept in o, row sum of squares" : "row sum of squares",
                  work.norm_adds_tile ? 3 : 2);  // [add,] mul, add
  squares.reduces = true;
  passes.add(squares);
  VectorPass normalise = simple_pass("x * rstd * gamma", 2);  // mul, mul
  normalise.parameter_reads = 1;
  normalise.output_writes = 1;
  normalise.depends = true;
  normalise.scalar_special = true;  // rsqrt of the mean square
  passes.add(normalise);
  read_norm_sum_back(work, passes);
}

}  // namespace

VectorKindInfo rmsnorm_kind_info() {
  using namespace vec_option;  // fn=add: the tile at y added to X before normalising (a residual)
  VectorKindInfo info = tile_kind(options({g, eps}), options({fn, y, y_pitch}),
                                  "g=ADDR eps=E [fn=add y=ADDR [y_pitch=B]]", true);
  info.operands = {XRows::rows, YRole::residual, GRole::parameter_row};
  return with_rules(info, &rmsnorm_passes, nullptr, &check_norm);
}

}  // namespace tessera::arch
