#include "ops/cuda/epilogue.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <memory>

namespace tessera::gpu {

namespace {

constexpr uint32_t kBiasSlot = 2, kResidualSlot = 3, kUpSlot = 4;  // ops/epilogue.cpp's generator slots
const char* const kStepNames[] = {"bias", "relu", "gelu", "gelu_tanh", "silu", "residual", "swiglu"};

template <OutputType T>
using Stored = std::conditional_t<T == OutputType::fp32, float, uint16_t>;

template <OutputType T>
__device__ inline float load_value(const void* data, int64_t i) {
  const Stored<T> value = static_cast<const Stored<T>*>(data)[i];
  if constexpr (T == OutputType::fp32) return value;
  if constexpr (T == OutputType::bf16) return __uint_as_float(uint32_t{value} << 16);
  if constexpr (T == OutputType::fp16) return __half2float(__ushort_as_half(value));
  return 0;
}

template <OutputType T>
__device__ inline Stored<T> store_value(float value) {
  if constexpr (T == OutputType::fp32) return value;
  if constexpr (T == OutputType::bf16) return __bfloat16_as_ushort(__float2bfloat16_rn(value));  // one cvt
  if constexpr (T == OutputType::fp16) return __half_as_ushort(__float2half_rn(value));
  return 0;
}

// The generator's fp32 values of a bias or residual, stored in the output type.
template <OutputType T>
__global__ void fill_operand(uint64_t seed, uint32_t tensor, int64_t count, void* out) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x)
    static_cast<Stored<T>*>(out)[i] = store_value<T>(ops::input_fp32(seed, tensor, i));
}

// One step over V elements: the switch once, each case's loop V wide.
template <int V>
__device__ inline void apply_step(EpilogueStep step, float (&x)[V], const float (&bias)[V],
                                  const float (&tile)[V]) {
#define TESSERA_EACH(expression)                                     \
  _Pragma("unroll") for (int j = 0; j < V; ++j) x[j] = (expression); \
  return
  switch (step) {
    case EpilogueStep::bias:
      TESSERA_EACH(x[j] + bias[j]);
    case EpilogueStep::residual:
      TESSERA_EACH(x[j] + tile[j]);
    case EpilogueStep::relu:
      TESSERA_EACH(fmaxf(x[j], 0.0f));
    case EpilogueStep::gelu:
      TESSERA_EACH(0.5f * x[j] * (1.0f + erff(x[j] * 0.70710678118654752f)));
    case EpilogueStep::gelu_tanh:  // 0.5x(1 + tanh(u)) = x / (1 + exp(-2u)): one fast exponential where
                                   // tanhf takes dozens of instructions
      TESSERA_EACH(x[j] / (1.0f + __expf(-1.5957691216057308f * (x[j] + 0.044715f * x[j] * x[j] * x[j]))));
    case EpilogueStep::silu:
      TESSERA_EACH(x[j] / (1.0f + __expf(-x[j])));
    case EpilogueStep::swiglu:
      TESSERA_EACH(x[j] / (1.0f + __expf(-x[j])) * tile[j]);
  }
#undef TESSERA_EACH
}

// V consecutive elements per thread (16 bytes when V fills them; V divides cols, so they share a row);
// Index: 32-bit where the output allows (a 64-bit division per vector costs more than the arithmetic).
template <OutputType T, int V, typename Index>
__global__ void epilogue_kernel(Epilogue e, void* out, const void* bias, const void* residual) {
  const Index vectors = static_cast<Index>(e.rows * e.cols / V), cols = static_cast<Index>(e.cols);
  for (Index v = blockIdx.x * Index{blockDim.x} + threadIdx.x; v < vectors;
       v += Index{gridDim.x} * blockDim.x) {
    const Index first = v * V, col = first % cols;
    using Word = std::conditional_t<V == 1, Stored<T>, uint4>;  // V fills 16 bytes when above 1
    union {
      Word word;
      Stored<T> elements[V];
    } x, r, b;
    x.word = *reinterpret_cast<const Word*>(static_cast<const Stored<T>*>(out) + first);
    if (residual) r.word = *reinterpret_cast<const Word*>(static_cast<const Stored<T>*>(residual) + first);
    if (bias) b.word = *reinterpret_cast<const Word*>(static_cast<const Stored<T>*>(bias) + col);
    float value[V], bias_value[V], tile_value[V];
#pragma unroll
    for (int j = 0; j < V; ++j) {
      value[j] = load_value<T>(x.elements, j);
      bias_value[j] = bias ? load_value<T>(b.elements, j) : 0.0f;
      tile_value[j] = residual ? load_value<T>(r.elements, j) : 0.0f;
    }
    // Steps outer, elements inner: each step's code once (V-wide), not V copies of every step's switch (that
    // kernel outgrew the instruction cache and its warps stalled on instruction fetch).
#pragma unroll 1
    for (int s = 0; s < e.count; ++s) apply_step<V>(e.steps[s], value, bias_value, tile_value);
#pragma unroll
    for (int j = 0; j < V; ++j) x.elements[j] = store_value<T>(value[j]);
    *reinterpret_cast<Word*>(static_cast<Stored<T>*>(out) + first) = x.word;
  }
}

