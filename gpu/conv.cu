// conv2d on the GPU, NHWC as tessera stores it: X [n*h*w, c], W [groups*r*s*(c/groups), k/groups] with the
// taps in (r, s, c) order, O [n*p*q, k] (docs/design-notes.md, "Convolution"). Inputs come from the same
// counter-based generator as the simulator's. Four ways, each timed as a whole:
//   im2col+cublaslt-*: an im2col kernel writes each group's patch matrix [n*p*q, r*s*c/groups], then one
//     strided-batched cuBLASLt GEMM per group writes the group's columns of O (fp32 output as tessera
//     produces it, and 16-bit output as frameworks do);
//   cudnn_graph-*: cuDNN's graph (backend) API, as PyTorch calls it: heuristics' engine configurations, each
//     finalized plan timed, the fastest kept (cudnn_graph.hpp); fp32 output where cuDNN has an engine for it;
//   cudnn-*: cuDNN's legacy cudnnConvolutionForward with the algorithm cudnnFind measures fastest;
//   direct-*: one thread per output element summing its window (fp32 or int32 accumulation), for grouped and
//     depthwise convs (where per-group GEMMs are tiny), int8, and shapes cuBLASLt takes no algorithm for;
//   direct_tiled-*: a kernel written for ResNet's first layer (3 channels, 7x7 stride 2, bf16): a block's
//     input rows and 64 filters' weights in shared memory as fp32, each thread a row of output pixels times
//     4 or 8 filters in registers (fp32 products and sums, on the CUDA cores), bf16 or fp32 output.
// PyTorch's conv2d (cuDNN) is timed next to these by scripts/gpu_torch_reference.py.
#include <cuda_bf16.h>

#include <cmath>
#include <memory>

#include "gpu/cudnn_graph.hpp"
#include "gpu/cudnn_loader.hpp"
#include "gpu/device.cuh"
#include "gpu/epilogue.cuh"
#include "gpu/lt_matmul.hpp"

