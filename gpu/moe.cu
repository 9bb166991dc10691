// kind: moe on the GPU (issue 12; ops/kinds/moe.hpp): a mixture-of-experts FFN layer in bf16, as one launch
// of router GEMM, routing kernel (softmax or sigmoid, group-limited top-k, renormalised weights),
// permutation (a gather of X's rows into expert order), the experts' ragged GEMMs (gate and up as one GEMM on
// the experts' merged [hidden, 2 ffn] weights, SwiGLU or GELU, down), the shared experts on every token, and
// the weighted combine.
//
// Routing the output is checked by: the float64 routing of the host (ops/moe_routing.hpp, the header the
// CPU reference and the simulator use), from logits computed in float64 on the GPU as the CPU reference
// computes them (a sum over hidden in ascending index, products and sums rounded separately: no fused
// multiply-add), is computed once when the op is set up and given to the device as index tables (the rows of
// X in expert order, each expert's count, each token's rows to combine). The device's own router GEMM and
// top-k kernel run in every launch and are timed with the layer; their selection (bf16 logits, fp32 scores)
// is compared with the host's and recorded: they may differ only where two experts' host scores are within
// the fp32 logits' error (near ties, recorded with their gaps). A bf16 router cannot reproduce a float64
// routing bit for bit, and an output checked against the CPU reference needs the reference's routing.
//
// Paths (all store the bf16 output; the fastest is reported):
// - cublas_streams: one cublasGemmEx per expert and stage, dealt (longest first) over 1, 2, 4 or 8 streams
//   forked and joined inside the captured graph; the count chosen by device time;
// - cublas_grouped: cublasGemmGroupedBatchedEx, one call per stage for all the experts' ragged m.
// Both take each expert's row count from the host routing (the GEMM shapes are fixed when the graph is
// captured), where torch._grouped_mm reads the offsets from the device; scripts/gpu_torch_reference.py times
// PyTorch's per-expert loop and torch._grouped_mm on the same inputs and routing.
//
// The float64 reference at the sampled positions: the distinct tokens they fall in, each expert's sampled
// tokens through its FFN by cuBLAS DGEMMs on the generator's values widened to float64, accumulated in
// ascending expert index, then the shared experts (as ops/kinds/moe.cpp orders the sum).
//
// Every launch reads the experts' weights (over 1 GB in every shipped MoE workload, 20x the L2), so one copy
// of the inputs is used: no launch finds another's operands in the L2.
#include <array>
#include <cmath>
#include <memory>
#include <numeric>
#include <sstream>

#include "gpu/device.cuh"
#include "gpu/vectors.cuh"
#include "ops/moe_routing.hpp"

namespace tessera::gpu {

namespace {

// The slots of ops/kinds/moe.cpp.
enum Slot : uint32_t { kX, kRouter, kGate, kUp, kDown, kSharedGate, kSharedUp, kSharedDown, kPermutation };

constexpr int kMaxExperts = 4096;  // the routing kernel holds a token's scores in shared memory
constexpr int kRouteThreads = 256;

struct Moe {
  int64_t tokens = 0, hidden = 0, ffn = 0, experts = 0, top_k = 0, shared = 0;
  double capacity_factor = 0;
  bool swiglu = true;
  ops::MoeRoutingOptions routing;
  uint64_t seed = 0;
  uint32_t index = 0;
  int64_t up_cols() const { return swiglu ? 2 * ffn : ffn; }  // gate and up merged
  uint32_t id(Slot slot) const { return ops::tensor_id(index, slot); }
  ops::MoeRoutingRule rule() const { return {tokens, experts, top_k, capacity_factor, routing}; }
};

// ---- operands

// W_gu [rows, up_cols]: row r holds the gate's row r (swiglu) then the up projection's row r, as a model
// loader merges w1 and w3 (vLLM's w13).
__global__ void fill_merged(bool swiglu, uint64_t seed, uint32_t gate, uint32_t up, int64_t rows, int64_t ffn,
                            uint16_t* out) {
  const int64_t cols = swiglu ? 2 * ffn : ffn, count = rows * cols;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t row = i / cols, col = i % cols;
    const bool is_up = !swiglu || col >= ffn;
    out[i] = ops::input_bf16(seed, is_up ? up : gate,
                             static_cast<uint64_t>(row * ffn + (is_up && swiglu ? col - ffn : col)));
  }
}

// The layer's inputs on the device, shared by every path and the reference.
struct Weights {
  DeviceBuffer x, router, gate_up, down, shared_gate_up, shared_down;
};

std::shared_ptr<Weights> make_weights(const Moe& m) {
  auto w = std::make_shared<Weights>();
  const auto fill = [&](DeviceBuffer& buffer, Slot slot, int64_t count) {
    buffer = DeviceBuffer(static_cast<size_t>(count) * 2);
    fill_input<<<grid_for(count), 256>>>(Dtype::bf16, m.seed, m.id(slot), count, buffer.get());
    check_launch("fill a moe input");
  };
  const auto merged = [&](DeviceBuffer& buffer, Slot gate, Slot up, int64_t rows) {
    buffer = DeviceBuffer(static_cast<size_t>(rows * m.up_cols()) * 2);
    fill_merged<<<grid_for(rows * m.up_cols()), 256>>>(m.swiglu, m.seed, m.id(gate), m.id(up), rows, m.ffn,
                                                       static_cast<uint16_t*>(buffer.get()));
    check_launch("fill a moe expert's merged gate and up weights");
  };
  fill(w->x, kX, m.tokens * m.hidden);
  fill(w->router, kRouter, m.hidden * m.experts);
  merged(w->gate_up, kGate, kUp, m.experts * m.hidden);
  fill(w->down, kDown, m.experts * m.ffn * m.hidden);
  if (m.shared > 0) {
    merged(w->shared_gate_up, kSharedGate, kSharedUp, m.shared * m.hidden);
    fill(w->shared_down, kSharedDown, m.shared * m.ffn * m.hidden);
  }
  return w;
}

// ---- the host's routing

// logits[t, e] = sum over k ascending of X[t, k] Wr[k, e], each product and sum rounded: ops/kinds/moe.cpp's
// router_logits as written (a host build with -march=native may contract it into fused multiply-adds:
// docs/design-notes.md, "MoE on the GPU").
__global__ void float64_logits(Moe m, const uint16_t* x, const uint16_t* router, double* logits) {
  const int64_t count = m.tokens * m.experts;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t t = i / m.experts, e = i % m.experts;
    double sum = 0;
    for (int64_t k = 0; k < m.hidden; ++k)
      sum = __dadd_rn(sum, __dmul_rn(ops::bf16_to_float(x[t * m.hidden + k]),
                                     ops::bf16_to_float(router[k * m.experts + e])));
    logits[i] = sum;
  }
}

