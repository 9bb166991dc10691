// The vector kinds on the GPU (issue "Ops as stage graphs", section 5): softmax (scale, causal), layernorm,
// rmsnorm and elementwise functions over a rows x cols tile of fp32, bf16 or fp16, computed in fp32 and
// stored in the op's type, as tessera's vector unit does (ops/vector_kernels.hpp is the CPU side of the same
// arithmetic). Row ops keep a row in registers: a group of W warps takes a row, each thread ITEMS vectors of
// 16 bytes, the row's statistics reduced by warp shuffles (and shared memory across the group's warps), so
// the row is read from DRAM once and written once; the candidates (W, ITEMS) that hold the row are timed and
// the fastest by device time kept. Elementwise: 1, 2 or 4 16-byte vectors a thread, by device time. The
// storage, conversions and activations are gpu/vectors.cuh's (shared with the epilogue kernel).
// PyTorch's torch.softmax, layer_norm, rms_norm and activations (eager and torch.compile) are timed next to
// these by scripts/gpu_torch_reference.py.
#include <cmath>
#include <memory>

#include "gpu/device.cuh"
#include "gpu/vectors.cuh"

namespace tessera::gpu {

namespace {

enum class RowKind { softmax, layernorm, rmsnorm };
enum class Fn { add, mul, bias, relu, gelu, gelu_tanh, silu, swiglu };  // ops/kinds/elementwise.hpp's order

struct Tile {
  int64_t rows = 0, cols = 0;
  Dtype dtype = Dtype::fp32;
  float scale = 1, eps = 0;
  bool causal = false;
  uint64_t seed = 0;
  uint32_t x_id = 0, y_id = 0, z_id = 0;  // X; gamma or Y or bias; beta
  bool residual = false;                  // a norm of X + R (the add & norm)
  uint32_t r_id = 0;                      // R
  __host__ __device__ int64_t elements() const { return rows * cols; }
};

// V elements as stored, held until they are needed (gamma and beta, loaded before the row's reductions).
template <Elem E, int V>
struct Raw {
  Bits<E> element[V];
  __device__ void load(const void* data, int64_t index) {
    if constexpr (V * sizeof(Bits<E>) == 16) {
      *reinterpret_cast<uint4*>(element) =
          *reinterpret_cast<const uint4*>(static_cast<const Bits<E>*>(data) + index);
    } else {
#pragma unroll
      for (int i = 0; i < V; ++i) element[i] = static_cast<const Bits<E>*>(data)[index + i];
    }
  }
  __device__ float operator[](int i) const {
    return to_float<E>(element[i]);
  }
};

__device__ inline float warp_sum(float value) {
  for (int offset = 16; offset > 0; offset /= 2) value += __shfl_xor_sync(0xffffffffu, value, offset);
  return value;
}
__device__ inline float warp_max(float value) {
  for (int offset = 16; offset > 0; offset /= 2)
    value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, offset));
  return value;
}

// A row's statistic over the W warps that hold it: shuffles within each warp, then shared memory. Each
// reduction of a kernel has its own slots (`slots`), so one barrier a reduction suffices: no later reduction
// overwrites what a slower warp has still to read.
template <int W, bool kMax>
__device__ inline float group_reduce(float value, float* slots) {
  value = kMax ? warp_max(value) : warp_sum(value);
  if constexpr (W == 1) return value;
  const int warp = threadIdx.x / 32, first = warp - warp % W;
  if (threadIdx.x % 32 == 0) slots[warp] = value;
  __syncthreads();
  float total = slots[first];
#pragma unroll
  for (int i = 1; i < W; ++i) total = kMax ? fmaxf(total, slots[first + i]) : total + slots[first + i];
  return total;
}

constexpr int kBlock = 256;

