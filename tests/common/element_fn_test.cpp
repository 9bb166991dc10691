// The element functions' one table (common/element_fn.hpp): each use's names in the order the readers list
// them, every name read back as its function, and the activations' formulas at points where they are known.
#include "common/element_fn.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace tessera {
namespace {

using Names = std::vector<std::string>;

TEST(ElementFns, EachUseListsItsFunctionsInTableOrder) {
  EXPECT_EQ(element_fn_names(kInVectorChain),
            (Names{"add", "mul", "bias", "relu", "gelu", "gelu_tanh", "silu", "swiglu", "scale"}));
  EXPECT_EQ(element_fn_names(kInOutputPath), (Names{"bias", "relu", "gelu", "gelu_tanh", "silu"}));
  EXPECT_EQ(element_fn_names(kInElementwiseOp),
            (Names{"add", "mul", "bias", "relu", "gelu", "gelu_tanh", "silu", "swiglu"}));
  EXPECT_EQ(element_fn_names(kInEpilogue),
            (Names{"bias", "relu", "gelu", "gelu_tanh", "silu", "residual", "swiglu"}));
}

TEST(ElementFns, EveryNameOfAUseReadsBackAsItsFunctionAndNoOtherUsesName) {
  for (ElementFnUse use : {kInVectorChain, kInOutputPath, kInElementwiseOp, kInEpilogue}) {
    for (ElementFn fn : element_fns(use)) {
      EXPECT_EQ(element_fn_named(name_of(fn), use), fn) << name_of(fn);
      EXPECT_TRUE(usable_in(fn, use));
    }
  }
  EXPECT_FALSE(element_fn_named("residual", kInVectorChain));  // an epilogue's residual is a chain's add
  EXPECT_FALSE(element_fn_named("scale", kInEpilogue));
  EXPECT_FALSE(element_fn_named("swiglu", kInOutputPath));
  EXPECT_FALSE(element_fn_named("Relu", kInEpilogue));
  EXPECT_EQ(joined_names({ElementFn::bias, ElementFn::gelu}), "bias+gelu");
}

TEST(ElementFns, ActivationsAreTheFunctionsOfXAloneWithTheirKnownValues) {
  std::vector<std::string> activations;
  for (ElementFn fn : element_fns(kInEpilogue))
    if (is_activation(fn)) activations.emplace_back(name_of(fn));
  EXPECT_EQ(activations, (Names{"relu", "gelu", "gelu_tanh", "silu"}));
  EXPECT_EQ(activate(ElementFn::relu, -2.0), 0.0);
  EXPECT_NEAR(activate(ElementFn::gelu, 1.0), 0.8413447460685429, 1e-15);  // 1 * Phi(1)
  EXPECT_NEAR(activate(ElementFn::silu, 1.0), 1.0 / (1.0 + std::exp(-1.0)), 1e-15);
  EXPECT_NEAR(activate(ElementFn::gelu_tanh, 1.0), 0.8411919906082768, 1e-15);
  EXPECT_EQ(activate(ElementFn::add, 3.0), 3.0);  // no activation: x itself
}

TEST(ElementFns, AMapStepCostsWhatDocsVectorUnitSays) {
  EXPECT_EQ(info_of(ElementFn::gelu).simple_ops, 4);
  EXPECT_EQ(info_of(ElementFn::gelu).special_ops, 1);
  EXPECT_EQ(info_of(ElementFn::silu).special_ops, 2);
  EXPECT_EQ(info_of(ElementFn::swiglu).simple_ops, 4);
  EXPECT_EQ(info_of(ElementFn::bias).operand, FnOperand::row);
  EXPECT_EQ(info_of(ElementFn::scale).operand, FnOperand::factor);
}

}  // namespace
}  // namespace tessera
