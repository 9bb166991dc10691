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
  VectorKindInfo info;
  info.kind = VectorKind::softmax;
  info.mnemonic = "softmax";
  info.required = kTileOptions;
  info.optional = kStorageOptions | options({scale, causal_shift});
  info.shares_tile_syntax = true;
  info.syntax = "[scale=S] [causal_shift=N]";
  info.work_problem = &softmax_work_problem;
  info.add_passes = &softmax_passes;
  info.check = &check_softmax_scale;
  return info;
}

}  // namespace tessera::arch
