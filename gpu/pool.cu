// Max and average pooling on the GPU, NHWC as tessera stores it: X [n*h*w, c], O [n*p*q, c], with
// ops/reference.cpp's semantics: padded positions take no part in a max, and an average divides the window's
// sum by r*s whatever the padding (PyTorch's count_include_pad=True). Inputs come from the same counter-based
// generator as the simulator's. A pool is memory-bound: one kernel, a thread per output pixel and group of
// channels (16-byte loads where the channels allow; a warp for a large window), timed like the other
// operators' paths, with fp32 output as tessera's reference produces it and 16-bit output as frameworks store
// it. PyTorch's max_pool2d and avg_pool2d are timed next to it by scripts/gpu_torch_reference.py.
#include <cmath>
#include <type_traits>

#include "gpu/device.cuh"

namespace tessera::gpu {

namespace {

struct Pool {
  int64_t n, c, h, w, r, s, stride, pad;
  bool average;
  int width = 0;  // channels a thread of the small-window kernel takes (0: the widest that fills the SMs)
  int block = 0;  // its threads a block (0: 256)
  Dtype dtype;
  uint64_t seed;
  uint32_t x_id;
  __host__ __device__ int64_t p() const { return (h + 2 * pad - r) / stride + 1; }
  __host__ __device__ int64_t q() const { return (w + 2 * pad - s) / stride + 1; }
  __host__ __device__ int64_t x_elements() const { return n * h * w * c; }
  __host__ __device__ int64_t o_elements() const { return n * p() * q() * c; }
  __host__ __device__ double window_reads() const { return static_cast<double>(o_elements()) * r * s; }
};

// The unsigned type of `B` bytes: one load or store of V elements at once.
template <int B>
using Word = std::conditional_t<
    B == 16, uint4,
    std::conditional_t<B == 8, uint2,
                       std::conditional_t<B == 4, uint32_t, std::conditional_t<B == 2, uint16_t, uint8_t>>>>;

template <Dtype D>
using Element =
    std::conditional_t<D == Dtype::fp32, float, std::conditional_t<D == Dtype::int8, int8_t, uint16_t>>;

template <Dtype D>
__device__ inline float to_float(Element<D> value) {
  if constexpr (D == Dtype::bf16) return ops::bf16_to_float(value);
  if constexpr (D == Dtype::fp16) return ops::fp16_to_float(value);
  return static_cast<float>(value);
}

// `V` consecutive channels of element `index` as floats, in one load of V elements' bytes (the channel group
// starts on that many bytes: V divides the channels, and cudaMalloc aligns the tensor).
template <Dtype D, int V>
__device__ void load(const void* x, int64_t index, float (&out)[V]) {
  using T = Element<D>;
  using W = Word<V * sizeof(T)>;
  union {
    W word;
    T elements[V];
  } packed;
  packed.word = *reinterpret_cast<const W*>(static_cast<const T*>(x) + index);
#pragma unroll
  for (int i = 0; i < V; ++i) out[i] = to_float<D>(packed.elements[i]);
}

// Output storage: fp32 (tessera's), int32 (int8 max), or the input's 16-bit type (round to nearest even).
enum class Store { fp32, int32, same16 };

template <Dtype D, Store S, int V>
__device__ void store(void* out, int64_t index, const float (&values)[V]) {
  for (int i = 0; i < V; ++i) {
    if constexpr (S == Store::fp32) static_cast<float*>(out)[index + i] = values[i];
    if constexpr (S == Store::int32) static_cast<int32_t*>(out)[index + i] = static_cast<int32_t>(values[i]);
    if constexpr (S == Store::same16)
      static_cast<uint16_t*>(out)[index + i] =
          D == Dtype::bf16 ? ops::float_to_bf16(values[i]) : ops::float_to_fp16(values[i]);
  }
}

// store() in one store of V outputs' bytes where that is 16 bytes or less.
template <Dtype D, Store S, int V>
__device__ void store_wide(void* out, int64_t index, const float (&values)[V]) {
  using T =
      std::conditional_t<S == Store::fp32, float, std::conditional_t<S == Store::int32, int32_t, uint16_t>>;
  if constexpr (V * sizeof(T) <= 16 && ((V * sizeof(T)) & (V * sizeof(T) - 1)) == 0) {
    union {
      Word<V * sizeof(T)> word;
      T elements[V];
    } packed;
#pragma unroll
    for (int i = 0; i < V; ++i) {
      if constexpr (S == Store::fp32) packed.elements[i] = values[i];
      if constexpr (S == Store::int32) packed.elements[i] = static_cast<int32_t>(values[i]);
      if constexpr (S == Store::same16)
        packed.elements[i] = D == Dtype::bf16 ? ops::float_to_bf16(values[i]) : ops::float_to_fp16(values[i]);
    }
    *reinterpret_cast<Word<V * sizeof(T)>*>(static_cast<T*>(out) + index) = packed.word;
  } else {
    store<D, S, V>(out, index, values);
  }
}

template <Dtype D, Store S, int V>
__global__ void pool_kernel(Pool v, const void* x, void* out) {
  const int64_t groups = v.c / V, p = v.p(), q = v.q(), count = v.n * p * q * groups;
  const float scale = 1.0f / static_cast<float>(v.r * v.s);
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t channel = (i % groups) * V, pixel = i / groups;
    const int64_t oq = pixel % q, op = (pixel / q) % p, image = pixel / (p * q);
    float result[V];
    for (int j = 0; j < V; ++j) result[j] = v.average ? 0.0f : -INFINITY;
    for (int64_t fr = 0; fr < v.r; ++fr) {
      const int64_t ih = op * v.stride + fr - v.pad;
      if (ih < 0 || ih >= v.h) continue;
      for (int64_t fs = 0; fs < v.s; ++fs) {
        const int64_t iw = oq * v.stride + fs - v.pad;
        if (iw < 0 || iw >= v.w) continue;
        float values[V];
        load<D, V>(x, ((image * v.h + ih) * v.w + iw) * v.c + channel, values);
        for (int j = 0; j < V; ++j)
          result[j] = v.average ? result[j] + values[j] : fmaxf(result[j], values[j]);
      }
    }
    if (v.average)
      for (int j = 0; j < V; ++j) result[j] *= scale;
    store<D, S, V>(out, pixel * v.c + channel, result);
  }
}

// n / d for n < 2^31 by a multiply-high and a shift (Granlund and Montgomery's method, as PyTorch's
// IntDivider): a 32-bit division by a runtime divisor is some twenty dependent instructions, and a small
// pool's time is its latency, which the index arithmetic before the first load adds to.
struct FastDiv {
  uint32_t divisor = 1, multiplier = 1, shift = 0;
  FastDiv() = default;
  explicit FastDiv(uint32_t d) : divisor(d) {
    while (shift < 32 && (uint64_t{1} << shift) < d) ++shift;
    multiplier = static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << shift) - d)) / d + 1);
  }
  __device__ uint32_t div(uint32_t n) const { return (__umulhi(n, multiplier) + n) >> shift; }
};

