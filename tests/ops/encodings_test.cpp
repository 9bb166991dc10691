#include "ops/encodings.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace tessera::ops {

TEST(Bf16, RoundsToNearestEven) {
  // 1 + 2^-8 is exactly halfway between bf16 neighbours 1 and 1 + 2^-7: ties go to the even mantissa (1).
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  // 1 + 3*2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even): rounds up.
  EXPECT_EQ(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_EQ(bf16_to_float(0x3f80), 1.0f);
  EXPECT_EQ(bf16_to_float(0xc000), -2.0f);
}

TEST(Bf16, EveryEncodingRoundTripsThroughFloat) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const auto half = static_cast<uint16_t>(bits);
    const float value = bf16_to_float(half);
    if (std::isnan(value)) continue;
    EXPECT_EQ(float_to_bf16(value), half) << std::hex << bits;
  }
}

TEST(Fp16, EveryEncodingRoundTripsThroughFloat) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const auto half = static_cast<uint16_t>(bits);
    const float value = fp16_to_float(half);
    if (std::isnan(value)) {
      EXPECT_TRUE(std::isnan(fp16_to_float(float_to_fp16(value))));
      continue;
    }
    EXPECT_EQ(float_to_fp16(value), half) << std::hex << bits;
  }
}

TEST(Fp16, RoundsNormalsSubnormalsAndOverflowToNearestEven) {
  EXPECT_EQ(float_to_fp16(1.0f), 0x3c00);
  EXPECT_EQ(float_to_fp16(65504.0f), 0x7bff);               // largest finite
  EXPECT_EQ(float_to_fp16(65520.0f), 0x7c00);               // halfway to 2^16 rounds to infinity
  EXPECT_EQ(float_to_fp16(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_fp16(std::ldexp(1.0f, -25)), 0x0000);  // half of it: tie to even (zero)
  EXPECT_EQ(float_to_fp16(std::ldexp(3.0f, -26)), 0x0001);  // 0.75 of it rounds up
  EXPECT_EQ(float_to_fp16(-2.0f), 0xc000);
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even.
  EXPECT_EQ(float_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
}

}  // namespace tessera::ops
