#include "common/element_fn.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "common/error.hpp"

namespace tessera {

namespace {

constexpr uint8_t kChainAndOp = kInVectorChain | kInElementwiseOp;
constexpr uint8_t kEverywhere = kInVectorChain | kInOutputPath | kInElementwiseOp | kInEpilogue;

// The table: one line a function, in the enum's order.
constexpr std::array<ElementFnInfo, 10> kTable = {{
    {ElementFn::add, "add", FnOperand::tile, 1, 0, kChainAndOp},
    {ElementFn::mul, "mul", FnOperand::tile, 1, 0, kChainAndOp},
    {ElementFn::bias, "bias", FnOperand::row, 1, 0, kEverywhere},
    {ElementFn::relu, "relu", FnOperand::none, 1, 0, kEverywhere},
    {ElementFn::gelu, "gelu", FnOperand::none, 4, 1, kEverywhere},            // mul, erf, add, mul, mul
    {ElementFn::gelu_tanh, "gelu_tanh", FnOperand::none, 8, 1, kEverywhere},  // x^2, x^3, *c, +x, *k, tanh,
                                                                              // +1, *x, *0.5
    {ElementFn::silu, "silu", FnOperand::none, 3, 2, kEverywhere},            // negate, exp, add, 1/, mul
    {ElementFn::residual, "residual", FnOperand::tile, 1, 0, kInEpilogue},    // lowered as a chain's add
    {ElementFn::swiglu, "swiglu", FnOperand::tile, 4, 2, kChainAndOp | kInEpilogue},  // silu(x) * y
    {ElementFn::scale, "scale", FnOperand::factor, 1, 0, kInVectorChain},
}};

constexpr bool in_enum_order() {
  for (size_t i = 0; i < kTable.size(); ++i)
    if (static_cast<size_t>(kTable[i].fn) != i) return false;
  return true;
}
static_assert(in_enum_order(), "the table lists the functions in the enum's order");

// The activations' fp32 and float64 formulas, one template.
template <class T>
T activate_as(ElementFn activation, T x) {
  const T half = T(0.5), one = T(1);
  switch (activation) {
    case ElementFn::relu:
      return std::max(x, T(0));
    case ElementFn::gelu:
      return half * x * (one + std::erf(x / std::sqrt(T(2))));
    case ElementFn::gelu_tanh: {
      const T k = std::sqrt(T(2) / T(3.14159265358979323846));
      return half * x * (one + std::tanh(k * (x + T(0.044715) * x * x * x)));
    }
    case ElementFn::silu:
      return x / (one + std::exp(-x));
    default:
      return x;
  }
}

struct UseLists {
  std::vector<ElementFn> fns;
  std::vector<std::string> names;
};

const UseLists& lists_of(ElementFnUse use) {
  static const std::array<UseLists, 4> lists = [] {
    std::array<UseLists, 4> made;
    for (size_t bit = 0; bit < made.size(); ++bit)
      for (const ElementFnInfo& info : kTable)
        if ((info.uses & (1u << bit)) != 0) {
          made[bit].fns.push_back(info.fn);
          made[bit].names.emplace_back(info.name);
        }
    return made;
  }();
  for (size_t bit = 0; bit < lists.size(); ++bit)
    if (use == (1u << bit)) return lists[bit];
  TESSERA_ASSERT(false, "an element function's use is one of its bits");
  return lists[0];
}

}  // namespace

const ElementFnInfo& info_of(ElementFn fn) {
  const auto index = static_cast<size_t>(fn);
  TESSERA_ASSERT(index < kTable.size(), "an element function is one of the table's");
  return kTable[index];
}

const char* name_of(ElementFn fn) {
  return info_of(fn).name;
}

const std::vector<ElementFn>& element_fns(ElementFnUse use) {
  return lists_of(use).fns;
}

const std::vector<std::string>& element_fn_names(ElementFnUse use) {
  return lists_of(use).names;
}

std::optional<ElementFn> element_fn_named(std::string_view name, ElementFnUse use) {
  for (const ElementFnInfo& info : kTable)
    if ((info.uses & use) != 0 && name == info.name) return info.fn;
  return std::nullopt;
}

std::string joined_names(const std::vector<ElementFn>& fns, const char* separator) {
  std::string text;
  for (ElementFn fn : fns) {
    if (!text.empty()) text += separator;
    text += name_of(fn);
  }
  return text;
}

float activate(ElementFn activation, float x) {
  return activate_as<float>(activation, x);
}
double activate(ElementFn activation, double x) {
  return activate_as<double>(activation, x);
}

}  // namespace tessera
