// A conv2d's forms (mapper/contraction/decompose_conv2d.cpp), each on its own: its implicit GEMM with
// `packed` groups per block-diagonal GEMM (A the im2col view of X, W the block-diagonal view of the packed
// groups' weights), and its direct 7-D loop nest.
#pragma once

#include <cstdint>
#include <memory>

#include "mapper/contraction/direct_conv_stage.hpp"
#include "mapper/contraction/gemm_stage.hpp"
#include "mapper/contraction/search.hpp"
#include "ops/kinds/conv2d.hpp"

namespace tessera::mapper {

GemmProblem conv_implicit_gemm(const ops::ConvShape& conv, DType dtype, int64_t packed = 1);
// The direct form; `images` per tile (a divisor of the batch; several: tiles of whole images).
std::shared_ptr<DirectConvStage> conv_direct_stage(const ops::ConvShape& conv, DType dtype,
                                                   int64_t images = 1);

}  // namespace tessera::mapper
