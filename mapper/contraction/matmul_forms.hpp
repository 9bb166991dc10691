// The forms of an op that is one GEMM (gemm, fc): the GEMM, and for row stationary the same product as a 1x1
// convolution over one row of m pixels (an RS machine runs them that way; its direct WS/OS/IS would only
// repeat the GEMM less freely, with one output row to tile).
#pragma once

#include <vector>

#include "arch/spec.hpp"
#include "mapper/contraction/search.hpp"
#include "ops/kinds/gemm.hpp"

namespace tessera::mapper {

std::vector<StageForm> matmul_forms(const ops::GemmShape& gemm, DType dtype,
                                    const std::vector<arch::Dataflow>& dataflows);

}  // namespace tessera::mapper
