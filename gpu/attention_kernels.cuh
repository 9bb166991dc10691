// The runner's own attention kernels (attention.cu measures them): a FlashAttention-2 style prefill kernel
// and a split-KV decode kernel (flash-decoding) with its combine kernel, for bf16 and fp16 Q, K, V with fp32
// accumulation, head_dim 64 or 128. Both compute on the tensor cores with mma.sync m16n8k16 fed by ldmatrix
// from shared memory, K and V tiles arrive by cp.async in a ring of STAGES buffers (the tile j + STAGES - 1
// is requested while tile j is computed), and the softmax is online (a running max and sum per query row,
// the output rescaled when the max grows) with the scale folded into one exp2 argument. The semantics are
// ops/kinds/attention.hpp's: Q and O rows (b, h, i), query head h reads kv head h / group, causal queries are
// the last seq_q positions (query i sees keys 0 .. i + seq_kv - seq_q), and K/V rows come from a contiguous
// (bhsd or bshd) or paged cache (KvRows below mirrors AttentionShape::kv_row).
//
// Fragment names, as in the PTX ISA's mma.m16n8k16 layouts: a warp holds row tiles (mt) of 16 query rows; S
// is kNT n-tiles of 8 keys (pairs of them: np), O is kDT d-tiles of 8 columns (pairs: dp); the QK^T
// reduction runs over D / 16 k-steps (ks) of head_dim, the PV one over k-steps of 16 keys (kk).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "gpu/vectors.cuh"

namespace tessera::gpu::flash {

// One attention as the kernels take it: every count fits 32 bits (attention.cu checks), rows are 64-bit.
struct Attention {
  int batch = 1, heads = 0, kv_heads = 0, seq_q = 0, seq_kv = 0, head_dim = 0;
  int group = 1;  // query heads per kv head
  bool causal = false, paged = false, bshd = false;
  // Paged: tokens a block, and its log2 when a power of two (else -1).
  int block_tokens = 16, block_shift = -1;
  int blocks_per_sequence = 1;
  float scale_log2 = 0;  // the softmax scale times log2(e): p = 2^(s * scale_log2 - max * scale_log2)
  // Query i sees keys 0 .. i + key_offset() (causal, bottom-right aligned).
  __host__ __device__ int key_offset() const { return seq_kv - seq_q; }
};

// Where kv head h of sequence b keeps its rows: token s is row page * page_rows + head_offset + t *
// token_stride, with (page, t) = (table[s / block_tokens], s % block_tokens) for a paged cache and (0, s) for
// a contiguous one. bhsd: a head's tokens consecutive (inside a block when paged); bshd: a token's heads
// consecutive (ops/kinds/attention.cpp's kv_row, written as one formula for all four layouts).
struct KvRows {
  const int32_t* table = nullptr;  // the sequence's row of the block table (paged), else null
  int64_t head_offset = 0, page_rows = 0;
  int token_stride = 1, block_tokens = 1, block_shift = -1;

  __device__ static KvRows of(const Attention& a, const int32_t* block_table, int b, int h) {
    KvRows rows;
    rows.token_stride = a.bshd ? a.kv_heads : 1;
    rows.block_tokens = a.block_tokens;
    rows.block_shift = a.block_shift;
    if (a.paged) {
      rows.table = block_table + int64_t{b} * a.blocks_per_sequence;
      rows.head_offset = a.bshd ? int64_t{h} : int64_t{h} * a.block_tokens;
      rows.page_rows = int64_t{a.kv_heads} * a.block_tokens;
    } else {
      rows.head_offset =
          a.bshd ? int64_t{b} * a.seq_kv * a.kv_heads + h : (int64_t{b} * a.kv_heads + h) * a.seq_kv;
    }
    return rows;
  }
  __device__ int block_of(int s) const { return block_shift >= 0 ? s >> block_shift : s / block_tokens; }
  // Token s's row, `page` being table[block_of(s)] (read earlier, so its latency hides behind a tile).
  __device__ int64_t row(int s, int page) const {
    if (!table) return head_offset + int64_t{s} * token_stride;
    const int t = s - block_of(s) * block_tokens;
    return page * page_rows + head_offset + int64_t{t} * token_stride;
  }
};

// ---- PTX the kernels use (sm_80+)

__device__ inline uint32_t shared_address(const void* pointer) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(pointer));
}