namespace tessera::gpu {

namespace {

struct Conv {
  int64_t n, c, h, w, k, r, s, stride, pad, dilation, groups;
  Dtype dtype;
  uint64_t seed;
  uint32_t x_id, w_id;
  int64_t out_h, out_w;  // set once (set_output_size): kernels read them per tap
  void set_output_size() {
    out_h = (h + 2 * pad - dilation * (r - 1) - 1) / stride + 1;
    out_w = (w + 2 * pad - dilation * (s - 1) - 1) / stride + 1;
  }
  __host__ __device__ int64_t p() const { return out_h; }
  __host__ __device__ int64_t q() const { return out_w; }
  __host__ __device__ int64_t group_c() const { return c / groups; }
  __host__ __device__ int64_t group_k() const { return k / groups; }
  __host__ __device__ int64_t taps() const { return r * s * group_c(); }
  __host__ __device__ int64_t pixels() const { return n * p() * q(); }  // rows of O (the GEMM's m)
  __host__ __device__ int64_t x_elements() const { return n * h * w * c; }
  __host__ __device__ int64_t w_elements() const { return groups * taps() * group_k(); }
  __host__ __device__ int64_t o_elements() const { return pixels() * k; }
  __host__ __device__ double macs() const { return static_cast<double>(pixels()) * k * taps(); }
};

// Where tap `tap` of output row `row` reads X (element index), or -1 in the padding. Shared by the im2col
// kernel, the direct kernel and the reference. `I` is the type of the divisions: 32-bit where every index
// fits (fits_32_bits), a few times cheaper on the GPU than 64-bit ones.
template <class I = int64_t>
__device__ int64_t source_of(const Conv& v, I row, I group, I tap) {
  const I q = static_cast<I>(v.q()), pq = static_cast<I>(v.p()) * q, s = static_cast<I>(v.s);
  const I group_c = static_cast<I>(v.group_c());
  const I image = row / pq, op = (row % pq) / q, oq = row % q;
  const I fr = tap / (s * group_c), fs = (tap / group_c) % s, channel = tap % group_c;
  const int64_t ih = int64_t{op} * v.stride - v.pad + int64_t{fr} * v.dilation;
  const int64_t iw = int64_t{oq} * v.stride - v.pad + int64_t{fs} * v.dilation;
  if (ih < 0 || ih >= v.h || iw < 0 || iw >= v.w) return -1;
  return ((int64_t{image} * v.h + ih) * v.w + iw) * v.c + int64_t{group} * int64_t{group_c} + channel;
}

// Whether every element index of X, W, O and the patch matrices fits in 31 bits.
bool fits_32_bits(const Conv& v) {
  const int64_t limit = int64_t{1} << 31;
  return v.x_elements() < limit && v.w_elements() < limit && v.o_elements() < limit &&
         v.groups * v.pixels() * v.taps() < limit;
}

// The patch matrices, group-major: patches[g][row][tap].
template <class T, class I>
__global__ void im2col(Conv v, const T* x, T* patches) {
  const I taps = static_cast<I>(v.taps()), rows = static_cast<I>(v.pixels());
  const I count = static_cast<I>(v.groups) * rows * taps;
  for (I i = blockIdx.x * I{blockDim.x} + threadIdx.x; i < count; i += I{gridDim.x} * blockDim.x) {
    const I group = i / (rows * taps), row = (i / taps) % rows, tap = i % taps;
    const int64_t from = source_of<I>(v, row, group, tap);
    patches[i] = from < 0 ? T(0) : x[from];
  }
}

// The same patch matrices where each group's channels come in whole 16-byte chunks (8 16-bit values, 4 fp32,
// 16 int8): a thread per chunk, so the index arithmetic is paid once per 16 bytes rather than per element.
template <class T, class I>
__global__ void im2col_chunks(Conv v, const T* x, T* patches) {
  constexpr I kPerChunk = 16 / sizeof(T);
  const I group_c = static_cast<I>(v.group_c()), chunks = group_c / kPerChunk;
  const I positions = static_cast<I>(v.r * v.s), rows = static_cast<I>(v.pixels());
  const I count = static_cast<I>(v.groups) * rows * positions * chunks;
  for (I i = blockIdx.x * I{blockDim.x} + threadIdx.x; i < count; i += I{gridDim.x} * blockDim.x) {
    const I chunk = i % chunks, position = (i / chunks) % positions, row = (i / (chunks * positions)) % rows;
    const I group = i / (chunks * positions * rows), tap = position * group_c + chunk * kPerChunk;
    const int64_t from = source_of<I>(v, row, group, tap);
    const uint4 value = from < 0 ? make_uint4(0, 0, 0, 0) : *reinterpret_cast<const uint4*>(x + from);
    *reinterpret_cast<uint4*>(patches + (int64_t{group} * rows + row) * (positions * group_c) + tap) = value;
  }
}

// Whether im2col_chunks applies: every group's channels, and so every pixel's, start on 16 bytes.
template <class T>
bool chunked(const Conv& v) {
  return (v.group_c() * sizeof(T)) % 16 == 0 && (v.c * sizeof(T)) % 16 == 0;
}

__device__ float element_float(Dtype dtype, const void* data, int64_t index) {
  switch (dtype) {
    case Dtype::fp32:
      return static_cast<const float*>(data)[index];
    case Dtype::bf16:
      return ops::bf16_to_float(static_cast<const uint16_t*>(data)[index]);
    case Dtype::fp16:
      return ops::fp16_to_float(static_cast<const uint16_t*>(data)[index]);
    case Dtype::int8:
      return static_cast<const int8_t*>(data)[index];
  }
  return 0;
}

// One output element per thread: fp32 accumulation (int32 for int8), like the PE array's.
template <class I>
__global__ void direct_conv(Conv v, const void* x, const void* weights, void* out) {
  const I count = static_cast<I>(v.o_elements()), taps = static_cast<I>(v.taps());
  const I group_k = static_cast<I>(v.group_k()), k = static_cast<I>(v.k);
  for (I i = blockIdx.x * I{blockDim.x} + threadIdx.x; i < count; i += I{gridDim.x} * blockDim.x) {
    const I row = i / k, column = i % k, group = column / group_k, filter = column % group_k;
    if (v.dtype == Dtype::int8) {
      int32_t sum = 0;
      for (I tap = 0; tap < taps; ++tap) {
        const int64_t from = source_of<I>(v, row, group, tap);
        if (from >= 0)
          sum += static_cast<const int8_t*>(x)[from] *
                 static_cast<const int8_t*>(weights)[(group * taps + tap) * group_k + filter];
      }
      static_cast<int32_t*>(out)[i] = sum;
    } else {
      float sum = 0;
      for (I tap = 0; tap < taps; ++tap) {
        const int64_t from = source_of<I>(v, row, group, tap);
        if (from >= 0)
          sum += element_float(v.dtype, x, from) *
                 element_float(v.dtype, weights, (group * taps + tap) * group_k + filter);
      }
      static_cast<float*>(out)[i] = sum;
    }
  }
}

// ResNet's first layer (3 channels, 7x7, stride 2): each block stages ROWS output rows' input rows (fp32,
// zeros in the padding, [channel][row][column]) and 64 filters' weights (fp32 [tap][filter]) in shared
// memory; thread (row, segment, group of FPT filters) keeps PX consecutive output pixels x FPT filters in
// registers. Per filter row and channel it reads the (PX-1)*2+7 input values its pixels' windows span once
// and the 7 taps' FPT weights (16-byte loads), then does 7*PX*FPT fused multiply-adds. bf16 in, fp32 products
// and sums, fp32 or (round to nearest even) bf16 out.
namespace tiled {
constexpr int kC = 3, kR = 7, kS = 7, kStride = 2;
constexpr int kFilters = 64, kQuads = kFilters / 4;  // filters per block; their float4s in a tap's weights
constexpr int kTaps = kR * kS * kC;

// Whether the kernel computes this conv.
bool applies(const Conv& v) {
  return v.dtype == Dtype::bf16 && v.groups == 1 && v.c == kC && v.r == kR && v.s == kS &&
         v.stride == kStride && v.dilation == 1 && v.k % kFilters == 0 && fits_32_bits(v);
}

__device__ inline void store4(float* out, const float (&value)[4]) {
  *reinterpret_cast<float4*>(out) = make_float4(value[0], value[1], value[2], value[3]);
}
__device__ inline void store4(uint16_t* out, const float (&value)[4]) {
  const __nv_bfloat162 low = __floats2bfloat162_rn(value[0], value[1]);
  const __nv_bfloat162 high = __floats2bfloat162_rn(value[2], value[3]);
  *reinterpret_cast<uint2*>(out) =
      make_uint2(*reinterpret_cast<const uint32_t*>(&low), *reinterpret_cast<const uint32_t*>(&high));
}

template <int PX, int SEGS, int ROWS, int FPT, class Out>
__global__ void __launch_bounds__(ROWS* SEGS*(kFilters / FPT))
    conv(Conv v, const uint16_t* x, const uint16_t* weights, Out* out) {
  constexpr int kWidth = (SEGS * PX - 1) * kStride + kS, kHeight = (ROWS - 1) * kStride + kR;
  constexpr int kGroups = kFilters / FPT, kThreads = ROWS * SEGS * kGroups, kSpan = (PX - 1) * kStride + kS;
  __shared__ float4 w_s[kTaps * kQuads];
  __shared__ float x_s[kC][kHeight][kWidth];
  const int t = threadIdx.x;
  const int blocks_of_filters = static_cast<int>(v.k) / kFilters;
  const int image = blockIdx.z / blocks_of_filters, filter0 = (blockIdx.z % blocks_of_filters) * kFilters;
  const int oh0 = blockIdx.y * ROWS, ow0 = blockIdx.x * (SEGS * PX);
  const int h = static_cast<int>(v.h), w = static_cast<int>(v.w), k = static_cast<int>(v.k);
  const int p = static_cast<int>(v.p()), q = static_cast<int>(v.q()), pad = static_cast<int>(v.pad);

  // Weights: 8 filters (16 bytes) a load.
  float* w_f = reinterpret_cast<float*>(w_s);
  for (int i = t; i < kTaps * (kFilters / 8); i += kThreads) {
    const int tap = i / (kFilters / 8), part = i % (kFilters / 8);
    const uint4 packed = *reinterpret_cast<const uint4*>(weights + tap * k + filter0 + part * 8);
    const uint32_t words[4] = {packed.x, packed.y, packed.z, packed.w};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      w_f[tap * kFilters + part * 8 + 2 * j] = __uint_as_float(words[j] << 16);
      w_f[tap * kFilters + part * 8 + 2 * j + 1] = __uint_as_float(words[j] & 0xffff0000u);
    }
  }
  // Input rows: consecutive threads read consecutive elements of a row.
  const int ih0 = oh0 * kStride - pad, iw0 = ow0 * kStride - pad;
  for (int i = t; i < kHeight * kWidth * kC; i += kThreads) {
    const int row = i / (kWidth * kC), column = (i / kC) % kWidth, channel = i % kC;
    const int ih = ih0 + row, iw = iw0 + column;
    float value = 0;
    if (ih >= 0 && ih < h && iw >= 0 && iw < w)
      value = __uint_as_float(uint32_t{x[((image * h + ih) * w + iw) * kC + channel]} << 16);
    x_s[channel][row][column] = value;
  }
  __syncthreads();

