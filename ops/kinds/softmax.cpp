#include "ops/kinds/softmax.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/input_generator.hpp"
#include "ops/kinds/vector_shape.hpp"
#include "ops/op.hpp"
#include "ops/vector_kernels.hpp"

namespace tessera::ops {

namespace {

class SoftmaxKind : public OpKindOf<SoftmaxShape> {
 public:
  const char* name() const override { return "softmax"; }
  const std::vector<std::string>& dtype_names() const override { return float_dtype_names(); }

  std::vector<TensorDesc> tensors(const Op& op) const override {
    const SoftmaxShape& softmax = *op.as<SoftmaxShape>();
    const auto index = static_cast<uint32_t>(op.index);
    return {{"X", op.dtype, softmax.rows, softmax.cols, tensor_id(index, 0), false},
            {"O", op.dtype, softmax.rows, softmax.cols, 0, true}};
  }

  // In float64, independently of the vector unit's fp32 kernel.
  std::vector<double> reference(const Op& op, const std::vector<HostTensor>& inputs, int) const override {
    const SoftmaxShape& softmax = *op.as<SoftmaxShape>();
    const HostTensor& x = inputs.at(0);
    std::vector<double> out(static_cast<size_t>(softmax.rows * softmax.cols), 0.0);
    for (int64_t row = 0; row < softmax.rows; ++row) {
      const int64_t seen =
          softmax.causal == Causal::yes ? causal_columns(row, softmax.rows, softmax.cols) : softmax.cols;
      double maximum = -std::numeric_limits<double>::infinity(), sum = 0;
      for (int64_t col = 0; col < seen; ++col)
        maximum = std::max(maximum, softmax.scale * x.value(row * softmax.cols + col));
      for (int64_t col = 0; col < seen; ++col)
        sum += std::exp(softmax.scale * x.value(row * softmax.cols + col) - maximum);
      for (int64_t col = 0; col < seen; ++col)
        out[static_cast<size_t>(row * softmax.cols + col)] =
            std::exp(softmax.scale * x.value(row * softmax.cols + col) - maximum) / sum;
    }
    return out;
  }

 protected:
  void visit_fields(SoftmaxShape& softmax, FieldVisitor& visitor) const override {
    visitor.integer("rows", softmax.rows, IntegerRule::positive, std::nullopt);
    visitor.integer("cols", softmax.cols, IntegerRule::positive, std::nullopt);
    visitor.real("scale", softmax.scale, RealRule::positive, 1.0);
    visit_choice(visitor, "causal", softmax.causal, boolean_names(), std::optional<Causal>(Causal::no));
  }
  void check_fields(const SoftmaxShape& softmax, const FieldChecks& checks) const override {
    if (softmax.causal == Causal::yes && softmax.rows > softmax.cols)
      checks.fail("rows",
                  fmt::format("a causal softmax of {} rows over {} columns leaves its first rows no column",
                              softmax.rows, softmax.cols),
                  "the queries are the last rows of the keys: rows may not exceed cols");
  }
  std::string text_of(const SoftmaxShape& softmax) const override {
    return fmt::format("{}x{}{}{}", softmax.rows, softmax.cols,
                       softmax.scale != 1.0 ? fmt::format(" scale {}", softmax.scale) : std::string(),
                       softmax.causal == Causal::yes ? " causal" : "");
  }
  int64_t macs_of(const SoftmaxShape&) const override { return 0; }
};

}  // namespace

const std::vector<std::string>& float_dtype_names() {
  static const std::vector<std::string> names = {"fp32", "bf16", "fp16"};
  return names;
}

std::unique_ptr<OpKind> make_softmax_kind() {
  return std::make_unique<SoftmaxKind>();
}

}  // namespace tessera::ops
