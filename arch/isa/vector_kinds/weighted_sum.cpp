// vec weighted_sum: a mixture-of-experts combine, each row the sum of its parts' rows weighted by its gate
// weights [plus the tile at y].
#include <fmt/format.h>

#include "arch/isa/instruction_checks.hpp"
#include "arch/isa/vec_op.hpp"
#include "arch/isa/vector_kinds/shared.hpp"

namespace tessera::arch {

namespace {

void weighted_sum_passes(const VectorWork& work, VectorPasses& passes) {
  // Per vector: g_0 x_0, then a multiply-add for each further part (the row's weights are scalar operands,
  // read once a row), [+ y].
  const int64_t parts = work.merge_parts, tile = work.weighted_adds_tile ? 1 : 0;
  VectorPass sum = simple_pass("sum of g_p * x_p over the parts [+ y]", parts + tile);
  sum.input_reads = parts + tile;
  sum.output_writes = 1;
  sum.row_statistic_reads = parts;  // the row's P fp32 weights
  passes.add(sum);
}

}  // namespace

VectorKindInfo weighted_sum_kind_info() {
  using namespace vec_option;  // y=: a tile of the output's shape added
  VectorKindInfo info = tile_kind(options({g, parts}), options({y, y_pitch}),
                                  "x=ADDR g=ADDR o=ADDR rows=R cols=C parts=P dtype=DT [out=DT] [y=ADDR] "
                                  "[x_pitch=B] [o_pitch=B] [y_pitch=B]",
                                  false);
  info.operands = {XRows::parts_of_rows, YRole::chain_step, GRole::weights};
  return with_rules(info, &weighted_sum_passes, &parts_work_problem, &check_parts);
}

}  // namespace tessera::arch