  const int group = t % kGroups, segment = (t / kGroups) % SEGS, row = t / (kGroups * SEGS);
  float sum[PX][FPT];
#pragma unroll
  for (int i = 0; i < PX; ++i)
#pragma unroll
    for (int j = 0; j < FPT; ++j) sum[i][j] = 0;
#pragma unroll 1
  for (int r = 0; r < kR; ++r) {
#pragma unroll
    for (int c = 0; c < kC; ++c) {
      const float* source = &x_s[c][row * kStride + r][segment * PX * kStride];
      float in[kSpan];
#pragma unroll
      for (int j = 0; j < kSpan; ++j) in[j] = source[j];
#pragma unroll
      for (int s = 0; s < kS; ++s) {
#pragma unroll
        for (int quad = 0; quad < FPT / 4; ++quad) {
          const float4 f = w_s[((r * kS + s) * kC + c) * kQuads + group * (FPT / 4) + quad];
#pragma unroll
          for (int i = 0; i < PX; ++i) {
            const float a = in[i * kStride + s];
            sum[i][4 * quad] = fmaf(a, f.x, sum[i][4 * quad]);
            sum[i][4 * quad + 1] = fmaf(a, f.y, sum[i][4 * quad + 1]);
            sum[i][4 * quad + 2] = fmaf(a, f.z, sum[i][4 * quad + 2]);
            sum[i][4 * quad + 3] = fmaf(a, f.w, sum[i][4 * quad + 3]);
          }
        }
      }
    }
  }
  const int oh = oh0 + row;
  if (oh >= p) return;
#pragma unroll
  for (int i = 0; i < PX; ++i) {
    const int ow = ow0 + segment * PX + i;
    if (ow >= q) continue;
#pragma unroll
    for (int quad = 0; quad < FPT / 4; ++quad) {
      const float value[4] = {sum[i][4 * quad], sum[i][4 * quad + 1], sum[i][4 * quad + 2],
                              sum[i][4 * quad + 3]};
      store4(out + (static_cast<int64_t>(image * p + oh) * q + ow) * k + filter0 + group * FPT + 4 * quad,
             value);
    }
  }
}

// The kernel's shapes the path times (each briefly), keeping the fastest.
struct Variant {
  const char* name;
  void (*launch)(const Conv&, const void*, const void*, void*);
};

template <int PX, int SEGS, int ROWS, int FPT, class Out>
void launch(const Conv& v, const void* x, const void* weights, void* out) {
  const dim3 grid(static_cast<unsigned>((v.q() + SEGS * PX - 1) / (SEGS * PX)),
                  static_cast<unsigned>((v.p() + ROWS - 1) / ROWS),
                  static_cast<unsigned>(v.n * (v.k / kFilters)));
  conv<PX, SEGS, ROWS, FPT, Out><<<grid, ROWS * SEGS*(kFilters / FPT), 0, work_stream()>>>(
      v, static_cast<const uint16_t*>(x), static_cast<const uint16_t*>(weights), static_cast<Out*>(out));
}

template <class Out>
std::vector<Variant> variants() {
  return {{"8 pixels x 4 filters a thread, blocks of 1x56 pixels", launch<8, 7, 1, 4, Out>},
          {"4 pixels x 4 filters a thread, blocks of 1x28 pixels", launch<4, 7, 1, 4, Out>},
          {"4 pixels x 4 filters a thread, blocks of 2x28 pixels", launch<4, 7, 2, 4, Out>},
          {"8 pixels x 4 filters a thread, blocks of 1x32 pixels", launch<8, 4, 1, 4, Out>},
          {"2 pixels x 4 filters a thread, blocks of 1x28 pixels", launch<2, 14, 1, 4, Out>},
          {"4 pixels x 8 filters a thread, blocks of 2x28 pixels", launch<4, 7, 2, 8, Out>},
          {"4 pixels x 8 filters a thread, blocks of 1x28 pixels", launch<4, 7, 1, 8, Out>},
          {"2 pixels x 8 filters a thread, blocks of 2x28 pixels", launch<2, 14, 2, 8, Out>}};
}
}  // namespace tiled

// The exact output at the sampled positions, in float64 from the generator's values.
__global__ void conv_reference_at(Conv v, Epilogue epilogue, const int64_t* indices, int count, double* out) {
  const int sample = blockIdx.x * blockDim.x + threadIdx.x;
  if (sample >= count) return;
  const int64_t row = indices[sample] / v.k, column = indices[sample] % v.k;
  const int64_t taps = v.taps(), group_k = v.group_k(), group = column / group_k, filter = column % group_k;
  double sum = 0;
  for (int64_t tap = 0; tap < taps; ++tap) {
    const int64_t from = source_of(v, row, group, tap);
    if (from >= 0)
      sum += input_value(v.dtype, v.seed, v.x_id, from) *
             input_value(v.dtype, v.seed, v.w_id, (group * taps + tap) * group_k + filter);
  }
  out[sample] = epilogue_reference(epilogue, sum, row, column);
}

enum class Method { im2col_gemm, direct, direct_tiled, cudnn, cudnn_graph };

struct Path {
  std::string name;
  Method method;
  cudaDataType input, output;
  cublasComputeType_t compute;  // im2col_gemm; for cudnn*, CUBLAS_COMPUTE_32F_FAST_TF32 allows TF32
  bool numerics;
  // cudnn_graph on channels zero-padded to 8 or 4 (X in each timed launch, W once; 0: not padded): cuDNN's
  // kernels for a first layer's 3 channels are several times slower than its 16-byte-vector ones.
  int pad_channels = 0;
};

// Padding pays for a first layer's few channels; it is written for one group of fewer than `to` 16-bit
// values.
bool pads(const Conv& v, int to) {
  return v.groups == 1 && v.c < to && v.dtype != Dtype::fp32 && v.dtype != Dtype::int8;
}

// A first layer's few channels: cuDNN's graph search takes every configuration of every heuristics mode.
bool first_layer(const Conv& v) {
  return v.groups == 1 && v.c < 8;
}

std::vector<Path> paths_for(Dtype dtype) {
  constexpr Method gemm = Method::im2col_gemm, direct = Method::direct, dnn = Method::cudnn,
                   graph = Method::cudnn_graph, tiled = Method::direct_tiled;
  switch (dtype) {
    case Dtype::fp32:
      return {{"im2col+cublaslt-fp32", gemm, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, true},
              {"im2col+cublaslt-tf32", gemm, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, false},
              {"cudnn_graph-fp32", graph, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, true},
              {"cudnn_graph-tf32", graph, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, false},
              {"cudnn-fp32", dnn, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, true},
              {"cudnn-tf32", dnn, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, false},
              {"direct-fp32", direct, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, true}};
    case Dtype::bf16:
      return {
          {"im2col+cublaslt-bf16-fp32out", gemm, CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F, true},
          {"im2col+cublaslt-bf16-bf16out", gemm, CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, false},
          {"cudnn_graph-bf16-fp32out", graph, CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F, true},
          {"cudnn_graph-bf16-bf16out", graph, CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, false},
          {"pad8+cudnn_graph-bf16-fp32out", graph, CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F, true, 8},
          {"pad8+cudnn_graph-bf16-bf16out", graph, CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, false, 8},
          {"pad4+cudnn_graph-bf16-fp32out", graph, CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F, true, 4},
          {"pad4+cudnn_graph-bf16-bf16out", graph, CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, false, 4},
          {"cudnn-bf16-bf16out", dnn, CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, false},
          {"direct_tiled-bf16-fp32out", tiled, CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F, true},
          {"direct_tiled-bf16-bf16out", tiled, CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, false},
          {"direct-bf16-fp32out", direct, CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F, true}};
    case Dtype::fp16:
      return {{"im2col+cublaslt-fp16-fp32out", gemm, CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F, true},
              {"im2col+cublaslt-fp16-fp16out", gemm, CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, false},
              {"cudnn_graph-fp16-fp32out", graph, CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F, true},
              {"cudnn_graph-fp16-fp16out", graph, CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, false},
              {"pad8+cudnn_graph-fp16-fp32out", graph, CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F, true, 8},
              {"pad8+cudnn_graph-fp16-fp16out", graph, CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, false, 8},
              {"pad4+cudnn_graph-fp16-fp32out", graph, CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F, true, 4},
              {"pad4+cudnn_graph-fp16-fp16out", graph, CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, false, 4},
              {"cudnn-fp16-fp16out", dnn, CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, false},
              {"direct-fp16-fp32out", direct, CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F, true}};
    case Dtype::int8:
      // cuBLASLt's int8 kernels want the weights transposed and every dimension a multiple of 4, cuDNN's int8
      // convs vectorised channel formats and int8 or fp32 output; the direct kernel computes any shape
      // exactly into int32.
      return {{"direct-int8-int32", direct, CUDA_R_8I, CUDA_R_32I, CUBLAS_COMPUTE_32I, true}};
  }
  return {};
}

// One strided-batched cuBLASLt GEMM over the groups: O_g^T (kg x m, ld k) = W_g^T (kg x taps) * P_g^T
// (taps x m), column-major views of tessera's row-major tensors. Each group's operands start at base + g *
// offset: the heuristic is told how aligned those starts are (a depthwise conv's output columns are one
// element apart), so that it picks kernels that may read them.
bool describe_batched_gemm(LtMatmul& matmul, const Conv& v, const Path& path) {
  const int64_t m = v.pixels(), kg = v.group_k(), taps = v.taps();
  const int64_t offsets[3] = {kg * taps, m * taps, kg};
  auto alignment = [](int64_t offset_bytes) {
    uint32_t bytes = 256;
    while (bytes > 1 && offset_bytes % bytes != 0) bytes /= 2;
    return bytes;
  };
  const uint32_t aligned[4] = {alignment(offsets[0] * static_cast<int64_t>(bytes_of(path.input))),
                               alignment(offsets[1] * static_cast<int64_t>(bytes_of(path.input))),
                               alignment(offsets[2] * static_cast<int64_t>(bytes_of(path.output))),
                               alignment(offsets[2] * static_cast<int64_t>(bytes_of(path.output)))};
  return matmul.describe_problem(path.compute, CUBLAS_OP_N, path.input, path.output, kg, taps, kg, taps, m,
                                 taps, kg, m, v.k, static_cast<int32_t>(v.groups), offsets, aligned);
}

// A 1x1 conv with stride 1 and no padding in one group: the patch matrix is X itself.
bool patches_are_x(const Conv& v) {
  return v.r == 1 && v.s == 1 && v.stride == 1 && v.pad == 0 && v.groups == 1;
}

// W [g][r][s][c/g][k/g] -> cuDNN's NHWC filter [k][r][s][c/g] (k = g*(k/g) + kk), once before timing: a
// framework keeps its weights in the layout its library wants.
template <class T>
__global__ void to_krsc(Conv v, const T* weights, T* krsc) {
  const int64_t count = v.w_elements(), taps = v.taps(), group_k = v.group_k();
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t filter = i / taps, tap = i % taps, group = filter / group_k, kk = filter % group_k;
    krsc[i] = weights[(group * taps + tap) * group_k + kk];
  }
}