ops::MoeRouting host_routing(const Moe& m, const Weights& w, std::vector<double>* logits_out) {
  DeviceBuffer logits(static_cast<size_t>(m.tokens * m.experts) * sizeof(double));
  float64_logits<<<grid_for(m.tokens * m.experts), 256>>>(m, static_cast<const uint16_t*>(w.x.get()),
                                                          static_cast<const uint16_t*>(w.router.get()),
                                                          static_cast<double*>(logits.get()));
  check_launch("the moe router's float64 logits");
  std::vector<double> host(static_cast<size_t>(m.tokens * m.experts));
  TESSERA_CUDA(cudaMemcpy(host.data(), logits.get(), logits.bytes(), cudaMemcpyDeviceToHost));
  std::vector<int32_t> permutation;
  if (m.routing.forced())
    for (int64_t t = 0; t < m.tokens; ++t)
      permutation.push_back(static_cast<int32_t>(ops::input_index(
          m.seed, m.id(kPermutation), static_cast<uint64_t>(t), static_cast<uint64_t>(m.tokens))));
  ops::MoeRouting routing = ops::moe_route(m.rule(), host, permutation.data());
  if (logits_out) *logits_out = std::move(host);
  return routing;
}

// ---- the launch's kernels

struct Warp {
  float value;
  int index;
};
__device__ inline bool better(float a, int ai, float b, int bi) {
  return a > b || (a == b && ai < bi);
}
// The block's best (value, index) over its threads' candidates: the highest value, ties to the lower index.
__device__ Warp block_best(float value, int index, Warp* scratch) {
  for (int offset = 16; offset > 0; offset /= 2) {
    const float v = __shfl_down_sync(0xffffffffu, value, offset);
    const int i = __shfl_down_sync(0xffffffffu, index, offset);
    if (better(v, i, value, index)) value = v, index = i;
  }
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = {value, index};
  __syncthreads();
  if (threadIdx.x == 0) {
    Warp best = scratch[0];
    for (int w = 1; w < static_cast<int>(blockDim.x / 32); ++w)
      if (better(scratch[w].value, scratch[w].index, best.value, best.index)) best = scratch[w];
    scratch[32] = best;
  }
  __syncthreads();
  const Warp best = scratch[32];
  __syncthreads();
  return best;
}

__device__ float block_sum(float value, float* scratch) {
  for (int offset = 16; offset > 0; offset /= 2) value += __shfl_down_sync(0xffffffffu, value, offset);
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = value;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0;
    for (int w = 0; w < static_cast<int>(blockDim.x / 32); ++w) total += scratch[w];
    scratch[32] = total;
  }
  __syncthreads();
  const float total = scratch[32];
  __syncthreads();
  return total;
}

// One block per token: scores from the fp32 logits, the (group-limited) top-k, the renormalised weights.
// The rule of ops/moe_routing.hpp in fp32 (forced routing is the host's deal: the device selects as the
// router would).
__global__ void __launch_bounds__(kRouteThreads)
    route_tokens(Moe m, const float* logits, int32_t* experts_out, float* weights_out) {
  extern __shared__ float scores[];  // experts, then a flag per expert: allowed (1) or not (0)
  float* allowed = scores + m.experts;
  __shared__ Warp best_scratch[33];
  __shared__ float sum_scratch[33];
  const int64_t t = blockIdx.x;
  const int experts = static_cast<int>(m.experts);
  const float* row = logits + t * experts;
  float local_max = -INFINITY;
  for (int e = threadIdx.x; e < experts; e += blockDim.x) local_max = fmaxf(local_max, row[e]);
  const bool softmax = m.routing.scoring == ops::MoeScoring::softmax;
  float maximum = 0;
  if (softmax) maximum = block_best(local_max, 0, best_scratch).value;
  float local_sum = 0;
  for (int e = threadIdx.x; e < experts; e += blockDim.x) {
    const float s = softmax ? __expf(row[e] - maximum) : 1.0f / (1.0f + __expf(-row[e]));
    scores[e] = s;
    local_sum += s;
    allowed[e] = 1;
  }
  const float total = block_sum(local_sum, sum_scratch);
  if (softmax)
    for (int e = threadIdx.x; e < experts; e += blockDim.x) scores[e] /= total;
  __syncthreads();
  const int groups = static_cast<int>(m.routing.groups);
  if (groups > 1) {  // each group's two best scores summed; the topk_groups best groups kept
    __shared__ float group_score[kMaxExperts / 32];
    __shared__ int group_kept[kMaxExperts / 32];
    const int size = experts / groups;
    for (int g = threadIdx.x; g < groups; g += blockDim.x) {
      float first = -INFINITY, second = -INFINITY;
      int first_index = -1;
      for (int e = g * size; e < (g + 1) * size; ++e)
        if (first_index < 0 || scores[e] > first) {
          second = first, first = scores[e], first_index = e;
        } else if (scores[e] > second) {
          second = scores[e];
        }
      group_score[g] = size == 1 ? first : first + second;
      group_kept[g] = 0;
    }
    __syncthreads();
    if (threadIdx.x == 0)
      for (int round = 0; round < m.routing.topk_groups; ++round) {
        int chosen = -1;
        for (int g = 0; g < groups; ++g)
          if (!group_kept[g] && (chosen < 0 || group_score[g] > group_score[chosen])) chosen = g;
        group_kept[chosen] = 1;
      }
    __syncthreads();
    for (int e = threadIdx.x; e < experts; e += blockDim.x) allowed[e] = group_kept[e / size] ? 1.0f : 0.0f;
    __syncthreads();
  }
  float chosen_sum = 0;
  for (int j = 0; j < m.top_k; ++j) {
    float value = -INFINITY;
    int index = experts;
    for (int e = threadIdx.x; e < experts; e += blockDim.x)
      if (allowed[e] != 0 && better(scores[e], e, value, index)) value = scores[e], index = e;
    const Warp best = block_best(value, index, best_scratch);
    if (threadIdx.x == 0) {
      experts_out[t * m.top_k + j] = best.index;
      weights_out[t * m.top_k + j] = best.value;
      allowed[best.index] = 0;
    }
    chosen_sum += best.value;
    __syncthreads();
  }
  if (threadIdx.x < m.top_k)
    weights_out[t * m.top_k + threadIdx.x] *= static_cast<float>(m.routing.routed_scaling) / chosen_sum;
}

// Xp[i] = X[rows[i]]: 16-byte vectors (hidden % 8 == 0, checked).
__global__ void gather_rows(const uint4* x, const int32_t* rows, int64_t count, int64_t vectors_per_row,
                            uint4* out) {
  const int64_t total = count * vectors_per_row;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t row = i / vectors_per_row, v = i % vectors_per_row;
    out[i] = x[int64_t{rows[row]} * vectors_per_row + v];
  }
}

