// Attention on the GPU (issue "Attention: flash-style prefill, paged KV-cache decode with GQA, and a whole
// decoder layer", its GPU part): O = softmax(scale * Q K^T [causal]) V with ops/kinds/attention.hpp's
// semantics and tensors (Q, K, V, and the block table BT of a paged cache: slots 0, 1, 2, 3 of the op; O
// [batch * heads * seq_q, head_dim] in the op's type), inputs from the counter-based generator. Three paths,
// each checked against a float64 reference computed on the GPU at the sampled positions:
// - cublas+softmax: S = scale Q K^T (cuBLAS strided-batched GEMM, fp32 out), a causal row softmax, O = P V
//   (cuBLAS); a paged or bshd cache is gathered into a contiguous copy first. The library check of the
//   kernels below (the anchor every other path is compared with, whole) and the only path for fp32.
// - flash_prefill: the runner's FlashAttention-2 style kernel (attention_kernels.cuh), its tiling chosen by
//   device time.
// - flash_decode: split-KV decoding for few queries a kv head (a decode step, speculative tokens), its tiling
//   and split count chosen by device time.
// PyTorch's scaled_dot_product_attention (flash backend) is timed next to them by
// scripts/gpu_torch_reference.py.
#include <cublas_v2.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <memory>

#include "gpu/attention_kernels.cuh"
#include "gpu/device.cuh"

namespace tessera::gpu {

namespace {

using flash::Attention;

// ops/kinds/attention.cpp's limit on every dimension.
constexpr int64_t kMaxDimension = int64_t{1} << 24;

// The op: the kernels' Attention and what the operands and the reference need.
struct Problem {
  Attention a;
  Dtype dtype = Dtype::bf16;
  double scale = 0;          // effective: the op's, or 1 / sqrt(head_dim)
  double given_scale = 0;    // as the op gave it (0: the default), as the record names the op
  int64_t pool_blocks = 0;   // a paged cache's physical blocks: kv_cache.blocks, or the ones in use
  int64_t given_blocks = 0;  // kv_cache.blocks as the op gave it (0: the blocks in use)
  uint64_t seed = 0;
  uint32_t q_id = 0, k_id = 0, v_id = 0, table_id = 0;
  __host__ __device__ int64_t q_rows() const { return int64_t{a.batch} * a.heads * a.seq_q; }
  // Rows of K and V as stored: a paged pool holds every block of every sequence (the last one's padding too),
  // and any more the op gives it.
  __host__ __device__ int64_t kv_rows() const {
    return a.paged ? pool_blocks * a.block_tokens * a.kv_heads : int64_t{a.batch} * a.kv_heads * a.seq_kv;
  }
  __host__ __device__ int64_t table_entries() const {
    return a.paged ? int64_t{a.batch} * a.blocks_per_sequence : 0;
  }
};

// ---- addressing, as ops/kinds/attention.cpp's AttentionShape::kv_row (written again here rather than
// through the flash kernels' KvRows, so that the reference and the library path check those)

template <typename BlockOf>
__device__ int64_t kv_row_of(const Attention& a, int b, int h, int s, const BlockOf& block_of) {
  if (!a.paged)
    return a.bshd ? (int64_t{b} * a.seq_kv + s) * a.kv_heads + h
                  : (int64_t{b} * a.kv_heads + h) * a.seq_kv + s;
  const int64_t tokens = a.block_tokens;
  const int64_t block = block_of(int64_t{b} * a.blocks_per_sequence + s / tokens), t = s % tokens;
  return a.bshd ? (block * tokens + t) * a.kv_heads + h : (block * a.kv_heads + h) * tokens + t;
}

// The block table BT: the first `count` entries of the generator's index permutation of the pool's `range`
// blocks (ops/input_generator.hpp).
__global__ void fill_block_table(uint64_t seed, uint32_t tensor, int64_t count, int64_t range, int32_t* out) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x)
    out[i] = static_cast<int32_t>(
        ops::input_index(seed, tensor, static_cast<uint64_t>(i), static_cast<uint64_t>(range)));
}

// ---- the float64 reference at the sampled positions

constexpr int kReferenceThreads = 128;