// cudnnConvolutionForward over the algorithms cudnnFindConvolutionForwardAlgorithm returns (what PyTorch's
// benchmark mode asks for), the one run chosen by device time like every other library candidate.
class CudnnConv {
 public:
  CudnnConv(const Conv& v, const Path& path, const cudnn::Api& api) : api_(api) {
    const int type = path.input == CUDA_R_32F   ? cudnn::kFloat
                     : path.input == CUDA_R_16F ? cudnn::kHalf
                                                : cudnn::kBfloat16;
    auto narrow = [](int64_t value) { return static_cast<int>(value); };
    cudnn::check(api.create_tensor(&x_), "cudnnCreateTensorDescriptor");
    cudnn::check(
        api.set_tensor_4d(x_, cudnn::kNhwc, type, narrow(v.n), narrow(v.c), narrow(v.h), narrow(v.w)),
        "cudnnSetTensor4dDescriptor x");
    cudnn::check(api.create_tensor(&y_), "cudnnCreateTensorDescriptor");
    cudnn::check(
        api.set_tensor_4d(y_, cudnn::kNhwc, type, narrow(v.n), narrow(v.k), narrow(v.p()), narrow(v.q())),
        "cudnnSetTensor4dDescriptor y");
    cudnn::check(api.create_filter(&w_), "cudnnCreateFilterDescriptor");
    cudnn::check(
        api.set_filter_4d(w_, type, cudnn::kNhwc, narrow(v.k), narrow(v.group_c()), narrow(v.r), narrow(v.s)),
        "cudnnSetFilter4dDescriptor");
    cudnn::check(api.create_convolution(&conv_), "cudnnCreateConvolutionDescriptor");
    cudnn::check(api.set_convolution_2d(conv_, narrow(v.pad), narrow(v.pad), narrow(v.stride),
                                        narrow(v.stride), narrow(v.dilation), narrow(v.dilation),
                                        cudnn::kCrossCorrelation, cudnn::kFloat),
                 "cudnnSetConvolution2dDescriptor");
    cudnn::check(api.set_group_count(conv_, narrow(v.groups)), "cudnnSetConvolutionGroupCount");
    const int math = path.input != CUDA_R_32F                       ? cudnn::kTensorOpMath
                     : path.compute == CUBLAS_COMPUTE_32F_FAST_TF32 ? cudnn::kDefaultMath
                                                                    : cudnn::kFmaMath;
    cudnn::check(api.set_math_type(conv_, math), "cudnnSetConvolutionMathType");
    cudnn::AlgorithmPerf found[8];
    int returned = 0;
    if (api.find_forward(api.handle, x_, w_, conv_, y_, 8, &returned, found) != 0) return;
    size_t workspace = 1;
    for (int i = 0; i < returned; ++i) {
      // FMA math must not fall back to TF32 tensor cores (the path claims fp32 precision).
      if (found[i].status != 0 || (math == cudnn::kFmaMath && found[i].math_type != cudnn::kFmaMath))
        continue;
      algorithms_.push_back(found[i].algorithm);
      workspace = std::max(workspace, found[i].memory);
    }
    workspace_ = DeviceBuffer(workspace);
  }
  int candidates() const { return static_cast<int>(algorithms_.size()); }
  int algorithm(int candidate) const { return algorithms_.at(candidate); }
  void select(int candidate) { selected_ = candidate; }
  void run(const void* x, const void* krsc, void* y) const {
    const float alpha = 1, beta = 0;
    cudnn::check(api_.forward(api_.handle, &alpha, x_, x, w_, krsc, conv_, algorithms_.at(selected_),
                              workspace_.get(), workspace_.bytes(), &beta, y_, y),
                 "cudnnConvolutionForward");
  }

