#include "mapper/contraction/matmul_forms.hpp"

#include <algorithm>

#include "mapper/contraction/direct_conv_stage.hpp"
#include "mapper/contraction/gemm_stage.hpp"

namespace tessera::mapper {

std::vector<StageForm> matmul_forms(const ops::GemmShape& gemm, DType dtype,
                                    const std::vector<arch::Dataflow>& dataflows) {
  std::vector<StageForm> forms;
  GemmProblem problem;
  problem.m = gemm.m, problem.n = gemm.n, problem.k = gemm.k, problem.dtype = dtype;
  problem.psum = gemm.epilogue.partial_sums();
  problem.density = gemm.density;
  forms.push_back({std::make_shared<GemmStage>(problem), dataflows});
  if (std::find(dataflows.begin(), dataflows.end(), arch::Dataflow::rs) != dataflows.end()) {
    // One image of 1 x m pixels, 1x1 filters.
    const DirectConv direct{1, 1, 1, gemm.m, gemm.k, 1, gemm.m, 1, 1, 1, 0, 1};
    forms.push_back(
        {std::make_shared<DirectConvStage>(direct, gemm.n, gemm.k, dtype, 1, problem.psum, problem.density),
         {arch::Dataflow::rs}});
  }
  return forms;
}

}  // namespace tessera::mapper