// Every element of the sampled O rows `rows`, one block a row, in float64 from the generator's values (the
// block table too, from input_index): the keys in chunks of 128, a thread a key's score, the chunk's
// max and weights in shared memory, then a thread a column's weighted sum of V, rescaled as the max grows.
// `query` and `out` are [rows][head_dim] scratch.
__global__ void __launch_bounds__(kReferenceThreads)
    reference_rows(Problem p, const int64_t* rows, double* query, double* out) {
  const Attention& a = p.a;
  const int d = a.head_dim, tid = static_cast<int>(threadIdx.x);
  const int64_t row = rows[blockIdx.x], bh = row / a.seq_q;
  const int i = static_cast<int>(row % a.seq_q), h = static_cast<int>(bh % a.heads);
  const int b = static_cast<int>(bh / a.heads), kv_head = h / a.group;
  double* q = query + int64_t{blockIdx.x} * d;
  double* result = out + int64_t{blockIdx.x} * d;
  for (int c = tid; c < d; c += kReferenceThreads) {
    q[c] = input_value(p.dtype, p.seed, p.q_id, static_cast<uint64_t>(row * d + c));
    result[c] = 0;
  }
  __syncthreads();
  const int64_t entries = p.table_entries();
  auto block_of = [&](int64_t entry) {
    return static_cast<int64_t>(ops::input_index(p.seed, p.table_id, static_cast<uint64_t>(entry),
                                                 static_cast<uint64_t>(p.pool_blocks)));
  };
  const int seen = a.causal ? min(a.seq_kv, i + a.key_offset() + 1) : a.seq_kv;
  __shared__ double weight[kReferenceThreads], reduced[kReferenceThreads];
  __shared__ int64_t key_row[kReferenceThreads];
  double maximum = -INFINITY, sum = 0;
  for (int first = 0; first < seen; first += kReferenceThreads) {
    const int j = first + tid;
    double score = -INFINITY;
    if (j < seen) {
      const int64_t r = kv_row_of(a, b, kv_head, j, block_of);
      key_row[tid] = r;
      double dot = 0;
      for (int c = 0; c < d; ++c)
        dot += q[c] * input_value(p.dtype, p.seed, p.k_id, static_cast<uint64_t>(r * d + c));
      score = p.scale * dot;
    }
    reduced[tid] = score;
    __syncthreads();
    for (int stride = kReferenceThreads / 2; stride > 0; stride /= 2) {
      if (tid < stride) reduced[tid] = fmax(reduced[tid], reduced[tid + stride]);
      __syncthreads();
    }
    const double chunk_max = fmax(maximum, reduced[0]);  // finite: key `first` is seen
    const double rescale = exp(maximum - chunk_max);
    weight[tid] = j < seen ? exp(score - chunk_max) : 0.0;
    __syncthreads();
    const int count = min(kReferenceThreads, seen - first);
    double chunk_sum = 0;
    for (int k = 0; k < count; ++k) chunk_sum += weight[k];
    sum = sum * rescale + chunk_sum;
    for (int c = tid; c < d; c += kReferenceThreads) {
      double value = 0;
      for (int k = 0; k < count; ++k)
        value += weight[k] * input_value(p.dtype, p.seed, p.v_id, static_cast<uint64_t>(key_row[k] * d + c));
      result[c] = result[c] * rescale + value;
    }
    maximum = chunk_max;
    __syncthreads();  // the next chunk overwrites the weights and rows
  }
  for (int c = tid; c < d; c += kReferenceThreads) result[c] /= sum;
}

__global__ void pick_samples(const double* row_values, const int32_t* slots, const int32_t* columns,
                             int head_dim, int count, double* out) {
  const int sample = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (sample < count) out[sample] = row_values[int64_t{slots[sample]} * head_dim + columns[sample]];
}

// The reference at `positions` (device): the distinct rows they fall in are computed whole, once each (4096
// samples of a decode's O land in its 512 rows).
void reference_at(const Problem& p, const int64_t* positions, int count, double* out) {
  const int d = p.a.head_dim;
  std::vector<int64_t> host(static_cast<size_t>(count));
  TESSERA_CUDA(cudaMemcpy(host.data(), positions, host.size() * sizeof(int64_t), cudaMemcpyDeviceToHost));
  std::vector<int64_t> rows;
  for (int64_t position : host) rows.push_back(position / d);
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  std::vector<int32_t> slots, columns;
  for (int64_t position : host) {
    slots.push_back(
        static_cast<int32_t>(std::lower_bound(rows.begin(), rows.end(), position / d) - rows.begin()));
    columns.push_back(static_cast<int32_t>(position % d));
  }
  const double scratch_bytes = static_cast<double>(rows.size()) * d * 2 * sizeof(double);
  if (scratch_bytes > 0x1p34) fail("attention: the reference's rows need more than 16 GiB of scratch");
  DeviceBuffer device_rows(rows.size() * sizeof(int64_t)), device_slots(slots.size() * sizeof(int32_t));
  DeviceBuffer device_columns(columns.size() * sizeof(int32_t));
  DeviceBuffer query(rows.size() * d * sizeof(double)), values(rows.size() * d * sizeof(double));
  TESSERA_CUDA(cudaMemcpy(device_rows.get(), rows.data(), device_rows.bytes(), cudaMemcpyHostToDevice));
  TESSERA_CUDA(cudaMemcpy(device_slots.get(), slots.data(), device_slots.bytes(), cudaMemcpyHostToDevice));
  TESSERA_CUDA(
      cudaMemcpy(device_columns.get(), columns.data(), device_columns.bytes(), cudaMemcpyHostToDevice));
  reference_rows<<<static_cast<unsigned>(rows.size()), kReferenceThreads>>>(
      p, static_cast<const int64_t*>(device_rows.get()), static_cast<double*>(query.get()),
      static_cast<double*>(values.get()));
  pick_samples<<<(count + 255) / 256, 256>>>(
      static_cast<const double*>(values.get()), static_cast<const int32_t*>(device_slots.get()),
      static_cast<const int32_t*>(device_columns.get()), d, count, out);
  check_launch("the attention reference's rows");  // before the scratch is freed
}

// ---- cublas+softmax: the unfused library path

// K and V of every (batch, kv head) as contiguous [seq_kv][head_dim] blocks (bhsd): what a strided-batched
// GEMM takes, from a paged or bshd cache.
template <typename T>
__global__ void gather_kv(Attention a, const int32_t* table, const T* k, const T* v, T* k_out, T* v_out) {
  const int64_t d = a.head_dim, count = int64_t{a.batch} * a.kv_heads * a.seq_kv * d;
  auto block_of = [&](int64_t entry) { return static_cast<int64_t>(table[entry]); };
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t row = i / d, bh = row / a.seq_kv;
    const int s = static_cast<int>(row % a.seq_kv), h = static_cast<int>(bh % a.kv_heads);
    const int64_t source = kv_row_of(a, static_cast<int>(bh / a.kv_heads), h, s, block_of) * d + i % d;
    k_out[i] = k[source];
    v_out[i] = v[source];
  }
}