 private:
  const cudnn::Api& api_;
  cudnn::TensorDescriptor x_ = nullptr, y_ = nullptr;
  cudnn::FilterDescriptor w_ = nullptr;
  cudnn::ConvolutionDescriptor conv_ = nullptr;
  std::vector<int> algorithms_;
  int selected_ = 0;
  DeviceBuffer workspace_;
};

// W [r][s][c][k] (one group) -> KRSC with the channels zero-padded to `c8`.
__global__ void to_krsc_padded(Conv v, int64_t c8, const uint16_t* weights, uint16_t* krsc) {
  const int64_t count = v.k * v.r * v.s * c8;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t filter = i / (v.r * v.s * c8), position = (i / c8) % (v.r * v.s), channel = i % c8;
    krsc[i] = channel < v.c ? weights[(position * v.c + channel) * v.k + filter] : uint16_t{0};
  }
}

// X [n*h*w][c] -> [n*h*w][8] (or [4]) with zeros after the c channels: one 16-byte (8-byte) store per pixel.
template <int C8>
__global__ void pad_channels_of(Conv v, const uint16_t* x, void* padded) {
  const uint32_t pixels = static_cast<uint32_t>(v.n * v.h * v.w), c = static_cast<uint32_t>(v.c);
  for (uint32_t pixel = blockIdx.x * blockDim.x + threadIdx.x; pixel < pixels;
       pixel += gridDim.x * blockDim.x) {
    uint32_t words[4] = {0, 0, 0, 0};
    for (uint32_t channel = 0; channel < c; ++channel)
      words[channel / 2] |= uint32_t{x[pixel * c + channel]} << (16 * (channel % 2));
    if constexpr (C8 == 8) {
      static_cast<uint4*>(padded)[pixel] = make_uint4(words[0], words[1], words[2], words[3]);
    } else {
      static_cast<uint2*>(padded)[pixel] = make_uint2(words[0], words[1]);
    }
  }
}

// Copies of X, W and O spanning `rotate_bytes` (each timed launch reads inputs the last ones did not touch),
// and one patch buffer: im2col writes it and the GEMM reads it straight after, as a framework's would.
struct Operands {
  int copies = 1;
  std::vector<DeviceBuffer> x, w;
  DeviceBuffer out;  // one output, written by every launch (PyTorch's captured calls reuse one block too)
  DeviceBuffer patches;
  DeviceBuffer x_padded;  // pad8+, pad4+: X with 8 (4) channels, written by each timed launch before the conv
};

