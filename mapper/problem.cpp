#include "mapper/problem.hpp"

#include "mapper/mapping.hpp"
#include "ops/kinds/conv2d.hpp"
#include "ops/kinds/fc.hpp"

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
}  // namespace

std::optional<OpGemm> gemm_of(const ops::Op& op) {
  if (const auto* gemm = op.as<ops::GemmShape>()) return OpGemm{*gemm, 1};
  if (const auto* fc = op.as<ops::FcShape>()) return OpGemm{fc->gemm(), 1};
  if (const auto* conv = op.as<ops::ConvShape>()) return OpGemm{conv->group_gemm(), conv->groups};
  return std::nullopt;
}

GemmProblem problem_of(const ops::Op& op, int64_t packed) {
  const ops::GemmShape gemm = gemm_of(op)->gemm;
  GemmProblem problem;
  problem.m = gemm.m, problem.n = gemm.n * packed, problem.k = gemm.k * packed, problem.dtype = op.dtype;
  problem.packed = packed;
  if (packed > 1) problem.w_run = gemm.n;
  if (const auto* conv = op.as<ops::ConvShape>()) {
    TESSERA_ASSERT(packed >= 1 && conv->groups % packed == 0, "packed groups divide the groups");
    problem.groups = conv->groups / packed;
    // A pack's channels are adjacent in NHWC; with every group in one pack and no dilation a filter row's
    // taps over all channels are contiguous.
    problem.a_run = problem.groups == 1 && conv->dilation == 1 ? conv->s * conv->c : conv->group_c() * packed;
    // Padding is separable: a tap is inside the input when it is inside along both axes.
    const int64_t p = conv->p(), q = conv->q();
    problem.a_dram_fraction =
        static_cast<double>(valid_taps(conv->h, p, conv->r, conv->stride, conv->pad, conv->dilation) *
                            valid_taps(conv->w, q, conv->s, conv->stride, conv->pad, conv->dilation)) /
        static_cast<double>(p * conv->r * q * conv->s);
  }
  return problem;
}

int64_t DirectConv::input_rows_read(int64_t tile) const {
  int64_t rows = 0;
  for (int64_t first = 0; first < p; first += tile) {
    const int64_t last = std::min(p, first + tile) - 1;
    const int64_t top = std::max<int64_t>(0, first * stride - pad);
    const int64_t bottom = std::min(h, last * stride - pad + (r - 1) * dilation + 1);
    rows += std::max<int64_t>(1, bottom - top);
  }
  return rows;
}

GemmProblem direct_problem_of(const ops::Op& op) {
  DirectConv direct;
  int64_t filters = 0, channels = 0;
  if (const auto* conv = op.as<ops::ConvShape>()) {
    direct = DirectConv{conv->n,   conv->groups, conv->h, conv->w,      conv->c,   conv->p(),
                        conv->q(), conv->r,      conv->s, conv->stride, conv->pad, conv->dilation};
    filters = conv->group_k(), channels = conv->group_c();
  } else {
    const ops::GemmShape gemm = gemm_of(op)->gemm;  // gemm or fc: one image of 1 x m pixels, 1x1 filters
    direct = DirectConv{1, 1, 1, gemm.m, gemm.k, 1, gemm.m, 1, 1, 1, 0, 1};
    filters = gemm.n, channels = gemm.k;
  }
  GemmProblem problem;
  problem.m = direct.p, problem.n = filters, problem.k = channels, problem.dtype = op.dtype;
  problem.groups = direct.images * direct.conv_groups;
  problem.direct = direct;
  return problem;
}

GemmProblem problem_for(const ops::Op& op, const GemmMapping& mapping) {
  return mapping.direct ? direct_problem_of(op) : problem_of(op, mapping.packed_groups);
}

std::vector<int64_t> packings_of(const ops::Op& op, int64_t array_side) {
  std::vector<int64_t> packings = {1};
  const auto* conv = op.as<ops::ConvShape>();
  if (!conv || conv->groups == 1) return packings;
  for (int64_t packed = 2; packed <= conv->groups; packed *= 2)
    if (conv->groups % packed == 0 && packed * conv->group_k() <= 2 * array_side) packings.push_back(packed);
  if (packings.back() != conv->groups && conv->groups * conv->group_k() <= 2 * array_side)
    packings.push_back(conv->groups);
  return packings;
}

}  // namespace tessera::mapper
