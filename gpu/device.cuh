// Device-side pieces the operator paths share: the operand types, the generator's values on the GPU and
// cuBLASLt's handle. Kernels here have internal linkage: each operator file compiles its own copy (no
// relocatable device code needed).
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gpu/measure.hpp"
#include "gpu/runner.hpp"
#include "ops/input_generator.hpp"

namespace tessera::gpu {

enum class Dtype { fp32, bf16, fp16, int8 };

inline Dtype parse_dtype(const std::string& name) {
  if (name == "fp32") return Dtype::fp32;
  if (name == "bf16") return Dtype::bf16;
  if (name == "fp16") return Dtype::fp16;
  if (name == "int8") return Dtype::int8;
  fail("dtype " + name + " has no GPU path");
}

inline size_t element_bytes(Dtype dtype) {
  return dtype == Dtype::fp32 ? 4 : dtype == Dtype::int8 ? 1 : 2;
}

// The matrix ceiling that applies to an op of this operand type ("bf16", "fp16", "int8", "fp32").
inline const char* rate_kind_of(Dtype dtype) {
  return dtype == Dtype::bf16   ? "bf16"
         : dtype == Dtype::fp16 ? "fp16"
         : dtype == Dtype::int8 ? "int8"
                                : "fp32";
}

#define TESSERA_CUBLAS(call)                                                                            \
  do {                                                                                                  \
    const cublasStatus_t status_ = (call);                                                              \
    if (status_ != CUBLAS_STATUS_SUCCESS)                                                               \
      ::tessera::gpu::fail(std::string(#call) + ": cuBLAS status " + std::to_string(status_) + " at " + \
                           __FILE__ + ":" + std::to_string(__LINE__));                                  \
  } while (0)

inline int grid_for(int64_t count) {
  return static_cast<int>(std::min<int64_t>((count + 255) / 256, 65536));
}

// The exact value of element `index` of a generated input tensor.
static __device__ double input_value(Dtype dtype, uint64_t seed, uint32_t tensor, uint64_t index) {
  switch (dtype) {
    case Dtype::fp32:
      return ops::input_fp32(seed, tensor, index);
    case Dtype::bf16:
      return ops::bf16_to_float(ops::input_bf16(seed, tensor, index));
    case Dtype::fp16:
      return ops::fp16_to_float(ops::input_fp16(seed, tensor, index));
    case Dtype::int8:
      return ops::input_int8(seed, tensor, index);
  }
  return 0;
}

// Fills a generated input tensor in its storage type.
static __global__ void fill_input(Dtype dtype, uint64_t seed, uint32_t tensor, int64_t count, void* out) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    switch (dtype) {
      case Dtype::fp32:
        static_cast<float*>(out)[i] = ops::input_fp32(seed, tensor, i);
        break;
      case Dtype::bf16:
        static_cast<uint16_t*>(out)[i] = ops::input_bf16(seed, tensor, i);
        break;
      case Dtype::fp16:
        static_cast<uint16_t*>(out)[i] = ops::input_fp16(seed, tensor, i);
        break;
      case Dtype::int8:
        static_cast<int8_t*>(out)[i] = ops::input_int8(seed, tensor, i);
        break;
    }
  }
}

cublasLtHandle_t lt_handle();
// cuBLAS's classic API on the work stream, with a workspace of its own (a graph capture never allocates).
cublasHandle_t cublas_handle();

// A path on its own operands (any type with `copies` and one output buffer `out`, written by every launch):
// the live path owns them; launch(i) writes `out` whatever the copy.
template <class Operands>
LivePath live_on(Operands operands) {
  auto owned = std::make_shared<Operands>(std::move(operands));
  LivePath live;
  live.copies = owned->copies;
  live.output = owned->out.get();
  live.output_at = [data = owned.get()](int) { return data->out.get(); };
  live.state = owned;
  return live;
}

inline OutputType output_type_of(cudaDataType type) {
  switch (type) {
    case CUDA_R_32F:
      return OutputType::fp32;
    case CUDA_R_32I:
      return OutputType::int32;
    case CUDA_R_16BF:
      return OutputType::bf16;
    default:
      return OutputType::fp16;
  }
}

inline size_t bytes_of(cudaDataType type) {
  return type == CUDA_R_32F || type == CUDA_R_32I ? 4 : type == CUDA_R_8I ? 1 : 2;
}

}  // namespace tessera::gpu
