// The CPU reference (ops/reference.hpp): a GEMM over the generator's inputs, in float64, that does not depend
// on the thread count.
#include "ops/reference.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "ops/input_generator.hpp"
#include "ops/kinds/gemm.hpp"

namespace tessera::ops {
namespace {

Op gemm_op(int64_t m, int64_t n, int64_t k, DType dtype, int index = 0) {
  return make_op("g", dtype, GemmShape{m, n, k}, index);
}

// O[i][j] = sum over p in order of A[i][p] * W[p][j], in float64.
std::vector<double> naive_gemm(const HostTensor& a, const HostTensor& w) {
  std::vector<double> out(static_cast<size_t>(a.rows * w.cols), 0.0);
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t j = 0; j < w.cols; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < a.cols; ++p) sum += a.value(i * a.cols + p) * w.value(p * w.cols + j);
      out[static_cast<size_t>(i * w.cols + j)] = sum;
    }
  return out;
}

struct Shape {
  int64_t m, n, k;
};

// Small, ragged and degenerate shapes, including ones that cross the reference's 64-row blocks. With k <= 32
// every partial sum is exact in float64 for every operand type here (products of generated values lie on a
// grid no finer than 2^-48 and below 1 in magnitude; 32 of them need at most 53 bits), so the summation
// order cannot matter and the comparison is exact.
const Shape kShapes[] = {{1, 1, 1},    {1, 7, 5},   {5, 1, 3},   {3, 4, 1},
                         {13, 17, 19}, {64, 3, 32}, {65, 9, 32}, {130, 5, 7}};
const DType kOperandTypes[] = {DType::fp32, DType::bf16, DType::fp16, DType::int8};

TEST(ReferenceGemm, EqualsANaiveTripleLoopForEveryDtypeAndShape) {
  for (DType dtype : kOperandTypes)
    for (const Shape& shape : kShapes) {
      SCOPED_TRACE(::testing::Message()
                   << name_of(dtype) << " m=" << shape.m << " n=" << shape.n << " k=" << shape.k);
      const Op op = gemm_op(shape.m, shape.n, shape.k, dtype);
      const std::vector<HostTensor> inputs = generate_inputs(op, 17);
      ASSERT_EQ(inputs.size(), 2u);
      const std::vector<double> expected = naive_gemm(inputs[0], inputs[1]);
      const std::vector<double> got = reference_output(op, inputs, 1);
      ASSERT_EQ(got.size(), expected.size());
      for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], expected[i]) << "element " << i;
    }
}

TEST(ReferenceGemm, Int8IsExactAtTheExtremesOfTheRange) {
  // -128 * -128 summed over k = 4096 is 2^26: exact in float64, and what an int32 accumulator holds.
  const Op op = gemm_op(2, 2, 4096, DType::int8);
  std::vector<HostTensor> inputs = {HostTensor(DType::int8, 2, 4096), HostTensor(DType::int8, 4096, 2)};
  std::memset(inputs[0].bytes.data(), 0x80, inputs[0].bytes.size());  // -128
  std::memset(inputs[1].bytes.data(), 0x80, inputs[1].bytes.size());
  const std::vector<double> got = reference_output(op, inputs, 2);
  for (double value : got) EXPECT_EQ(value, 67108864.0);
}

TEST(ReferenceGemm, ResultDoesNotDependOnTheThreadCount) {
  // A shape large enough that float64 rounds (k = 777) and Eigen blocks, ragged against the 64-row blocks.
  for (DType dtype : {DType::fp32, DType::bf16}) {
    SCOPED_TRACE(name_of(dtype));
    const Op op = gemm_op(333, 65, 777, dtype);
    const std::vector<HostTensor> inputs = generate_inputs(op, 5);
    const std::vector<double> one = reference_output(op, inputs, 1);
    for (int threads : {0, 2, 3, 4, 7, 64}) {
      const std::vector<double> many = reference_output(op, inputs, threads);
      ASSERT_EQ(many.size(), one.size());
      EXPECT_EQ(std::memcmp(many.data(), one.data(), one.size() * sizeof(double)), 0)
          << threads << " threads";
    }
  }
}

TEST(ReferenceGemm, LargeKAgreesWithTheNaiveLoopToFloat64Rounding) {
  const Op op = gemm_op(70, 33, 1025, DType::fp32);
  const std::vector<HostTensor> inputs = generate_inputs(op, 9);
  const std::vector<double> expected = naive_gemm(inputs[0], inputs[1]);
  const std::vector<double> got = reference_output(op, inputs, 3);
  // Each of the 1025 terms is below 1 in magnitude: any two summation orders differ by far less than 1e-12.
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], expected[i], 1e-12) << i;
}

TEST(GenerateInputs, GivesAAndWWithTheOpsTensorIds) {
  const Op op = gemm_op(3, 4, 5, DType::bf16, /*index=*/2);
  const std::vector<HostTensor> inputs = generate_inputs(op, 21);
  ASSERT_EQ(inputs.size(), 2u);
  EXPECT_EQ(inputs[0].rows, 3);
  EXPECT_EQ(inputs[0].cols, 5);
  EXPECT_EQ(inputs[1].rows, 5);
  EXPECT_EQ(inputs[1].cols, 4);
  EXPECT_EQ(inputs[0].dtype, DType::bf16);
  for (int64_t i = 0; i < 15; ++i) {
    EXPECT_EQ(inputs[0].value(i), bf16_to_float(input_bf16(21, tensor_id(2, 0), i)));
    EXPECT_EQ(inputs[1].value(i), bf16_to_float(input_bf16(21, tensor_id(2, 1), i)));
  }
}

}  // namespace
}  // namespace tessera::ops
