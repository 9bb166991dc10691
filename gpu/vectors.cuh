// What the memory-bound kernels share (the vector kinds in vector.cu, the epilogue kernel in epilogue.cu):
// an element's storage (fp32, bf16, fp16) with its conversions to and from fp32 (hardware conversions, round
// to nearest even), loads and stores of V consecutive elements in one 16-byte access where V fills it, and
// the activations in the form both kernels compute them.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace tessera::gpu {

enum class Elem { fp32, bf16, fp16 };

template <Elem E>
using Bits = std::conditional_t<E == Elem::fp32, float, uint16_t>;

template <Elem E>
__device__ inline float to_float(Bits<E> value) {
  if constexpr (E == Elem::fp32) return value;
  if constexpr (E == Elem::bf16) return __uint_as_float(uint32_t{value} << 16);
  if constexpr (E == Elem::fp16) return __half2float(__ushort_as_half(value));
  return 0;
}

template <Elem E>
__device__ inline Bits<E> from_float(float value) {
  if constexpr (E == Elem::fp32) return value;
  if constexpr (E == Elem::bf16) return __bfloat16_as_ushort(__float2bfloat16_rn(value));  // one cvt (sm_80+)
  if constexpr (E == Elem::fp16) return __half_as_ushort(__float2half_rn(value));
  return 0;
}

// The elements of one 16-byte access.
template <Elem E>
constexpr int kWideOf = 16 / static_cast<int>(sizeof(Bits<E>));

// V consecutive elements at `index` as floats: one 16-byte load when V fills it (the caller guarantees the
// alignment), else V loads.
template <Elem E, int V>
__device__ inline void load_vector(const void* data, int64_t index, float (&out)[V]) {
  using T = Bits<E>;
  if constexpr (V * sizeof(T) == 16) {
    union {
      uint4 word;
      T elements[V];
    } packed;
    packed.word = *reinterpret_cast<const uint4*>(static_cast<const T*>(data) + index);
#pragma unroll
    for (int i = 0; i < V; ++i) out[i] = to_float<E>(packed.elements[i]);
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) out[i] = to_float<E>(static_cast<const T*>(data)[index + i]);
  }
}

template <Elem E, int V>
__device__ inline void store_vector(void* data, int64_t index, const float (&values)[V]) {
  using T = Bits<E>;
  if constexpr (V * sizeof(T) == 16) {
    union {
      uint4 word;
      T elements[V];
    } packed;
#pragma unroll
    for (int i = 0; i < V; ++i) packed.elements[i] = from_float<E>(values[i]);
    *reinterpret_cast<uint4*>(static_cast<T*>(data) + index) = packed.word;
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) static_cast<T*>(data)[index + i] = from_float<E>(values[i]);
  }
}

// x * sigmoid(x) as x / (1 + e^-x) with the fast exponential and the fast division (two MUFU operations; the
// IEEE division's sequence was a third of an issue-bound kernel's instructions). For x below about -87, e^-x
// exceeds 2^126 and __fdividef returns 0, where the exact value is below 1e-36 in magnitude.
__device__ inline float silu_of(float x) {
  return __fdividef(x, 1.0f + __expf(-x));
}

// 0.5x(1 + tanh(u)) = x / (1 + e^-2u), u = sqrt(2/pi)(x + 0.044715x^3): one fast exponential where tanhf
// takes dozens of instructions.
__device__ inline float gelu_tanh_of(float x) {
  return __fdividef(x, 1.0f + __expf(-1.5957691216057308f * (x + 0.044715f * x * x * x)));
}

// 0.5x(1 + erf(x / sqrt 2)) with CUDA's erff (as PyTorch's GELU computes it).
__device__ inline float gelu_of(float x) {
  return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
}

}  // namespace tessera::gpu