// Row `row` of the tile in W warps; each thread ITEMS vectors of V elements (vector i of thread t: columns
// ((i * 32W) + t) * V ...). Threads of a block past the last row still take part in the reductions' barriers.
// A norm's gamma and beta are loaded with the row, before its reductions, so their latency hides behind the
// row's rather than following the statistics.
// `residual` (a norm's R, or null): the row is X + R, the two loaded together (the add & norm in one pass).
template <Elem E, RowKind K, int W, int ITEMS, int V>
__global__ void __launch_bounds__(kBlock) row_kernel(Tile tile, const void* x, const void* residual,
                                                     const void* gamma, const void* beta, void* out) {
  __shared__ float shared[2][kBlock / 32];
  constexpr int kGroup = 32 * W;
  const int64_t row = blockIdx.x * int64_t{kBlock / kGroup} + threadIdx.x / kGroup;
  const int t = threadIdx.x % kGroup;
  const bool live = row < tile.rows;
  const int64_t cols = tile.cols;
  // Columns a causal softmax row sees: 0 .. row + cols - rows (ops/vector_kernels.hpp).
  const int64_t seen = K == RowKind::softmax && tile.causal ? row + cols - tile.rows + 1 : cols;
  float v[ITEMS][V];
  [[maybe_unused]] Raw<E, V> g[K == RowKind::softmax ? 1 : ITEMS], b[K == RowKind::layernorm ? ITEMS : 1],
      r[K == RowKind::softmax ? 1 : ITEMS];
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    const int64_t col = (int64_t{i} * kGroup + t) * V;
    if (live && col < cols) {
      load_vector<E, V>(x, row * cols + col, v[i]);
      if constexpr (K != RowKind::softmax) {
        if (residual) r[i].load(residual, row * cols + col);
        g[i].load(gamma, col);
      }
      if constexpr (K == RowKind::layernorm) b[i].load(beta, col);
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j) v[i][j] = 0;
    }
  }
  if constexpr (K != RowKind::softmax) {
    if (residual) {
#pragma unroll
      for (int i = 0; i < ITEMS; ++i)
        if (live && (int64_t{i} * kGroup + t) * V < cols)
#pragma unroll
          for (int j = 0; j < V; ++j) v[i][j] += r[i][j];
    }
  }
  auto valid = [&](int i, int j) { return live && (int64_t{i} * kGroup + t) * V + j < seen; };
  if constexpr (K == RowKind::softmax) {
    float maximum = -INFINITY;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i)
#pragma unroll
      for (int j = 0; j < V; ++j)
        if (valid(i, j)) maximum = fmaxf(maximum, tile.scale * v[i][j]);
    maximum = group_reduce<W, true>(maximum, shared[0]);
    float sum = 0;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i)
#pragma unroll
      for (int j = 0; j < V; ++j) {
        v[i][j] = valid(i, j) ? __expf(tile.scale * v[i][j] - maximum) : 0.0f;
        sum += v[i][j];
      }
    const float inverse = 1.0f / group_reduce<W, false>(sum, shared[1]);
#pragma unroll
    for (int i = 0; i < ITEMS; ++i)
#pragma unroll
      for (int j = 0; j < V; ++j) v[i][j] *= inverse;
  } else {
    float mean = 0;
    if constexpr (K == RowKind::layernorm) {
      float sum = 0;
#pragma unroll
      for (int i = 0; i < ITEMS; ++i)
#pragma unroll
        for (int j = 0; j < V; ++j) sum += v[i][j];  // zeros past the row's end
      mean = group_reduce<W, false>(sum, shared[0]) / static_cast<float>(cols);
    }
    float squares = 0;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i)
#pragma unroll
      for (int j = 0; j < V; ++j)
        if (valid(i, j)) squares += (v[i][j] - mean) * (v[i][j] - mean);
    const float rstd =
        rsqrtf(group_reduce<W, false>(squares, shared[1]) / static_cast<float>(cols) + tile.eps);
#pragma unroll
    for (int i = 0; i < ITEMS; ++i)
#pragma unroll
      for (int j = 0; j < V; ++j) {
        if constexpr (K == RowKind::layernorm) {
          v[i][j] = (v[i][j] - mean) * rstd * g[i][j] + b[i][j];
        } else {
          v[i][j] = v[i][j] * rstd * g[i][j];
        }
      }
  }
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    const int64_t col = (int64_t{i} * kGroup + t) * V;
    if (live && col < cols) store_vector<E, V>(out, row * cols + col, v[i]);
  }
}

// One row-kernel candidate: W warps a row, ITEMS vectors a thread.
struct RowVariant {
  std::string name;
  void (*launch)(const Tile&, const void*, const void*, const void*, const void*, void*);
};

