// vec softmax: each row's softmax [of the logits times scale] [under a causal mask].
#include "arch/isa/vector_kinds/shared.hpp"

namespace tessera::arch {

namespace {

void softmax_passes(const VectorWork& work, VectorPasses& passes) {
  VectorPass max = simple_pass("row max", 1);
  max.reduces = true;
  passes.add(max);
  passes.add(exp_pass("exp(x*scale - max) and row sum", work));
  VectorPass normalise = simple_pass("exp values * 1/sum", 1);
  normalise.input_reads = 0;
  normalise.output_reads = 1;
  normalise.output_writes = 1;
  normalise.depends = true;
  normalise.scalar_special = true;  // the reciprocal of the sum
  passes.add(normalise);
}

}  // namespace

VectorKindInfo softmax_kind_info() {
  using namespace vec_option;
  return with_rules(tile_kind(0, options({scale, causal_shift}), "[scale=S] [causal_shift=N]", true),
                    &softmax_passes, &softmax_work_problem, &check_softmax_scale);
}

}  // namespace tessera::arch