// 16 bytes global -> shared, bypassing L1; `valid` false writes 16 zero bytes and reads nothing.
__device__ inline void copy_async(uint32_t destination, const void* source, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(destination), "l"(source),
               "r"(valid ? 16 : 0));
}
__device__ inline void commit_copies() {
  asm volatile("cp.async.commit_group;\n" ::);
}
// Waits until at most N of this thread's committed copy groups are still in flight.
template <int N>
__device__ inline void wait_copies() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ inline void load_matrices(uint32_t (&r)[4], uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}
__device__ inline void load_matrices_transposed(uint32_t (&r)[4], uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

// c += a (16x16, row) * b (16x8, col) with fp32 accumulation.
template <Elem E>
__device__ inline void mma_16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (E == Elem::bf16) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// 2^x in one special-function instruction (2^-inf = 0).
__device__ inline float exp2_fast(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// Two floats as the 16-bit pair an mma operand register holds (lo in the low half), rounded to nearest even.
template <Elem E>
__device__ inline uint32_t pack_pair(float lo, float hi) {
  return uint32_t{from_float<E>(lo)} | (uint32_t{from_float<E>(hi)} << 16);
}

// The element offset of 16-byte chunk `chunk` of row `row` in a tile of rows of D elements: chunks are
// XOR-swizzled by the row's low three bits, so the eight rows an ldmatrix phase (or a cp.async phase) touches
// fall in eight different bank groups — no padding, no conflicts.
template <int D>
__device__ inline int swizzled(int row, int chunk) {
  return row * D + ((chunk ^ (row & 7)) << 3);
}

// Copies ROWS consecutive keys' K and V rows (D elements each) into swizzled shared tiles, THREADS threads
// each taking a fixed chunk of kIters rows. A paged cache's block numbers for the next tile are read a tile
// ahead (fetch_pages), so no cp.async waits on a block-table load.
template <int D, int ROWS, int THREADS>
struct KvTileLoader {
  static constexpr int kChunks = D / 8, kStep = THREADS / kChunks, kIters = ROWS / kStep;
  static_assert(THREADS % kChunks == 0 && ROWS % kStep == 0, "a tile's chunks divide evenly among threads");
  KvRows rows;
  int seq_kv = 0, first_row = 0, chunk = 0;
  int page[kIters];

  __device__ KvTileLoader(const KvRows& kv, int keys) : rows(kv), seq_kv(keys) {
    first_row = static_cast<int>(threadIdx.x) / kChunks;
    chunk = static_cast<int>(threadIdx.x) % kChunks;
#pragma unroll
    for (int i = 0; i < kIters; ++i) page[i] = 0;
  }
  __device__ void fetch_pages(int first_key) {
    if (!rows.table) return;
#pragma unroll
    for (int i = 0; i < kIters; ++i) {
      const int s = first_key + first_row + i * kStep;
      if (s < seq_kv) page[i] = rows.table[rows.block_of(s)];
    }
  }
  __device__ void issue(int first_key, const uint16_t* k, const uint16_t* v, uint16_t* k_tile,
                        uint16_t* v_tile) const {
#pragma unroll
    for (int i = 0; i < kIters; ++i) {
      const int r = first_row + i * kStep, s = first_key + r;
      const bool valid = s < seq_kv;  // keys past the end read as zeros (a NaN in V would survive p = 0)
      const int64_t element = valid ? rows.row(s, page[i]) * D + chunk * 8 : 0;
      const int at = swizzled<D>(r, chunk);
      copy_async(shared_address(k_tile + at), k + element, valid);
      copy_async(shared_address(v_tile + at), v + element, valid);
    }
  }
};

// The online softmax of one row-half of a 16-row fragment: `s` holds this thread's scores of the row (kNT
// n-tiles, elements e and e + 1 of each), `row_max` and `row_sum` the running max (raw score units) and this
// thread's part of the sum; the output fragment `o` is rescaled and the scores become probabilities in place.
template <int kNT, int kDT>
__device__ inline void softmax_half(float (&s)[kNT][4], float (&o)[kDT][4], int e, float& row_max,
                                    float& row_sum, float scale_log2) {
  float maximum = row_max;
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt) maximum = fmaxf(maximum, fmaxf(s[nt][e], s[nt][e + 1]));
  maximum = fmaxf(maximum, __shfl_xor_sync(0xffffffffu, maximum, 1));
  maximum = fmaxf(maximum, __shfl_xor_sync(0xffffffffu, maximum, 2));
  // A row with no visible key yet keeps max -inf: subtract 0 then, not -inf (which would give NaN).
  const float base = maximum == -INFINITY ? 0.0f : maximum * scale_log2;
  const float rescale = exp2_fast(row_max * scale_log2 - base);
  row_max = maximum;
  float sum = 0;
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt) {
    s[nt][e] = exp2_fast(fmaf(s[nt][e], scale_log2, -base));
    s[nt][e + 1] = exp2_fast(fmaf(s[nt][e + 1], scale_log2, -base));
    sum += s[nt][e] + s[nt][e + 1];
  }
  row_sum = row_sum * rescale + sum;
#pragma unroll
  for (int dt = 0; dt < kDT; ++dt) {
    o[dt][e] *= rescale;
    o[dt][e + 1] *= rescale;
  }
}

