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
  using namespace vec_option;
  VectorKindInfo info;
  info.kind = VectorKind::weighted_sum;
  info.mnemonic = "weighted_sum";
  info.required = kTileOptions | options({g, parts});
  info.optional = kStorageOptions | options({y, y_pitch});  // y=: a tile of the output's shape added
  info.operands.x_rows = XRows::parts_of_rows;
  info.operands.y = YRole::chain_step;
  info.operands.g = GRole::weights;
  info.syntax =
      "x=ADDR g=ADDR o=ADDR rows=R cols=C parts=P dtype=DT [out=DT] [y=ADDR] [x_pitch=B] [o_pitch=B] "
      "[y_pitch=B]";
  info.work_problem = &parts_work_problem;
  info.add_passes = &weighted_sum_passes;
  info.check = &check_parts;
  return info;
}

}  // namespace tessera::arch