// What pool_fixed's threads need, decided on the host: the divisors and the output count in 32 bits.
struct FixedShape {
  FastDiv groups, q, p;
  uint32_t count;
  int h, w, c, stride, pad;
  bool average;
};

// A small window known at compile time (2x2, 3x3: every pool of the shipped networks but the global ones):
// the R*W loads of a thread are all issued before the first is used (through the read-only path), so a thread
// waits for DRAM once rather than once per tap. Each tap loads unconditionally from its position clamped into
// the image and a padded tap then takes the neutral value (a load under a branch was issued only after the
// previous tap's had returned: Nsight Compute showed nine DRAM latencies a thread, 7 us for AlexNet's pool1);
// 32-bit index arithmetic with the divisions as multiplies; the outputs stored 16 bytes at a time.
template <Dtype D, Store S, int V, int R, int W>
__global__ void pool_fixed(FixedShape v, const void* __restrict__ x, void* __restrict__ out) {
  using T = Element<D>;
  using Vec = Word<V * sizeof(T)>;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < v.count; i += gridDim.x * blockDim.x) {
    const uint32_t pixel = v.groups.div(i), channel = (i - pixel * v.groups.divisor) * V;
    const uint32_t row = v.q.div(pixel), oq = pixel - row * v.q.divisor;
    const uint32_t image = v.p.div(row), op = row - image * v.p.divisor;
    const int ih0 = static_cast<int>(op) * v.stride - v.pad, iw0 = static_cast<int>(oq) * v.stride - v.pad;
    const T* base = static_cast<const T*>(x) + static_cast<int64_t>(image) * v.h * v.w * v.c + channel;
    float values[R * W][V];
#pragma unroll
    for (int tap = 0; tap < R * W; ++tap) {
      const int ih = ih0 + tap / W, iw = iw0 + tap % W;
      const int ch = min(max(ih, 0), v.h - 1), cw = min(max(iw, 0), v.w - 1);
      union {
        Vec word;
        T elements[V];
      } packed;
      packed.word = __ldg(reinterpret_cast<const Vec*>(base + (ch * v.w + cw) * v.c));
#pragma unroll
      for (int j = 0; j < V; ++j) values[tap][j] = to_float<D>(packed.elements[j]);
    }
    if (v.pad != 0) {
#pragma unroll
      for (int tap = 0; tap < R * W; ++tap) {
        const int ih = ih0 + tap / W, iw = iw0 + tap % W;
        if (ih < 0 || ih >= v.h || iw < 0 || iw >= v.w)
#pragma unroll
          for (int j = 0; j < V; ++j) values[tap][j] = v.average ? 0.0f : -INFINITY;
      }
    }
    float result[V];
#pragma unroll
    for (int j = 0; j < V; ++j) {
      result[j] = values[0][j];
#pragma unroll
      for (int tap = 1; tap < R * W; ++tap)
        result[j] = v.average ? result[j] + values[tap][j] : fmaxf(result[j], values[tap][j]);
      if (v.average) result[j] *= 1.0f / static_cast<float>(R * W);
    }
    store_wide<D, S, V>(out, static_cast<int64_t>(pixel) * v.c + channel, result);
  }
}

