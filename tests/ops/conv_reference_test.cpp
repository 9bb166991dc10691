// conv2d, fc and pool: the CPU references against direct loops, and the workload's validation of their
// shapes (located errors for negative pad, a kernel larger than the padded input, groups not dividing c or k,
// stride 0).
#include <gtest/gtest.h>

#include "common/config.hpp"
#include "ops/kinds/conv2d.hpp"
#include "ops/kinds/pool.hpp"
#include "ops/reference.hpp"
#include "ops/workload.hpp"

namespace tessera::ops {

namespace {

Op conv_op(ConvShape conv, DType dtype = DType::int8) {
  return make_op("conv", dtype, conv, /*index=*/2);
}

// The definition, term by term: O[n, y, z, g*kg + j] = sum over (r, s, c) of X[n, iy, ix, g*cg + c] * W[...].
std::vector<double> direct_conv(const ConvShape& conv, const HostTensor& x, const HostTensor& w) {
  std::vector<double> out(static_cast<size_t>(conv.n * conv.p() * conv.q() * conv.k), 0.0);
  const int64_t cg = conv.group_c(), kg = conv.group_k();
  for (int64_t image = 0; image < conv.n; ++image)
    for (int64_t y = 0; y < conv.p(); ++y)
      for (int64_t z = 0; z < conv.q(); ++z)
        for (int64_t channel = 0; channel < conv.k; ++channel) {
          const int64_t group = channel / kg;
          double sum = 0;
          for (int64_t rr = 0; rr < conv.r; ++rr)
            for (int64_t ss = 0; ss < conv.s; ++ss)
              for (int64_t cc = 0; cc < cg; ++cc) {
                const int64_t iy = y * conv.stride + rr * conv.dilation - conv.pad;
                const int64_t ix = z * conv.stride + ss * conv.dilation - conv.pad;
                if (iy < 0 || iy >= conv.h || ix < 0 || ix >= conv.w) continue;
                sum += x.value(((image * conv.h + iy) * conv.w + ix) * conv.c + group * cg + cc) *
                       w.value((group * conv.r * conv.s * cg + (rr * conv.s + ss) * cg + cc) * kg +
                               channel % kg);
              }
          out[static_cast<size_t>(((image * conv.p() + y) * conv.q() + z) * conv.k + channel)] = sum;
        }
  return out;
}

}  // namespace

TEST(ConvReference, EqualsTheDefinitionForGroupedStridedPaddedDilatedAndDepthwiseConvs) {
  const std::vector<ConvShape> shapes = {
      {1, 3, 9, 7, 4, 3, 3, 1, 1, 1, 1},    // plain 3x3, pad 1
      {2, 6, 11, 13, 8, 5, 3, 2, 2, 1, 2},  // batch 2, stride 2, non-square filter, 2 groups
      {1, 5, 10, 10, 5, 3, 3, 1, 1, 1, 5},  // depthwise
      {1, 4, 12, 9, 6, 3, 3, 1, 2, 2, 1},   // dilation 2
      {1, 7, 8, 8, 7, 1, 1, 1, 0, 1, 1},    // 1x1 with prime channels
      {1, 3, 15, 15, 2, 7, 7, 2, 3, 1, 1},  // 7x7 stride 2 pad 3 (the ResNet stem)
  };
  for (const ConvShape& conv : shapes) {
    const Op op = conv_op(conv);
    const auto inputs = generate_inputs(op, 4);
    const auto expected = direct_conv(conv, inputs[0], inputs[1]);
    // int8 sums are exact in float64: equality, not closeness.
    EXPECT_EQ(reference_output(op, inputs, 2), expected) << "c=" << conv.c << " groups=" << conv.groups;
  }
}

TEST(ConvReference, ThePerPositionReferenceEqualsTheWholeOne) {
  const ConvShape conv{2, 6, 11, 13, 8, 5, 3, 2, 2, 1, 2};
  const Op op = conv_op(conv, DType::bf16);
  const auto whole = reference_output(op, generate_inputs(op, 9), 1);
  std::vector<int64_t> positions;
  for (int64_t i = 0; i < static_cast<int64_t>(whole.size()); i += 7) positions.push_back(i);
  const auto sampled = reference_at(op, 9, positions);
  for (size_t i = 0; i < positions.size(); ++i)
    EXPECT_DOUBLE_EQ(sampled[i], whole[positions[i]]) << positions[i];
}

TEST(ConvShape, OutputSizeFollowsTheUsualFormula) {
  const ConvShape stem{1, 3, 224, 224, 64, 7, 7, 2, 3, 1, 1};
  EXPECT_EQ(stem.p(), 112);
  EXPECT_EQ(stem.q(), 112);
  const ConvShape alexnet1{4, 3, 227, 227, 96, 11, 11, 4, 0, 1, 1};
  EXPECT_EQ(alexnet1.p(), 55);
  const GemmShape gemm = stem.group_gemm();
  EXPECT_EQ(gemm.m, 112 * 112);
  EXPECT_EQ(gemm.n, 64);
  EXPECT_EQ(gemm.k, 7 * 7 * 3);
}

TEST(PoolReference, MaxAndAverageOverTheWindow) {
  Op op = make_op("pool", DType::int8, PoolShape{1, 2, 5, 5, 3, 3, 2, 1, PoolMode::max});
  const auto inputs = generate_inputs(op, 3);
  const auto& x = inputs[0];
  const auto max_out = reference_output(op, inputs, 1);
  // Output (0,0) of channel 1: the window rows -1..1, cols -1..1: padding is ignored by max.
  double best = -1000;
  for (int64_t iy = 0; iy <= 1; ++iy)
    for (int64_t ix = 0; ix <= 1; ++ix) best = std::max(best, x.value((iy * 5 + ix) * 2 + 1));
  EXPECT_EQ(max_out[1], best);
  op.fields = PoolShape{1, 2, 5, 5, 3, 3, 2, 1, PoolMode::avg};
  const auto avg_out = reference_output(op, inputs, 1);
  double sum = 0;
  for (int64_t iy = 0; iy <= 1; ++iy)
    for (int64_t ix = 0; ix <= 1; ++ix) sum += x.value((iy * 5 + ix) * 2 + 1);
  EXPECT_DOUBLE_EQ(avg_out[1], sum / 9);  // divides by the whole window, padding included
}

namespace {
std::string workload_error(const std::string& op_line) {
  const std::string text = "name: w\nseed: 1\nops:\n  - " + op_line + "\n";
  try {
    workload_from_yaml(config::load_text(text, "w.yaml"));
  } catch (const InputError& error) {
    return error.what();
  }
  return "no error";
}
}  // namespace

TEST(ConvShape, BadShapesAreLocatedErrors) {
  EXPECT_EQ(
      workload_error("{name: c, kind: conv2d, c: 3, h: 8, w: 8, k: 4, r: 3, s: 3, pad: -1, dtype: int8}"),
      "w.yaml:4:70: ops[0].pad: expected an integer >= 0, got -1"
      "\n  hint: this field is a count or an offset: 0 or more");
  EXPECT_EQ(
      workload_error("{name: c, kind: conv2d, c: 3, h: 4, w: 4, k: 4, r: 7, s: 7, pad: 1, dtype: int8}"),
      "w.yaml:4:56: ops[0].r: the 7x7 filter (dilation 1) spans 7x7, larger than the padded 6x6 input\n"
      "  hint: use a smaller filter, more padding or a larger input");
  EXPECT_EQ(
      workload_error("{name: c, kind: conv2d, c: 6, h: 8, w: 8, k: 4, r: 3, s: 3, groups: 4, dtype: int8}"),
      "w.yaml:4:73: ops[0].groups: 4 groups do not divide c = 6\n"
      "  hint: each group takes c/groups input channels; depthwise is groups = c");
  EXPECT_EQ(
      workload_error("{name: c, kind: conv2d, c: 6, h: 8, w: 8, k: 4, r: 3, s: 3, groups: 3, dtype: int8}"),
      "w.yaml:4:73: ops[0].groups: 3 groups do not divide k = 4\n"
      "  hint: each group makes k/groups output channels");
  EXPECT_EQ(
      workload_error("{name: c, kind: conv2d, c: 6, h: 8, w: 8, k: 4, r: 3, s: 3, stride: 0, dtype: int8}"),
      "w.yaml:4:73: ops[0].stride: expected a positive integer, got 0"
      "\n  hint: this field counts or sizes something: at least 1");
}

}  // namespace tessera::ops