constexpr int kSoftmaxThreads = 256;

// P = softmax of each row of S (already scaled), keys past the row's last visible one 0: a block a row,
// online max and sum per thread, then the block's, then the row written in the type the PV GEMM reads.
template <Elem E>
__global__ void __launch_bounds__(kSoftmaxThreads)
    softmax_rows(Attention a, int64_t rows, const float* scores, Bits<E>* probabilities) {
  __shared__ float shared_max[kSoftmaxThreads / 32], shared_sum[kSoftmaxThreads / 32];
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* s = scores + row * a.seq_kv;
    const int i = static_cast<int>(row % a.seq_q);
    const int seen = a.causal ? min(a.seq_kv, i + a.key_offset() + 1) : a.seq_kv;
    float maximum = -INFINITY, sum = 0;
    for (int j = tid; j < seen; j += kSoftmaxThreads) {
      const float larger = fmaxf(maximum, s[j]);
      sum = sum * expf(maximum - larger) + expf(s[j] - larger);
      maximum = larger;
    }
    for (int step = 16; step > 0; step /= 2) {
      const float other_max = __shfl_xor_sync(0xffffffffu, maximum, step);
      const float other_sum = __shfl_xor_sync(0xffffffffu, sum, step);
      const float larger = fmaxf(maximum, other_max);
      sum = larger == -INFINITY ? 0.0f : sum * expf(maximum - larger) + other_sum * expf(other_max - larger);
      maximum = larger;
    }
    if (lane == 0) {
      shared_max[warp] = maximum;
      shared_sum[warp] = sum;
    }
    __syncthreads();
    float row_max = -INFINITY, row_sum = 0;
    for (int w = 0; w < kSoftmaxThreads / 32; ++w) row_max = fmaxf(row_max, shared_max[w]);
    for (int w = 0; w < kSoftmaxThreads / 32; ++w)
      if (shared_max[w] != -INFINITY) row_sum += shared_sum[w] * expf(shared_max[w] - row_max);
    __syncthreads();  // the next row reuses the slots
    const float inverse = 1.0f / row_sum;
    Bits<E>* p = probabilities + row * a.seq_kv;
    for (int j = tid; j < a.seq_kv; j += kSoftmaxThreads)
      p[j] = from_float<E>(j < seen ? expf(s[j] - row_max) * inverse : 0.0f);
  }
}

// ---- operands

// Copies of Q, K and V spanning `rotate_bytes`; the block table (4 bytes a block) and O are one each, read or
// written by every launch; the paths' scratch.
struct Operands {
  int copies = 1;
  std::vector<DeviceBuffer> q, k, v;
  DeviceBuffer table, out;
  DeviceBuffer partial_out, partial_lse;                           // flash_decode's splits
  DeviceBuffer scores, probabilities, k_contiguous, v_contiguous;  // cublas+softmax
};

struct Pointers {
  const uint16_t* q = nullptr;
  const uint16_t* k = nullptr;
  const uint16_t* v = nullptr;
  const int32_t* table = nullptr;
  uint16_t* out = nullptr;
  float* partial_out = nullptr;
  float* partial_lse = nullptr;
};

Pointers pointers_of(const Operands& operands, int copy) {
  Pointers p;
  p.q = static_cast<const uint16_t*>(operands.q[copy].get());
  p.k = static_cast<const uint16_t*>(operands.k[copy].get());
  p.v = static_cast<const uint16_t*>(operands.v[copy].get());
  p.table = static_cast<const int32_t*>(operands.table.get());
  p.out = static_cast<uint16_t*>(operands.out.get());
  p.partial_out = static_cast<float*>(operands.partial_out.get());
  p.partial_lse = static_cast<float*>(operands.partial_lse.get());
  return p;
}

// Bytes of the device's memory a path may take: fails rather than letting cudaMalloc fail halfway.
void check_fits(double bytes, const RunContext& run, const std::string& what) {
  const double available = static_cast<double>(run.properties.totalGlobalMem) * 0.9;
  if (bytes > available)
    fail("attention: " + what + " needs " + std::to_string(static_cast<int64_t>(bytes / 0x1p30)) +
         " GiB, more than the GPU's " + std::to_string(static_cast<int64_t>(available / 0x1p30)) + " GiB");
}