// Large windows over few outputs (a global average pool: 7x7 over 1280 channels is 160 channel groups, too
// few threads to hide DRAM latency over 49 loads each): a warp per output pixel and channel group, its lanes
// taking the window's elements in turn, then a shuffle reduction.
template <Dtype D, Store S, int V>
__global__ void pool_window_split(Pool v, const void* x, void* out) {
  const int64_t groups = v.c / V, p = v.p(), q = v.q(), count = v.n * p * q * groups;
  const int64_t taps = v.r * v.s, warps = int64_t{gridDim.x} * blockDim.x / 32;
  const int lane = threadIdx.x % 32;
  for (int64_t i = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) / 32; i < count; i += warps) {
    const int64_t channel = (i % groups) * V, pixel = i / groups;  // the same for the whole warp
    const int64_t oq = pixel % q, op = (pixel / q) % p, image = pixel / (p * q);
    float result[V];
    for (int j = 0; j < V; ++j) result[j] = v.average ? 0.0f : -INFINITY;
    for (int64_t tap = lane; tap < taps; tap += 32) {
      const int64_t ih = op * v.stride + tap / v.s - v.pad, iw = oq * v.stride + tap % v.s - v.pad;
      if (ih < 0 || ih >= v.h || iw < 0 || iw >= v.w) continue;
      float values[V];
      load<D, V>(x, ((image * v.h + ih) * v.w + iw) * v.c + channel, values);
      for (int j = 0; j < V; ++j) result[j] = v.average ? result[j] + values[j] : fmaxf(result[j], values[j]);
    }
    for (int offset = 16; offset > 0; offset /= 2)
      for (int j = 0; j < V; ++j) {
        const float other = __shfl_down_sync(0xffffffffu, result[j], offset);
        result[j] = v.average ? result[j] + other : fmaxf(result[j], other);
      }
    if (lane != 0) continue;
    if (v.average)
      for (int j = 0; j < V; ++j) result[j] *= 1.0f / static_cast<float>(taps);
    store<D, S, V>(out, pixel * v.c + channel, result);
  }
}