Operands make_operands(const Conv& v, size_t output_bytes, Method method, int pad_channels,
                       size_t rotate_bytes) {
  const size_t element = element_bytes(v.dtype);
  const size_t set_bytes = (v.x_elements() + v.w_elements()) * element + v.o_elements() * output_bytes;
  Operands operands;
  operands.copies = static_cast<int>(std::clamp<size_t>((rotate_bytes + set_bytes - 1) / set_bytes, 1, 64));
  for (int copy = 0; copy < operands.copies; ++copy) {
    operands.x.emplace_back(v.x_elements() * element);
    operands.w.emplace_back(v.w_elements() * element);
    if (copy == 0) operands.out = DeviceBuffer(v.o_elements() * output_bytes);
    if (copy == 0) {
      fill_input<<<grid_for(v.x_elements()), 256>>>(v.dtype, v.seed, v.x_id, v.x_elements(),
                                                    operands.x[0].get());
      fill_input<<<grid_for(v.w_elements()), 256>>>(v.dtype, v.seed, v.w_id, v.w_elements(),
                                                    operands.w[0].get());
      check_launch("fill inputs");
    } else {
      TESSERA_CUDA(cudaMemcpy(operands.x[copy].get(), operands.x[0].get(), operands.x[0].bytes(),
                              cudaMemcpyDeviceToDevice));
      TESSERA_CUDA(cudaMemcpy(operands.w[copy].get(), operands.w[0].get(), operands.w[0].bytes(),
                              cudaMemcpyDeviceToDevice));
    }
  }
  if (method == Method::im2col_gemm && !patches_are_x(v))
    operands.patches = DeviceBuffer(v.groups * v.pixels() * v.taps() * element);
  if (pad_channels) {
    const int64_t c8 = pad_channels, padded_elements = v.k * v.r * v.s * c8;
    DeviceBuffer padded(padded_elements * element);
    to_krsc_padded<<<grid_for(padded_elements), 256>>>(
        v, c8, static_cast<const uint16_t*>(operands.w[0].get()), static_cast<uint16_t*>(padded.get()));
    check_launch("filter to padded KRSC");
    for (DeviceBuffer& weights : operands.w) {
      weights = DeviceBuffer(padded.bytes());
      TESSERA_CUDA(cudaMemcpy(weights.get(), padded.get(), padded.bytes(), cudaMemcpyDeviceToDevice));
    }
    operands.x_padded = DeviceBuffer(v.n * v.h * v.w * c8 * element);
    return operands;
  }
  if (method == Method::cudnn || method == Method::cudnn_graph) {
    // The weights in cuDNN's layout, in place of tessera's (each copy).
    DeviceBuffer krsc(operands.w[0].bytes());
    const int grid = grid_for(v.w_elements());
    for (DeviceBuffer& weights : operands.w) {
      if (v.dtype == Dtype::fp32) {
        to_krsc<<<grid, 256>>>(v, static_cast<const float*>(weights.get()), static_cast<float*>(krsc.get()));
      } else {
        to_krsc<<<grid, 256>>>(v, static_cast<const uint16_t*>(weights.get()),
                               static_cast<uint16_t*>(krsc.get()));
      }
      check_launch("filter to KRSC");
      TESSERA_CUDA(cudaMemcpy(weights.get(), krsc.get(), krsc.bytes(), cudaMemcpyDeviceToDevice));
    }
  }
  return operands;
}

template <class T>
void launch_im2col_of(const Conv& v, const void* x, void* patches) {
  const int64_t elements = v.groups * v.pixels() * v.taps();
  if (chunked<T>(v)) {
    const int grid = grid_for(elements / (16 / sizeof(T)));
    if (fits_32_bits(v)) {
      im2col_chunks<T, uint32_t>
          <<<grid, 256, 0, work_stream()>>>(v, static_cast<const T*>(x), static_cast<T*>(patches));
    } else {
      im2col_chunks<T, int64_t>
          <<<grid, 256, 0, work_stream()>>>(v, static_cast<const T*>(x), static_cast<T*>(patches));
    }
    return;
  }
  const int grid = grid_for(elements);
  if (fits_32_bits(v)) {
    im2col<T, uint32_t>
        <<<grid, 256, 0, work_stream()>>>(v, static_cast<const T*>(x), static_cast<T*>(patches));
  } else {
    im2col<T, int64_t>
        <<<grid, 256, 0, work_stream()>>>(v, static_cast<const T*>(x), static_cast<T*>(patches));
  }
}

void launch_im2col(const Conv& v, const void* x, void* patches) {
  switch (v.dtype) {
    case Dtype::fp32:
      return launch_im2col_of<float>(v, x, patches);
    case Dtype::int8:
      return launch_im2col_of<int8_t>(v, x, patches);
    default:
      return launch_im2col_of<uint16_t>(v, x, patches);
  }
}

int cudnn_type_of(cudaDataType type) {
  return type == CUDA_R_32F ? cudnn::kFloat : type == CUDA_R_16F ? cudnn::kHalf : cudnn::kBfloat16;
}

cudnn::GraphConvShape graph_shape_of(const Conv& v, const Path& path) {
  cudnn::GraphConvShape shape;
  shape.n = v.n, shape.c = path.pad_channels ? path.pad_channels : v.c, shape.h = v.h, shape.w = v.w;
  shape.k = v.k, shape.r = v.r, shape.s = v.s, shape.p = v.p(), shape.q = v.q();
  shape.groups = v.groups, shape.stride = v.stride, shape.pad = v.pad, shape.dilation = v.dilation;
  shape.x_type = cudnn_type_of(path.input);
  shape.y_type = cudnn_type_of(path.output);
  shape.allow_tf32 = path.compute == CUBLAS_COMPUTE_32F_FAST_TF32;
  return shape;
}

// Everything a conv path's launch uses, owned by the live path.
struct ConvState {
  Operands operands;
  LtMatmul matmul;
  EpilogueOperands epilogue;  // a fused epilogue's bias and residuals
  std::unique_ptr<CudnnConv> dnn;
  std::unique_ptr<cudnn::GraphConv> graph;
};