// A[r, c] = silu(G[r, c]) * G[r, ffn + c] (swiglu) or gelu(G[r, c]), in fp32, stored bf16; 8 columns a
// thread (ffn % 8 == 0, checked).
template <bool Swiglu>
__global__ void activate(const uint16_t* g, int64_t rows, int64_t ffn, uint16_t* out) {
  const int64_t per_row = ffn / 8, total = rows * per_row, in_cols = Swiglu ? 2 * ffn : ffn;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t row = i / per_row, col = i % per_row * 8;
    float a[8], o[8];
    load_vector<Elem::bf16, 8>(g, row * in_cols + col, a);
    if constexpr (Swiglu) {
      float u[8];
      load_vector<Elem::bf16, 8>(g, row * in_cols + ffn + col, u);
#pragma unroll
      for (int j = 0; j < 8; ++j) o[j] = silu_of(a[j]) * u[j];
    } else {
#pragma unroll
      for (int j = 0; j < 8; ++j) o[j] = gelu_of(a[j]);
    }
    store_vector<Elem::bf16, 8>(out, row * ffn + col, o);
  }
}

// out[t] = sum over the token's entries (rows of Y by ascending expert, -1: dropped) of weight x Y[row], then
// its shared experts' rows, in fp32; 8 columns a thread.
__global__ void combine(const uint16_t* y, const int32_t* rows, const float* weights, int64_t tokens,
                        int64_t entries, int64_t shared, int64_t shared_first, int64_t hidden,
                        uint16_t* out) {
  const int64_t per_row = hidden / 8, total = tokens * per_row;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t t = i / per_row, col = i % per_row * 8;
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0}, v[8];
    for (int64_t j = 0; j < entries; ++j) {
      const int32_t row = rows[t * entries + j];
      if (row < 0) continue;
      const float w = weights[t * entries + j];
      load_vector<Elem::bf16, 8>(y, int64_t{row} * hidden + col, v);
#pragma unroll
      for (int c = 0; c < 8; ++c) acc[c] += w * v[c];
    }
    for (int64_t s = 0; s < shared; ++s) {
      load_vector<Elem::bf16, 8>(y, (shared_first + s * tokens + t) * hidden + col, v);
#pragma unroll
      for (int c = 0; c < 8; ++c) acc[c] += v[c];
    }
    store_vector<Elem::bf16, 8>(out, t * hidden + col, acc);
  }
}

// ---- the launch

// One GEMM of a stage: C [rows, n] = A [rows, k] . W [k, n], row-major bf16, fp32 accumulation.
struct Gemm {
  const void* a;
  const void* w;
  void* c;
  int64_t rows;
};

cublasStatus_t gemm_on(cublasHandle_t handle, const Gemm& g, int64_t n, int64_t k) {
  const float one = 1, zero = 0;
  return cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(g.rows),
                      static_cast<int>(k), &one, g.w, CUDA_R_16BF, static_cast<int>(n), g.a, CUDA_R_16BF,
                      static_cast<int>(k), &zero, g.c, CUDA_R_16BF, static_cast<int>(n), CUBLAS_COMPUTE_32F,
                      CUBLAS_GEMM_DEFAULT);
}

// The tables and intermediates of a built path.
struct Layer {
  Moe m;
  std::shared_ptr<Weights> weights;
  int64_t kept = 0, rows = 0;   // routed rows kept; all rows of the stages (kept + shared x tokens)
  std::vector<int64_t> counts;  // rows per expert (routed, then shared)
  DeviceBuffer gather_table, combine_rows, combine_weights;
  DeviceBuffer logits, device_experts, device_weights, permuted, gate_up, activated, expert_out, out;
  std::vector<Gemm> up, down;  // the stages' GEMMs, experts with rows only
  int copies = 1;
  // cublas_streams
  std::vector<cudaStream_t> streams;
  std::vector<cublasHandle_t> handles;
  std::vector<DeviceBuffer> workspaces;
  std::vector<cudaEvent_t> events;
  std::vector<std::vector<int>> dealt;  // per stream count choice: the stream of each GEMM
  int stream_count = 1;
  // cublas_grouped
  DeviceBuffer pointers;  // up: W, A, C arrays then down's
  ~Layer() {
    for (cublasHandle_t h : handles) cublasDestroy(h);
    for (cudaStream_t s : streams) cudaStreamDestroy(s);
    for (cudaEvent_t e : events) cudaEventDestroy(e);
  }
};

std::shared_ptr<Layer> make_layer(const Moe& m, std::shared_ptr<Weights> weights, const ops::MoeRouting& r) {
  auto l = std::make_shared<Layer>();
  l->m = m;
  l->weights = std::move(weights);
  l->kept = r.kept();
  l->rows = l->kept + m.shared * m.tokens;
  std::vector<int32_t> gather(static_cast<size_t>(std::max<int64_t>(l->kept, 1)));
  for (int64_t i = 0; i < l->kept; ++i)
    gather[static_cast<size_t>(i)] = static_cast<int32_t>(r.expert_tokens[static_cast<size_t>(i)]);
  // Each token's entries by ascending expert: the row of its kept assignment (-1 dropped) and its weight.
  std::vector<int32_t> rows(static_cast<size_t>(m.tokens * m.top_k), -1);
  std::vector<float> weights_of(rows.size(), 0);
  std::vector<int64_t> filled(static_cast<size_t>(m.tokens), 0);
  for (int64_t e = 0; e < m.experts; ++e)
    for (int64_t i = r.expert_offsets[static_cast<size_t>(e)];
         i < r.expert_offsets[static_cast<size_t>(e + 1)]; ++i) {
      const int64_t t = r.expert_tokens[static_cast<size_t>(i)];
      const size_t at = static_cast<size_t>(t * m.top_k + filled[static_cast<size_t>(t)]++);
      rows[at] = static_cast<int32_t>(i);
      weights_of[at] = static_cast<float>(r.expert_weights[static_cast<size_t>(i)]);
    }
  const auto upload = [](DeviceBuffer& buffer, const void* data, size_t bytes) {
    buffer = DeviceBuffer(bytes);
    TESSERA_CUDA(cudaMemcpy(buffer.get(), data, bytes, cudaMemcpyHostToDevice));
  };
  upload(l->gather_table, gather.data(), gather.size() * 4);
  upload(l->combine_rows, rows.data(), rows.size() * 4);
  upload(l->combine_weights, weights_of.data(), weights_of.size() * 4);
  const size_t rows_alloc = static_cast<size_t>(std::max<int64_t>(l->rows, 1));
  l->logits = DeviceBuffer(static_cast<size_t>(m.tokens * m.experts) * 4);
  l->device_experts = DeviceBuffer(static_cast<size_t>(m.tokens * m.top_k) * 4);
  l->device_weights = DeviceBuffer(static_cast<size_t>(m.tokens * m.top_k) * 4);
  l->permuted = DeviceBuffer(static_cast<size_t>(std::max<int64_t>(l->kept, 1) * m.hidden) * 2);
  l->gate_up = DeviceBuffer(rows_alloc * static_cast<size_t>(m.up_cols()) * 2);
  l->activated = DeviceBuffer(rows_alloc * static_cast<size_t>(m.ffn) * 2);
  l->expert_out = DeviceBuffer(rows_alloc * static_cast<size_t>(m.hidden) * 2);
  l->out = DeviceBuffer(static_cast<size_t>(m.tokens * m.hidden) * 2);
  const auto at = [](const DeviceBuffer& b, int64_t elements) {
    return static_cast<char*>(b.get()) + elements * 2;
  };
  const Weights& w = *l->weights;
  for (int64_t e = 0; e < m.experts + m.shared; ++e) {
    const bool routed = e < m.experts;
    const int64_t first =
        routed ? r.expert_offsets[static_cast<size_t>(e)] : l->kept + (e - m.experts) * m.tokens;
    const int64_t count = routed ? r.count(e) : m.tokens;
    l->counts.push_back(count);
    if (count == 0) continue;
    const int64_t s = routed ? e : e - m.experts;
    const void* a = routed ? static_cast<const void*>(at(l->permuted, first * m.hidden)) : w.x.get();
    l->up.push_back({a, at(routed ? w.gate_up : w.shared_gate_up, s * m.hidden * m.up_cols()),
                     at(l->gate_up, first * m.up_cols()), count});
    l->down.push_back({at(l->activated, first * m.ffn),
                       at(routed ? w.down : w.shared_down, s * m.ffn * m.hidden),
                       at(l->expert_out, first * m.hidden), count});
  }
  return l;
}