// The exact output at the sampled positions, in float64 from the generator's values.
__global__ void pool_reference_at(Pool v, const int64_t* indices, int count, double* out) {
  const int sample = blockIdx.x * blockDim.x + threadIdx.x;
  if (sample >= count) return;
  const int64_t channel = indices[sample] % v.c, pixel = indices[sample] / v.c;
  const int64_t oq = pixel % v.q(), op = (pixel / v.q()) % v.p(), image = pixel / (v.p() * v.q());
  double result = v.average ? 0.0 : -INFINITY;
  for (int64_t fr = 0; fr < v.r; ++fr)
    for (int64_t fs = 0; fs < v.s; ++fs) {
      const int64_t ih = op * v.stride + fr - v.pad, iw = oq * v.stride + fs - v.pad;
      if (ih < 0 || ih >= v.h || iw < 0 || iw >= v.w) continue;
      const double value =
          input_value(v.dtype, v.seed, v.x_id, ((image * v.h + ih) * v.w + iw) * v.c + channel);
      result = v.average ? result + value : fmax(result, value);
    }
  out[sample] = v.average ? result / static_cast<double>(v.r * v.s) : result;
}

struct Path {
  std::string name;
  Store store;
  bool numerics;  // tessera's output type (fp32, or int32 for int8)
};

std::vector<Path> paths_for(Dtype dtype) {
  switch (dtype) {
    case Dtype::fp32:
      return {{"cuda-fp32", Store::fp32, true}};
    case Dtype::bf16:
      return {{"cuda-bf16-fp32out", Store::fp32, true}, {"cuda-bf16-bf16out", Store::same16, false}};
    case Dtype::fp16:
      return {{"cuda-fp16-fp32out", Store::fp32, true}, {"cuda-fp16-fp16out", Store::same16, false}};
    case Dtype::int8:
      return {{"cuda-int8-int32", Store::int32, true}};
  }
  return {};
}

size_t output_bytes(Store store) {
  return store == Store::same16 ? 2 : 4;
}

// pool_fixed with `width` channels a thread (kWide, a half or a quarter of it, or 1) in blocks of `block`.
template <Dtype D, Store S, int kWide, int R>
void launch_fixed(int width, int block, const Pool& v, const void* x, void* out) {
  constexpr int kHalf = kWide > 1 ? kWide / 2 : 1, kQuarter = kWide > 3 ? kWide / 4 : 1;
  const auto groups = static_cast<uint32_t>(v.c / width);
  FixedShape shape{FastDiv(groups),
                   FastDiv(static_cast<uint32_t>(v.q())),
                   FastDiv(static_cast<uint32_t>(v.p())),
                   static_cast<uint32_t>(v.o_elements() / width),
                   static_cast<int>(v.h),
                   static_cast<int>(v.w),
                   static_cast<int>(v.c),
                   static_cast<int>(v.stride),
                   static_cast<int>(v.pad),
                   v.average};
  const auto blocks = static_cast<unsigned>(std::min<int64_t>((shape.count + block - 1) / block, 65536));
  if (width == kWide) {
    pool_fixed<D, S, kWide, R, R><<<blocks, block, 0, work_stream()>>>(shape, x, out);
  } else if (width == kHalf) {
    pool_fixed<D, S, kHalf, R, R><<<blocks, block, 0, work_stream()>>>(shape, x, out);
  } else if (width == kQuarter) {
    pool_fixed<D, S, kQuarter, R, R><<<blocks, block, 0, work_stream()>>>(shape, x, out);
  } else {
    pool_fixed<D, S, 1, R, R><<<blocks, block, 0, work_stream()>>>(shape, x, out);
  }
}

