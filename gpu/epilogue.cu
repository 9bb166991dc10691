#include "gpu/epilogue.cuh"

#include <memory>

#include "gpu/vectors.cuh"

namespace tessera::gpu {

namespace {

constexpr uint32_t kBiasSlot = 2, kResidualSlot = 3, kUpSlot = 4;  // ops/epilogue.cpp's generator slots
const char* const kStepNames[] = {"bias", "relu", "gelu", "gelu_tanh", "silu", "residual", "swiglu"};

template <OutputType T>
constexpr Elem kElem = T == OutputType::bf16   ? Elem::bf16
                       : T == OutputType::fp16 ? Elem::fp16
                                               : Elem::fp32;

template <OutputType T>
using Stored = Bits<kElem<T>>;

// The generator's fp32 values of a bias or residual, stored in the output type.
template <OutputType T>
__global__ void fill_operand(uint64_t seed, uint32_t tensor, int64_t count, void* out) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x)
    static_cast<Stored<T>*>(out)[i] = from_float<kElem<T>>(ops::input_fp32(seed, tensor, i));
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
      TESSERA_EACH(gelu_of(x[j]));
    case EpilogueStep::gelu_tanh:
      TESSERA_EACH(gelu_tanh_of(x[j]));
    case EpilogueStep::silu:
      TESSERA_EACH(silu_of(x[j]));
    case EpilogueStep::swiglu:
      TESSERA_EACH(silu_of(x[j]) * tile[j]);
  }
#undef TESSERA_EACH
}

// What the kernel reads of the epilogue: its steps packed a byte each into one register (a runtime index into
// a kernel parameter's array made the compiler copy the parameter to local memory: Nsight Compute showed MIO
// throttling and 40 registers, the SwiGLU gate's kernel at 16.6 us against 9.8 for the standalone SwiGLU).
struct PackedSteps {
  uint64_t steps = 0;
  int count = 0;
  __device__ EpilogueStep at(int s) const { return static_cast<EpilogueStep>((steps >> (8 * s)) & 0xff); }
};

// One vector of V consecutive elements a thread (16 bytes when V fills them; V divides cols, so they share a
// row), a block per 256 vectors covering the output once. kOnly: the step of a one-step epilogue, compiled in
// (the gate's SwiGLU, a lone bias); -1: any steps, read from `steps`. Index: 32-bit where the output allows
// (a 64-bit division per vector costs more than the arithmetic).
template <OutputType T, int V, int kOnly, typename Index>
__global__ void __launch_bounds__(256) epilogue_kernel(PackedSteps steps, Index vectors, Index cols,
                                                       void* out, const void* bias, const void* residual) {
  constexpr Elem E = kElem<T>;
  for (Index v = blockIdx.x * Index{256} + threadIdx.x; v < vectors; v += Index{gridDim.x} * 256) {
    float value[V], bias_value[V], tile_value[V];
    load_vector<E, V>(out, int64_t{v} * V, value);
    if (residual) load_vector<E, V>(residual, int64_t{v} * V, tile_value);
    if (bias) load_vector<E, V>(bias, (v * V) % cols, bias_value);
    if constexpr (kOnly >= 0) {
      apply_step<V>(static_cast<EpilogueStep>(kOnly), value, bias_value, tile_value);
    } else {
      // Steps outer, elements inner: each step's code once (V-wide), not V copies of every step's switch
      // (that kernel outgrew the instruction cache and its warps stalled on instruction fetch).
#pragma unroll 1
      for (int s = 0; s < steps.count; ++s) apply_step<V>(steps.at(s), value, bias_value, tile_value);
    }
    store_vector<E, V>(out, int64_t{v} * V, value);
  }
}

template <OutputType T, int V, typename Index>
void launch_steps(const Epilogue& e, int64_t vectors, void* out, const void* bias, const void* residual) {
  PackedSteps steps;
  for (int i = 0; i < e.count; ++i) steps.steps |= uint64_t{static_cast<uint8_t>(e.steps[i])} << (8 * i);
  steps.count = e.count;
  const auto blocks = static_cast<unsigned>(std::clamp<int64_t>((vectors + 255) / 256, 1, int64_t{1} << 30));
  const auto n = static_cast<Index>(vectors), cols = static_cast<Index>(e.cols);
  auto go = [&](auto only) {
    epilogue_kernel<T, V, decltype(only)::value, Index>
        <<<blocks, 256, 0, work_stream()>>>(steps, n, cols, out, bias, residual);
  };
  if (e.count == 1 && e.steps[0] == EpilogueStep::swiglu)
    return go(std::integral_constant<int, static_cast<int>(EpilogueStep::swiglu)>{});
  if (e.count == 1 && e.steps[0] == EpilogueStep::bias)
    return go(std::integral_constant<int, static_cast<int>(EpilogueStep::bias)>{});
  if (e.count == 1 && e.steps[0] == EpilogueStep::residual)
    return go(std::integral_constant<int, static_cast<int>(EpilogueStep::residual)>{});
  go(std::integral_constant<int, -1>{});
}

template <OutputType T>
void launch_typed(const Epilogue& e, void* out, const void* bias, const void* residual) {
  constexpr int kVector = 16 / sizeof(Stored<T>);
  const bool aligned = e.cols % kVector == 0 && reinterpret_cast<uintptr_t>(out) % 16 == 0 &&
                       reinterpret_cast<uintptr_t>(residual) % 16 == 0;
  const int64_t elements = e.rows * e.cols;
  const bool small = elements < (int64_t{1} << 31);
  if (aligned && small) {
    launch_steps<T, kVector, uint32_t>(e, elements / kVector, out, bias, residual);
  } else if (aligned) {
    launch_steps<T, kVector, int64_t>(e, elements / kVector, out, bias, residual);
  } else {
    launch_steps<T, 1, int64_t>(e, elements, out, bias, residual);
  }
}

}  // namespace

Epilogue parse_epilogue(const OpArgs& args, int64_t rows, int64_t cols) {
  Epilogue e;
  e.rows = rows;
  e.cols = cols;
  const std::string& text = args.get("epilogue");
  if (text.empty()) return e;
  if (args.get("dtype") == "int8") fail("an int8 op takes no epilogue");
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
