// A contraction's epilogue on the GPU (issue "Ops as stage graphs", section 5): the steps of ops/epilogue.hpp
// (`epilogue=bias+gelu_tanh` on a gemm, fc or conv2d) applied to the output, either fused into cuBLASLt's
// epilogue (D = act(A*B + C + bias), the residual as C with beta 1) where cuBLASLt computes exactly those
// steps, or as a kernel over the output after the contraction (unfused, any steps, any contraction path).
// The operands are the simulator's: the bias row B [1 x cols] (generator slot 2), the residual R [rows x
// cols] (slot 3) or a SwiGLU gate's up projection U (slot 4; silu(output) * U), in the accumulator type (fp32
// values), stored on the GPU in the path's output type as a framework stores them. The float64 reference
// applies the same steps to the exact contraction.
#pragma once

#include <cublasLt.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "gpu/device.cuh"

namespace tessera::gpu {

enum class EpilogueStep : uint8_t {
  bias,
  relu,
  gelu,
  gelu_tanh,
  silu,
  residual,
  swiglu
};  // ops/epilogue.hpp's
constexpr int kMaxEpilogueSteps = 8;

// Plain data, passed to kernels by value.
struct Epilogue {
  int count = 0;
  EpilogueStep steps[kMaxEpilogueSteps] = {};
  uint64_t seed = 0;
  uint32_t bias_id = 0, tile_id = 0;  // tile: R (residual) or U (swiglu); an epilogue reads at most one
  int64_t rows = 0, cols = 0;
  __host__ __device__ bool empty() const { return count == 0; }
  __host__ __device__ bool has(EpilogueStep step) const {
    for (int i = 0; i < count; ++i)
      if (steps[i] == step) return true;
    return false;
  }
};

// The op's `epilogue` field ("bias+gelu_tanh"; absent: none) over its rows x cols output. Fails on an
// unknown step or an int8 op (the simulator rejects both too).
Epilogue parse_epilogue(const OpArgs& args, int64_t rows, int64_t cols);

// The exact value of output element (row, col) whose contraction value is `value`.
__device__ inline double epilogue_reference(const Epilogue& e, double value, int64_t row, int64_t col) {
  for (int i = 0; i < e.count; ++i) {
    switch (e.steps[i]) {
      case EpilogueStep::bias:
        value += ops::input_fp32(e.seed, e.bias_id, col);
        break;
      case EpilogueStep::residual:
        value += ops::input_fp32(e.seed, e.tile_id, row * e.cols + col);
        break;
      case EpilogueStep::swiglu:
        value = value / (1 + exp(-value)) * ops::input_fp32(e.seed, e.tile_id, row * e.cols + col);
        break;
      case EpilogueStep::relu:
        value = fmax(value, 0.0);
        break;
      case EpilogueStep::gelu:
        value = 0.5 * value * (1 + erf(value / sqrt(2.0)));
        break;
      case EpilogueStep::gelu_tanh:
        value = 0.5 * value *
                (1 + tanh(sqrt(2.0 / 3.14159265358979323846) * (value + 0.044715 * value * value * value)));
        break;
      case EpilogueStep::silu:
        value = value / (1 + exp(-value));
        break;
    }
  }
  return value;
}

// cuBLASLt's epilogue computing exactly these steps, when one does: bias and residual (each at most once, in
// either order, before any activation) then at most one activation, ReLU or GELU. cuBLASLt's GELU is the tanh
// approximation (PyTorch's _addmm_activation, which calls it, computes gelu(approximate="tanh") on the CPU to
// match), so an erf `gelu` is never fused there.
std::optional<cublasLtEpilogue_t> lt_epilogue_of(const Epilogue& e);

// The bias row and the tile's (residual's or up projection's) copies of a path, in its output type (one per
// input copy, so the timed launches rotate over them as over the inputs).
struct EpilogueOperands {
  DeviceBuffer bias;
  std::vector<DeviceBuffer> residual;
  const void* bias_data() const { return bias.get(); }
  const void* residual_data(int copy) const {
    return residual.empty() ? nullptr : residual[copy % residual.size()].get();
  }
};
EpilogueOperands make_epilogue_operands(const Epilogue& e, OutputType type, int copies);

// The unfused epilogue: one kernel over `out` in place (fp32 arithmetic, stored in the output type).
void launch_epilogue(const Epilogue& e, OutputType type, void* out, const EpilogueOperands& operands,
                     int copy);

// `inner` followed by the epilogue kernel on the output of the same copy: the unfused chain, as a framework
// runs a contraction and then its pointwise ops. Needs inner.output_at.
LivePath with_epilogue_kernel(LivePath inner, const Epilogue& e, OutputType type);

// The forms a contraction path takes: without an epilogue, itself ("" ); with one, "unfused" (the path, then
// the epilogue kernel) and, where `fusable` (a cuBLASLt path whose epilogue lt_epilogue_of has), "fused".
std::vector<std::string> epilogue_forms(const Epilogue& e, bool fusable);
// The form's path name: "cublaslt-bf16-bf16out" -> "cublaslt_fused_epilogue-bf16-bf16out" (fused),
// "cublaslt+epilogue_kernel-bf16-bf16out" (unfused); the output class stays.
std::string epilogue_path_name(const std::string& path_name, const std::string& form);
// Builds the form: build(&e) for "fused" (the path computes the epilogue itself), else build(nullptr),
// followed by the epilogue kernel for "unfused".
std::optional<LivePath> build_epilogue_form(
    const std::string& form, const Epilogue& e, OutputType type,
    const std::function<std::optional<LivePath>(const Epilogue*)>& build);

}  // namespace tessera::gpu