// The kernel for this dtype and store, with the widest channel group the channel count allows; windows of 16
// elements or more split over a warp.
template <Dtype D, Store S>
void launch_for(const Pool& v, const void* x, void* out) {
  constexpr int kWide = D == Dtype::fp32 ? 4 : (D == Dtype::int8 ? 1 : 8);
  const bool split = v.r * v.s >= 16;
  const int64_t threads = (v.c % kWide == 0 ? v.o_elements() / kWide : v.o_elements()) * (split ? 32 : 1);
  const bool small_indices = v.x_elements() < (int64_t{1} << 31) && v.o_elements() < (int64_t{1} << 31);
  if (small_indices && v.r == v.s && (v.r == 2 || v.r == 3)) {
    // The widest channel group that still gives every SM several blocks: a pool's few outputs in 16-byte
    // groups left a third of the H200's SMs idle (ResNet-50's pool1: 98 blocks for 132 SMs).
    constexpr int64_t kEnoughThreads = 132 * 4 * 256;
    auto fits = [&](int width) {
      return v.c % width == 0 && (v.o_elements() / width >= kEnoughThreads || width == 1);
    };
    const int width = v.width           ? v.width
                      : fits(kWide)     ? kWide
                      : fits(kWide / 2) ? kWide / 2
                      : fits(kWide / 4) ? kWide / 4
                                        : 1;
    const int block = v.block ? v.block : 256;
    if (v.r == 2) {
      launch_fixed<D, S, kWide, 2>(width, block, v, x, out);
    } else {
      launch_fixed<D, S, kWide, 3>(width, block, v, x, out);
    }
    return;
  }
  if (v.c % kWide == 0) {
    if (split) {
      pool_window_split<D, S, kWide><<<grid_for(threads), 256, 0, work_stream()>>>(v, x, out);
    } else {
      pool_kernel<D, S, kWide><<<grid_for(threads), 256, 0, work_stream()>>>(v, x, out);
    }
  } else if (split) {
    pool_window_split<D, S, 1><<<grid_for(threads), 256, 0, work_stream()>>>(v, x, out);
  } else {
    pool_kernel<D, S, 1><<<grid_for(threads), 256, 0, work_stream()>>>(v, x, out);
  }
}

void launch_pool(const Pool& v, Store store, const void* x, void* out) {
  switch (v.dtype) {
    case Dtype::fp32:
      return launch_for<Dtype::fp32, Store::fp32>(v, x, out);
    case Dtype::int8:
      return launch_for<Dtype::int8, Store::int32>(v, x, out);
    case Dtype::bf16:
      return store == Store::fp32 ? launch_for<Dtype::bf16, Store::fp32>(v, x, out)
                                  : launch_for<Dtype::bf16, Store::same16>(v, x, out);
    case Dtype::fp16:
      return store == Store::fp32 ? launch_for<Dtype::fp16, Store::fp32>(v, x, out)
                                  : launch_for<Dtype::fp16, Store::same16>(v, x, out);
  }
}

// Copies of X and O spanning `rotate_bytes`, so that timed launches read DRAM, not the L2.
struct Operands {
  int copies = 1;
  std::vector<DeviceBuffer> x;
  DeviceBuffer out;  // one output, written by every launch (PyTorch's captured calls reuse one block too)
};

Operands make_operands(const Pool& v, size_t out_bytes, size_t rotate_bytes) {
  const size_t element = element_bytes(v.dtype);
  const size_t set_bytes = v.x_elements() * element + v.o_elements() * out_bytes;
  Operands operands;
  operands.copies = static_cast<int>(std::clamp<size_t>((rotate_bytes + set_bytes - 1) / set_bytes, 1, 64));
  for (int copy = 0; copy < operands.copies; ++copy) {
    operands.x.emplace_back(v.x_elements() * element);
    if (copy == 0) operands.out = DeviceBuffer(v.o_elements() * out_bytes);
    if (copy == 0) {
      fill_input<<<grid_for(v.x_elements()), 256>>>(v.dtype, v.seed, v.x_id, v.x_elements(),
                                                    operands.x[0].get());
      check_launch("fill inputs");
    } else {
      TESSERA_CUDA(cudaMemcpy(operands.x[copy].get(), operands.x[0].get(), operands.x[0].bytes(),
                              cudaMemcpyDeviceToDevice));
    }
  }
  return operands;
}