template <OutputType T>
void launch_typed(const Epilogue& e, void* out, const void* bias, const void* residual) {
  constexpr int kVector = 16 / sizeof(Stored<T>);
  const bool aligned = e.cols % kVector == 0 && reinterpret_cast<uintptr_t>(out) % 16 == 0 &&
                       reinterpret_cast<uintptr_t>(residual) % 16 == 0;
  const int64_t elements = e.rows * e.cols;
  static const int sms = [] {
    int device = 0, count = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device);
    return count;
  }();
  // Enough blocks to cover the output once, at most 16 per SM (grid-stride beyond).
  auto grid = [&](int64_t threads) {
    return static_cast<int>(std::clamp<int64_t>((threads + 255) / 256, 1, int64_t{16} * sms));
  };
  const bool small = elements < (int64_t{1} << 31);
  if (aligned && small) {
    epilogue_kernel<T, kVector, uint32_t>
        <<<grid(elements / kVector), 256, 0, work_stream()>>>(e, out, bias, residual);
  } else if (aligned) {
    epilogue_kernel<T, kVector, int64_t>
        <<<grid(elements / kVector), 256, 0, work_stream()>>>(e, out, bias, residual);
  } else {
    epilogue_kernel<T, 1, int64_t><<<grid(elements), 256, 0, work_stream()>>>(e, out, bias, residual);
  }
}

}  // namespace

Epilogue parse_epilogue(const OpArgs& args, int64_t rows, int64_t cols) {
  Epilogue e;
  e.rows = rows;
  e.cols = cols;
  const auto field = args.values.find("epilogue");
  if (field == args.values.end() || field->second.empty()) return e;
  if (args.get("dtype") == "int8") fail("an int8 op takes no epilogue");
  std::string text = field->second;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find('+', start), text.size());
    const std::string name = text.substr(start, end - start);
    int step = -1;
    for (int i = 0; i < static_cast<int>(std::size(kStepNames)); ++i)
      if (name == kStepNames[i]) step = i;
    if (step < 0) fail("unknown epilogue step '" + name + "' in " + text);
    if (e.count == kMaxEpilogueSteps) fail("an epilogue has at most 8 steps: " + text);
    e.steps[e.count++] = static_cast<EpilogueStep>(step);
    start = end + 1;
  }
  const uint32_t index = static_cast<uint32_t>(args.integer("index"));
  e.seed = static_cast<uint64_t>(args.integer("seed"));
  e.bias_id = ops::tensor_id(index, kBiasSlot);
  if (e.has(EpilogueStep::residual) && e.has(EpilogueStep::swiglu))
    fail("an epilogue reads one tile beside its output: residual or swiglu, not both");
  e.tile_id = ops::tensor_id(index, e.has(EpilogueStep::swiglu) ? kUpSlot : kResidualSlot);
  return e;
}

std::optional<cublasLtEpilogue_t> lt_epilogue_of(const Epilogue& e) {
  int bias = 0, residual = 0, activations = 0;
  cublasLtEpilogue_t kind = CUBLASLT_EPILOGUE_DEFAULT;
  for (int i = 0; i < e.count; ++i) {
    switch (e.steps[i]) {
      case EpilogueStep::bias:
        if (activations) return std::nullopt;
        ++bias;
        break;
      case EpilogueStep::residual:
        if (activations) return std::nullopt;
        ++residual;
        break;
      case EpilogueStep::relu:
        kind = CUBLASLT_EPILOGUE_RELU;
        ++activations;
        break;
      case EpilogueStep::gelu_tanh:
        kind = CUBLASLT_EPILOGUE_GELU;
        ++activations;
        break;
      default:
        return std::nullopt;
    }
  }
  if (bias > 1 || residual > 1 || activations > 1) return std::nullopt;
  if (bias) {
    kind = kind == CUBLASLT_EPILOGUE_RELU   ? CUBLASLT_EPILOGUE_RELU_BIAS
           : kind == CUBLASLT_EPILOGUE_GELU ? CUBLASLT_EPILOGUE_GELU_BIAS
                                            : CUBLASLT_EPILOGUE_BIAS;
  }
  return kind;
}