Operands make_operands(const Problem& p, const RunContext& run) {
  const size_t element = element_bytes(p.dtype), d = static_cast<size_t>(p.a.head_dim);
  const size_t q_bytes = static_cast<size_t>(p.q_rows()) * d * element;
  const size_t kv_bytes = static_cast<size_t>(p.kv_rows()) * d * element;
  const size_t set_bytes = q_bytes + 2 * kv_bytes + q_bytes;
  check_fits(static_cast<double>(set_bytes), run, "one copy of Q, K, V and O");
  Operands operands;
  operands.copies =
      static_cast<int>(std::clamp<size_t>((run.rotate_bytes + set_bytes - 1) / set_bytes, 1, 64));
  operands.out = DeviceBuffer(q_bytes);
  for (int copy = 0; copy < operands.copies; ++copy) {
    operands.q.emplace_back(q_bytes);
    operands.k.emplace_back(kv_bytes);
    operands.v.emplace_back(kv_bytes);
    if (copy == 0) {
      const int64_t q_count = p.q_rows() * p.a.head_dim, kv_count = p.kv_rows() * p.a.head_dim;
      fill_input<<<grid_for(q_count), 256>>>(p.dtype, p.seed, p.q_id, q_count, operands.q[0].get());
      fill_input<<<grid_for(kv_count), 256>>>(p.dtype, p.seed, p.k_id, kv_count, operands.k[0].get());
      fill_input<<<grid_for(kv_count), 256>>>(p.dtype, p.seed, p.v_id, kv_count, operands.v[0].get());
      check_launch("fill Q, K, V");
      continue;
    }
    TESSERA_CUDA(cudaMemcpy(operands.q[copy].get(), operands.q[0].get(), q_bytes, cudaMemcpyDeviceToDevice));
    TESSERA_CUDA(cudaMemcpy(operands.k[copy].get(), operands.k[0].get(), kv_bytes, cudaMemcpyDeviceToDevice));
    TESSERA_CUDA(cudaMemcpy(operands.v[copy].get(), operands.v[0].get(), kv_bytes, cudaMemcpyDeviceToDevice));
  }
  if (p.a.paged) {
    const int64_t entries = p.table_entries();
    operands.table = DeviceBuffer(static_cast<size_t>(entries) * sizeof(int32_t));
    fill_block_table<<<grid_for(entries), 256>>>(p.seed, p.table_id, entries, p.pool_blocks,
                                                 static_cast<int32_t*>(operands.table.get()));
    check_launch("fill the block table");
  }
  return operands;
}

cudaDataType cuda_type_of(Dtype dtype) {
  return dtype == Dtype::fp32 ? CUDA_R_32F : dtype == Dtype::bf16 ? CUDA_R_16BF : CUDA_R_16F;
}