// S (MT row tiles of 16 x 8 kNT) += Q (16 MT x D) * K^T, K the kNT * 8 rows from k_row of the tile. Q's
// fragments are in registers (one row tile) or loaded from the swizzled Q tile's rows from q_row; each K
// fragment is loaded once for all MT row tiles.
template <Elem E, int D, int MT, int kNT, bool kQInRegisters>
__device__ inline void scores(float (&s)[MT][kNT][4], const uint32_t (&q_fragment)[D / 16][4],
                              const uint16_t* q_tile, int q_row, const uint16_t* k_tile, int k_row,
                              int lane) {
#pragma unroll
  for (int ks = 0; ks < D / 16; ++ks) {
    uint32_t a[MT][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      if constexpr (kQInRegisters) {
#pragma unroll
        for (int i = 0; i < 4; ++i) a[mt][i] = q_fragment[ks][i];
      } else {
        load_matrices(a[mt],
                      shared_address(q_tile + swizzled<D>(q_row + mt * 16 + lane % 16, ks * 2 + lane / 16)));
      }
    }
#pragma unroll
    for (int np = 0; np < kNT / 2; ++np) {
      // Keys 16np .. 16np + 15 by d 16ks .. 16ks + 15: matrices (keys 0-7, d 0-7), (0-7, 8-15), (8-15, 0-7),
      // (8-15, 8-15) are b0 and b1 of n-tiles 2np and 2np + 1.
      uint32_t b[4];
      load_matrices(b, shared_address(k_tile + swizzled<D>(k_row + np * 16 + lane % 8 + (lane / 16) * 8,
                                                           ks * 2 + (lane / 8) % 2)));
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        mma_16816<E>(s[mt][2 * np], a[mt], b[0], b[1]);
        mma_16816<E>(s[mt][2 * np + 1], a[mt], b[2], b[3]);
      }
    }
  }
}