template <Elem E, RowKind K, int W, int ITEMS, int V>
void launch_rows(const Tile& tile, const void* x, const void* residual, const void* gamma, const void* beta,
                 void* out) {
  constexpr int kRowsPerBlock = kBlock / (32 * W);
  const auto blocks = static_cast<unsigned>((tile.rows + kRowsPerBlock - 1) / kRowsPerBlock);
  row_kernel<E, K, W, ITEMS, V><<<blocks, kBlock, 0, work_stream()>>>(tile, x, residual, gamma, beta, out);
}

// For each group width, the fewest items a thread that hold the row (at most 16).
template <Elem E, RowKind K, int V>
void add_row_variants(const Tile& tile, std::vector<RowVariant>& variants) {
  auto add = [&](auto w_tag, auto items_tag) {
    constexpr int W = decltype(w_tag)::value, ITEMS = decltype(items_tag)::value;
    const int64_t capacity = int64_t{32} * W * ITEMS * V;
    const int64_t smaller = capacity / 2;  // the same group with half the items
    if (capacity >= tile.cols && (ITEMS == 1 || smaller < tile.cols))
      variants.push_back({std::to_string(W) + " warp(s) a row, " + std::to_string(ITEMS) + " vector(s) of " +
                              std::to_string(V) + " a thread",
                          &launch_rows<E, K, W, ITEMS, V>});
  };
  using I1 = std::integral_constant<int, 1>;
  using I2 = std::integral_constant<int, 2>;
  using I4 = std::integral_constant<int, 4>;
  using I8 = std::integral_constant<int, 8>;
  using I16 = std::integral_constant<int, 16>;
  auto per_width = [&](auto w_tag) {
    add(w_tag, I1{});
    add(w_tag, I2{});
    add(w_tag, I4{});
    add(w_tag, I8{});
    add(w_tag, I16{});
  };
  per_width(I1{});
  per_width(I2{});
  per_width(I4{});
  per_width(I8{});
}

template <Elem E, RowKind K>
std::vector<RowVariant> row_variants(const Tile& tile) {
  std::vector<RowVariant> variants;
  if (tile.cols % kWideOf<E> == 0) {
    add_row_variants<E, K, kWideOf<E>>(tile, variants);
  } else {
    add_row_variants<E, K, 1>(tile, variants);
  }
  return variants;
}

template <RowKind K>
std::vector<RowVariant> row_variants_of(const Tile& tile) {
  switch (tile.dtype) {
    case Dtype::fp32:
      return row_variants<Elem::fp32, K>(tile);
    case Dtype::bf16:
      return row_variants<Elem::bf16, K>(tile);
    case Dtype::fp16:
      return row_variants<Elem::fp16, K>(tile);
    default:
      fail("a vector op takes fp32, bf16 or fp16");
  }
}

// ---- elementwise

template <Fn F>
__device__ inline float apply(float x, float y) {
  constexpr Fn fn = F;
  switch (fn) {
    case Fn::add:
    case Fn::bias:
      return x + y;
    case Fn::mul:
      return x * y;
    case Fn::relu:
      return fmaxf(x, 0.0f);
    case Fn::gelu:
      return gelu_of(x);
    case Fn::gelu_tanh:
      return gelu_tanh_of(x);
    case Fn::silu:
      return silu_of(x);
    case Fn::swiglu:
      return silu_of(x) * y;
  }
  return x;
}

// A block takes 256*U vectors of V elements, a thread U of them 256 vectors apart (a warp's accesses stay
// contiguous); every load of a thread is issued before the first is used, so a thread has U (or 2U) 16-byte
// loads in flight where one thread a vector had one: with one, an SM's resident threads kept too few bytes in
// flight to cover DRAM's latency (Nsight Compute: SiLU at 30% of DRAM bandwidth, long-scoreboard stalls).
// `second` is Y (add, mul, swiglu), the bias row (bias), or unused. The function is a template argument: one
// small kernel per function (a switch per element over all of them outgrew the instruction cache).
template <Elem E, int V, int U, Fn F, typename Index>
__global__ void __launch_bounds__(256)
    elementwise_kernel(Tile tile, const void* x, const void* second, void* out) {
  constexpr bool kTile = F == Fn::add || F == Fn::mul || F == Fn::swiglu;
  const Index vectors = static_cast<Index>(tile.elements() / V), cols = static_cast<Index>(tile.cols);
  for (Index chunk = blockIdx.x; chunk * (Index{256} * U) < vectors; chunk += gridDim.x) {
    const Index first = chunk * (Index{256} * U) + threadIdx.x;
    float a[U][V], b[U][V];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const Index i = first + Index{256} * u;
      if (i >= vectors) continue;
      load_vector<E, V>(x, int64_t{i} * V, a[u]);
      if constexpr (F == Fn::bias) load_vector<E, V>(second, (i * V) % cols, b[u]);
      if constexpr (kTile) load_vector<E, V>(second, int64_t{i} * V, b[u]);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const Index i = first + Index{256} * u;
      if (i >= vectors) continue;
#pragma unroll
      for (int j = 0; j < V; ++j) a[u][j] = apply<F>(a[u][j], b[u][j]);
      store_vector<E, V>(out, int64_t{i} * V, a[u]);
    }
  }
}

