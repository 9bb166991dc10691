#include "ops/kinds/conv2d.hpp"

#include <fmt/format.h>

#include "ops/input_generator.hpp"
#include "ops/kinds/spatial.hpp"
#include "ops/op.hpp"
#include "ops/reference_kernels.hpp"

namespace tessera::ops {

namespace {

// The im2col matrix of one group: row (n, p, q), column (r, s, c) of the group, zero where the window leaves
// the input.
RowMajorMatrix im2col(const ConvShape& conv, const HostTensor& x, int64_t group) {
  const int64_t p = conv.p(), q = conv.q(), cg = conv.group_c();
  RowMajorMatrix columns = RowMajorMatrix::Zero(conv.n * p * q, conv.r * conv.s * cg);
  for (int64_t image = 0; image < conv.n; ++image)
    for (int64_t y = 0; y < p; ++y)
      for (int64_t z = 0; z < q; ++z) {
        double* row = columns.data() + ((image * p + y) * q + z) * columns.cols();
        for (int64_t rr = 0; rr < conv.r; ++rr) {
          const int64_t iy = y * conv.stride + rr * conv.dilation - conv.pad;
          if (iy < 0 || iy >= conv.h) continue;
          for (int64_t ss = 0; ss < conv.s; ++ss) {
            const int64_t ix = z * conv.stride + ss * conv.dilation - conv.pad;
            if (ix < 0 || ix >= conv.w) continue;
            const int64_t pixel = (image * conv.h + iy) * conv.w + ix;
            for (int64_t cc = 0; cc < cg; ++cc)
              row[(rr * conv.s + ss) * cg + cc] = x.value(pixel * conv.c + group * cg + cc);
          }
        }
      }
  return columns;
}

class Conv2dKind : public OpKindOf<ConvShape> {
 public:
  const char* name() const override { return "conv2d"; }

  std::vector<TensorDesc> tensors(const Op& op) const override {
    const ConvShape& conv = *op.as<ConvShape>();
    const auto index = static_cast<uint32_t>(op.index);
    std::vector<TensorDesc> tensors = {
        {"X", op.dtype, conv.n * conv.h * conv.w, conv.c, tensor_id(index, 0), false, std::nullopt, 0,
         conv.density.input},
        {"W", op.dtype, conv.groups * conv.r * conv.s * conv.group_c(), conv.group_k(), tensor_id(index, 1),
         false},
    };
    const int64_t pixels = conv.n * conv.p() * conv.q();
    add_epilogue_tensors(tensors, conv.epilogue, op.index, conv.epilogue.partials(op.dtype), pixels, conv.k);
    tensors.push_back(
        {"O", conv.epilogue.output(op.dtype), pixels, conv.k, 0, true, std::nullopt, 0, conv.density.output});
    return tensors;
  }

  std::vector<double> reference(const Op& op, const std::vector<HostTensor>& inputs,
                                int threads) const override {
    const ConvShape& conv = *op.as<ConvShape>();
    const int64_t kg = conv.group_k(), taps = conv.r * conv.s * conv.group_c();
    const RowMajorMatrix weights = to_matrix(inputs.at(1));  // groups * taps x kg
    std::vector<double> out(static_cast<size_t>(conv.n * conv.p() * conv.q() * conv.k));
    for (int64_t group = 0; group < conv.groups; ++group) {
      const RowMajorMatrix columns = im2col(conv, inputs.at(0), group);
      const RowMajorMatrix w = weights.middleRows(group * taps, taps);
      gemm_rows(columns, w, out.data() + group * kg, conv.k, threads);
    }
    apply_epilogue(conv.epilogue, out, conv.n * conv.p() * conv.q(), conv.k, inputs, 2);
    return out;
  }

