// conv2d: its implicit GEMM per group (A an im2col view of X), also with groups packed into block-diagonal
// GEMMs, and its direct 7-D loop nest (docs/design-notes.md, "Convolution", "Packed groups", "Direct
// convolution").
#include <algorithm>
#include <utility>

#include "mapper/contraction/conv2d_forms.hpp"
#include "mapper/decompositions.hpp"

namespace tessera::mapper {

namespace {

// Of the output positions times filter taps along one spatial axis, how many land inside the input.
int64_t valid_taps(int64_t input, int64_t outputs, int64_t taps, int64_t stride, int64_t pad,
                   int64_t dilation) {
  int64_t valid = 0;
  for (int64_t o = 0; o < outputs; ++o)
    for (int64_t t = 0; t < taps; ++t) {
      const int64_t i = o * stride - pad + t * dilation;
      valid += i >= 0 && i < input;
    }
  return valid;
}

// The packings worth searching: 1, and the divisors of groups that are powers of two, or groups itself, whose
// packed GEMM is at most twice as wide as the PE array's larger side.
std::vector<int64_t> packings_of(const ops::ConvShape& conv, int64_t array_side) {
  std::vector<int64_t> packings = {1};
  if (conv.groups == 1) return packings;
  for (int64_t packed = 2; packed <= conv.groups; packed *= 2)
    if (conv.groups % packed == 0 && packed * conv.group_k() <= 2 * array_side) packings.push_back(packed);
  if (packings.back() != conv.groups && conv.groups * conv.group_k() <= 2 * array_side)
    packings.push_back(conv.groups);
  return packings;
}

}  // namespace

GemmProblem conv_implicit_gemm(const ops::ConvShape& conv, DType dtype, int64_t packed) {
  const ops::GemmShape gemm = conv.group_gemm();
  GemmProblem problem;
  problem.m = gemm.m, problem.n = gemm.n * packed, problem.k = gemm.k * packed, problem.dtype = dtype;
  problem.psum = conv.epilogue.partial_sums();
  problem.density = conv.density;
  problem.packed = packed;
  if (packed > 1) problem.w_run = gemm.n;
  TESSERA_ASSERT(packed >= 1 && conv.groups % packed == 0, "packed groups divide the groups");
  problem.groups = conv.groups / packed;
  // A pack's channels are adjacent in NHWC; with every group in one pack and no dilation a filter row's taps
  // over all channels are contiguous.
  problem.a_run = problem.groups == 1 && conv.dilation == 1 ? conv.s * conv.c : conv.group_c() * packed;
  // Padding is separable: a tap is inside the input when it is inside along both axes.
  const int64_t p = conv.p(), q = conv.q();
  problem.a_dram_fraction =
      static_cast<double>(valid_taps(conv.h, p, conv.r, conv.stride, conv.pad, conv.dilation) *
                          valid_taps(conv.w, q, conv.s, conv.stride, conv.pad, conv.dilation)) /
      static_cast<double>(p * conv.r * q * conv.s);
  // Packed groups: the view has groups/packed groups of packed*c/groups channels each.
  problem.a_view = arch::Im2colView{0,      conv.n,      conv.h,   conv.w,        conv.c,        conv.r,
                                    conv.s, conv.stride, conv.pad, conv.dilation, problem.groups};
  if (packed > 1)
    problem.w_view =
        arch::BlockDiagonalView{0, conv.groups, packed, conv.r * conv.s, conv.group_c(), conv.group_k()};
  return problem;
}

std::shared_ptr<DirectConvStage> conv_direct_stage(const ops::ConvShape& conv, DType dtype, int64_t images) {
  const DirectConv direct{conv.n,   conv.groups, conv.h, conv.w,      conv.c,   conv.p(),
                          conv.q(), conv.r,      conv.s, conv.stride, conv.pad, conv.dilation};
  return std::make_shared<DirectConvStage>(direct, conv.group_k(), conv.group_c(), dtype, images,
                                           conv.epilogue.partial_sums(), conv.density);
}

OpStages conv2d_stages(const ops::Op& op, const arch::ArchSpec& spec,
                       const std::vector<arch::Dataflow>& dataflows) {
  const ops::ConvShape& conv = *op.as<ops::ConvShape>();
  std::vector<StageForm> forms;
  for (int64_t packed : packings_of(conv, std::max(spec.core.pe_array.rows, spec.core.pe_array.cols)))
    forms.push_back({std::make_shared<GemmStage>(conv_implicit_gemm(conv, op.dtype, packed)), dataflows});
  // The direct form one image a tile, and, for a batch, tiles of 2, 4, ... images (powers of two dividing
  // it) and of the whole batch: each filter tile then serves that many images.
  forms.push_back({conv_direct_stage(conv, op.dtype, 1), dataflows});
  for (int64_t images = 2; images <= conv.n; images *= 2)
    if (conv.n % images == 0) forms.push_back({conv_direct_stage(conv, op.dtype, images), dataflows});
  if (conv.n > 1 && (conv.n & (conv.n - 1)) != 0)
    forms.push_back({conv_direct_stage(conv, op.dtype, conv.n), dataflows});
  return contraction_forms(op, spec, std::move(forms));
}

}  // namespace tessera::mapper
