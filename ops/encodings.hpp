// Bit-exact conversions between fp32 and the 16-bit float formats, identical on host and GPU so that the
// simulator, the CPU reference and the GPU runner round the same way (round to nearest, ties to even).
#pragma once

#include <cstdint>
#include <cstring>

#include "ops/host_device.hpp"

namespace tessera::ops {

TESSERA_HD inline uint32_t float_bits(float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof bits);
  return bits;
}

TESSERA_HD inline float bits_float(uint32_t bits) {
  float value;
  memcpy(&value, &bits, sizeof value);
  return value;
}

TESSERA_HD inline uint16_t float_to_bf16(float value) {
  const uint32_t bits = float_bits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u);  // quiet NaN
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

TESSERA_HD inline float bf16_to_float(uint16_t half) {
  return bits_float(static_cast<uint32_t>(half) << 16);
}

// IEEE binary16 with subnormals, round to nearest even, overflow to infinity.
TESSERA_HD inline uint16_t float_to_fp16(float value) {
  const uint32_t bits = float_bits(value);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);   // NaN
  if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: infinity
  if (magnitude < 0x38800000u) {
    // Result is subnormal (or zero): value * 2^24 rounded to an integer.
    if (magnitude < 0x33000000u) return static_cast<uint16_t>(sign);  // below half the smallest subnormal
    const uint32_t exponent = magnitude >> 23;
    const uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - exponent;  // 14..24 for this range
    const uint32_t truncated = mantissa >> shift;
    const uint32_t remainder = mantissa & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1u);
    const uint32_t rounded =
        truncated + ((remainder > halfway || (remainder == halfway && (truncated & 1u))) ? 1u : 0u);
    return static_cast<uint16_t>(sign | rounded);
  }
  const uint32_t rebased = magnitude - 0x38000000u;  // exponent bias 127 -> 15
  const uint32_t rounding = 0xfffu + ((rebased >> 13) & 1u);
  return static_cast<uint16_t>(sign | ((rebased + rounding) >> 13));
}

TESSERA_HD inline float fp16_to_float(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  const uint32_t exponent = (half >> 10) & 0x1fu;
  const uint32_t mantissa = half & 0x3ffu;
  if (exponent == 0) {
    // zero or subnormal: mantissa * 2^-24
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31) return bits_float(sign | 0x7f800000u | (mantissa << 13));
  return bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

}  // namespace tessera::ops