EpilogueOperands make_epilogue_operands(const Epilogue& e, OutputType type, int copies) {
  EpilogueOperands operands;
  auto fill = [&](uint32_t tensor, int64_t count, void* out) {
    switch (type) {
      case OutputType::fp32:
        fill_operand<OutputType::fp32><<<grid_for(count), 256>>>(e.seed, tensor, count, out);
        break;
      case OutputType::bf16:
        fill_operand<OutputType::bf16><<<grid_for(count), 256>>>(e.seed, tensor, count, out);
        break;
      case OutputType::fp16:
        fill_operand<OutputType::fp16><<<grid_for(count), 256>>>(e.seed, tensor, count, out);
        break;
      case OutputType::int32:
        fail("an int32 output takes no epilogue");
    }
    check_launch("fill an epilogue operand");
  };
  if (e.has(EpilogueStep::bias)) {
    operands.bias = DeviceBuffer(e.cols * bytes_of(type));
    fill(e.bias_id, e.cols, operands.bias.get());
  }
  if (e.has(EpilogueStep::residual) || e.has(EpilogueStep::swiglu)) {
    for (int copy = 0; copy < copies; ++copy) {
      operands.residual.emplace_back(e.rows * e.cols * bytes_of(type));
      if (copy == 0) {
        fill(e.tile_id, e.rows * e.cols, operands.residual[0].get());
      } else {
        TESSERA_CUDA(cudaMemcpy(operands.residual[copy].get(), operands.residual[0].get(),
                                operands.residual[0].bytes(), cudaMemcpyDeviceToDevice));
      }
    }
  }
  return operands;
}

void launch_epilogue(const Epilogue& e, OutputType type, void* out, const EpilogueOperands& operands,
                     int copy) {
  const void* bias = e.has(EpilogueStep::bias) ? operands.bias_data() : nullptr;
  const void* residual = operands.residual_data(copy);
  switch (type) {
    case OutputType::fp32:
      return launch_typed<OutputType::fp32>(e, out, bias, residual);
    case OutputType::bf16:
      return launch_typed<OutputType::bf16>(e, out, bias, residual);
    case OutputType::fp16:
      return launch_typed<OutputType::fp16>(e, out, bias, residual);
    case OutputType::int32:
      fail("an int32 output takes no epilogue");
  }
}

LivePath with_epilogue_kernel(LivePath inner, const Epilogue& e, OutputType type) {
  if (!inner.output_at) fail("a path without per-copy outputs cannot take the epilogue kernel");
  struct State {
    std::shared_ptr<void> inner;
    EpilogueOperands operands;
  };
  auto state = std::make_shared<State>();
  state->inner = inner.state;
  state->operands = make_epilogue_operands(e, type, inner.copies);
  LivePath path = std::move(inner);
  path.launch = [contraction = path.launch, output_at = path.output_at, copies = path.copies, e, type,
                 operands = &state->operands](int i) {
    contraction(i);
    launch_epilogue(e, type, output_at(i % copies), *operands, i % copies);
  };
  path.state = state;
  if (!path.chosen.empty()) path.chosen += "; then the runner's epilogue kernel";
  return path;
}

std::vector<std::string> epilogue_forms(const Epilogue& e, bool fusable) {
  if (e.empty()) return {""};
  if (fusable && lt_epilogue_of(e)) return {"fused", "unfused"};
  return {"unfused"};
}

std::string epilogue_path_name(const std::string& path_name, const std::string& form) {
  if (form.empty()) return path_name;
  const std::string suffix = form == "fused" ? "_fused_epilogue" : "+epilogue_kernel";
  const size_t dash = path_name.find('-');
  return dash == std::string::npos ? path_name + suffix
                                   : path_name.substr(0, dash) + suffix + path_name.substr(dash);
}

std::optional<LivePath> build_epilogue_form(
    const std::string& form, const Epilogue& e, OutputType type,
    const std::function<std::optional<LivePath>(const Epilogue*)>& build) {
  if (form == "fused") return build(&e);
  std::optional<LivePath> live = build(nullptr);
  if (live && form == "unfused") live = with_epilogue_kernel(std::move(*live), e, type);
  return live;
}

}  // namespace tessera::gpu