// Builds one path: its operands and the library call or kernel, its candidate chosen by device time (or the
// pinned one). With `fused`, an im2col GEMM of one group computes that epilogue in cuBLASLt's.
std::optional<LivePath> build_path(const Conv& v, const Path& path, const RunContext& context,
                                   const std::string* pinned, std::string* note,
                                   const Epilogue* fused = nullptr) {
  const bool uses_cudnn = path.method == Method::cudnn || path.method == Method::cudnn_graph;
  const cudnn::Api* api = uses_cudnn ? cudnn::api(note) : nullptr;
  if (uses_cudnn && !api) return std::nullopt;
  if (path.method == Method::cudnn_graph && !api->graph) {
    *note = api->graph_missing;
    return std::nullopt;
  }
  auto state = std::make_shared<ConvState>();
  state->operands =
      make_operands(v, bytes_of(path.output), path.method, path.pad_channels, context.rotate_bytes);
  ConvState* s = state.get();
  Operands* operands = &state->operands;
  LivePath live;
  live.state = state;
  live.copies = operands->copies;
  live.output = operands->out.get();
  live.output_at = [operands](int) { return operands->out.get(); };
  switch (path.method) {
    case Method::im2col_gemm: {
      const EpilogueOperands* epilogue = nullptr;
      if (fused) {
        s->epilogue = make_epilogue_operands(*fused, output_type_of(path.output), operands->copies);
        epilogue = &s->epilogue;
        s->matmul.set_epilogue(*lt_epilogue_of(*fused), fused->has(EpilogueStep::residual));
      }
      if (!describe_batched_gemm(s->matmul, v, path)) {
        if (fused) *note = "cuBLASLt has no algorithm with this epilogue for this shape and type";
        return std::nullopt;
      }
      live.launch = [s, operands, v, epilogue](int i) {
        const int copy = i % operands->copies;
        const void* bias = epilogue ? epilogue->bias_data() : nullptr;
        const void* residual = epilogue ? epilogue->residual_data(copy) : nullptr;
        if (patches_are_x(v)) {
          s->matmul.run(operands->w[copy].get(), operands->x[copy].get(), operands->out.get(), bias,
                        residual);
          return;
        }
        launch_im2col(v, operands->x[copy].get(), operands->patches.get());
        s->matmul.run(operands->w[copy].get(), operands->patches.get(), operands->out.get(), bias, residual);
      };
      if (choose_algorithm(s->matmul, live.launch, live.copies, pinned, live)) return live;
      *note = "no cuBLASLt algorithm the heuristic proposed ran";
      return std::nullopt;
    }
    case Method::cudnn: {
      s->dnn = std::make_unique<CudnnConv>(v, path, *api);
      if (s->dnn->candidates() == 0) {
        *note = "cuDNN found no algorithm for this shape and type";
        return std::nullopt;
      }
      live.launch = [s, operands](int i) {
        const int copy = i % operands->copies;
        s->dnn->run(operands->x[copy].get(), operands->w[copy].get(), operands->out.get());
      };
      int best = -1;
      if (pinned) {
        for (int i = 0; i < s->dnn->candidates(); ++i)
          if ("algorithm " + std::to_string(s->dnn->algorithm(i)) == *pinned) best = i;
        if (best >= 0) s->dnn->select(best);
        live.chosen = *pinned + ", as pinned";
      } else {
        std::vector<double> times;
        best = fastest_candidate(
            s->dnn->candidates(),
            [&](int i) {
              s->dnn->select(i);
              return true;
            },
            live.launch, live.copies, &times);
        live.algorithms_tried = s->dnn->candidates();
        if (best >= 0)
          live.chosen = "algorithm " + std::to_string(s->dnn->algorithm(best)) +
                        ", fastest by device time of " + std::to_string(s->dnn->candidates()) +
                        " cudnnFind returned (us, in order: " + times_text(times) + ")";
      }
      if (best < 0) {
        *note = "no algorithm cudnnFind returned ran";
        return std::nullopt;
      }
      live.choice = "algorithm " + std::to_string(s->dnn->algorithm(best));
      return live;
    }
    case Method::cudnn_graph: {
      s->graph = std::make_unique<cudnn::GraphConv>(*api, graph_shape_of(v, path), 16, 4, 4, first_layer(v));
      cudnn::GraphConv& graph = *s->graph;
      if (graph.plans() == 0) {
        *note = "cuDNN's graph API has no plan for this shape and type: " + graph.note();
        return std::nullopt;
      }
      // Padding X is part of the timed work: the layer receives 3 channels.
      const int pad_channels = path.pad_channels;
      live.launch = [s, operands, v, pad_channels](int i) {
        const int copy = i % operands->copies;
        const void* x = operands->x[copy].get();
        if (pad_channels) {
          auto pad = pad_channels == 8 ? pad_channels_of<8> : pad_channels_of<4>;
          pad<<<grid_for(v.n * v.h * v.w), 256, 0, work_stream()>>>(v, static_cast<const uint16_t*>(x),
                                                                    operands->x_padded.get());
          x = operands->x_padded.get();
        }
        cudnn::check(s->graph->run(x, operands->w[copy].get(), operands->out.get()), "cudnnBackendExecute");
      };
      int best = -1;
      if (pinned) {
        for (int plan = 0; plan < graph.plans(); ++plan)
          if (graph.description(plan) == *pinned) best = plan;
        if (best >= 0) graph.select(best);
        live.chosen = *pinned + ", as pinned";
      } else {
        std::vector<double> times;
        best = fastest_candidate(
            graph.plans(),
            [&](int plan) {
              graph.select(plan);
              return true;
            },
            live.launch, live.copies, &times);
        int ran = 0;
        for (double time : times) ran += time >= 0;
        live.algorithms_tried = ran;
        if (best >= 0)
          live.chosen = graph.description(best) + ", fastest by device time of " + std::to_string(ran) +
                        " plans from " + std::to_string(graph.configurations_seen()) + " configurations" +
                        (graph.note().empty() ? "" : "; " + graph.note()) +
                        (graph.search().empty() ? "" : "; " + graph.search()) +
                        " (us, in order: " + times_text(times) + ")";
      }
      if (best < 0) {
        *note = "no plan of cuDNN's graph API ran";
        return std::nullopt;
      }
      live.choice = graph.description(best);
      return live;
    }
    case Method::direct_tiled: {
      const std::vector<tiled::Variant> variants =
          path.output == CUDA_R_32F ? tiled::variants<float>() : tiled::variants<uint16_t>();
      auto selected = std::make_shared<int>(0);
      live.launch = [variants, selected, operands, v](int i) {
        const int copy = i % operands->copies;
        variants[*selected].launch(v, operands->x[copy].get(), operands->w[copy].get(), operands->out.get());
      };
      std::vector<std::string> names;
      for (const tiled::Variant& variant : variants) names.push_back(variant.name);
      if (choose_named(
              names, [&](int i) { *selected = i; }, pinned, "tilings", live))
        return live;
      *note = "no tiling of the kernel ran";
      return std::nullopt;
    }
    case Method::direct:
      live.launch = [operands, v](int i) {
        const int copy = i % operands->copies;
        auto kernel = fits_32_bits(v) ? direct_conv<uint32_t> : direct_conv<int64_t>;
        kernel<<<grid_for(v.o_elements()), 256, 0, work_stream()>>>(
            v, operands->x[copy].get(), operands->w[copy].get(), operands->out.get());
      };
      return live;
  }
  return std::nullopt;
}