OpMeasurement run_pool(const OpArgs& args, const RunContext& context) {
  Pool v{};
  v.n = args.integer("n"), v.c = args.integer("c"), v.h = args.integer("h"), v.w = args.integer("w");
  v.r = args.integer("r"), v.s = args.integer("s");
  v.stride = args.integer("stride"), v.pad = args.integer("pad");
  const std::string mode = args.get("mode");
  if (mode != "max" && mode != "avg") fail("pool " + args.text + ": mode is max or avg");
  v.average = mode == "avg";
  v.dtype = parse_dtype(args.get("dtype"));
  v.seed = static_cast<uint64_t>(args.integer("seed"));
  const uint32_t index = static_cast<uint32_t>(args.integer("index"));
  v.x_id = ops::tensor_id(index, 0);
  if (v.stride <= 0 || v.p() <= 0 || v.q() <= 0) fail("pool " + args.text + ": not a valid pooling");

  Json op = Json::object();
  op.set("kind", "pool").set("name", args.get("name")).set("index", static_cast<int64_t>(index));
  op.set("n", v.n).set("c", v.c).set("h", v.h).set("w", v.w).set("r", v.r).set("s", v.s);
  op.set("stride", v.stride).set("pad", v.pad).set("mode", mode);
  op.set("dtype", args.get("dtype")).set("seed", static_cast<int64_t>(v.seed));
  if (v.dtype == Dtype::int8 && v.average) {
    // tessera's int8 output is int32, and an average of int8 values is not an integer.
    OpMeasurement missing;
    missing.record.set("op", op).set("no_gpu_path", "an int8 average pool has no exact int32 output");
    return missing;
  }

  OpSpec spec;
  spec.kind = "pool";
  spec.name = args.get("name");
  spec.op = op;
  spec.seed = v.seed;
  spec.out_elements = v.o_elements();
  // One compare or add per window element read: the rate is in those, not in multiply-accumulates. The floor
  // is the memory term (the matrix rate makes the compute term negligible): X read once, O written.
  spec.work = v.window_reads();
  spec.work_note = "window elements read (one compare or add each), not multiply-accumulates";
  spec.rate_kind = rate_kind_of(v.dtype);
  const double input_bytes = v.x_elements() * static_cast<double>(element_bytes(v.dtype));
  spec.bytes = input_bytes + v.o_elements() * 4.0;
  spec.reference = [v](const int64_t* positions, int count, double* out) {
    pool_reference_at<<<(count + 255) / 256, 256>>>(v, positions, count, out);
  };
  for (const Path& path : paths_for(v.dtype)) {
    PathSpec path_spec;
    path_spec.name = path.name;
    path_spec.numerics = path.numerics;
    path_spec.output = path.store == Store::int32  ? OutputType::int32
                       : path.store == Store::fp32 ? OutputType::fp32
                       : v.dtype == Dtype::bf16    ? OutputType::bf16
                                                   : OutputType::fp16;
    path_spec.tolerance =
        tolerance_for(path_spec.output, v.dtype == Dtype::bf16 || v.dtype == Dtype::fp16, false);
    path_spec.bytes = input_bytes + static_cast<double>(v.o_elements() * output_bytes(path.store));
    path_spec.build = [v, path, name = spec.name](const RunContext& run,
                                                  std::string* note) -> std::optional<LivePath> {
      auto operands =
          std::make_shared<Operands>(make_operands(v, output_bytes(path.store), run.rotate_bytes));
      LivePath live;
      live.state = operands;
      live.copies = operands->copies;
      live.output = operands->out.get();
      live.output_at = [data = operands.get()](int) { return data->out.get(); };
      Operands* data = operands.get();
      auto shape = std::make_shared<Pool>(v);
      live.launch = [shape, store = path.store, data](int i) {
        const int copy = i % data->copies;
        launch_pool(*shape, store, data->x[copy].get(), data->out.get());
      };
      // A small window's kernel: the channels a thread takes and the threads a block, chosen by device time
      // (wide loads against more threads in flight; a small pool's blocks spread over more SMs).
      const int wide = v.dtype == Dtype::fp32 ? 4 : (v.dtype == Dtype::int8 ? 1 : 8);
      std::vector<std::pair<int, int>> shapes;  // (width, block)
      for (int width = wide; width >= 1; width /= 2)
        if (v.c % width == 0)
          for (int block : {64, 128, 256}) shapes.emplace_back(width, block);
      if (v.r != v.s || (v.r != 2 && v.r != 3) || shapes.size() < 2) return live;
      std::vector<std::string> names;
      for (const auto& [width, block] : shapes)
        names.push_back(std::to_string(width) + " channel(s) a thread, blocks of " + std::to_string(block));
      if (choose_named(
              names,
              [&](int i) {
                shape->width = shapes[static_cast<size_t>(i)].first;
                shape->block = shapes[static_cast<size_t>(i)].second;
              },
              run.pinned_choice(name, path.name), "kernel shapes", live))
        return live;
      *note = "no channel group of the kernel ran";
      return std::nullopt;
    };
    spec.paths.push_back(path_spec);
  }
  return measure_op(spec, context);
}

}  // namespace

void register_pool() {
  op_registry()["pool"] = run_pool;
}

}  // namespace tessera::gpu
