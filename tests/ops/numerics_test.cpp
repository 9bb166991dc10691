// Numerics checks (ops/numerics.hpp): the per-dtype tolerances of DESIGN.md and the error figures a report
// shows.
#include "ops/numerics.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "common/error.hpp"

namespace tessera::ops {
namespace {

HostTensor fp32_tensor(const std::vector<float>& values) {
  HostTensor tensor(DType::fp32, 1, static_cast<int64_t>(values.size()));
  std::memcpy(tensor.bytes.data(), values.data(), values.size() * sizeof(float));
  return tensor;
}

HostTensor int32_tensor(const std::vector<int32_t>& values) {
  HostTensor tensor(DType::int32, 1, static_cast<int64_t>(values.size()));
  std::memcpy(tensor.bytes.data(), values.data(), values.size() * sizeof(int32_t));
  return tensor;
}

TEST(Tolerance, FollowsTheDesignPerOperandType) {
  EXPECT_TRUE(tolerance_for(DType::int8).exact);
  EXPECT_FALSE(tolerance_for(DType::fp32).exact);
  EXPECT_EQ(tolerance_for(DType::fp32).rel_l2, 1e-5);
  EXPECT_EQ(tolerance_for(DType::bf16).rel_l2, 1e-2);
  EXPECT_EQ(tolerance_for(DType::fp16).rel_l2, 1e-2);
  EXPECT_THROW(tolerance_for(DType::int32), InternalError);  // an accumulator, never an operand
}

TEST(CompareOutput, ReportsMaxAbsAndRelativeL2OnAConstructedCase) {
  // Reference (1, 2, 2) has L2 norm 3; errors (0, 0.5, -0.25): max 0.5 at index 1, L2 sqrt(0.3125).
  const NumericsResult result =
      compare_output(fp32_tensor({1.0f, 2.5f, 1.75f}), {1.0, 2.0, 2.0}, DType::bf16, "cpu");
  EXPECT_EQ(result.reference, "cpu");
  EXPECT_EQ(result.max_abs_err, 0.5);
  EXPECT_EQ(result.worst_index, 1);
  EXPECT_DOUBLE_EQ(result.rel_l2_err, std::sqrt(0.3125) / 3.0);
  EXPECT_EQ(result.mismatched_elements, 0);  // counted only for exact tolerances and non-finite values
  EXPECT_FALSE(result.pass);                 // 0.186 > 1e-2
}

TEST(CompareOutput, EqualOutputsPassWithZeroErrorAndNoWorstIndex) {
  const NumericsResult result =
      compare_output(fp32_tensor({0.5f, -3.0f}), {0.5, -3.0}, DType::fp32, "gpu-live");
  EXPECT_TRUE(result.pass);
  EXPECT_EQ(result.max_abs_err, 0.0);
  EXPECT_EQ(result.rel_l2_err, 0.0);
  EXPECT_EQ(result.worst_index, -1);
  EXPECT_EQ(result.reference, "gpu-live");
}

TEST(CompareOutput, Int8ResultsMustBeExact) {
  std::vector<int32_t> values(1000);
  std::vector<double> expected(1000);
  for (int i = 0; i < 1000; ++i) {
    values[i] = 1000 * i - 400000;
    expected[i] = values[i];
  }
  EXPECT_TRUE(compare_output(int32_tensor(values), expected, DType::int8, "cpu").pass);
  // One element off by one, in a million-scale output: rel-L2 ~1e-8 would pass any float tolerance.
  values[617] += 1;
  const NumericsResult result = compare_output(int32_tensor(values), expected, DType::int8, "cpu");
  EXPECT_FALSE(result.pass);
  EXPECT_EQ(result.mismatched_elements, 1);
  EXPECT_EQ(result.worst_index, 617);
  EXPECT_EQ(result.max_abs_err, 1.0);
  EXPECT_LT(result.rel_l2_err, 1e-5);
}

TEST(CompareOutput, Fp32PassesAtOneInAHundredThousandRelativeL2) {
  // Reference (3, 4) has norm 5: an error of 4e-5 on one element is rel-L2 8e-6, of 6e-5 is 1.2e-5.
  const NumericsResult inside =
      compare_output(fp32_tensor({3.0f + 4e-5f, 4.0f}), {3.0, 4.0}, DType::fp32, "cpu");
  EXPECT_NEAR(inside.rel_l2_err, 8e-6, 1e-7);
  EXPECT_TRUE(inside.pass);
  const NumericsResult outside =
      compare_output(fp32_tensor({3.0f + 6e-5f, 4.0f}), {3.0, 4.0}, DType::fp32, "cpu");
  EXPECT_NEAR(outside.rel_l2_err, 1.2e-5, 1e-7);
  EXPECT_FALSE(outside.pass);
}

TEST(CompareOutput, HalfPrecisionOperandsPassAtOnePercentRelativeL2) {
  for (DType dtype : {DType::bf16, DType::fp16}) {
    SCOPED_TRACE(name_of(dtype));
    EXPECT_TRUE(compare_output(fp32_tensor({3.0f + 0.045f, 4.0f}), {3.0, 4.0}, dtype, "cpu").pass);   // 0.009
    EXPECT_FALSE(compare_output(fp32_tensor({3.0f + 0.055f, 4.0f}), {3.0, 4.0}, dtype, "cpu").pass);  // 0.011
    // The same error fails the fp32 tolerance.
    EXPECT_FALSE(compare_output(fp32_tensor({3.0f + 0.045f, 4.0f}), {3.0, 4.0}, DType::fp32, "cpu").pass);
  }
}

TEST(CompareOutput, NanFailsAndIsTheWorstElement) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const NumericsResult result =
      compare_output(fp32_tensor({1.0f, 5.0f, nan, nan}), {1.0, 2.0, 3.0, 4.0}, DType::bf16, "cpu");
  EXPECT_FALSE(result.pass);
  EXPECT_EQ(result.mismatched_elements, 2);
  EXPECT_EQ(result.worst_index, 2);  // the first non-finite element, not the largest finite error
  EXPECT_TRUE(std::isinf(result.max_abs_err));
  EXPECT_TRUE(std::isinf(result.rel_l2_err));
}

TEST(CompareOutput, InfinityFails) {
  const NumericsResult result = compare_output(fp32_tensor({1.0f, std::numeric_limits<float>::infinity()}),
                                               {1.0, 2.0}, DType::fp32, "cpu");
  EXPECT_FALSE(result.pass);
  EXPECT_EQ(result.worst_index, 1);
}

TEST(CompareOutput, AllZeroReferenceUsesTheAbsoluteL2) {
  const NumericsResult result = compare_output(fp32_tensor({0.0f, 0.0f}), {0.0, 0.0}, DType::fp32, "cpu");
  EXPECT_TRUE(result.pass);
  const NumericsResult off = compare_output(fp32_tensor({0.0f, 0.5f}), {0.0, 0.0}, DType::bf16, "cpu");
  EXPECT_EQ(off.rel_l2_err, 0.5);
  EXPECT_FALSE(off.pass);
}

TEST(CompareOutput, SizeMismatchIsAnInternalError) {
  EXPECT_THROW(compare_output(fp32_tensor({1.0f}), {1.0, 2.0}, DType::fp32, "cpu"), InternalError);
}

}  // namespace
}  // namespace tessera::ops