// The layer's head (router GEMM, top-k, gather) and tail (activation, combine) around the stages' GEMMs.
void launch_router(const Layer& l) {
  const Moe& m = l.m;
  const Gemm router{l.weights->x.get(), l.weights->router.get(), nullptr, m.tokens};
  const float one = 1, zero = 0;
  TESSERA_CUBLAS(cublasGemmEx(cublas_handle(), CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(m.experts),
                              static_cast<int>(m.tokens), static_cast<int>(m.hidden), &one, router.w,
                              CUDA_R_16BF, static_cast<int>(m.experts), router.a, CUDA_R_16BF,
                              static_cast<int>(m.hidden), &zero, l.logits.get(), CUDA_R_32F,
                              static_cast<int>(m.experts), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  route_tokens<<<static_cast<unsigned>(m.tokens), kRouteThreads, 2 * m.experts * sizeof(float),
                 work_stream()>>>(m, static_cast<const float*>(l.logits.get()),
                                  static_cast<int32_t*>(l.device_experts.get()),
                                  static_cast<float*>(l.device_weights.get()));
  if (l.kept > 0)
    gather_rows<<<grid_for(l.kept * m.hidden / 8), 256, 0, work_stream()>>>(
        static_cast<const uint4*>(l.weights->x.get()), static_cast<const int32_t*>(l.gather_table.get()),
        l.kept, m.hidden / 8, static_cast<uint4*>(l.permuted.get()));
}

void launch_activation(const Layer& l) {
  if (l.rows == 0) return;
  const auto* g = static_cast<const uint16_t*>(l.gate_up.get());
  auto* a = static_cast<uint16_t*>(l.activated.get());
  if (l.m.swiglu)
    activate<true><<<grid_for(l.rows * l.m.ffn / 8), 256, 0, work_stream()>>>(g, l.rows, l.m.ffn, a);
  else
    activate<false><<<grid_for(l.rows * l.m.ffn / 8), 256, 0, work_stream()>>>(g, l.rows, l.m.ffn, a);
}

void launch_combine(const Layer& l) {
  const Moe& m = l.m;
  combine<<<grid_for(m.tokens * m.hidden / 8), 256, 0, work_stream()>>>(
      static_cast<const uint16_t*>(l.expert_out.get()), static_cast<const int32_t*>(l.combine_rows.get()),
      static_cast<const float*>(l.combine_weights.get()), m.tokens, m.top_k, m.shared, l.kept, m.hidden,
      static_cast<uint16_t*>(l.out.get()));
}

// cublas_streams: a stage's GEMMs dealt over the chosen streams, forked from and joined to the work stream.
void run_stage_streams(Layer& l, const std::vector<Gemm>& gemms, int64_t n, int64_t k, int choice) {
  const int streams = l.stream_count;
  const std::vector<int>& deal = l.dealt[static_cast<size_t>(choice)];
  if (streams == 1) {
    for (const Gemm& g : gemms) TESSERA_CUBLAS(gemm_on(cublas_handle(), g, n, k));
    return;
  }
  TESSERA_CUDA(cudaEventRecord(l.events[0], work_stream()));
  for (int s = 0; s < streams; ++s)
    TESSERA_CUDA(cudaStreamWaitEvent(l.streams[static_cast<size_t>(s)], l.events[0]));
  for (size_t i = 0; i < gemms.size(); ++i)
    TESSERA_CUBLAS(gemm_on(l.handles[static_cast<size_t>(deal[i])], gemms[i], n, k));
  for (int s = 0; s < streams; ++s) {
    TESSERA_CUDA(cudaEventRecord(l.events[static_cast<size_t>(s + 1)], l.streams[static_cast<size_t>(s)]));
    TESSERA_CUDA(cudaStreamWaitEvent(work_stream(), l.events[static_cast<size_t>(s + 1)]));
  }
}

// Longest first onto the least loaded stream (the GEMMs of a stage differ in rows only).
std::vector<int> deal_gemms(const std::vector<Gemm>& gemms, int streams) {
  std::vector<size_t> order(gemms.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return gemms[a].rows > gemms[b].rows; });
  std::vector<int64_t> load(static_cast<size_t>(streams), 0);
  std::vector<int> deal(gemms.size(), 0);
  for (size_t i : order) {
    const auto least = std::min_element(load.begin(), load.end()) - load.begin();
    deal[i] = static_cast<int>(least);
    load[static_cast<size_t>(least)] += gemms[i].rows;
  }
  return deal;
}

const std::vector<int> kStreamChoices = {1, 2, 4, 8};

// The layer owns its buffers; every launch writes its one output.
LivePath live_on_layer(const std::shared_ptr<Layer>& l) {
  LivePath live;
  live.copies = l->copies;
  live.output = l->out.get();
  live.output_at = [data = l.get()](int) { return data->out.get(); };
  live.state = l;
  return live;
}

std::optional<LivePath> build_streams(const Moe& m, std::shared_ptr<Weights> weights,
                                      const ops::MoeRouting& r, const std::string* pinned) {
  auto l = make_layer(m, std::move(weights), r);
  const int most = kStreamChoices.back();
  for (int s = 0; s < most; ++s) {
    cudaStream_t stream;
    TESSERA_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    l->streams.push_back(stream);
    cublasHandle_t handle;
    TESSERA_CUBLAS(cublasCreate(&handle));
    TESSERA_CUBLAS(cublasSetStream(handle, stream));
    l->workspaces.emplace_back(size_t{32} << 20);
    TESSERA_CUBLAS(cublasSetWorkspace(handle, l->workspaces.back().get(), l->workspaces.back().bytes()));
    l->handles.push_back(handle);
  }
  for (int s = 0; s <= most; ++s) {
    cudaEvent_t event;
    TESSERA_CUDA(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    l->events.push_back(event);
  }
  for (int streams : kStreamChoices) l->dealt.push_back(deal_gemms(l->up, streams));
  auto choice = std::make_shared<int>(0);
  LivePath live = live_on_layer(l);
  Layer* layer = l.get();
  live.launch = [layer, choice](int) {
    layer->stream_count = kStreamChoices[static_cast<size_t>(*choice)];
    launch_router(*layer);
    run_stage_streams(*layer, layer->up, layer->m.up_cols(), layer->m.hidden, *choice);
    launch_activation(*layer);
    run_stage_streams(*layer, layer->down, layer->m.hidden, layer->m.ffn, *choice);
    launch_combine(*layer);
  };
  std::vector<std::string> names;
  for (int streams : kStreamChoices)
    names.push_back(std::to_string(streams) + (streams == 1 ? " stream" : " streams"));
  if (!choose_named(
          names, [choice](int i) { *choice = i; }, pinned, "stream counts", live))
    return std::nullopt;
  return live;
}

// cublas_grouped: one cublasGemmGroupedBatchedEx a stage, a group per expert with rows (group size 1).
struct Grouped {
  std::vector<cublasOperation_t> no_transpose;
  std::vector<int> m, n, k, lda, ldb, ldc, sizes;
  std::vector<float> alpha, beta;
};

std::optional<LivePath> build_grouped(const Moe& m, std::shared_ptr<Weights> weights,
                                      const ops::MoeRouting& r, std::string* note) {
  auto l = make_layer(m, std::move(weights), r);
  const size_t groups = l->up.size();
  // Device arrays of pointers: up's W, A, C, then down's.
  std::vector<const void*> pointers;
  for (const std::vector<Gemm>* stage : {&l->up, &l->down}) {
    for (const Gemm& g : *stage) pointers.push_back(g.w);
    for (const Gemm& g : *stage) pointers.push_back(g.a);
    for (const Gemm& g : *stage) pointers.push_back(g.c);
  }
  l->pointers = DeviceBuffer(std::max<size_t>(pointers.size(), 1) * sizeof(void*));
  TESSERA_CUDA(cudaMemcpy(l->pointers.get(), pointers.data(), pointers.size() * sizeof(void*),
                          cudaMemcpyHostToDevice));
  auto shapes = std::make_shared<std::array<Grouped, 2>>();
  for (int stage = 0; stage < 2; ++stage) {
    Grouped& g = (*shapes)[static_cast<size_t>(stage)];
    const int n = static_cast<int>(stage == 0 ? m.up_cols() : m.hidden),
              k = static_cast<int>(stage == 0 ? m.hidden : m.ffn);
    for (const Gemm& gemm : l->up) {
      g.no_transpose.push_back(CUBLAS_OP_N);
      g.m.push_back(n), g.n.push_back(static_cast<int>(gemm.rows)), g.k.push_back(k);
      g.lda.push_back(n), g.ldb.push_back(k), g.ldc.push_back(n), g.sizes.push_back(1);
      g.alpha.push_back(1), g.beta.push_back(0);
    }
  }
  Layer* layer = l.get();
  const auto run_stage = [layer, shapes, groups](int stage) {
    const Grouped& g = (*shapes)[static_cast<size_t>(stage)];
    auto** base = static_cast<void**>(layer->pointers.get()) + static_cast<size_t>(stage) * 3 * groups;
    return cublasGemmGroupedBatchedEx(cublas_handle(), g.no_transpose.data(), g.no_transpose.data(),
                                      g.m.data(), g.n.data(), g.k.data(), g.alpha.data(), base, CUDA_R_16BF,
                                      g.lda.data(), base + groups, CUDA_R_16BF, g.ldb.data(), g.beta.data(),
                                      base + 2 * groups, CUDA_R_16BF, g.ldc.data(), static_cast<int>(groups),
                                      g.sizes.data(), CUBLAS_COMPUTE_32F);
  };
  launch_router(*layer);
  if (groups > 0 && run_stage(0) != CUBLAS_STATUS_SUCCESS) {
    cudaGetLastError();
    *note = "cuBLAS's cublasGemmGroupedBatchedEx does not take these bf16 shapes";
    return std::nullopt;
  }
  TESSERA_CUDA(cudaDeviceSynchronize());
  LivePath live = live_on_layer(l);
  live.launch = [layer, run_stage, groups](int) {
    launch_router(*layer);
    if (groups > 0) TESSERA_CUBLAS(run_stage(0));
    launch_activation(*layer);
    if (groups > 0) TESSERA_CUBLAS(run_stage(1));
    launch_combine(*layer);
  };
  live.chosen = "one cublasGemmGroupedBatchedEx a stage, " + std::to_string(groups) + " groups";
  return live;
}

// ---- the float64 reference at the sampled positions

__global__ void widen_rows(const uint16_t* in, int64_t count, double* out) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x)
    out[i] = ops::bf16_to_float(in[i]);
}

