// The pieces every form of attention's lowering (mapper/attention_stage.hpp: flash, flash-mc, flash-split)
// builds its tile program from: what GraphTiling's values mean, a core's SRAM buffers, the DMA runs of a
// K/V tile through the block table, the program's tensors, a tile's loads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "arch/isa/program.hpp"
#include "arch/spec.hpp"
#include "arch/timing/vector_timing.hpp"
#include "ops/kinds/attention.hpp"
#include "ops/op.hpp"

namespace tessera::mapper::attention {

// What GraphTiling's values mean for attention: rows of a Q block, keys of a K/V tile, cores used, the
// multicast form (1), the split-KV form's ranges of keys a block is split into (0: not split).
namespace tiling {
enum TilingValue : size_t { kBlockRows, kBlockCols, kCores, kMulticast, kSplits };
}  // namespace tiling

inline int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// The SRAM a core's program uses: Q block, two K and two V tiles, two S (fp32) and two P tiles, the fp32
// accumulator, the output block in the op's type, the running statistics; `parts` accumulators and statistics
// side by side where a block's partial results meet.
struct Buffers {
  uint64_t q = 0, k[2] = {}, v[2] = {}, s[2] = {}, p[2] = {}, accumulator = 0, out = 0, statistics = 0;
  uint64_t end = 0;
  // The multicast form's second Q block: its own Q, accumulator, output and statistics.
  uint64_t q2 = 0, accumulator2 = 0, out2 = 0, statistics2 = 0;
};
Buffers buffers_of(int64_t rows, int64_t cols, int64_t dim, DType dtype, bool two_blocks = false,
                   int64_t parts = 1);

// The runs of K or V rows a tile of `cols` keys from k0 reads, in the program's view of the tensor: bhsd
// (and a paged bhsd pool) as stored, [rows, d]; bshd as [rows / kv_heads, kv_heads * d], a kv head a column
// range. Consecutive keys whose rows follow each other are one run: one DMA descriptor.
struct Run {
  int64_t row = 0, rows = 0, col = 0, first_key = 0;
};
std::vector<Run> kv_runs(const ops::AttentionShape& a, const std::vector<int32_t>& table, int64_t b,
                         int64_t g, int64_t k0, int64_t cols);

// One K/V tile of a block's flash loop on a core: keys [k0, k0 + cols) of q_blocks' block `block`, the first
// and the last of the block's range on the core, the runs of its K (and V) rows.
struct FlashTile {
  size_t block = 0;
  int64_t k0 = 0, cols = 0;
  bool first = false, last = false;
  std::vector<Run> runs;
};

// The program's tensors: Q, K, V and O as the op declares them, but for bshd K and V viewed [rows / kv_heads,
// kv_heads * d] (the same bytes and generated values) so that a kv head's rows are one strided region; the
// block table is not a program tensor: the DMA descriptors follow it (they are made from it, as a paged
// cache's driver makes them).
struct ProgramTensors {
  int q = -1, k = -1, v = -1, o = -1;
  std::vector<int32_t> table;
};
ProgramTensors start_attention_program(arch::Program& program, const std::string& name, const ops::Op& op,
                                       uint64_t seed, const arch::ArchSpec& spec,
                                       const ops::AttentionShape& a);

// Cycles of one DMA engine moving `bytes` in `descriptors` descriptors: a setup each, then the bytes at the
// engine's rate.
int64_t dma_cycles(const arch::ArchSpec& spec, int64_t bytes, int64_t descriptors);
// Cycles of a vector instruction of `kind` on a rows x cols tile; softmaxes take `extra` simple ops an
// element (a scale, a mask).
int64_t vector_cycles(const arch::ArchSpec& spec, arch::VectorKind kind, int64_t rows, int64_t cols,
                      int64_t extra);

// A K/V tile's loads into buffer `buffer`: the K runs, then the V runs, each run one descriptor. The first
// run of each waits for `frees` frees of the buffer (0: none); every run signals the buffer full, on each of
// `destinations` for a multicast (empty: the issuing core).
void append_tile_loads(std::vector<arch::Instruction>& list, arch::Program& program, arch::QueueId queue,
                       const ProgramTensors& tensors, const Buffers& buffers, int buffer,
                       const std::vector<Run>& runs, int64_t d, int64_t element, int frees,
                       const std::vector<int>& destinations);

}  // namespace tessera::mapper::attention