OpMeasurement run_conv(const OpArgs& args, const RunContext& context) {
  Conv v{};
  v.n = args.integer("n"), v.c = args.integer("c"), v.h = args.integer("h"), v.w = args.integer("w");
  v.k = args.integer("k"), v.r = args.integer("r"), v.s = args.integer("s");
  v.stride = args.integer("stride"), v.pad = args.integer("pad");
  v.dilation = args.integer("dilation"), v.groups = args.integer("groups");
  v.dtype = parse_dtype(args.get("dtype"));
  v.seed = static_cast<uint64_t>(args.integer("seed"));
  const uint32_t index = static_cast<uint32_t>(args.integer("index"));
  v.x_id = ops::tensor_id(index, 0);
  v.w_id = ops::tensor_id(index, 1);
  if (v.stride <= 0 || v.dilation <= 0 || v.groups <= 0 || v.c % v.groups != 0 || v.k % v.groups != 0)
    fail("conv2d " + args.text + ": not a valid convolution");
  v.set_output_size();
  if (v.p() <= 0 || v.q() <= 0) fail("conv2d " + args.text + ": not a valid convolution");
  const double element = static_cast<double>(element_bytes(v.dtype));
  const Epilogue epilogue = parse_epilogue(args, v.pixels(), v.k);
  // Inputs once (an epilogue's bias row and residual in the output type too).
  auto input_bytes_with = [&](double output_bytes) {
    return (v.x_elements() + v.w_elements()) * element +
           output_bytes *
               ((epilogue.has(EpilogueStep::bias) ? v.k : 0) +
                (epilogue.has(EpilogueStep::residual) || epilogue.has(EpilogueStep::swiglu) ? v.o_elements()
                                                                                            : 0));
  };

  OpSpec spec;
  spec.kind = "conv2d";
  spec.name = args.get("name");
  spec.op.set("kind", "conv2d").set("name", spec.name).set("index", static_cast<int64_t>(index));
  spec.op.set("n", v.n).set("c", v.c).set("h", v.h).set("w", v.w).set("k", v.k).set("r", v.r).set("s", v.s);
  spec.op.set("stride", v.stride).set("pad", v.pad).set("dilation", v.dilation).set("groups", v.groups);
  spec.op.set("dtype", args.get("dtype")).set("seed", static_cast<int64_t>(v.seed));
  if (!epilogue.empty()) spec.op.set("epilogue", args.get("epilogue"));
  spec.seed = v.seed;
  spec.out_elements = v.o_elements();
  spec.work = 2.0 * v.macs();
  spec.rate_kind = rate_kind_of(v.dtype);
  spec.bytes = input_bytes_with(4) + v.o_elements() * 4.0;
  spec.reference = [v, epilogue](const int64_t* positions, int count, double* out) {
    conv_reference_at<<<(count + 255) / 256, 256>>>(v, epilogue, positions, count, out);
  };
  // With an epilogue, every path is the conv and then the runner's epilogue kernel (unfused, as a
  // framework's chain runs), and an im2col GEMM of one group also computes it in cuBLASLt's epilogue (fused)
  // where cuBLASLt has those steps.
  spec.notes.emplace_back("cudnn", cudnn::library_text());
  for (const Path& path : paths_for(v.dtype)) {
    if (path.pad_channels && !pads(v, path.pad_channels)) continue;  // channels already a multiple of it
    if (path.method == Method::direct_tiled && !tiled::applies(v)) continue;  // written for one shape
    for (const std::string& form :
         epilogue_forms(epilogue, path.method == Method::im2col_gemm && v.groups == 1)) {
      PathSpec path_spec;
      path_spec.name = epilogue_path_name(path.name, form);
      path_spec.fusion = form;
      path_spec.numerics = path.numerics;
      path_spec.output = output_type_of(path.output);
      path_spec.tolerance = tolerance_for(path_spec.output, v.dtype != Dtype::fp32 && v.dtype != Dtype::int8,
                                          path.compute == CUBLAS_COMPUTE_32F_FAST_TF32);
      path_spec.bytes = input_bytes_with(static_cast<double>(bytes_of(path.output))) +
                        static_cast<double>(v.o_elements() * bytes_of(path.output));
      // The direct kernel reads its window straight from X: worth timing where per-group GEMMs are tiny or
      // for int8. A large dense conv would spend seconds in it and teach nothing.
      if (path.method == Method::direct && v.groups == 1 && v.dtype != Dtype::int8 && v.macs() > 2e8)
        path_spec.skip = "not timed: a dense conv of this size is a GEMM's job";
      path_spec.build = [v, path, form, epilogue, name = spec.name, spec_name = path_spec.name](
                            const RunContext& run, std::string* note) {
        return build_epilogue_form(form, epilogue, output_type_of(path.output), [&](const Epilogue* fused) {
          return build_path(v, path, run, run.pinned_choice(name, spec_name), note, fused);
        });
      };
      spec.paths.push_back(path_spec);
    }
  }
  return measure_op(spec, context);
}

}  // namespace

void register_conv() {
  op_registry()["conv2d"] = run_conv;
}

}  // namespace tessera::gpu