// out[i] = X[tokens[i]] (the sampled tokens' rows of X, widened).
__global__ void gather_widened(const uint16_t* x, const int32_t* tokens, int64_t count, int64_t hidden,
                               double* out) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count * hidden;
       i += int64_t{gridDim.x} * blockDim.x)
    out[i] = ops::bf16_to_float(x[int64_t{tokens[i / hidden]} * hidden + i % hidden]);
}

__global__ void gather_double(const double* x, const int32_t* rows, int64_t count, int64_t hidden,
                              double* out) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count * hidden;
       i += int64_t{gridDim.x} * blockDim.x)
    out[i] = x[int64_t{rows[i / hidden]} * hidden + i % hidden];
}

__global__ void activate_double(bool swiglu, const double* g, int64_t rows, int64_t ffn, double* out) {
  const int64_t in_cols = swiglu ? 2 * ffn : ffn;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < rows * ffn;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t row = i / ffn, col = i % ffn;
    const double a = g[row * in_cols + col];
    out[i] =
        swiglu ? a / (1.0 + exp(-a)) * g[row * in_cols + ffn + col] : 0.5 * a * (1.0 + erf(a / sqrt(2.0)));
  }
}

// acc[rows[i]] += weights[i] x y[i]
__global__ void accumulate_double(const double* y, const int32_t* rows, const double* weights, int64_t count,
                                  int64_t hidden, double* acc) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count * hidden;
       i += int64_t{gridDim.x} * blockDim.x)
    acc[int64_t{rows[i / hidden]} * hidden + i % hidden] += weights[i / hidden] * y[i];
}