  bool has_sampled_reference() const override { return true; }
  std::vector<double> reference_at(const Op& op, uint64_t seed,
                                   const std::vector<int64_t>& positions) const override {
    const ConvShape& conv = *op.as<ConvShape>();
    const auto index = static_cast<uint32_t>(op.index);
    const uint32_t a_id = tensor_id(index, 0), w_id = tensor_id(index, 1);
    std::vector<double> values;
    values.reserve(positions.size());
    for (int64_t position : positions) {
      double sum = 0;
      // position = pixel * k + channel; the channel's group picks the input channels and weight rows.
      const int64_t channel = position % conv.k, pixel = position / conv.k;
      const int64_t group = channel / conv.group_k(), column = channel % conv.group_k();
      const int64_t image = pixel / (conv.p() * conv.q()), y = (pixel / conv.q()) % conv.p(),
                    z = pixel % conv.q();
      const int64_t cg = conv.group_c(), taps = conv.r * conv.s * cg;
      for (int64_t rr = 0; rr < conv.r; ++rr)
        for (int64_t ss = 0; ss < conv.s; ++ss) {
          const int64_t iy = y * conv.stride + rr * conv.dilation - conv.pad;
          const int64_t ix = z * conv.stride + ss * conv.dilation - conv.pad;
          if (iy < 0 || iy >= conv.h || ix < 0 || ix >= conv.w) continue;
          for (int64_t cc = 0; cc < cg; ++cc) {
            const int64_t x_at = ((image * conv.h + iy) * conv.w + ix) * conv.c + group * cg + cc;
            const int64_t w_at = (group * taps + (rr * conv.s + ss) * cg + cc) * conv.group_k() + column;
            sum += generated_value(op.dtype, seed, a_id, x_at) * generated_value(op.dtype, seed, w_id, w_at);
          }
        }
      values.push_back(apply_epilogue_at(conv.epilogue, sum, pixel, channel, conv.k,
                                         conv.epilogue.partials(op.dtype), seed, op.index));
    }
    return values;
  }

 protected:
  void visit_fields(ConvShape& conv, FieldVisitor& visitor) const override {
    visitor.integer("n", conv.n, IntegerRule::positive, 1);
    visitor.integer("c", conv.c, IntegerRule::positive, std::nullopt);
    visitor.integer("h", conv.h, IntegerRule::positive, std::nullopt);
    visitor.integer("w", conv.w, IntegerRule::positive, std::nullopt);
    visitor.integer("k", conv.k, IntegerRule::positive, std::nullopt);
    visitor.integer("r", conv.r, IntegerRule::positive, std::nullopt);
    visitor.integer("s", conv.s, IntegerRule::positive, std::nullopt);
    visitor.integer("stride", conv.stride, IntegerRule::positive, 1);
    visitor.integer("pad", conv.pad, IntegerRule::nonnegative, 0);
    visitor.integer("dilation", conv.dilation, IntegerRule::positive, 1);
    visitor.integer("groups", conv.groups, IntegerRule::positive, 1);
    visit_epilogue(visitor, conv.epilogue);
    visit_density(visitor, conv.density);
  }
  void check_dtype(const ConvShape& conv, DType dtype, const FieldChecks& checks) const override {
    check_epilogue_dtype(conv.epilogue, dtype, checks);
    check_density(conv.density, checks);
  }

  void check_fields(const ConvShape& conv, const FieldChecks& checks) const override {
    check_spatial({{"h", conv.h},
                   {"w", conv.w},
                   {"r", conv.r},
                   {"s", conv.s},
                   {"stride", conv.stride},
                   {"pad", conv.pad},
                   {"dilation", conv.dilation}},
                  checks);
    if (conv.c % conv.groups != 0)
      checks.fail("groups", fmt::format("{} groups do not divide c = {}", conv.groups, conv.c),
                  "each group takes c/groups input channels; depthwise is groups = c");
    if (conv.k % conv.groups != 0)
      checks.fail("groups", fmt::format("{} groups do not divide k = {}", conv.groups, conv.k),
                  "each group makes k/groups output channels");
    const int64_t extent_h = conv.dilation * (conv.r - 1) + 1, extent_w = conv.dilation * (conv.s - 1) + 1;
    if (extent_h > conv.h + 2 * conv.pad || extent_w > conv.w + 2 * conv.pad) {
      checks.fail(
          "r",
          fmt::format("the {}x{} filter (dilation {}) spans {}x{}, larger than the padded {}x{} input",
                      conv.r, conv.s, conv.dilation, extent_h, extent_w, conv.h + 2 * conv.pad,
                      conv.w + 2 * conv.pad),
          "use a smaller filter, more padding or a larger input");
    }
  }

  std::string text_of(const ConvShape& conv) const override {
    std::string text = fmt::format("{}x{}x{}x{} k{} {}x{}/{} p{}", conv.n, conv.h, conv.w, conv.c, conv.k,
                                   conv.r, conv.s, conv.stride, conv.pad);
    if (conv.groups > 1) text += fmt::format(" g{}", conv.groups);
    if (conv.dilation > 1) text += fmt::format(" d{}", conv.dilation);
    return text + conv.epilogue.text() + conv.density.text();
  }

  int64_t macs_of(const ConvShape& conv) const override {
    const GemmShape gemm = conv.group_gemm();
    return gemm.m * gemm.n * gemm.k * conv.groups;
  }
};

}  // namespace

std::unique_ptr<OpKind> make_conv2d_kind() {
  return std::make_unique<Conv2dKind>();
}

}  // namespace tessera::ops
