// rope: rotary position embedding, pairs of each head's first columns rotated by a per-row table of cos and
// sin. Its instruction is an arch::VecRope (arch/isa/vec_rope.hpp: its options, operands and syntax); this
// descriptor holds its work's rules and passes.
#include <fmt/format.h>

#include "arch/isa/vector_kinds/shared.hpp"

namespace tessera::arch {

namespace {

std::string rope_work_problem(const VectorWork& work) {
  if (work.rope_rotated_cols < 1 || work.rope_rotated_cols > work.cols)
    return fmt::format("rope_rotated_cols must be in [1, cols] = [1, {}], got {}", work.cols,
                       work.rope_rotated_cols);
  return "";
}

void rope_passes(const VectorWork& work, VectorPasses& passes) {
  // Per rotated pair (a, b): a*cos, b*cos, then the fused a*cos - b*sin and b*cos + a*sin: 4 simple ops
  // per 2 elements, reading the table row's cos and sin (one fp32 word per element). The columns past
  // rotary_dim in each head are copied (one op), in a second pass over them alone.
  VectorPass rotate = simple_pass("rotate pairs: x*cos -+ x'*sin", 2);
  rotate.cols = work.rope_rotated_cols;
  rotate.parameter_reads = 1;
  rotate.output_writes = 1;
  passes.add(rotate);
  if (work.rope_rotated_cols < work.cols) {
    VectorPass copy = simple_pass("copy the columns past rotary_dim", 1);
    copy.cols = work.cols - work.rope_rotated_cols;
    copy.output_writes = 1;
    passes.add(copy);
  }
}

}  // namespace

VectorKindInfo rope_kind_info() {
  return with_rules(own_instruction_kind(), &rope_passes, &rope_work_problem);
}

}  // namespace tessera::arch