__global__ void pick(const double* acc, const int32_t* slots, const int32_t* columns, int64_t hidden,
                     int count, double* out) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < count) out[i] = acc[int64_t{slots[i]} * hidden + columns[i]];
}

void dgemm(int64_t rows, int64_t n, int64_t k, const double* a, const double* w, double* c) {
  const double one = 1, zero = 0;
  TESSERA_CUBLAS(cublasDgemm(cublas_handle(), CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n),
                             static_cast<int>(rows), static_cast<int>(k), &one, w, static_cast<int>(n), a,
                             static_cast<int>(k), &zero, c, static_cast<int>(n)));
}

template <class T>
DeviceBuffer upload_vector(const std::vector<T>& values) {
  DeviceBuffer buffer(std::max<size_t>(values.size(), 1) * sizeof(T));
  TESSERA_CUDA(cudaMemcpy(buffer.get(), values.data(), values.size() * sizeof(T), cudaMemcpyHostToDevice));
  return buffer;
}

void reference_at(const Moe& m, const Weights& w, const ops::MoeRouting& r, const int64_t* positions,
                  int count, double* out) {
  std::vector<int64_t> host(static_cast<size_t>(count));
  TESSERA_CUDA(cudaMemcpy(host.data(), positions, host.size() * sizeof(int64_t), cudaMemcpyDeviceToHost));
  std::vector<int32_t> slot_of(static_cast<size_t>(m.tokens), -1), tokens;
  for (int64_t position : host) {
    int32_t& slot = slot_of[static_cast<size_t>(position / m.hidden)];
    if (slot < 0) slot = 0;  // marked; numbered in token order below
  }
  for (int64_t t = 0; t < m.tokens; ++t)
    if (slot_of[static_cast<size_t>(t)] >= 0) {
      slot_of[static_cast<size_t>(t)] = static_cast<int32_t>(tokens.size());
      tokens.push_back(static_cast<int32_t>(t));
    }
  std::vector<int32_t> slots, columns;
  for (int64_t position : host) {
    slots.push_back(slot_of[static_cast<size_t>(position / m.hidden)]);
    columns.push_back(static_cast<int32_t>(position % m.hidden));
  }
  const int64_t n = static_cast<int64_t>(tokens.size()), h = m.hidden, f = m.ffn, u = m.up_cols();
  cudaStream_t stream = work_stream();
  (void)stream;
  DeviceBuffer device_tokens = upload_vector(tokens);
  DeviceBuffer x(static_cast<size_t>(n * h) * 8), acc(static_cast<size_t>(n * h) * 8);
  TESSERA_CUDA(cudaMemset(acc.get(), 0, acc.bytes()));
  gather_widened<<<grid_for(n * h), 256, 0, work_stream()>>>(static_cast<const uint16_t*>(w.x.get()),
                                                             static_cast<const int32_t*>(device_tokens.get()),
                                                             n, h, static_cast<double*>(x.get()));
  DeviceBuffer xe(static_cast<size_t>(n * h) * 8), g(static_cast<size_t>(n * u) * 8),
      a(static_cast<size_t>(n * f) * 8), y(static_cast<size_t>(n * h) * 8);
  DeviceBuffer w_up(static_cast<size_t>(h * u) * 8), w_down(static_cast<size_t>(f * h) * 8);
  const auto expert = [&](const uint16_t* gate_up, const uint16_t* down, const std::vector<int32_t>& rows,
                          const std::vector<double>& weights) {
    const int64_t count_rows = static_cast<int64_t>(rows.size());
    if (count_rows == 0) return;
    DeviceBuffer device_rows = upload_vector(rows), device_weights = upload_vector(weights);
    gather_double<<<grid_for(count_rows * h), 256, 0, work_stream()>>>(
        static_cast<const double*>(x.get()), static_cast<const int32_t*>(device_rows.get()), count_rows, h,
        static_cast<double*>(xe.get()));
    widen_rows<<<grid_for(h * u), 256, 0, work_stream()>>>(gate_up, h * u, static_cast<double*>(w_up.get()));
    widen_rows<<<grid_for(f * h), 256, 0, work_stream()>>>(down, f * h, static_cast<double*>(w_down.get()));
    dgemm(count_rows, u, h, static_cast<const double*>(xe.get()), static_cast<const double*>(w_up.get()),
          static_cast<double*>(g.get()));
    activate_double<<<grid_for(count_rows * f), 256, 0, work_stream()>>>(
        m.swiglu, static_cast<const double*>(g.get()), count_rows, f, static_cast<double*>(a.get()));
    dgemm(count_rows, h, f, static_cast<const double*>(a.get()), static_cast<const double*>(w_down.get()),
          static_cast<double*>(y.get()));
    accumulate_double<<<grid_for(count_rows * h), 256, 0, work_stream()>>>(
        static_cast<const double*>(y.get()), static_cast<const int32_t*>(device_rows.get()),
        static_cast<const double*>(device_weights.get()), count_rows, h, static_cast<double*>(acc.get()));
    check_launch("an expert of the moe reference");  // before the tables are freed
  };
  const auto* gate_up = static_cast<const uint16_t*>(w.gate_up.get());
  const auto* down = static_cast<const uint16_t*>(w.down.get());
  for (int64_t e = 0; e < m.experts; ++e) {
    std::vector<int32_t> rows;
    std::vector<double> weights;
    for (int64_t i = r.expert_offsets[static_cast<size_t>(e)];
         i < r.expert_offsets[static_cast<size_t>(e + 1)]; ++i) {
      const int32_t slot = slot_of[static_cast<size_t>(r.expert_tokens[static_cast<size_t>(i)])];
      if (slot < 0) continue;
      rows.push_back(slot);
      weights.push_back(r.expert_weights[static_cast<size_t>(i)]);
    }
    expert(gate_up + e * h * u, down + e * f * h, rows, weights);
  }
  std::vector<int32_t> all(static_cast<size_t>(n));
  std::iota(all.begin(), all.end(), 0);
  for (int64_t s = 0; s < m.shared; ++s)
    expert(static_cast<const uint16_t*>(w.shared_gate_up.get()) + s * h * u,
           static_cast<const uint16_t*>(w.shared_down.get()) + s * f * h, all,
           std::vector<double>(all.size(), 1.0));
  DeviceBuffer device_slots = upload_vector(slots), device_columns = upload_vector(columns);
  pick<<<(count + 255) / 256, 256, 0, work_stream()>>>(
      static_cast<const double*>(acc.get()), static_cast<const int32_t*>(device_slots.get()),
      static_cast<const int32_t*>(device_columns.get()), h, count, out);
  check_launch("the moe reference's samples");
}

