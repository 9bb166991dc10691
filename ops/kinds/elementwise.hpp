// elementwise: O = fn(X[, Y]) on a rows x cols tile: an activation of one input (relu, gelu, gelu_tanh,
// silu), a second tile added or multiplied (add: e.g. a residual; mul), a 1 x cols row added to every row
// (bias), or a SwiGLU gate, O = silu(X) * Y (X the gate projection, Y the up projection).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ops/op_kind.hpp"

namespace tessera::ops {

enum class ElementwiseFn : uint8_t { add, mul, bias, relu, gelu, gelu_tanh, silu, swiglu };
const std::vector<std::string>& elementwise_fn_names();

struct ElementwiseShape {
  int64_t rows = 0, cols = 0;
  ElementwiseFn fn = ElementwiseFn::relu;
};

// How many inputs the function takes and the second one's rows (bias: 1).
int elementwise_inputs(ElementwiseFn fn);

std::unique_ptr<OpKind> make_elementwise_kind();

}  // namespace tessera::ops
