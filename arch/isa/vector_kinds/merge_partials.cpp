// vec merge_partials: split-KV decode's merge of several cores' partial accumulators of the same rows by
// their running statistics.
#include "arch/isa/vector_kinds/shared.hpp"

namespace tessera::arch {

namespace {

void merge_partials_passes(const VectorWork& work, VectorPasses& passes) {
  // Per row, off the issue port (as online_softmax's correction): m = the largest of the parts' maxima,
  // each part's weight w = exp(m_i - m) and 1/L, L = the sum of w_i * l_i. The pass: w_0 x_0, then a
  // multiply and an add for each further part, times 1/L.
  VectorPass merge =
      simple_pass("sum of w_i * x_i over the parts, times 1/sum of w_i * l_i", 2 * work.merge_parts);
  merge.input_reads = work.merge_parts;
  merge.output_writes = 1;
  merge.row_statistic_reads = 2 * work.merge_parts;  // each part's max and sum
  passes.add(merge);
}

}  // namespace

VectorKindInfo merge_partials_kind_info() {
  using namespace vec_option;
  VectorKindInfo info =
      tile_kind(options({g, parts}), 0,
                "x=ADDR o=ADDR g=ADDR rows=R cols=C dtype=DT [out=DT] [x_pitch=B] parts=N", false);
  info.operands = {XRows::parts_of_rows, YRole::none, GRole::statistics_read};
  return with_rules(info, &merge_partials_passes, &parts_work_problem, &check_parts);
}

}  // namespace tessera::arch
