// The element functions, one vocabulary for the machine and the ops: the steps of a vector chain (`vec map
// fn=bias+gelu`), of a PE array's output path (`post steps=`, `core.pe_array.output_steps`), of an
// elementwise op (`fn:`) and of a contraction's epilogue (`epilogue: [bias, gelu]`), and the activations
// among them. Each is one line of the table in element_fn.cpp — its name, what it reads beside x, what it
// costs the vector unit, where it may appear — and, for an activation, its formula (`activate`). Every list
// of names is the table's order, filtered by a use.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

enum class ElementFn : uint8_t { add, mul, bias, relu, gelu, gelu_tanh, silu, residual, swiglu, scale };

// What a function reads beside x: nothing (an activation), a tile of x's shape (add, mul, a residual, the up
// projection of a SwiGLU), a 1 x cols row read again for every row (a bias), or a scalar factor (scale).
enum class FnOperand : uint8_t { none, tile, row, factor };

// Where a function may appear (bits of ElementFnInfo::uses).
enum ElementFnUse : uint8_t {
  kInVectorChain = 1,    // a vector map's chain (and the kernels that run it)
  kInOutputPath = 2,     // a PE array's output path
  kInElementwiseOp = 4,  // an elementwise op's fn
  kInEpilogue = 8,       // a contraction's epilogue
};

struct ElementFnInfo {
  ElementFn fn;
  const char* name;
  FnOperand operand;
  // The simple and special (erf, exp, tanh, reciprocal) ops a step costs per element on the vector unit
  // (docs/vector-unit.md, "map").
  int64_t simple_ops;
  int64_t special_ops;
  uint8_t uses;
};

const ElementFnInfo& info_of(ElementFn fn);
const char* name_of(ElementFn fn);
// An activation: a function of x alone.
inline bool is_activation(ElementFn fn) {
  return info_of(fn).operand == FnOperand::none;
}
inline bool usable_in(ElementFn fn, ElementFnUse use) {
  return (info_of(fn).uses & use) != 0;
}
// The functions of a use, in table order.
const std::vector<ElementFn>& element_fns(ElementFnUse use);
const std::vector<std::string>& element_fn_names(ElementFnUse use);
// The function of a use named `name`, if any.
std::optional<ElementFn> element_fn_named(std::string_view name, ElementFnUse use);
// "bias+gelu": the names joined by `separator`.
std::string joined_names(const std::vector<ElementFn>& fns, const char* separator = "+");

// An activation's value: relu max(x, 0); gelu x/2 (1 + erf(x/sqrt 2)); gelu_tanh x/2 (1 + tanh(sqrt(2/pi) (x
// + 0.044715 x^3))) (Hendrycks and Gimpel, 2016); silu x / (1 + e^-x). In fp32 as the vector unit computes
// it, and in float64 for the references; x itself for a function that is no activation.
float activate(ElementFn activation, float x);
double activate(ElementFn activation, double x);

}  // namespace tessera
