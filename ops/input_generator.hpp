// The counter-based input generator (DESIGN.md, "Functional execution and numerics"): every input element is
// a pure function of (seed, tensor id, element index), so the simulator, the CPU reference and the GPU runner
// produce identical inputs without files. Compiles for host C++ and CUDA.
//
// Tensor ids: operand slot `s` of the workload's op number `i` (0-based, in file order) has id 16*i + s; the
// slots of a GEMM are A=0 (m x k) and W=1 (k x n). Element index is the row-major linear index.
#pragma once

#include <cmath>
#include <cstdint>

#include "ops/encodings.hpp"
#include "ops/host_device.hpp"

namespace tessera::ops {

constexpr uint32_t kSlotsPerOp = 16;
constexpr uint32_t tensor_id(uint32_t op_index, uint32_t slot) {
  return kSlotsPerOp * op_index + slot;
}

// SplitMix64's finaliser (Steele, Lea, Flood: "Fast splittable pseudorandom number generators", OOPSLA 2014).
TESSERA_HD inline uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

TESSERA_HD inline uint64_t input_bits(uint64_t seed, uint32_t tensor, uint64_t index) {
  const uint64_t stream = mix64(seed * 0x9e3779b97f4a7c15ull + tensor + 1);
  return mix64(stream ^ (index * 0xd1b54a32d192ed03ull));
}

// Uniform in [-1, 1) on a grid of 2^-23: exactly representable in fp32.
TESSERA_HD inline float input_fp32(uint64_t seed, uint32_t tensor, uint64_t index) {
  const int32_t grid = static_cast<int32_t>(input_bits(seed, tensor, index) >> 40);  // 24 bits
  return static_cast<float>(grid - (1 << 23)) * (1.0f / 8388608.0f);
}

TESSERA_HD inline uint16_t input_bf16(uint64_t seed, uint32_t tensor, uint64_t index) {
  return float_to_bf16(input_fp32(seed, tensor, index));
}

TESSERA_HD inline uint16_t input_fp16(uint64_t seed, uint32_t tensor, uint64_t index) {
  return float_to_fp16(input_fp32(seed, tensor, index));
}

// Uniform over the whole int8 range [-128, 127].
TESSERA_HD inline int8_t input_int8(uint64_t seed, uint32_t tensor, uint64_t index) {
  return static_cast<int8_t>(static_cast<uint8_t>(input_bits(seed, tensor, index) >> 56));
}

// A rope op's rotation angle (ops/kinds/rope.hpp): of pair i (0 .. rotary_dim/2 - 1) at token position p,
// p * theta_i with theta_i = base^(-2i / rotary_dim), in float64.
TESSERA_HD inline double rope_angle(double base, int64_t rotary_dim, int64_t pair, int64_t position) {
  return static_cast<double>(position) *
         pow(base, -2.0 * static_cast<double>(pair) / static_cast<double>(rotary_dim));
}

// Element `index` of a rope op's cos/sin table [rows x rotary_dim] (row r: the token at position + r), as
// vLLM's cos_sin_cache holds it: cos of pair i's angle at column i, sin at column rotary_dim/2 + i, computed
// in float64 and rounded to fp32 once. Not random: every reader of the table (simulator, CPU reference, GPU
// runner) computes the same bytes on the host.
inline float rope_table_fp32(int64_t position, double base, int64_t rotary_dim, uint64_t index) {
  const int64_t half = rotary_dim / 2;
  const auto row = static_cast<int64_t>(index / static_cast<uint64_t>(rotary_dim));
  const auto col = static_cast<int64_t>(index % static_cast<uint64_t>(rotary_dim));
  const double angle = rope_angle(base, rotary_dim, col < half ? col : col - half, position + row);
  return static_cast<float>(col < half ? std::cos(angle) : std::sin(angle));
}

// An index table's element `index` (int32 inputs): a pseudorandom permutation of 0 .. count - 1 — a paged KV
// cache's block table, a permutation of tokens —, computable element by element on the host and the device
// like every other input: a 4-round Feistel network on the smallest even number of bits that holds count (a
// bijection of that domain whatever its round function), cycle-walking back into range (the domain is under
// 4x count, so a few steps). count >= 1.
TESSERA_HD inline uint64_t input_index(uint64_t seed, uint32_t tensor, uint64_t index, uint64_t count) {
  int bits = 2;
  while (bits < 64 && (uint64_t{1} << bits) < count) bits += 2;
  const int half = bits / 2;
  const uint64_t mask = (uint64_t{1} << half) - 1;
  const uint64_t key = mix64(seed * 0x9e3779b97f4a7c15ull + tensor + 1);
  uint64_t x = index;
  do {
    uint64_t left = x >> half, right = x & mask;
    for (uint64_t round = 0; round < 4; ++round) {
      const uint64_t next = left ^ (mix64(key + round * 0xd1b54a32d192ed03ull + right) & mask);
      left = right;
      right = next;
    }
    x = (left << half) | right;
  } while (x >= count);
  return x;
}

}  // namespace tessera::ops
