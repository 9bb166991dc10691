#include "ops/kinds/norm.hpp"

#include <fmt/format.h>

#include <cmath>

#include "ops/input_generator.hpp"
#include "ops/kinds/vector_shape.hpp"
#include "ops/op.hpp"

namespace tessera::ops {

namespace {

// The two norms differ in their fields' defaults, their tensors (rmsnorm has no beta) and their formula.
template <bool kLayer>
class NormKind : public OpKindOf<NormShape> {
 public:
  const char* name() const override { return kLayer ? "layernorm" : "rmsnorm"; }
  const std::vector<std::string>& dtype_names() const override { return float_dtype_names(); }

  std::vector<TensorDesc> tensors(const Op& op) const override {
    const NormShape& norm = *op.as<NormShape>();
    const auto index = static_cast<uint32_t>(op.index);
    // X, the residual R (a second tile: the vector stage reads it beside X), gamma, beta, O.
    std::vector<TensorDesc> tensors = {{"X", op.dtype, norm.rows, norm.cols, tensor_id(index, 0), false}};
    if (norm.adds_residual())
      tensors.push_back({"R", op.dtype, norm.rows, norm.cols, tensor_id(index, 3), false});
    tensors.push_back({"G", op.dtype, 1, norm.cols, tensor_id(index, 1), false});
    if (kLayer) tensors.push_back({"B", op.dtype, 1, norm.cols, tensor_id(index, 2), false});
    tensors.push_back({"O", op.dtype, norm.rows, norm.cols, 0, true});
    return tensors;
  }

  // In float64, independently of the vector unit's fp32 kernels.
  std::vector<double> reference(const Op& op, const std::vector<HostTensor>& inputs, int) const override {
    const NormShape& norm = *op.as<NormShape>();
    const size_t first_parameter = norm.adds_residual() ? 2 : 1;
    const HostTensor &x = inputs.at(0), &gamma = inputs.at(first_parameter);
    const int64_t cols = norm.cols;
    auto input = [&](int64_t i) { return x.value(i) + (norm.adds_residual() ? inputs.at(1).value(i) : 0.0); };
    std::vector<double> out(static_cast<size_t>(norm.rows * cols));
    for (int64_t row = 0; row < norm.rows; ++row) {
      double mean = 0, squares = 0;
      if (kLayer) {
        for (int64_t col = 0; col < cols; ++col) mean += input(row * cols + col);
        mean /= static_cast<double>(cols);
      }
      for (int64_t col = 0; col < cols; ++col) {
        const double centred = input(row * cols + col) - mean;
        squares += centred * centred;
      }
      const double rstd = 1.0 / std::sqrt(squares / static_cast<double>(cols) + norm.eps);
      for (int64_t col = 0; col < cols; ++col) {
        double value = (input(row * cols + col) - mean) * rstd * gamma.value(col);
        if (kLayer) value += inputs.at(first_parameter + 1).value(col);
        out[static_cast<size_t>(row * cols + col)] = value;
      }
    }
    return out;
  }

 protected:
  void visit_fields(NormShape& norm, FieldVisitor& visitor) const override {
    visitor.integer("rows", norm.rows, IntegerRule::positive, std::nullopt);
    visitor.integer("cols", norm.cols, IntegerRule::positive, std::nullopt);
    // The usual defaults: PyTorch's LayerNorm 1e-5, Llama's RMSNorm 1e-6.
    visitor.real("eps", norm.eps, RealRule::positive, kLayer ? 1e-5 : 1e-6);
    visit_choice(visitor, "residual", norm.input, boolean_names(), std::optional<NormInput>(NormInput::x));
  }
  std::string text_of(const NormShape& norm) const override {
    return fmt::format("{}x{} eps {}{}", norm.rows, norm.cols, norm.eps,
                       norm.adds_residual() ? " +residual" : "");
  }
  int64_t macs_of(const NormShape&) const override { return 0; }
};

}  // namespace

std::unique_ptr<OpKind> make_layernorm_kind() {
  return std::make_unique<NormKind<true>>();
}

std::unique_ptr<OpKind> make_rmsnorm_kind() {
  return std::make_unique<NormKind<false>>();
}

}  // namespace tessera::ops
