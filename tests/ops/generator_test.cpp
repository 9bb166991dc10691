// The counter-based input generator (ops/input_generator.hpp): a pure function of (seed, tensor id, element
// index) whose values the simulator, the CPU reference and the GPU runner must agree on bit for bit.
#include "ops/input_generator.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "common/error.hpp"
#include "ops/encodings.hpp"
#include "ops/tensor.hpp"

namespace tessera::ops {
namespace {

constexpr int kSamples = 100000;

// Golden values. They pin the generator: the GPU runner (gpu/) and any recorded GPU outputs under
// traces/reference/ depend on them, so a change here invalidates every recorded reference. Computed once
// with an independent Python transcription of the documented algorithm (SplitMix64 finaliser of
// seed * 0x9e3779b97f4a7c15 + tensor + 1, then of that XOR index * 0xd1b54a32d192ed03; fp32 is the top 24
// bits minus 2^23, times 2^-23; int8 the top 8 bits), bf16 by round-to-nearest-even of the fp32 bits, fp16
// by Python's struct 'e' (IEEE binary16, nearest even).
struct Golden {
  uint64_t seed;
  uint32_t tensor;
  uint64_t index;
  uint64_t bits;
  int32_t fp32_grid;  // the fp32 value times 2^23
  uint16_t bf16;
  uint16_t fp16;
  int8_t int8;
};
constexpr Golden kGolden[] = {
    {0, 0, 0, 0x7ab40e090f363a7dull, -347122, 0xbd29, 0xa94c, 122},
    {1, 0, 0, 0xdce423fc82c0d5b8ull, 6087715, 0x3f3a, 0x39ce, -36},
    {1, 1, 0, 0xe60bbbf6ca094f3cull, 6687675, 0x3f4c, 0x3a61, -26},
    {7, 16, 12345, 0x63eee3f70964a3a6ull, -1839389, 0xbe61, 0xb304, 99},
    {13, 49, uint64_t{1} << 40, 0x2d5c7dcc0369f15bull, -5415811, 0xbf25, 0xb92a, 45},
};

TEST(InputGenerator, ReproducesTheGoldenValuesThatPinIt) {
  for (const Golden& golden : kGolden) {
    SCOPED_TRACE(::testing::Message()
                 << "seed " << golden.seed << " tensor " << golden.tensor << " index " << golden.index);
    EXPECT_EQ(input_bits(golden.seed, golden.tensor, golden.index), golden.bits);
    EXPECT_EQ(input_fp32(golden.seed, golden.tensor, golden.index), std::ldexp(float(golden.fp32_grid), -23));
    EXPECT_EQ(input_bf16(golden.seed, golden.tensor, golden.index), golden.bf16);
    EXPECT_EQ(input_fp16(golden.seed, golden.tensor, golden.index), golden.fp16);
    EXPECT_EQ(input_int8(golden.seed, golden.tensor, golden.index), golden.int8);
  }
}

TEST(InputGenerator, IsAPureFunctionOfItsArguments) {
  // Called again, in another order, the same arguments give the same value: no hidden state.
  std::array<float, 64> first{};
  for (int i = 0; i < 64; ++i) first[i] = input_fp32(42, 3, i);
  for (int i = 63; i >= 0; --i) {
    input_fp32(43, 4, 1000 + i);  // interleaved calls with other arguments change nothing
    EXPECT_EQ(input_fp32(42, 3, i), first[i]);
    EXPECT_EQ(input_bits(42, 3, i), input_bits(42, 3, i));
  }
}

// How many of the first kSamples elements of two streams are equal.
template <class Value>
int equal_elements(Value (*generate)(uint64_t, uint32_t, uint64_t), uint64_t seed_a, uint32_t tensor_a,
                   uint64_t offset_a, uint64_t seed_b, uint32_t tensor_b, uint64_t offset_b) {
  int equal = 0;
  for (uint64_t i = 0; i < kSamples; ++i)
    equal += generate(seed_a, tensor_a, i + offset_a) == generate(seed_b, tensor_b, i + offset_b);
  return equal;
}

TEST(InputGenerator, DifferentSeedTensorOrIndexGiveIndependentValues) {
  // 24-bit fp32 values agree by chance with probability 2^-24: a handful at most in 1e5 pairs.
  EXPECT_LE(equal_elements(&input_fp32, 1, 0, 0, 2, 0, 0), 2) << "seed";
  EXPECT_LE(equal_elements(&input_fp32, 1, 0, 0, 1, 1, 0), 2) << "tensor";
  EXPECT_LE(equal_elements(&input_fp32, 1, 0, 0, 1, 0, 1), 2) << "index shifted by one";
  // The operands of one op and the same operand of neighbouring ops (ids 16 apart).
  EXPECT_LE(equal_elements(&input_fp32, 5, tensor_id(0, 0), 0, 5, tensor_id(0, 1), 0), 2);
  EXPECT_LE(equal_elements(&input_fp32, 5, tensor_id(0, 0), 0, 5, tensor_id(1, 0), 0), 2);
  // Seed 0 and tensor 0 are not degenerate (SplitMix's finaliser maps 0 to 0).
  EXPECT_LE(equal_elements(&input_fp32, 0, 0, 0, 0, 0, 1), 2) << "seed 0 tensor 0";
  // int8 values agree with probability 1/256: ~390 of 1e5; a correlated stream would be far above.
  EXPECT_LT(equal_elements(&input_int8, 1, 0, 0, 2, 0, 0), 600);
  EXPECT_LT(equal_elements(&input_int8, 1, 0, 0, 1, 1, 0), 600);
}

TEST(InputGenerator, TensorIdsLeaveSixteenSlotsPerOp) {
  EXPECT_EQ(tensor_id(0, 0), 0u);
  EXPECT_EQ(tensor_id(0, 1), 1u);
  EXPECT_EQ(tensor_id(3, 1), 49u);
  EXPECT_EQ(kSlotsPerOp, 16u);
}

TEST(InputGenerator, Fp32ValuesLieInMinusOneToOneOnTheGrid) {
  for (uint64_t i = 0; i < kSamples; ++i) {
    const float value = input_fp32(9, 2, i);
    ASSERT_GE(value, -1.0f) << i;
    ASSERT_LT(value, 1.0f) << i;
    // On the 2^-23 grid, hence exact in fp32 (24-bit significand) and in every wider format.
    const float scaled = value * 8388608.0f;
    ASSERT_EQ(scaled, std::nearbyint(scaled)) << i;
  }
}

TEST(InputGenerator, HalfPrecisionValuesAreTheFp32ValuesRoundedToNearestEven) {
  for (uint64_t i = 0; i < kSamples; ++i) {
    const float value = input_fp32(9, 2, i);
    const uint16_t bf16 = input_bf16(9, 2, i);
    const uint16_t fp16 = input_fp16(9, 2, i);
    ASSERT_EQ(bf16, float_to_bf16(value)) << i;
    ASSERT_EQ(fp16, float_to_fp16(value)) << i;
    // Representable: decoding and encoding again is the identity, and rounding stays within [-1, 1].
    ASSERT_EQ(float_to_bf16(bf16_to_float(bf16)), bf16) << i;
    ASSERT_EQ(float_to_fp16(fp16_to_float(fp16)), fp16) << i;
    ASSERT_LE(std::abs(bf16_to_float(bf16)), 1.0f) << i;
    ASSERT_LE(std::abs(fp16_to_float(fp16)), 1.0f) << i;
    ASSERT_LE(std::abs(bf16_to_float(bf16) - value), std::ldexp(1.0f, -8)) << i;   // half a bf16 ulp at 1
    ASSERT_LE(std::abs(fp16_to_float(fp16) - value), std::ldexp(1.0f, -11)) << i;  // half an fp16 ulp at 1
  }
}

TEST(InputGenerator, Fp32IsRoughlyUniform) {
  // Uniform on [-1, 1): mean 0 (sd of the sample mean 0.0018), variance 1/3, 16 equal bins of 6250 (sd 77).
  double sum = 0, squares = 0;
  std::array<int, 16> bins{};
  for (uint64_t i = 0; i < kSamples; ++i) {
    const double value = input_fp32(123, 7, i);
    sum += value;
    squares += value * value;
    ++bins[static_cast<int>((value + 1.0) * 8.0)];
  }
  EXPECT_NEAR(sum / kSamples, 0.0, 0.01);
  EXPECT_NEAR(squares / kSamples, 1.0 / 3.0, 0.01);
  for (int bin = 0; bin < 16; ++bin) EXPECT_NEAR(bins[bin], kSamples / 16, 400) << "bin " << bin;
}

TEST(InputGenerator, Int8CoversItsWholeRangeEvenly) {
  // Uniform over [-128, 127]: mean -0.5 (sd of the sample mean 0.23); each value ~391 times in 1e5 (sd 20).
  std::array<int, 256> count{};
  double sum = 0;
  for (uint64_t i = 0; i < kSamples; ++i) {
    const int8_t value = input_int8(77, 1, i);
    sum += value;
    ++count[static_cast<uint8_t>(value)];
  }
  EXPECT_NEAR(sum / kSamples, -0.5, 1.5);
  for (int value = -128; value <= 127; ++value) {
    EXPECT_GT(count[static_cast<uint8_t>(value)], 250) << value;
    EXPECT_LT(count[static_cast<uint8_t>(value)], 550) << value;
  }
}

TEST(GenerateInput, FillsATensorRowMajorFromTheGenerator) {
  const HostTensor fp32 = generate_input(DType::fp32, 3, 5, 11, tensor_id(2, 1));
  const HostTensor bf16 = generate_input(DType::bf16, 3, 5, 11, tensor_id(2, 1));
  const HostTensor fp16 = generate_input(DType::fp16, 3, 5, 11, tensor_id(2, 1));
  const HostTensor int8 = generate_input(DType::int8, 3, 5, 11, tensor_id(2, 1));
  EXPECT_EQ(fp32.size_in_bytes(), 60);
  EXPECT_EQ(bf16.size_in_bytes(), 30);
  EXPECT_EQ(int8.size_in_bytes(), 15);
  for (int64_t i = 0; i < 15; ++i) {
    EXPECT_EQ(fp32.value(i), input_fp32(11, 33, i));
    EXPECT_EQ(bf16.value(i), bf16_to_float(input_bf16(11, 33, i)));
    EXPECT_EQ(fp16.value(i), fp16_to_float(input_fp16(11, 33, i)));
    EXPECT_EQ(int8.value(i), input_int8(11, 33, i));
  }
}

TEST(GenerateInput, AnInt32InputIsAnIndexTableOfAtMost2To31Indices) {
  EXPECT_NO_THROW(generate_input(DType::int32, 2, 2, 1, 0));
  EXPECT_THROW(generate_input(DType::int32, 0, 2, 1, 0), InternalError);
  EXPECT_THROW(generate_input(DType::int32, 2, 2, 1, 0, std::nullopt, 3), InternalError);  // range < count
}

// An index table into a larger range (a paged KV cache's block table over a pool bigger than the blocks in
// use): distinct indices below the range, the first entries of the range's permutation, reaching past the
// count.
TEST(GenerateInput, AnIndexTableIntoALargerRangeHoldsDistinctIndicesOfThatRange) {
  const HostTensor table = generate_input(DType::int32, 3, 5, 7, 3, std::nullopt, 40);
  std::vector<bool> seen(40, false);
  int64_t past_count = 0;
  for (int64_t i = 0; i < 15; ++i) {
    const auto value = static_cast<int64_t>(table.value(i));
    ASSERT_GE(value, 0);
    ASSERT_LT(value, 40);
    EXPECT_FALSE(seen[static_cast<size_t>(value)]) << value << " twice";
    seen[static_cast<size_t>(value)] = true;
    EXPECT_EQ(value, static_cast<int64_t>(input_index(7, 3, static_cast<uint64_t>(i), 40)));
    past_count += value >= 15;
  }
  EXPECT_GT(past_count, 0);  // the pool's other blocks are used too
}

// An index table (int32 input): a permutation of its element indices, the same from the same arguments,
// different for another seed or tensor, and scattered (few fixed points).
TEST(InputGenerator, AnIndexTableIsAPseudorandomPermutationOfItsIndices) {
  for (uint64_t count :
       {uint64_t{1}, uint64_t{2}, uint64_t{3}, uint64_t{5}, uint64_t{16}, uint64_t{17}, uint64_t{255},
        uint64_t{256}, uint64_t{257}, uint64_t{1000}, uint64_t{4096}, uint64_t{100003}}) {
    std::vector<bool> seen(count, false);
    uint64_t fixed = 0;
    for (uint64_t i = 0; i < count; ++i) {
      const uint64_t value = input_index(7, 3, i, count);
      ASSERT_LT(value, count) << "count " << count << " index " << i;
      ASSERT_FALSE(seen[value]) << "count " << count << ": " << value << " twice";
      seen[value] = true;
      fixed += value == i;
    }
    if (count >= 256) {
      EXPECT_LT(fixed, count / 32) << "count " << count;  // a random permutation: ~1
    }
  }
  int differ_seed = 0, differ_tensor = 0;
  for (uint64_t i = 0; i < 1000; ++i) {
    EXPECT_EQ(input_index(7, 3, i, 1000), input_index(7, 3, i, 1000));
    differ_seed += input_index(7, 3, i, 1000) != input_index(8, 3, i, 1000);
    differ_tensor += input_index(7, 3, i, 1000) != input_index(7, 4, i, 1000);
  }
  EXPECT_GT(differ_seed, 900);
  EXPECT_GT(differ_tensor, 900);
  // The tensor form: an int32 input [2 x 8] holds a permutation of 0 .. 15.
  const HostTensor table = generate_input(DType::int32, 2, 8, 7, 3);
  std::vector<bool> seen(16, false);
  for (int64_t i = 0; i < 16; ++i) {
    const auto value = static_cast<int64_t>(table.value(i));
    ASSERT_GE(value, 0);
    ASSERT_LT(value, 16);
    EXPECT_FALSE(seen[static_cast<size_t>(value)]);
    seen[static_cast<size_t>(value)] = true;
    EXPECT_EQ(value, static_cast<int64_t>(input_index(7, 3, static_cast<uint64_t>(i), 16)));
  }
}

}  // namespace
}  // namespace tessera::ops
