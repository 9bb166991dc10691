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

// An elementwise op's functions: the element functions of kInElementwiseOp (common/element_fn.hpp).
using ElementwiseFn = ElementFn;

struct ElementwiseShape {
  int64_t rows = 0, cols = 0;
  ElementwiseFn fn = ElementwiseFn::relu;
};

// How many inputs the function takes (X, and a tile or a bias row).
int elementwise_inputs(ElementwiseFn fn);

std::unique_ptr<OpKind> make_elementwise_kind();

}  // namespace tessera::ops