// O (MT row tiles of 16 x D) += P (16 MT x 8 kNT: the probabilities still in the scores' accumulator
// registers, whose layout is the A operand's once packed in pairs) * V, V the kNT * 8 rows from v_row of the
// tile; each V fragment is loaded once for all MT row tiles.
template <Elem E, int D, int MT, int kNT>
__device__ inline void weighted_values(float (&o)[MT][D / 8][4], const float (&p)[MT][kNT][4],
                                       const uint16_t* v_tile, int v_row, int lane) {
#pragma unroll
  for (int kk = 0; kk < kNT / 2; ++kk) {
    uint32_t a[MT][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      a[mt][0] = pack_pair<E>(p[mt][2 * kk][0], p[mt][2 * kk][1]);
      a[mt][1] = pack_pair<E>(p[mt][2 * kk][2], p[mt][2 * kk][3]);
      a[mt][2] = pack_pair<E>(p[mt][2 * kk + 1][0], p[mt][2 * kk + 1][1]);
      a[mt][3] = pack_pair<E>(p[mt][2 * kk + 1][2], p[mt][2 * kk + 1][3]);
    }
#pragma unroll
    for (int dp = 0; dp < D / 16; ++dp) {
      // Keys 16kk .. + 15 by d 16dp .. + 15, transposed: (keys 0-7, d 0-7), (8-15, 0-7), (0-7, 8-15),
      // (8-15, 8-15) are b0 and b1 of d-tiles 2dp and 2dp + 1.
      uint32_t b[4];
      load_matrices_transposed(
          b, shared_address(v_tile + swizzled<D>(v_row + kk * 16 + lane % 8 + ((lane / 8) % 2) * 8,
                                                 dp * 2 + lane / 16)));
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        mma_16816<E>(o[mt][2 * dp], a[mt], b[0], b[1]);
        mma_16816<E>(o[mt][2 * dp + 1], a[mt], b[2], b[3]);
      }
    }
  }
}

// ---- prefill

// A prefill tiling: BR queries a block over WARPS warps (16 or 32 rows a warp), BC keys a tile, STAGES tiles
// in flight. With 16 rows a warp the warp's Q fragments stay in registers (D / 16 x 4 registers) and the Q
// tile's shared memory is the last stage's, reused once they are loaded; with 32 rows (FlashAttention-2's
// 128 x 64 on 4 warps) Q stays in shared memory and each K/V fragment feeds two row tiles.
template <int D, int BR, int BC, int WARPS, int STAGES>
struct PrefillShape {
  static constexpr int kThreads = WARPS * 32, kRowsPerWarp = BR / WARPS, kRowTiles = kRowsPerWarp / 16;
  static constexpr bool kQInRegisters = kRowTiles == 1;
  static constexpr int kTileElements = BC * D;
  static constexpr bool kQInStage = kQInRegisters && BR <= 2 * BC && STAGES >= 2;
  static constexpr int kSharedBytes = (STAGES * 2 * kTileElements + (kQInStage ? 0 : BR * D)) * 2;
  static_assert(kRowsPerWarp % 16 == 0 && kRowTiles <= 2, "16 or 32 query rows a warp");
  static_assert(BC % 16 == 0 && STAGES >= 2, "tiles of 16 keys, at least double buffered");
};

