// What attention's forms (mapper/attention/stage.hpp: flash, flash-mc and flash-split;
// mapper/attention/naive.hpp: naive) share in their programs and costs: the program's tensors, the flash
// forms' SRAM buffers, the runs of K/V rows a tile of keys reads (paged and bshd caches), their loads, and
// the figures of a cost that follow from its cycles and bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "arch/isa/program.hpp"
#include "arch/spec.hpp"
#include "common/integer_math.hpp"
#include "mapper/cost.hpp"
#include "mapper/kit/dma_engines.hpp"
#include "mapper/kit/sram_cursor.hpp"
#include "mapper/kit/unit_cycles.hpp"
#include "ops/kinds/attention.hpp"
#include "ops/op.hpp"

namespace tessera::mapper::attention {

// K/V tile buffers of the flash forms: two for the plain and split forms (a core streams its own tiles); the
// multicast form may take more, so that the leader loads ahead of cores whose blocks see fewer keys.
constexpr int kMostKvBuffers = 6;
// Q blocks a core of the multicast form holds at once (one of each round of a stream's blocks over the
// cores).
constexpr int kMostBlocksPerCore = 4;
// S and P tiles: two (S of one tile under the softmax of the other); the multicast form may take three, so
// that S runs two tiles ahead of P V and the softmax does not wait on the PE array's uneven steps.
constexpr int kMostScoreBuffers = 3;

// One Q block's own buffers: its Q rows, fp32 accumulator, output rows in the op's type, running statistics.
struct BlockBuffers {
  uint64_t q = 0, accumulator = 0, out = 0, statistics = 0;
};

// The SRAM a flash form's core uses: Q block, `kv` K and `kv` V tiles, two S (fp32) and two P tiles, the fp32
// accumulator, the output block in the op's type, the running statistics; `parts` accumulators and statistics
// side by side where a block's partial results meet (the split form's merging core).
struct Buffers {
  uint64_t q = 0, k[kMostKvBuffers] = {}, v[kMostKvBuffers] = {}, s[kMostScoreBuffers] = {},
           p[kMostScoreBuffers] = {}, accumulator = 0, out = 0, statistics = 0;
  uint64_t end = 0;
  // The multicast form's further Q blocks (slots 1 on), each with its own buffers, and S and P tiles past the
  // first two, after all the above.
  BlockBuffers more[kMostBlocksPerCore - 1] = {};
  BlockBuffers block(int slot) const {
    return slot == 0 ? BlockBuffers{q, accumulator, out, statistics} : more[slot - 1];
  }
};
// How many of each buffer a flash form's core holds: Q blocks (1 to kMostBlocksPerCore), K and V tiles each
// (1 to kMostKvBuffers), accumulators and statistics side by side (`parts`: the split form's merging core)
// and S and P tiles (2 to kMostScoreBuffers). The plain form's are the defaults.
struct BufferCounts {
  int blocks = 1, kv = 2;
  int64_t parts = 1;
  int scores = 2;
  static BufferCounts multicast(int blocks, int kv, int scores);
  static BufferCounts split(int64_t parts);
};
// The buffers of blocks of `rows` rows and K/V tiles of `cols` keys, rows of `dim` elements in `dtype`.
Buffers buffers_of(int64_t rows, int64_t cols, int64_t dim, DType dtype, const BufferCounts& counts = {});

// The runs of K or V rows a tile of `cols` keys from k0 reads, in the program's view of the tensor: bhsd
// (and a paged bhsd pool) as stored, [rows, d]; bshd as [rows / kv_heads, kv_heads * d], a kv head a column
// range. Consecutive keys whose rows follow each other are one run: one DMA descriptor.
struct Run {
  int64_t row = 0, rows = 0, col = 0, first_key = 0;
};
std::vector<Run> kv_runs(const ops::AttentionShape& a, const std::vector<int32_t>& table, int64_t b,
                         int64_t g, int64_t k0, int64_t cols);

// The program's tensors: Q, K, V and O as the op declares them, but for bshd K and V viewed [rows / kv_heads,
// kv_heads * d] (the same bytes and generated values) so that a kv head's rows are one strided region; the
// block table is not a program tensor: the DMA descriptors follow it (they are made from it, as a paged
// cache's driver makes them). `intermediates` (the naive form's S and P) are declared before O, which stays
// the last tensor, the one the numerics check reads.
struct ProgramTensors {
  int q = -1, k = -1, v = -1, o = -1;
  std::vector<int> intermediates;
  std::vector<int32_t> table;
};
ProgramTensors start_attention_program(arch::Program& program, const std::string& name, const ops::Op& op,
                                       uint64_t seed, const arch::ArchSpec& spec,
                                       const ops::AttentionShape& a,
                                       const std::vector<arch::TensorDecl>& intermediates = {});

// A tile's runs of K (or V) rows cut into row blocks and dealt round a group (mapper/kit/dma_engines.hpp):
// per block, the run it belongs to, its rows within the run and its engine.
struct RunBlock {
  size_t run = 0;
  DealtBlock block;
};
std::vector<RunBlock> deal_runs(EngineDealer& dealer, const std::vector<Run>& runs, int64_t row_bytes);
// The engines of a tile's blocks.
std::vector<int> engines_of(const std::vector<RunBlock>& blocks);

// Where a lowering's K/V tile loads read and whom they tell: the program (its tensors and semaphores), the
// engines a tile's row blocks are dealt round, and a row's `d` elements of `element` bytes.
struct KvLoader {
  arch::Program& program;
  const ProgramTensors& tensors;
  const EngineGroup& group;
  int64_t d = 0, element = 0;
};
// A K/V tile buffer: `name` "k" (K) or "v" (V), number `index` of its buffers, at `sram_address`.
struct KvBuffer {
  const char* name = "k";
  int index = 0;
  uint64_t sram_address = 0;
};
// A K/V tile's loads of one tensor into `buffer`: a descriptor a block of `blocks` (the tile's `runs` dealt
// round the loader's group). The first block on each engine waits for `frees` frees of the buffer on that
// engine's semaphore (`<name>_free[<index>]`, per engine of the group; 0: none); every block signals the
// buffer full (`<name>_full[<index>]`, counted by its one consumer), on each of `destinations` for a
// multicast (empty: the issuing core).
void append_kv_loads(std::vector<arch::Instruction>& list, const KvLoader& loader, const KvBuffer& buffer,
                     const std::vector<Run>& runs, const std::vector<RunBlock>& blocks, int frees,
                     const std::vector<int>& destinations);

// A K/V tile's runs of rows and their row blocks dealt round the load engines, K's and then V's (the order
// they are queued in).
struct TileLoads {
  std::vector<Run> runs;
  std::vector<RunBlock> k, v;
};
TileLoads deal_tile(EngineDealer& dealer, std::vector<Run> runs, int64_t row_bytes);
// A K/V tile's loads into the flash buffers' K and V number `buffer`: the K blocks, then the V blocks, as
// append_kv_loads writes them.
void append_tile_loads(std::vector<arch::Instruction>& list, const KvLoader& loader, const Buffers& buffers,
                       int buffer, const TileLoads& tile, int frees, const std::vector<int>& destinations);

// finish_estimate (mapper/kit/unit_cycles.hpp) of the cores' cycles (one entry per core, 0 where a core has
// no work) over the op's MACs (a causal query's visible keys, as ops/kinds/attention.cpp counts them), with
// two DRAM round trips of overhead.
void finish_cost(Cost& cost, const std::vector<int64_t>& core_cycles, const ops::AttentionShape& a,
                 const arch::ArchSpec& spec);

}  // namespace tessera::mapper::attention