// ---- the device's routing against the host's

// The device top-k of launch(0) compared with the host's routing: tokens whose chosen sets differ, and the
// largest gap, in the host's float64 scores, between the sum of the host's chosen scores and of the
// device's (a near tie leaves it within the fp32 logits' error).
Json compare_routing(const Moe& m, const Layer& l, const ops::MoeRouting& r,
                     const std::vector<double>& logits) {
  std::vector<int32_t> device(static_cast<size_t>(m.tokens * m.top_k));
  TESSERA_CUDA(cudaDeviceSynchronize());
  TESSERA_CUDA(cudaMemcpy(device.data(), l.device_experts.get(), device.size() * 4, cudaMemcpyDeviceToHost));
  int64_t differing = 0, invalid = 0;  // invalid: a device expert out of range
  double largest_gap = 0;
  std::vector<double> scores(static_cast<size_t>(m.experts));
  for (int64_t t = 0; t < m.tokens; ++t) {
    std::vector<int32_t> host_set,
        device_set(device.begin() + t * m.top_k, device.begin() + (t + 1) * m.top_k);
    for (int64_t j = 0; j < m.top_k; ++j)
      host_set.push_back(r.routes[static_cast<size_t>(t * m.top_k + j)].expert);
    std::sort(host_set.begin(), host_set.end());
    std::sort(device_set.begin(), device_set.end());
    if (host_set == device_set) continue;
    ++differing;
    ops::moe_scores(m.routing.scoring, logits.data() + t * m.experts, m.experts, scores.data());
    double host_sum = 0, device_sum = 0;
    for (int32_t e : host_set) host_sum += scores[static_cast<size_t>(e)];
    bool valid = true;
    for (int32_t e : device_set) {
      valid = valid && e >= 0 && e < m.experts;
      if (valid) device_sum += scores[static_cast<size_t>(e)];
    }
    if (!valid) ++invalid;
    if (valid) largest_gap = std::max(largest_gap, std::abs(host_sum - device_sum));
  }
  constexpr double kNearTie = 1e-4;  // fp32 logits of bf16 operands sum hidden products: ~1e-5 absolute error
  return Json::object()
      .set("compared",
           "the device's top-k (bf16 router GEMM, fp32 scores) against the host's float64 routing")
      .set("tokens", m.tokens)
      .set("tokens_differing", differing)
      .set("tokens_with_invalid_experts", invalid)
      .set("largest_score_gap", largest_gap)
      .set("near_tie_bound", kNearTie)
      .set("agree_but_near_ties", invalid == 0 && largest_gap <= kNearTie);
}

// ---- the op

Moe moe_of(const OpArgs& args) {
  Moe m;
  m.tokens = args.integer("tokens");
  m.hidden = args.integer("hidden");
  m.ffn = args.integer("ffn");
  m.experts = args.integer("experts");
  m.top_k = args.integer("top_k");
  m.shared = args.integer("shared_experts");
  m.capacity_factor = args.real("capacity_factor");
  const std::string activation = args.get("activation");
  if (activation != "swiglu" && activation != "gelu") fail(args.text + ": activation is swiglu or gelu");
  m.swiglu = activation == "swiglu";
  const std::string scoring = args.get("routing.scoring");
  if (scoring != "softmax" && scoring != "sigmoid")
    fail(args.text + ": routing.scoring is softmax or sigmoid");
  m.routing.scoring = scoring == "softmax" ? ops::MoeScoring::softmax : ops::MoeScoring::sigmoid;
  m.routing.groups = args.integer("routing.groups");
  m.routing.topk_groups = args.integer("routing.topk_groups");
  m.routing.routed_scaling = args.real("routing.routed_scaling");
  const std::string skew = args.get("routing.skew");
  if (skew != "none" && skew != "zipf") fail(args.text + ": routing.skew is none or zipf");
  m.routing.skew = skew == "zipf" ? ops::MoeSkew::zipf : ops::MoeSkew::none;
  m.routing.alpha = args.real("routing.alpha");
  if (!args.get("routing.counts").empty()) {
    std::stringstream counts(args.get("routing.counts"));
    for (std::string count; std::getline(counts, count, '+');) m.routing.counts.push_back(std::stoll(count));
  }
  if (args.get("dtype") != "bf16") fail(args.text + ": the moe GPU paths take bf16");
  m.seed = static_cast<uint64_t>(args.integer("seed"));
  m.index = static_cast<uint32_t>(args.integer("index"));
  // ops/kinds/moe.cpp's rules, and what these kernels need.
  if (m.tokens <= 0 || m.hidden <= 0 || m.ffn <= 0 || m.experts <= 0 || m.top_k <= 0 || m.top_k > m.experts ||
      m.shared < 0 || m.capacity_factor < 0 || m.routing.groups <= 0 || m.experts % m.routing.groups != 0 ||
      m.routing.topk_groups <= 0 || m.routing.topk_groups > m.routing.groups ||
      m.top_k > m.routing.topk_groups * (m.experts / m.routing.groups))
    fail(args.text +
         ": a moe needs positive sizes, top_k <= experts, groups dividing experts and enough kept "
         "groups for top_k");
  if (m.routing.forced() && m.routing.groups > 1) fail(args.text + ": forced routing chooses no groups");
  if (!m.routing.counts.empty()) {
    int64_t sum = 0;
    for (int64_t count : m.routing.counts) {
      if (count < 0 || count > m.tokens) fail(args.text + ": a forced count is outside 0 .. tokens");
      sum += count;
    }
    if (static_cast<int64_t>(m.routing.counts.size()) != m.experts || sum != m.tokens * m.top_k)
      fail(args.text + ": the forced counts are one per expert and sum to tokens x top_k");
  }
  if (m.hidden % 8 != 0 || m.ffn % 8 != 0)
    fail(args.text + ": the moe GPU paths need hidden and ffn multiples of 8");
  if (m.experts > kMaxExperts || m.top_k > kRouteThreads || m.routing.groups > kMaxExperts / 32)
    fail(args.text + ": the moe GPU routing kernel takes at most 4096 experts, 128 groups and top_k 256");
  if (m.tokens > (int64_t{1} << 24) || m.hidden > (int64_t{1} << 24) || m.ffn > (int64_t{1} << 24) ||
      static_cast<double>(m.experts) * static_cast<double>(m.hidden) * static_cast<double>(m.up_cols()) >
          0x1p38 ||
      static_cast<double>(m.tokens) * static_cast<double>(m.top_k + m.shared) *
              static_cast<double>(m.up_cols()) >
          0x1p36)
    fail(args.text + ": the moe layer is larger than the GPU paths hold");
  return m;
}