// The vectors a thread takes: 1, 2 or 4 (chosen by device time).
constexpr int kUnrolls[] = {1, 2, 4};

template <Elem E, Fn F, int U>
void launch_unrolled(const Tile& tile, const void* x, const void* second, void* out) {
  constexpr int kWide = kWideOf<E>;
  auto blocks = [](int64_t vectors) {
    return static_cast<unsigned>(
        std::clamp<int64_t>((vectors + 256 * U - 1) / (256 * U), 1, int64_t{1} << 30));
  };
  if (tile.cols % kWide == 0 && tile.elements() < (int64_t{1} << 31)) {
    elementwise_kernel<E, kWide, U, F, uint32_t>
        <<<blocks(tile.elements() / kWide), 256, 0, work_stream()>>>(tile, x, second, out);
  } else {
    elementwise_kernel<E, 1, U, F, int64_t>
        <<<blocks(tile.elements()), 256, 0, work_stream()>>>(tile, x, second, out);
  }
}

template <Elem E, Fn F>
void launch_elementwise_fn(int unroll, const Tile& tile, const void* x, const void* second, void* out) {
  switch (unroll) {
    case 1:
      return launch_unrolled<E, F, 1>(tile, x, second, out);
    case 2:
      return launch_unrolled<E, F, 2>(tile, x, second, out);
    default:
      return launch_unrolled<E, F, 4>(tile, x, second, out);
  }
}

template <Elem E>
void launch_elementwise(Fn fn, int unroll, const Tile& tile, const void* x, const void* second, void* out) {
  switch (fn) {
    case Fn::add:
      return launch_elementwise_fn<E, Fn::add>(unroll, tile, x, second, out);
    case Fn::mul:
      return launch_elementwise_fn<E, Fn::mul>(unroll, tile, x, second, out);
    case Fn::bias:
      return launch_elementwise_fn<E, Fn::bias>(unroll, tile, x, second, out);
    case Fn::relu:
      return launch_elementwise_fn<E, Fn::relu>(unroll, tile, x, second, out);
    case Fn::gelu:
      return launch_elementwise_fn<E, Fn::gelu>(unroll, tile, x, second, out);
    case Fn::gelu_tanh:
      return launch_elementwise_fn<E, Fn::gelu_tanh>(unroll, tile, x, second, out);
    case Fn::silu:
      return launch_elementwise_fn<E, Fn::silu>(unroll, tile, x, second, out);
    case Fn::swiglu:
      return launch_elementwise_fn<E, Fn::swiglu>(unroll, tile, x, second, out);
  }
}

// ---- the float64 reference at sampled positions, from the generator

__global__ void row_reference_at(Tile tile, RowKind kind, const int64_t* positions, int count, double* out) {
  const int sample = blockIdx.x * blockDim.x + threadIdx.x;
  if (sample >= count) return;
  const int64_t row = positions[sample] / tile.cols, col = positions[sample] % tile.cols;
  auto x = [&](int64_t c) {
    const double r = tile.residual ? input_value(tile.dtype, tile.seed, tile.r_id, row * tile.cols + c) : 0.0;
    return input_value(tile.dtype, tile.seed, tile.x_id, row * tile.cols + c) + r;
  };
  if (kind == RowKind::softmax) {
    const int64_t seen = tile.causal ? row + tile.cols - tile.rows + 1 : tile.cols;
    if (col >= seen) {
      out[sample] = 0;
      return;
    }
    double maximum = -INFINITY, sum = 0;
    for (int64_t c = 0; c < seen; ++c) maximum = fmax(maximum, double{tile.scale} * x(c));
    for (int64_t c = 0; c < seen; ++c) sum += exp(double{tile.scale} * x(c) - maximum);
    out[sample] = exp(double{tile.scale} * x(col) - maximum) / sum;
    return;
  }
  double mean = 0, squares = 0;
  if (kind == RowKind::layernorm) {
    for (int64_t c = 0; c < tile.cols; ++c) mean += x(c);
    mean /= static_cast<double>(tile.cols);
  }
  for (int64_t c = 0; c < tile.cols; ++c) squares += (x(c) - mean) * (x(c) - mean);
  const double rstd = 1.0 / sqrt(squares / static_cast<double>(tile.cols) + double{tile.eps});
  double value = (x(col) - mean) * rstd * input_value(tile.dtype, tile.seed, tile.y_id, col);
  if (kind == RowKind::layernorm) value += input_value(tile.dtype, tile.seed, tile.z_id, col);
  out[sample] = value;
}