// One block: BR queries of one (batch, head), all the keys they see. Blocks are numbered with the query block
// slowest and the last (most keys, when causal) first, so the longest blocks start first.
template <Elem E, int D, int BR, int BC, int WARPS, int STAGES>
__global__ void __launch_bounds__(WARPS * 32)
    flash_prefill(Attention a, const uint16_t* __restrict__ q, const uint16_t* __restrict__ k,
                  const uint16_t* __restrict__ v, const int32_t* __restrict__ table,
                  uint16_t* __restrict__ out) {
  using Shape = PrefillShape<D, BR, BC, WARPS, STAGES>;
  constexpr int kThreads = Shape::kThreads, kRowTiles = Shape::kRowTiles, kChunks = D / 8;
  constexpr int kNT = BC / 8, kDT = D / 8;
  extern __shared__ __align__(128) unsigned char shared_bytes[];
  auto* shared = reinterpret_cast<uint16_t*>(shared_bytes);
  auto k_tile = [&](int stage) { return shared + stage * 2 * Shape::kTileElements; };
  auto v_tile = [&](int stage) { return shared + stage * 2 * Shape::kTileElements + Shape::kTileElements; };
  uint16_t* q_tile = Shape::kQInStage ? k_tile(STAGES - 1) : shared + STAGES * 2 * Shape::kTileElements;

  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t sequences = int64_t{a.batch} * a.heads;
  const int q_blocks = (a.seq_q + BR - 1) / BR;
  const int query_block = q_blocks - 1 - static_cast<int>(blockIdx.x / sequences);
  const int64_t bh = blockIdx.x % sequences;  // b * heads + h
  const int h = static_cast<int>(bh % a.heads), b = static_cast<int>(bh / a.heads);
  const int q0 = query_block * BR, q_rows = min(BR, a.seq_q - q0);
  const int64_t q_base = bh * a.seq_q + q0;  // the row of query q0 in Q and O
  const int offset = a.key_offset();
  const int kv_end = a.causal ? min(a.seq_kv, q0 + q_rows + offset) : a.seq_kv;
  const int tiles = (kv_end + BC - 1) / BC;

  for (int index = static_cast<int>(threadIdx.x); index < BR * kChunks; index += kThreads) {
    const int r = index / kChunks, c = index % kChunks;
    copy_async(shared_address(q_tile + swizzled<D>(r, c)), q + (q_base + (r < q_rows ? r : 0)) * D + c * 8,
               r < q_rows);
  }
  KvTileLoader<D, BC, kThreads> loader(KvRows::of(a, table, b, h / a.group), a.seq_kv);
  for (int stage = 0; stage < STAGES - 1; ++stage) {
    if (stage < tiles) {
      loader.fetch_pages(stage * BC);
      loader.issue(stage * BC, k, v, k_tile(stage), v_tile(stage));
    }
    commit_copies();  // Q travels with tile 0
  }
  loader.fetch_pages((STAGES - 1) * BC);

  const int warp_row = warp * Shape::kRowsPerWarp;
  uint32_t q_fragment[D / 16][4];
  if constexpr (Shape::kQInRegisters) {
    wait_copies<STAGES - 2>();
    __syncthreads();
#pragma unroll
    for (int ks = 0; ks < D / 16; ++ks)
      load_matrices(q_fragment[ks],
                    shared_address(q_tile + swizzled<D>(warp_row + lane % 16, ks * 2 + lane / 16)));
  }

  float o[kRowTiles][kDT][4] = {};
  float row_max[kRowTiles][2], row_sum[kRowTiles][2];
#pragma unroll
  for (int mt = 0; mt < kRowTiles; ++mt)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      row_max[mt][half] = -INFINITY;
      row_sum[mt][half] = 0;
    }

  for (int j = 0; j < tiles; ++j) {
    wait_copies<STAGES - 2>();  // tile j has landed
    __syncthreads();            // ... for every thread, and every warp is done with the stage refilled next
    const int next = j + STAGES - 1;
    if (next < tiles) {
      loader.issue(next * BC, k, v, k_tile(next % STAGES), v_tile(next % STAGES));
      loader.fetch_pages((next + 1) * BC);
    }
    commit_copies();
    const int k0 = j * BC;
    const uint16_t* keys = k_tile(j % STAGES);
    const uint16_t* values = v_tile(j % STAGES);
    // Keys past the end, and keys after some query of the block (the diagonal tiles), are masked.
    const bool edge = k0 + BC > a.seq_kv || (a.causal && k0 + BC - 1 > q0 + offset);
    float s[kRowTiles][kNT][4] = {};
    scores<E, D, kRowTiles, kNT, Shape::kQInRegisters>(s, q_fragment, q_tile, warp_row, keys, 0, lane);
#pragma unroll
    for (int mt = 0; mt < kRowTiles; ++mt) {
      if (edge) {
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int key = k0 + nt * 8 + 2 * (lane % 4) + (e & 1);
            const int query = q0 + warp_row + mt * 16 + lane / 4 + (e / 2) * 8;
            if (key >= a.seq_kv || (a.causal && key > query + offset)) s[mt][nt][e] = -INFINITY;
          }
      }
      softmax_half<kNT, kDT>(s[mt], o[mt], 0, row_max[mt][0], row_sum[mt][0], a.scale_log2);
      softmax_half<kNT, kDT>(s[mt], o[mt], 2, row_max[mt][1], row_sum[mt][1], a.scale_log2);
    }
    weighted_values<E, D, kRowTiles, kNT>(o, s, values, 0, lane);
  }