OpMeasurement run_moe(const OpArgs& args, const RunContext& context) {
  const Moe m = moe_of(args);
  OpSpec spec;
  spec.kind = "moe";
  spec.name = args.get("name");
  spec.op.set("kind", spec.kind).set("name", spec.name).set("index", args.integer("index"));
  spec.op.set("tokens", m.tokens).set("hidden", m.hidden).set("ffn", m.ffn).set("experts", m.experts);
  spec.op.set("top_k", m.top_k).set("capacity_factor", m.capacity_factor).set("shared_experts", m.shared);
  spec.op.set("activation", m.swiglu ? "swiglu" : "gelu");
  spec.op.set("routing.scoring", m.routing.scoring == ops::MoeScoring::softmax ? "softmax" : "sigmoid");
  spec.op.set("routing.groups", m.routing.groups).set("routing.topk_groups", m.routing.topk_groups);
  spec.op.set("routing.routed_scaling", m.routing.routed_scaling);
  if (m.routing.skew == ops::MoeSkew::zipf)
    spec.op.set("routing.skew", "zipf").set("routing.alpha", m.routing.alpha);
  if (!m.routing.counts.empty()) spec.op.set("routing.counts", args.get("routing.counts"));
  spec.op.set("dtype", args.get("dtype")).set("seed", static_cast<int64_t>(m.seed));
  spec.seed = m.seed;
  spec.out_elements = m.tokens * m.hidden;
  // 4096 positions in the rows of at most 16 seeded tokens: the CPU reference (ops/kinds/moe.cpp's sampled
  // one, which the recorded-outputs test runs) costs a token's whole FFN through each of its experts, so
  // 4096 positions spread over 2600 tokens of a prefill took it many minutes; the other tokens' outputs are
  // checked whole against the anchor path.
  spec.positions = [m] {
    const int64_t rows = std::min<int64_t>(16, m.tokens), per_row = std::min<int64_t>(4096 / rows, m.hidden);
    std::vector<int64_t> positions;
    for (int64_t i = 0; i < rows; ++i) {
      const auto token = static_cast<int64_t>(
          ops::input_index(m.seed, 0x7ffffffeu, static_cast<uint64_t>(i), static_cast<uint64_t>(m.tokens)));
      for (int64_t j = 0; j < per_row; ++j)
        positions.push_back(token * m.hidden + static_cast<int64_t>(ops::input_index(
                                                   m.seed, 0x7ffffffdu, static_cast<uint64_t>(j),
                                                   static_cast<uint64_t>(m.hidden))));
    }
    return positions;
  };

  const std::shared_ptr<Weights> weights = make_weights(m);
  auto logits = std::make_shared<std::vector<double>>();
  auto routing = std::make_shared<ops::MoeRouting>(host_routing(m, *weights, logits.get()));
  const ops::MoeRouting& r = *routing;
  int64_t experts_read = 0;
  for (int64_t e = 0; e < m.experts; ++e) experts_read += r.count(e) > 0 ? 1 : 0;
  const double per_token = static_cast<double>((m.swiglu ? 3 : 2) * m.hidden * m.ffn);
  const double rows = static_cast<double>(r.kept() + m.shared * m.tokens);
  spec.work = 2.0 * (static_cast<double>(m.tokens * m.hidden * m.experts) + rows * per_token);
  spec.rate_kind = "bf16";
  // X and O once, the router, the read experts' and the shared experts' weights (the routing's own figure,
  // where ops/kinds/moe.cpp's DRAM minimum assumes a balanced router).
  spec.bytes =
      2.0 * (2.0 * static_cast<double>(m.tokens * m.hidden) + static_cast<double>(m.hidden * m.experts) +
             static_cast<double>(experts_read + m.shared) * per_token);
  spec.reference = [m, weights, routing](const int64_t* positions, int count, double* out) {
    reference_at(m, *weights, *routing, positions, count, out);
  };
  auto routing_check = std::make_shared<std::optional<Json>>();
  const auto with_check = [m, routing, logits, routing_check](std::optional<LivePath> live) {
    if (live && !*routing_check) {
      live->launch(0);
      *routing_check = compare_routing(m, *std::static_pointer_cast<Layer>(live->state), *routing, *logits);
    }
    return live;
  };
  PathSpec streams;
  streams.name = "cublas_streams-bf16";
  streams.numerics = true;
  streams.output = OutputType::bf16;
  streams.tolerance = tolerance_for(OutputType::bf16, true, false);
  streams.bytes = spec.bytes;
  streams.build = [m, weights, routing, with_check, name = spec.name](const RunContext& run, std::string*) {
    return with_check(build_streams(m, weights, *routing, run.pinned_choice(name, "cublas_streams-bf16")));
  };
  PathSpec grouped = streams;
  grouped.name = "cublas_grouped-bf16";
  grouped.build = [m, weights, routing, with_check](const RunContext&, std::string* note) {
    return with_check(build_grouped(m, weights, *routing, note));
  };
  spec.paths = {streams, grouped};
  spec.notes.push_back(
      {"routing",
       "the host's float64 routing (ops/moe_routing.hpp) from float64 logits computed on the GPU "
       "without fused multiply-adds, given to the device as index tables; the device's "
       "router GEMM and top-k run and are timed in every launch"});
  spec.notes.push_back(
      {"copies", "one copy of the inputs: every launch reads the experts' weights, many times the L2"});
  OpMeasurement measurement = measure_op(spec, context);
  Json counts = Json::array();
  for (int64_t e = 0; e < m.experts; ++e) counts.push(r.count(e));
  measurement.record.set("routing_counts", counts)
      .set("routing_dropped", r.dropped)
      .set("experts_read", experts_read);
  if (*routing_check) measurement.record.set("device_routing", **routing_check);
  // The host routing, for a framework that runs the layer alike (capi.cu's tgr_table): each token's top_k
  // experts (-1: dropped) and weights, by falling weight.
  std::vector<double> experts_of(static_cast<size_t>(m.tokens * m.top_k)), weights_of(experts_of.size());
  for (size_t i = 0; i < experts_of.size(); ++i) {
    experts_of[i] = r.routes[i].kept ? r.routes[i].expert : -1;
    weights_of[i] = r.routes[i].weight;
  }
  measurement.tables["moe.experts"] = std::move(experts_of);
  measurement.tables["moe.weights"] = std::move(weights_of);
  return measurement;
}

}  // namespace

void register_moe() {
  op_registry()["moe"] = run_moe;
}

}  // namespace tessera::gpu