__global__ void elementwise_reference_at(Tile tile, Fn fn, const int64_t* positions, int count, double* out) {
  const int sample = blockIdx.x * blockDim.x + threadIdx.x;
  if (sample >= count) return;
  const int64_t i = positions[sample];
  const double x = input_value(tile.dtype, tile.seed, tile.x_id, i);
  const double y = fn == Fn::bias ? input_value(tile.dtype, tile.seed, tile.y_id, i % tile.cols)
                                  : input_value(tile.dtype, tile.seed, tile.y_id, i);
  double value = x;
  switch (fn) {
    case Fn::add:
    case Fn::bias:
      value = x + y;
      break;
    case Fn::mul:
      value = x * y;
      break;
    case Fn::relu:
      value = fmax(x, 0.0);
      break;
    case Fn::gelu:
      value = 0.5 * x * (1 + erf(x / sqrt(2.0)));
      break;
    case Fn::gelu_tanh:
      value = 0.5 * x * (1 + tanh(sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
      break;
    case Fn::silu:
      value = x / (1 + exp(-x));
      break;
    case Fn::swiglu:
      value = x / (1 + exp(-x)) * y;
      break;
  }
  out[sample] = value;
}

// ---- operands and paths

// Copies of the inputs and the output spanning `rotate_bytes`; gamma, beta and a bias row are small and read
// by every launch (as a layer's parameters are).
struct Operands {
  int copies = 1;
  std::vector<DeviceBuffer> x, second;
  DeviceBuffer out;  // one output, written by every launch (PyTorch's captured calls reuse one block too)
  DeviceBuffer gamma, beta;
};

OutputType output_type_of(Dtype dtype) {
  return dtype == Dtype::bf16 ? OutputType::bf16 : dtype == Dtype::fp16 ? OutputType::fp16 : OutputType::fp32;
}

Operands make_operands(const Tile& tile, bool second_tile, int64_t row_params, size_t rotate_bytes) {
  const size_t element = element_bytes(tile.dtype);
  const size_t tile_bytes = static_cast<size_t>(tile.elements()) * element;
  const size_t set_bytes = tile_bytes * (second_tile ? 3 : 2);
  Operands operands;
  operands.copies = static_cast<int>(std::clamp<size_t>((rotate_bytes + set_bytes - 1) / set_bytes, 1, 64));
  for (int copy = 0; copy < operands.copies; ++copy) {
    operands.x.emplace_back(tile_bytes);
    if (copy == 0) operands.out = DeviceBuffer(tile_bytes);
    if (second_tile) operands.second.emplace_back(tile_bytes);
    if (copy == 0) {
      fill_input<<<grid_for(tile.elements()), 256>>>(tile.dtype, tile.seed, tile.x_id, tile.elements(),
                                                     operands.x[0].get());
      if (second_tile)
        fill_input<<<grid_for(tile.elements()), 256>>>(tile.dtype, tile.seed,
                                                       tile.residual ? tile.r_id : tile.y_id, tile.elements(),
                                                       operands.second[0].get());
      check_launch("fill inputs");
      continue;
    }
    TESSERA_CUDA(
        cudaMemcpy(operands.x[copy].get(), operands.x[0].get(), tile_bytes, cudaMemcpyDeviceToDevice));
    if (second_tile)
      TESSERA_CUDA(cudaMemcpy(operands.second[copy].get(), operands.second[0].get(), tile_bytes,
                              cudaMemcpyDeviceToDevice));
  }
  // The row parameters: gamma (and beta), or a bias row.
  if (row_params > 0) {
    operands.gamma = DeviceBuffer(static_cast<size_t>(tile.cols) * element);
    fill_input<<<grid_for(tile.cols), 256>>>(tile.dtype, tile.seed, tile.y_id, tile.cols,
                                             operands.gamma.get());
  }
  if (row_params > 1) {
    operands.beta = DeviceBuffer(static_cast<size_t>(tile.cols) * element);
    fill_input<<<grid_for(tile.cols), 256>>>(tile.dtype, tile.seed, tile.z_id, tile.cols,
                                             operands.beta.get());
  }
  check_launch("fill row parameters");
  return operands;
}

Tile tile_of(const OpArgs& args) {
  Tile tile;
  tile.rows = args.integer("rows");
  tile.cols = args.integer("cols");
  tile.dtype = parse_dtype(args.get("dtype"));
  if (tile.dtype == Dtype::int8)
    fail(args.get("kind") + " " + args.text + ": a vector op takes fp32, bf16 or fp16");
  tile.seed = static_cast<uint64_t>(args.integer("seed"));
  const auto index = static_cast<uint32_t>(args.integer("index"));
  tile.x_id = ops::tensor_id(index, 0);
  tile.y_id = ops::tensor_id(index, 1);
  tile.z_id = ops::tensor_id(index, 2);
  if (tile.rows <= 0 || tile.cols <= 0) fail(args.text + ": rows and cols must be positive");
  return tile;
}

// A vector op's one path: the runner's kernel, storing the op's type (tessera's output for these kinds).
PathSpec the_path(const OpArgs& args, const Tile& tile, const OpSpec& spec) {
  PathSpec path;
  path.name = std::string("cuda-") + args.get("dtype");
  path.numerics = true;
  path.output = output_type_of(tile.dtype);
  path.tolerance = tolerance_for(path.output, tile.dtype != Dtype::fp32, false);
  path.bytes = spec.bytes;
  return path;
}

OpSpec spec_of(const OpArgs& args, const Tile& tile, int inputs) {
  OpSpec spec;
  spec.kind = args.get("kind");
  spec.name = args.get("name");
  spec.op.set("kind", spec.kind).set("name", spec.name).set("index", args.integer("index"));
  spec.op.set("rows", tile.rows).set("cols", tile.cols);
  spec.seed = tile.seed;
  spec.out_elements = tile.elements();
  spec.work = static_cast<double>(tile.elements());
  spec.work_note = "output elements, not floating-point operations";
  spec.rate_kind = rate_kind_of(tile.dtype);
  spec.bytes = static_cast<double>(tile.elements()) * element_bytes(tile.dtype) * (inputs + 1);
  return spec;
}

template <RowKind K>
OpMeasurement run_rows(const OpArgs& args, const RunContext& context) {
  Tile tile = tile_of(args);
  OpSpec spec = spec_of(args, tile, 1);
  if (K != RowKind::softmax && args.get("residual") == "true") {
    // The norm of X + R (the simulator's add & norm, ops/kinds/norm.cpp: R is tensor slot 3): one pass reads
    // both.
    tile.residual = true;
    tile.r_id = ops::tensor_id(static_cast<uint32_t>(args.integer("index")), 3);
    spec = spec_of(args, tile, 2);
    spec.op.set("residual", "true");
  }
  if (K == RowKind::softmax) {
    tile.scale = static_cast<float>(args.real("scale"));
    tile.causal = args.get("causal") == "true";
    if (tile.causal && tile.rows > tile.cols) fail(args.text + ": a causal softmax needs rows <= cols");
    spec.op.set("scale", static_cast<double>(tile.scale)).set("causal", tile.causal ? "true" : "false");
  } else {
    tile.eps = static_cast<float>(args.real("eps"));
    spec.op.set("eps", args.real("eps"));
  }
  spec.op.set("dtype", args.get("dtype")).set("seed", static_cast<int64_t>(tile.seed));
  spec.reference = [tile](const int64_t* positions, int count, double* out) {
    row_reference_at<<<(count + 255) / 256, 256>>>(tile, K, positions, count, out);
  };
  PathSpec path = the_path(args, tile, spec);
  path.build = [tile, name = spec.name, path_name = path.name](const RunContext& run,
                                                               std::string* note) -> std::optional<LivePath> {
    const std::vector<RowVariant> variants = row_variants_of<K>(tile);
    if (variants.empty()) {
      *note = "rows of " + std::to_string(tile.cols) + " columns are longer than a row kernel holds";
      return std::nullopt;
    }
    const int64_t params = K == RowKind::layernorm ? 2 : K == RowKind::rmsnorm ? 1 : 0;
    auto selected = std::make_shared<int>(0);
    LivePath live = live_on(make_operands(tile, tile.residual, params, run.rotate_bytes));
    Operands* data = static_cast<Operands*>(live.state.get());
    live.launch = [variants, selected, data, tile](int i) {
      const int copy = i % data->copies;
      const void* residual = tile.residual ? data->second[copy].get() : nullptr;
      variants[*selected].launch(tile, data->x[copy].get(), residual, data->gamma.get(), data->beta.get(),
                                 data->out.get());
    };
    std::vector<std::string> names;
    for (const RowVariant& variant : variants) names.push_back(variant.name);
    if (choose_named(
            names, [&](int i) { *selected = i; }, run.pinned_choice(name, path_name), "row-kernel shapes",
            live))
      return live;
    *note = "no row-kernel candidate ran";
    return std::nullopt;
  };
  spec.paths.push_back(path);
  return measure_op(spec, context);
}

const std::vector<std::string>& fn_names() {
  static const std::vector<std::string> names = {"add",  "mul",       "bias", "relu",
                                                 "gelu", "gelu_tanh", "silu", "swiglu"};
  return names;
}

OpMeasurement run_elementwise(const OpArgs& args, const RunContext& context) {
  Tile tile = tile_of(args);
  const std::string fn_name = args.get("fn");
  const auto found = std::find(fn_names().begin(), fn_names().end(), fn_name);
  if (found == fn_names().end()) fail(args.text + ": no elementwise fn " + fn_name);
  const auto fn = static_cast<Fn>(found - fn_names().begin());
  const bool second_tile = fn == Fn::add || fn == Fn::mul || fn == Fn::swiglu;
  OpSpec spec = spec_of(args, tile, second_tile ? 2 : 1);
  spec.op.set("fn", fn_name).set("dtype", args.get("dtype")).set("seed", static_cast<int64_t>(tile.seed));
  spec.reference = [tile, fn](const int64_t* positions, int count, double* out) {
    elementwise_reference_at<<<(count + 255) / 256, 256>>>(tile, fn, positions, count, out);
  };
  PathSpec path = the_path(args, tile, spec);
  path.build = [tile, fn, second_tile, name = spec.name, path_name = path.name](
                   const RunContext& run, std::string* note) -> std::optional<LivePath> {
    LivePath live = live_on(make_operands(tile, second_tile, fn == Fn::bias ? 1 : 0, run.rotate_bytes));
    Operands* data = static_cast<Operands*>(live.state.get());
    auto unroll = std::make_shared<int>(1);
    live.launch = [data, tile, fn, second_tile, unroll](int i) {
      const int copy = i % data->copies;
      const void* second = second_tile ? data->second[copy].get() : data->gamma.get();
      switch (tile.dtype) {
        case Dtype::fp32:
          return launch_elementwise<Elem::fp32>(fn, *unroll, tile, data->x[copy].get(), second,
                                                data->out.get());
        case Dtype::bf16:
          return launch_elementwise<Elem::bf16>(fn, *unroll, tile, data->x[copy].get(), second,
                                                data->out.get());
        default:
          return launch_elementwise<Elem::fp16>(fn, *unroll, tile, data->x[copy].get(), second,
                                                data->out.get());
      }
    };
    std::vector<std::string> names;
    for (int u : kUnrolls) names.push_back(std::to_string(u) + " vector(s) a thread");
    if (choose_named(
            names, [&](int i) { *unroll = kUnrolls[i]; }, run.pinned_choice(name, path_name),
            "vectors a thread", live))
      return live;
    *note = "no elementwise kernel shape ran";
    return std::nullopt;
  };
  spec.paths.push_back(path);
  return measure_op(spec, context);
}

}  // namespace

void register_vector() {
  op_registry()["softmax"] = run_rows<RowKind::softmax>;
  op_registry()["layernorm"] = run_rows<RowKind::layernorm>;
  op_registry()["rmsnorm"] = run_rows<RowKind::rmsnorm>;
  op_registry()["elementwise"] = run_elementwise;
}

}  // namespace tessera::gpu