#pragma unroll
  for (int mt = 0; mt < kRowTiles; ++mt)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      float sum = row_sum[mt][half];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      const float inverse = sum > 0 ? 1.0f / sum : 0.0f;
      const int r = warp_row + mt * 16 + lane / 4 + half * 8;
      if (r >= q_rows) continue;
      auto* row = reinterpret_cast<uint32_t*>(out + (q_base + r) * D);
#pragma unroll
      for (int dt = 0; dt < kDT; ++dt)
        row[dt * 4 + lane % 4] =
            pack_pair<E>(o[mt][dt][2 * half] * inverse, o[mt][dt][2 * half + 1] * inverse);
    }
}

// ---- decode: split-KV (flash-decoding)

// How the keys are split: blocks (split, row chunk, kv head, batch); each split takes tiles_per_split tiles
// of the keys; a row chunk is 16 of the kv head's group * seq_q query rows.
struct DecodeSplit {
  int splits = 1, tiles_per_split = 1, row_chunks = 1;
  int64_t rows = 0;  // batch * heads * seq_q: the partial results' rows
};

// A decode tiling: 4 warps, each KEYS (16 or 32) keys of a tile of 4 * KEYS, STAGES tiles in flight.
template <int D, int KEYS, int STAGES>
struct DecodeShape {
  static constexpr int kWarps = 4, kThreads = 128, kTileKeys = KEYS * kWarps, kTileElements = kTileKeys * D;
  static constexpr int kScratchRow = D + 8;  // floats: the merge's rows padded against bank conflicts
  static constexpr int kSharedBytes = (STAGES * 2 * kTileElements + 16 * D) * 2;
  static_assert((2 * kWarps * 16 + kWarps * 16 * kScratchRow) * 4 <= STAGES * 2 * kTileElements * 2,
                "the merge's scratch fits in the tiles' shared memory");
};