std::optional<LivePath> build_cublas(const Problem& p, const RunContext& run, std::string* note) {
  const Attention& a = p.a;
  const int64_t rows_per_kv_head = int64_t{a.group} * a.seq_q, gemms = int64_t{a.batch} * a.kv_heads;
  if (rows_per_kv_head > INT_MAX || gemms > INT_MAX) {
    *note = "a kv head's query rows or the (batch, kv head) count exceed cuBLAS's 32-bit dimensions";
    return std::nullopt;
  }
  const bool gathered = a.paged || a.bshd;
  const size_t element = element_bytes(p.dtype);
  const double score_count = static_cast<double>(p.q_rows()) * a.seq_kv;
  const double scratch_bytes = score_count * (4 + static_cast<double>(element)) +
                               (gathered ? 2.0 * gemms * a.seq_kv * a.head_dim * element : 0.0);
  if (scratch_bytes > 0x1p35) {
    *note = "S and P (batch x heads x seq_q x seq_kv, fp32 and the op's type) need more than 32 GiB";
    return std::nullopt;
  }
  check_fits(scratch_bytes, run, "cublas+softmax's S, P and gathered K/V");
  LivePath live = live_on(make_operands(p, run));
  auto* data = static_cast<Operands*>(live.state.get());
  data->scores = DeviceBuffer(static_cast<size_t>(score_count) * 4);
  data->probabilities = DeviceBuffer(static_cast<size_t>(score_count) * element);
  if (gathered) {
    data->k_contiguous = DeviceBuffer(static_cast<size_t>(gemms * a.seq_kv * a.head_dim) * element);
    data->v_contiguous = DeviceBuffer(static_cast<size_t>(gemms * a.seq_kv * a.head_dim) * element);
  }
  const cudaDataType type = cuda_type_of(p.dtype);
  const auto scale = static_cast<float>(p.scale);
  // Row-major products as column-major ones, one GEMM per (batch, kv head): its group * seq_q query rows are
  // consecutive in Q, S, P and O. S^T [seq_kv x rows] = K [seq_kv x d] Q^T; O^T [d x rows] = V^T P^T.
  auto call = [p, data, gathered, type, scale, rows = static_cast<int>(rows_per_kv_head),
               count = static_cast<int>(gemms)](int copy) {
    const Attention& a = p.a;
    const void* k = data->k[copy].get();
    const void* v = data->v[copy].get();
    const int64_t kv_count = int64_t{count} * a.seq_kv * a.head_dim;
    if (gathered) {
      const int32_t* table = static_cast<const int32_t*>(data->table.get());
      if (p.dtype == Dtype::fp32) {
        gather_kv<float><<<grid_for(kv_count), 256, 0, work_stream()>>>(
            a, table, static_cast<const float*>(k), static_cast<const float*>(v),
            static_cast<float*>(data->k_contiguous.get()), static_cast<float*>(data->v_contiguous.get()));
      } else {
        gather_kv<uint16_t><<<grid_for(kv_count), 256, 0, work_stream()>>>(
            a, table, static_cast<const uint16_t*>(k), static_cast<const uint16_t*>(v),
            static_cast<uint16_t*>(data->k_contiguous.get()),
            static_cast<uint16_t*>(data->v_contiguous.get()));
      }
      k = data->k_contiguous.get();
      v = data->v_contiguous.get();
    }
    const float zero = 0, one = 1;
    const int64_t kv_stride = int64_t{a.seq_kv} * a.head_dim, q_stride = int64_t{rows} * a.head_dim;
    const int64_t s_stride = int64_t{rows} * a.seq_kv;
    cublasStatus_t status = cublasGemmStridedBatchedEx(
        cublas_handle(), CUBLAS_OP_T, CUBLAS_OP_N, a.seq_kv, rows, a.head_dim, &scale, k, type, a.head_dim,
        kv_stride, data->q[copy].get(), type, a.head_dim, q_stride, &zero, data->scores.get(), CUDA_R_32F,
        a.seq_kv, s_stride, count, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (status != CUBLAS_STATUS_SUCCESS) return status;
    const auto score_rows = static_cast<int64_t>(a.batch) * a.heads * a.seq_q;
    const auto blocks = static_cast<unsigned>(std::min<int64_t>(score_rows, 1 << 20));
    const auto* s = static_cast<const float*>(data->scores.get());
    if (p.dtype == Dtype::fp32) {
      softmax_rows<Elem::fp32><<<blocks, kSoftmaxThreads, 0, work_stream()>>>(
          a, score_rows, s, static_cast<float*>(data->probabilities.get()));
    } else if (p.dtype == Dtype::bf16) {
      softmax_rows<Elem::bf16><<<blocks, kSoftmaxThreads, 0, work_stream()>>>(
          a, score_rows, s, static_cast<uint16_t*>(data->probabilities.get()));
    } else {
      softmax_rows<Elem::fp16><<<blocks, kSoftmaxThreads, 0, work_stream()>>>(
          a, score_rows, s, static_cast<uint16_t*>(data->probabilities.get()));
    }
    return cublasGemmStridedBatchedEx(cublas_handle(), CUBLAS_OP_N, CUBLAS_OP_N, a.head_dim, rows, a.seq_kv,
                                      &one, v, type, a.head_dim, kv_stride, data->probabilities.get(), type,
                                      a.seq_kv, s_stride, &zero, data->out.get(), type, a.head_dim, q_stride,
                                      count, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  };
  if (call(0) != CUBLAS_STATUS_SUCCESS) {
    *note = "cuBLAS's cublasGemmStridedBatchedEx does not take this shape and type";
    return std::nullopt;
  }
  check_launch("cublas+softmax");
  live.launch = [call, data](int i) { TESSERA_CUBLAS(call(i % data->copies)); };
  live.chosen = std::string(gathered ? "K and V gathered into contiguous [seq_kv][head_dim] blocks, " : "") +
                "S = scale Q K^T by cublasGemmStridedBatchedEx (fp32 out, one GEMM per batch and kv head), a "
                "row softmax kernel writing P in the op's type, O = P V by cublasGemmStridedBatchedEx";
  return live;
}

// ---- flash_prefill

struct PrefillCandidate {
  std::string name;
  void (*launch)(const Attention&, const Pointers&);
};

template <Elem E, int D, int BR, int BC, int WARPS, int STAGES>
void launch_prefill(const Attention& a, const Pointers& p) {
  using Shape = flash::PrefillShape<D, BR, BC, WARPS, STAGES>;
  static const bool configured = [] {
    TESSERA_CUDA(cudaFuncSetAttribute(flash::flash_prefill<E, D, BR, BC, WARPS, STAGES>,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize, Shape::kSharedBytes));
    return true;
  }();
  (void)configured;
  const int64_t blocks = int64_t{(a.seq_q + BR - 1) / BR} * a.batch * a.heads;
  flash::flash_prefill<E, D, BR, BC, WARPS, STAGES>
      <<<static_cast<unsigned>(blocks), Shape::kThreads, Shape::kSharedBytes, work_stream()>>>(
          a, p.q, p.k, p.v, p.table, p.out);
}

// The tilings timed for the prefill kernel: FlashAttention-2's 128-query blocks (8 warps of 16 rows; with
// head_dim 64 also 4 warps of 32 rows, as FA2 runs them on sm_90) and 64-query blocks (more blocks for short
// sequences), 64 keys a tile (128 with head_dim 64), two or three tiles in flight. With head_dim 128, 32 rows
// a warp and 128-key tiles spilled registers (ptxas: 64 and 328 bytes), so they are not among its candidates.
template <Elem E, int D>
std::vector<PrefillCandidate> prefill_candidates_of() {
  std::vector<PrefillCandidate> candidates = {
      {"Br 128, Bc 64, 8 warps, 2 stages", &launch_prefill<E, D, 128, 64, 8, 2>},
      {"Br 128, Bc 64, 8 warps, 3 stages", &launch_prefill<E, D, 128, 64, 8, 3>},
      {"Br 64, Bc 64, 4 warps, 2 stages", &launch_prefill<E, D, 64, 64, 4, 2>},
      {"Br 64, Bc 64, 4 warps, 3 stages", &launch_prefill<E, D, 64, 64, 4, 3>}};
  if constexpr (D == 64) {
    candidates.push_back({"Br 128, Bc 128, 8 warps, 2 stages", &launch_prefill<E, D, 128, 128, 8, 2>});
    candidates.push_back({"Br 128, Bc 64, 4 warps, 2 stages", &launch_prefill<E, D, 128, 64, 4, 2>});
  }
  return candidates;
}

std::vector<PrefillCandidate> prefill_candidates(Dtype dtype, int head_dim) {
  if (dtype == Dtype::bf16)
    return head_dim == 64 ? prefill_candidates_of<Elem::bf16, 64>()
                          : prefill_candidates_of<Elem::bf16, 128>();
  return head_dim == 64 ? prefill_candidates_of<Elem::fp16, 64>() : prefill_candidates_of<Elem::fp16, 128>();
}

std::optional<LivePath> build_prefill(const Problem& p, const RunContext& run, const std::string* pinned,
                                      std::string* note) {
  const Attention& a = p.a;
  if (int64_t{(a.seq_q + 63) / 64} * a.batch * a.heads >= (int64_t{1} << 31)) {
    *note = "more query blocks than a grid holds (2^31)";
    return std::nullopt;
  }
  const std::vector<PrefillCandidate> candidates = prefill_candidates(p.dtype, a.head_dim);
  LivePath live = live_on(make_operands(p, run));
  auto* data = static_cast<Operands*>(live.state.get());
  auto selected = std::make_shared<int>(0);
  live.launch = [candidates, selected, data, a](int i) {
    candidates[*selected].launch(a, pointers_of(*data, i % data->copies));
  };
  std::vector<std::string> names;
  for (const PrefillCandidate& candidate : candidates) names.push_back(candidate.name);
  if (choose_named(
          names, [&](int i) { *selected = i; }, pinned, "prefill tilings", live))
    return live;
  *note = "no prefill tiling ran";
  return std::nullopt;
}

// ---- flash_decode

struct DecodeTiling {
  std::string name;
  int tile_keys;
  void (*launch)(const Attention&, const flash::DecodeSplit&, const Pointers&);
};

template <Elem E, int D, int KEYS, int STAGES>
void launch_decode(const Attention& a, const flash::DecodeSplit& split, const Pointers& p) {
  using Shape = flash::DecodeShape<D, KEYS, STAGES>;
  static const bool configured = [] {
    TESSERA_CUDA(cudaFuncSetAttribute(flash::flash_decode<E, D, KEYS, STAGES>,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize, Shape::kSharedBytes));
    return true;
  }();
  (void)configured;
  const int64_t blocks = int64_t{split.splits} * split.row_chunks * a.kv_heads * a.batch;
  flash::flash_decode<E, D, KEYS, STAGES>
      <<<static_cast<unsigned>(blocks), Shape::kThreads, Shape::kSharedBytes, work_stream()>>>(
          a, split, p.q, p.k, p.v, p.table, p.out, p.partial_out, p.partial_lse);
  if (split.splits > 1)
    flash::combine_splits<E><<<grid_for(split.rows * (D / 4)), 256, 0, work_stream()>>>(
        split.rows, D, split.splits, p.partial_out, p.partial_lse, p.out);
}

// Tiles of 64 keys (16 a warp) with 2 to 4 in flight, or 128 keys (32 a warp) with 2 or 3: a decode reads
// every key once, so what matters is the bytes in flight per SM against DRAM's latency.
template <Elem E, int D>
std::vector<DecodeTiling> decode_tilings_of() {
  return {{"64-key tiles, 2 stages", 64, &launch_decode<E, D, 16, 2>},
          {"64-key tiles, 3 stages", 64, &launch_decode<E, D, 16, 3>},
          {"64-key tiles, 4 stages", 64, &launch_decode<E, D, 16, 4>},
          {"128-key tiles, 2 stages", 128, &launch_decode<E, D, 32, 2>},
          {"128-key tiles, 3 stages", 128, &launch_decode<E, D, 32, 3>}};
}

std::vector<DecodeTiling> decode_tilings(Dtype dtype, int head_dim) {
  if (dtype == Dtype::bf16)
    return head_dim == 64 ? decode_tilings_of<Elem::bf16, 64>() : decode_tilings_of<Elem::bf16, 128>();
  return head_dim == 64 ? decode_tilings_of<Elem::fp16, 64>() : decode_tilings_of<Elem::fp16, 128>();
}

// Split counts 1, 2, 4 .. 64 (each that differs from the last once the tiles are shared out): one split a
// (batch, kv head) leaves SMs idle below 132 such pairs; many splits cost the partial results' traffic.
std::vector<flash::DecodeSplit> decode_splits(const Attention& a, int tile_keys, int row_chunks) {
  std::vector<flash::DecodeSplit> splits;
  const int tiles = (a.seq_kv + tile_keys - 1) / tile_keys;
  for (int wanted = 1; wanted <= 64; wanted *= 2) {
    flash::DecodeSplit split;
    split.tiles_per_split = (tiles + wanted - 1) / wanted;
    split.splits = (tiles + split.tiles_per_split - 1) / split.tiles_per_split;
    split.row_chunks = row_chunks;
    split.rows = int64_t{a.batch} * a.heads * a.seq_q;
    if (!splits.empty() && splits.back().splits == split.splits) continue;
    if (int64_t{split.splits} * row_chunks * a.kv_heads * a.batch >= (int64_t{1} << 31)) break;
    splits.push_back(split);
  }
  return splits;
}

std::optional<LivePath> build_decode(const Problem& p, const RunContext& run, const std::string* pinned,
                                     std::string* note) {
  const Attention& a = p.a;
  const int row_chunks = (a.group * a.seq_q + 15) / 16;
  struct Candidate {
    DecodeTiling tiling;
    flash::DecodeSplit split;
  };
  std::vector<Candidate> candidates;
  int most_splits = 1;
  for (const DecodeTiling& tiling : decode_tilings(p.dtype, a.head_dim))
    for (const flash::DecodeSplit& split : decode_splits(a, tiling.tile_keys, row_chunks)) {
      candidates.push_back({tiling, split});
      most_splits = std::max(most_splits, split.splits);
    }
  if (candidates.empty()) {
    *note = "more blocks than a grid holds (2^31)";
    return std::nullopt;
  }
  const double partial_bytes = static_cast<double>(most_splits) * p.q_rows() * (a.head_dim + 1) * 4;
  check_fits(partial_bytes, run, "flash_decode's partial results");
  LivePath live = live_on(make_operands(p, run));
  auto* data = static_cast<Operands*>(live.state.get());
  data->partial_out = DeviceBuffer(static_cast<size_t>(most_splits) * p.q_rows() * a.head_dim * 4);
  data->partial_lse = DeviceBuffer(static_cast<size_t>(most_splits) * p.q_rows() * 4);
  auto selected = std::make_shared<int>(0);
  live.launch = [candidates, selected, data, a](int i) {
    const Candidate& candidate = candidates[*selected];
    candidate.tiling.launch(a, candidate.split, pointers_of(*data, i % data->copies));
  };
  std::vector<std::string> names;
  for (const Candidate& candidate : candidates)
    names.push_back(candidate.tiling.name + ", " + std::to_string(candidate.split.splits) + " split(s) of " +
                    std::to_string(candidate.split.tiles_per_split) + " tile(s)");
  if (choose_named(
          names, [&](int i) { *selected = i; }, pinned, "decode tilings and splits", live))
    return live;
  *note = "no decode tiling ran";
  return std::nullopt;
}

// ---- the op

std::string choice_of(const OpArgs& args, const std::string& key, const std::vector<std::string>& names) {
  const std::string value = args.get(key);
  if (std::find(names.begin(), names.end(), value) == names.end())
    fail("--op " + args.text + ": " + key + "=" + value + " is not one of " + names.front() + ", " +
         names.back());
  return value;
}

Problem problem_of(const OpArgs& args) {
  Problem p;
  Attention& a = p.a;
  auto dimension = [&](const std::string& key) {
    const int64_t value = args.integer(key);
    if (value < 1 || value > kMaxDimension)
      fail("--op " + args.text + ": " + key + " must be 1 .. 2^24 (ops/kinds/attention.cpp's limit)");
    return static_cast<int>(value);
  };
  a.batch = dimension("batch");
  a.heads = dimension("heads");
  a.kv_heads = dimension("kv_heads");
  a.seq_q = dimension("seq_q");
  a.seq_kv = dimension("seq_kv");
  a.head_dim = dimension("head_dim");
  if (a.heads % a.kv_heads != 0) fail("--op " + args.text + ": kv_heads must divide heads");
  a.group = a.heads / a.kv_heads;
  a.causal = choice_of(args, "causal", {"false", "true"}) == "true";
  if (a.causal && a.seq_q > a.seq_kv)
    fail("--op " + args.text + ": a causal attention needs seq_q <= seq_kv");
  a.paged = choice_of(args, "kv_cache.layout", {"contiguous", "paged"}) == "paged";
  a.bshd = choice_of(args, "kv_cache.order", {"bhsd", "bshd"}) == "bshd";
  a.block_tokens = dimension("kv_cache.block_tokens");
  a.block_shift = (a.block_tokens & (a.block_tokens - 1)) == 0
                      ? __builtin_ctz(static_cast<unsigned>(a.block_tokens))
                      : -1;
  a.blocks_per_sequence = (a.seq_kv + a.block_tokens - 1) / a.block_tokens;
  if (a.paged && int64_t{a.batch} * a.blocks_per_sequence > (int64_t{1} << 31))
    fail("--op " + args.text + ": the paged pool holds more than 2^31 blocks");
  // ops/kinds/attention.cpp's rules for kv_cache.blocks: a paged pool's size, at least the blocks in use.
  p.given_blocks = args.integer("kv_cache.blocks");
  const int64_t in_use = int64_t{a.batch} * a.blocks_per_sequence;
  if (p.given_blocks < 0 || (p.given_blocks != 0 && (!a.paged || p.given_blocks < in_use)) ||
      p.given_blocks > (int64_t{1} << 31))
    fail("--op " + args.text + ": kv_cache.blocks sizes a paged pool: at least batch x ceil(seq_kv / " +
         "block_tokens) blocks, at most 2^31");
  p.pool_blocks = p.given_blocks != 0 ? p.given_blocks : in_use;
  const double scale = args.real("scale");
  if (!(scale >= 0) || !std::isfinite(scale)) fail("--op " + args.text + ": scale must be a positive number");
  p.given_scale = scale;
  p.scale = scale != 0 ? scale : 1.0 / std::sqrt(static_cast<double>(a.head_dim));
  a.scale_log2 = static_cast<float>(p.scale * 1.4426950408889634);  // log2(e)
  p.dtype = parse_dtype(args.get("dtype"));
  if (p.dtype == Dtype::int8) fail("--op " + args.text + ": attention takes fp32, bf16 or fp16");
  // ops/kinds/attention.cpp's limit: no tensor past 2^40 elements (every product below then fits int64).
  const double rows = static_cast<double>(a.batch) * a.heads * a.seq_q;
  const double kv_rows = a.paged ? static_cast<double>(p.pool_blocks) * a.kv_heads * a.block_tokens
                                 : static_cast<double>(a.batch) * a.kv_heads * a.seq_kv;
  if (std::max(rows, kv_rows) * a.head_dim > 0x1p40)
    fail("--op " + args.text + ": the Q, K, V or O tensor has more than 2^40 elements");
  p.seed = static_cast<uint64_t>(args.integer("seed"));
  const auto index = static_cast<uint32_t>(args.integer("index"));
  p.q_id = ops::tensor_id(index, 0);
  p.k_id = ops::tensor_id(index, 1);
  p.v_id = ops::tensor_id(index, 2);
  p.table_id = ops::tensor_id(index, 3);
  return p;
}

// Query-key pairs computed: all, or with the causal mask sum over i of (i + seq_kv - seq_q + 1).
double visible_pairs(const Attention& a) {
  if (!a.causal) return static_cast<double>(a.seq_q) * a.seq_kv;
  return static_cast<double>(a.seq_q) * (a.key_offset() + 1) + 0.5 * a.seq_q * (a.seq_q - 1.0);
}

OpMeasurement run_attention(const OpArgs& args, const RunContext& context) {
  const Problem p = problem_of(args);
  const Attention& a = p.a;
  const std::string dtype = args.get("dtype");
  OpSpec spec;
  spec.kind = "attention";
  spec.name = args.get("name");
  spec.op.set("kind", spec.kind).set("name", spec.name).set("index", args.integer("index"));
  spec.op.set("batch", int64_t{a.batch})
      .set("heads", int64_t{a.heads})
      .set("kv_heads", int64_t{a.kv_heads})
      .set("seq_q", int64_t{a.seq_q})
      .set("seq_kv", int64_t{a.seq_kv})
      .set("head_dim", int64_t{a.head_dim})
      .set("causal", a.causal ? "true" : "false")
      .set("scale", p.given_scale)  // 0: 1 / sqrt(head_dim), as the workload's default
      .set("kv_cache.layout", a.paged ? "paged" : "contiguous")
      .set("kv_cache.block_tokens", int64_t{a.block_tokens})
      .set("kv_cache.order", a.bshd ? "bshd" : "bhsd")
      .set("kv_cache.blocks", p.given_blocks)
      .set("dtype", dtype)
      .set("seed", static_cast<int64_t>(p.seed));
  spec.seed = p.seed;
  spec.out_elements = p.q_rows() * a.head_dim;
  spec.work = 4.0 * a.batch * a.heads * visible_pairs(a) * a.head_dim;  // QK^T and PV, 2 flops a MAC
  spec.rate_kind = rate_kind_of(p.dtype);
  // Q and O once, the keys and values of every sequence once (not a paged pool's padding), the block table.
  const double element = static_cast<double>(element_bytes(p.dtype));
  spec.bytes = (2.0 * p.q_rows() + 2.0 * a.batch * a.kv_heads * a.seq_kv) * a.head_dim * element +
               4.0 * static_cast<double>(p.table_entries());
  spec.reference = [p](const int64_t* positions, int count, double* out) {
    reference_at(p, positions, count, out);
  };

  const OutputType output = p.dtype == Dtype::fp32   ? OutputType::fp32
                            : p.dtype == Dtype::bf16 ? OutputType::bf16
                                                     : OutputType::fp16;
  auto path_named = [&](const std::string& library) {
    PathSpec path;
    path.name = library + "-" + dtype;
    path.numerics = true;
    path.output = output;
    path.tolerance = tolerance_for(output, p.dtype != Dtype::fp32, false);
    path.bytes = spec.bytes;
    return path;
  };
  std::string flash_skip;
  if (p.dtype == Dtype::fp32) {
    flash_skip = "the flash kernels take 16-bit operands (bf16, fp16); fp32 is cublas+softmax's";
  } else if (a.head_dim != 64 && a.head_dim != 128) {
    flash_skip = "the flash kernels are compiled for head_dim 64 and 128, not " + std::to_string(a.head_dim);
  }
  // The library path first: the first numerics path that passes is the anchor the others are compared with.
  PathSpec library = path_named("cublas+softmax");
  library.build = [p](const RunContext& run, std::string* note) { return build_cublas(p, run, note); };
  spec.paths.push_back(library);

  PathSpec prefill = path_named("flash_prefill");
  prefill.skip = flash_skip;
  prefill.build = [p, name = spec.name, path_name = prefill.name](const RunContext& run, std::string* note) {
    return build_prefill(p, run, run.pinned_choice(name, path_name), note);
  };
  spec.paths.push_back(prefill);

  PathSpec decode = path_named("flash_decode");
  decode.skip = flash_skip;
  const int64_t rows_per_kv_head = int64_t{a.group} * a.seq_q;
  if (decode.skip.empty() && rows_per_kv_head > 64)
    decode.skip = "split-KV decoding takes at most 64 query rows a kv head (heads / kv_heads x seq_q = " +
                  std::to_string(rows_per_kv_head) + "): the prefill kernel's op";
  decode.build = [p, name = spec.name, path_name = decode.name](const RunContext& run, std::string* note) {
    return build_decode(p, run, run.pinned_choice(name, path_name), note);
  };
  spec.paths.push_back(decode);
  return measure_op(spec, context);
}

}  // namespace

void register_attention() {
  op_registry()["attention"] = run_attention;
}

}  // namespace tessera::gpu
