#include "ops/kinds/elementwise.hpp"

#include <fmt/format.h>

#include "ops/input_generator.hpp"
#include "ops/kinds/vector_shape.hpp"
#include "ops/op.hpp"
#include "ops/vector_kernels.hpp"

namespace tessera::ops {

namespace {

class ElementwiseKind : public OpKindOf<ElementwiseShape> {
 public:
  const char* name() const override { return "elementwise"; }
  const std::vector<std::string>& dtype_names() const override { return float_dtype_names(); }

  std::vector<TensorDesc> tensors(const Op& op) const override {
    const ElementwiseShape& shape = *op.as<ElementwiseShape>();
    const auto index = static_cast<uint32_t>(op.index);
    std::vector<TensorDesc> tensors = {{"X", op.dtype, shape.rows, shape.cols, tensor_id(index, 0), false}};
    if (shape.fn == ElementwiseFn::bias)
      tensors.push_back({"B", op.dtype, 1, shape.cols, tensor_id(index, 1), false});
    else if (elementwise_inputs(shape.fn) == 2)
      tensors.push_back({"Y", op.dtype, shape.rows, shape.cols, tensor_id(index, 1), false});
    tensors.push_back({"O", op.dtype, shape.rows, shape.cols, 0, true});
    return tensors;
  }

  std::vector<double> reference(const Op& op, const std::vector<HostTensor>& inputs, int) const override {
    const ElementwiseShape& shape = *op.as<ElementwiseShape>();
    const HostTensor& x = inputs.at(0);
    std::vector<double> out(static_cast<size_t>(shape.rows * shape.cols));
    const bool activates = is_activation(shape.fn);
    for (int64_t i = 0; i < shape.rows * shape.cols; ++i) {
      const double value = x.value(i);
      double result = 0;
      if (activates) {
        result = activate(shape.fn, value);
      } else if (shape.fn == ElementwiseFn::add) {
        result = value + inputs.at(1).value(i);
      } else if (shape.fn == ElementwiseFn::mul) {
        result = value * inputs.at(1).value(i);
      } else if (shape.fn == ElementwiseFn::bias) {
        result = value + inputs.at(1).value(i % shape.cols);
      } else {  // swiglu
        result = activate(ElementFn::silu, value) * inputs.at(1).value(i);
      }
      out[static_cast<size_t>(i)] = result;
    }
    return out;
  }

 protected:
  void visit_fields(ElementwiseShape& shape, FieldVisitor& visitor) const override {
    visitor.integer("rows", shape.rows, IntegerRule::positive, std::nullopt);
    visitor.integer("cols", shape.cols, IntegerRule::positive, std::nullopt);
    visit_element_fn(visitor, "fn", shape.fn, kInElementwiseOp);
  }
  std::string text_of(const ElementwiseShape& shape) const override {
    return fmt::format("{} {}x{}", name_of(shape.fn), shape.rows, shape.cols);
  }
  int64_t macs_of(const ElementwiseShape&) const override { return 0; }
};

}  // namespace

int elementwise_inputs(ElementwiseFn fn) {
  return info_of(fn).operand == FnOperand::none ? 1 : 2;
}

std::unique_ptr<OpKind> make_elementwise_kind() {
  return std::make_unique<ElementwiseKind>();
}

}  // namespace tessera::ops