// One block: up to 16 query rows that share one kv head (the group's query heads, each seq_q queries: Q rows
// that are consecutive in Q), one split of the keys. K and V are read once for the whole group; the 4 warps
// take different keys of each tile, each with its own running max, sum and output, merged at the end. With
// one split the block writes O; otherwise its output normalised by its own sum, and the log2 of that sum
// (with the max), for combine_splits.
template <Elem E, int D, int KEYS, int STAGES>
__global__ void __launch_bounds__(128)
    flash_decode(Attention a, DecodeSplit split, const uint16_t* __restrict__ q,
                 const uint16_t* __restrict__ k, const uint16_t* __restrict__ v,
                 const int32_t* __restrict__ table, uint16_t* __restrict__ out,
                 float* __restrict__ partial_out, float* __restrict__ partial_lse) {
  using Shape = DecodeShape<D, KEYS, STAGES>;
  constexpr int kThreads = Shape::kThreads, kTileKeys = Shape::kTileKeys, kChunks = D / 8;
  constexpr int kNT = KEYS / 8, kDT = D / 8;
  extern __shared__ __align__(128) unsigned char shared_bytes[];
  auto* shared = reinterpret_cast<uint16_t*>(shared_bytes);
  auto k_tile = [&](int stage) { return shared + stage * 2 * Shape::kTileElements; };
  auto v_tile = [&](int stage) { return shared + stage * 2 * Shape::kTileElements + Shape::kTileElements; };
  uint16_t* q_tile = shared + STAGES * 2 * Shape::kTileElements;

  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  int64_t index = blockIdx.x;
  const int split_index = static_cast<int>(index % split.splits);
  index /= split.splits;
  const int chunk = static_cast<int>(index % split.row_chunks);
  index /= split.row_chunks;
  const int kv_head = static_cast<int>(index % a.kv_heads), b = static_cast<int>(index / a.kv_heads);
  const int group_rows = a.group * a.seq_q, r0 = chunk * 16, rows_here = min(16, group_rows - r0);
  const int64_t q_base = (int64_t{b} * a.heads + int64_t{kv_head} * a.group) * a.seq_q + r0;
  const int total_tiles = (a.seq_kv + kTileKeys - 1) / kTileKeys;
  const int first_tile = split_index * split.tiles_per_split;
  const int end_tile = min(total_tiles, first_tile + split.tiles_per_split);

  for (int i = static_cast<int>(threadIdx.x); i < 16 * kChunks; i += kThreads) {
    const int r = i / kChunks, c = i % kChunks;
    copy_async(shared_address(q_tile + swizzled<D>(r, c)), q + (q_base + (r < rows_here ? r : 0)) * D + c * 8,
               r < rows_here);
  }
  KvTileLoader<D, kTileKeys, kThreads> loader(KvRows::of(a, table, b, kv_head), a.seq_kv);
  for (int stage = 0; stage < STAGES - 1; ++stage) {
    const int tile = first_tile + stage;
    if (tile < end_tile) {
      loader.fetch_pages(tile * kTileKeys);
      loader.issue(tile * kTileKeys, k, v, k_tile(stage), v_tile(stage));
    }
    commit_copies();
  }
  loader.fetch_pages((first_tile + STAGES - 1) * kTileKeys);
  wait_copies<STAGES - 2>();
  __syncthreads();
  uint32_t q_fragment[D / 16][4];
#pragma unroll
  for (int ks = 0; ks < D / 16; ++ks)
    load_matrices(q_fragment[ks], shared_address(q_tile + swizzled<D>(lane % 16, ks * 2 + lane / 16)));

  // The last key each of this thread's two rows sees (query i of its head: i + offset when causal).
  int last_key[2];
  for (int half = 0; half < 2; ++half) {
    const int r = r0 + lane / 4 + half * 8;
    last_key[half] = a.causal && r < group_rows ? r % a.seq_q + a.key_offset() : a.seq_kv - 1;
  }
  int warp_last = min(last_key[0], last_key[1]);
  for (int step = 1; step < 32; step *= 2)
    warp_last = min(warp_last, __shfl_xor_sync(0xffffffffu, warp_last, step));

  float o[1][kDT][4] = {};
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0, 0};
  for (int tile = first_tile; tile < end_tile; ++tile) {
    const int local = tile - first_tile;
    wait_copies<STAGES - 2>();
    __syncthreads();
    const int next = tile + STAGES - 1;
    if (next < end_tile) {
      const int stage = (local + STAGES - 1) % STAGES;
      loader.issue(next * kTileKeys, k, v, k_tile(stage), v_tile(stage));
      loader.fetch_pages((next + 1) * kTileKeys);
    }
    commit_copies();
    const int k0 = tile * kTileKeys + warp * KEYS;
    float s[1][kNT][4] = {};
    scores<E, D, 1, kNT, true>(s, q_fragment, nullptr, 0, k_tile(local % STAGES), warp * KEYS, lane);
    if (k0 + KEYS - 1 > warp_last) {
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          if (k0 + nt * 8 + 2 * (lane % 4) + (e & 1) > last_key[e / 2]) s[0][nt][e] = -INFINITY;
    }
    softmax_half<kNT, kDT>(s[0], o[0], 0, row_max[0], row_sum[0], a.scale_log2);
    softmax_half<kNT, kDT>(s[0], o[0], 2, row_max[1], row_sum[1], a.scale_log2);
    weighted_values<E, D, 1, kNT>(o, s, v_tile(local % STAGES), warp * KEYS, lane);
  }

  // Merge the warps' partial results through shared memory (the tiles' space: every copy has landed and
  // every warp is past its last tile after the barrier).
  wait_copies<0>();
  __syncthreads();
  auto* scratch = reinterpret_cast<float*>(shared_bytes);
  float* warp_max = scratch;                           // [warp][row]
  float* warp_sum = scratch + Shape::kWarps * 16;      // [warp][row]
  float* warp_out = scratch + 2 * Shape::kWarps * 16;  // [warp][row][kScratchRow]
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    float sum = row_sum[half];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    const int r = lane / 4 + half * 8;
    if (lane % 4 == 0) {
      warp_max[warp * 16 + r] = row_max[half];
      warp_sum[warp * 16 + r] = sum;
    }
#pragma unroll
    for (int dt = 0; dt < kDT; ++dt)
      *reinterpret_cast<float2*>(warp_out + (warp * 16 + r) * Shape::kScratchRow + dt * 8 + 2 * (lane % 4)) =
          make_float2(o[0][dt][2 * half], o[0][dt][2 * half + 1]);
  }
  __syncthreads();
  for (int i = static_cast<int>(threadIdx.x); i < 16 * (D / 4); i += kThreads) {
    const int r = i / (D / 4), c = (i % (D / 4)) * 4;
    if (r >= rows_here) continue;
    float maximum = -INFINITY;
    for (int w = 0; w < Shape::kWarps; ++w) maximum = fmaxf(maximum, warp_max[w * 16 + r]);
    const float base = maximum == -INFINITY ? 0.0f : maximum * a.scale_log2;
    float sum = 0, value[4] = {0, 0, 0, 0};
    for (int w = 0; w < Shape::kWarps; ++w) {
      const float weight = exp2_fast(warp_max[w * 16 + r] * a.scale_log2 - base);
      sum += weight * warp_sum[w * 16 + r];
      const float4 part = *reinterpret_cast<const float4*>(warp_out + (w * 16 + r) * Shape::kScratchRow + c);
      value[0] += weight * part.x;
      value[1] += weight * part.y;
      value[2] += weight * part.z;
      value[3] += weight * part.w;
    }
    const float inverse = sum > 0 ? 1.0f / sum : 0.0f;
    const int64_t row = q_base + r;
    if (split.splits == 1) {
      *reinterpret_cast<uint2*>(out + row * D + c) =
          make_uint2(pack_pair<E>(value[0] * inverse, value[1] * inverse),
                     pack_pair<E>(value[2] * inverse, value[3] * inverse));
    } else {
      const int64_t slot = split_index * split.rows + row;
      *reinterpret_cast<float4*>(partial_out + slot * D + c) =
          make_float4(value[0] * inverse, value[1] * inverse, value[2] * inverse, value[3] * inverse);
      if (c == 0) partial_lse[slot] = sum > 0 ? base + __log2f(sum) : -INFINITY;
    }
  }
}

// O from the splits' partial outputs: each weighted by 2^(lse - max lse), divided by the weights' sum. A
// thread takes 4 elements of a row.
template <Elem E>
__global__ void combine_splits(int64_t rows, int head_dim, int splits, const float* __restrict__ partial_out,
                               const float* __restrict__ partial_lse, uint16_t* __restrict__ out) {
  const int quads = head_dim / 4;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < rows * quads;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t row = i / quads;
    const int c = static_cast<int>(i % quads) * 4;
    float maximum = -INFINITY;
    for (int s = 0; s < splits; ++s) maximum = fmaxf(maximum, partial_lse[s * rows + row]);
    float sum = 0, value[4] = {0, 0, 0, 0};
    for (int s = 0; s < splits; ++s) {
      const float lse = partial_lse[s * rows + row];
      if (lse == -INFINITY) continue;  // a split whose keys this row sees none of
      const float weight = exp2_fast(lse - maximum);
      const float4 part = *reinterpret_cast<const float4*>(partial_out + (s * rows + row) * head_dim + c);
      sum += weight;
      value[0] += weight * part.x;
      value[1] += weight * part.y;
      value[2] += weight * part.z;
      value[3] += weight * part.w;
    }
    const float inverse = sum > 0 ? 1.0f / sum : 0.0f;
    *reinterpret_cast<uint2*>(out + row * head_dim + c) =
        make_uint2(pack_pair<E>(value[0] * inverse, value[1] * inverse),
                   pack_pair<E>(value[2] * inverse, value[3] * inverse));
  }
}

}  // namespace tessera::gpu::flash
