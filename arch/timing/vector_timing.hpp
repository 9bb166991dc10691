// Closed-form timing and SRAM traffic of a vector-unit instruction (docs/vector-unit.md defines the unit, the
// passes of each instruction kind and derives every formula). The simulator times each vector instruction
// with it and the mapper's cost model uses it, so both agree by construction; tests/models/vector_cycle_model
// checks it cycle by cycle.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "arch/isa/vector_kinds/vector_kind_list.hpp"
#include "arch/vector_spec.hpp"

namespace tessera::arch {

// The kinds, one per line of arch/isa/vector_kinds/vector_kind_list.hpp (what each computes is said there);
// each kind's descriptor (arch/isa/vector_kinds/vector_kind_info.hpp) holds its passes and rules.
enum class VectorKind : uint8_t {
#define TESSERA_VECTOR_KIND_ENUMERATOR(name) name,
  TESSERA_VECTOR_KINDS(TESSERA_VECTOR_KIND_ENUMERATOR)
#undef TESSERA_VECTOR_KIND_ENUMERATOR
};
#define TESSERA_COUNT_VECTOR_KIND(name) +1
inline constexpr int kVectorKindCount = 0 TESSERA_VECTOR_KINDS(TESSERA_COUNT_VECTOR_KIND);
#undef TESSERA_COUNT_VECTOR_KIND
const char* name_of(VectorKind kind);

// What the timing of one vector instruction depends on: its kind and a tile of rows x cols elements (fp32
// compute whatever the storage type). Parameters of other kinds are ignored.
struct VectorWork {
  VectorKind kind = VectorKind::map;
  int64_t rows = 1;
  int64_t cols = 1;
  // map: the elementwise chain's ops per element, e.g. bias + GELU(erf) = add, mul, erf, add, mul, mul:
  // 5 simple, 1 special.
  int64_t map_simple_ops = 0;
  int64_t map_special_ops = 0;
  // map: operands beside the input, each read once per element: tiles of the input's shape (a residual, the
  // up projection of a SwiGLU), and 1 x cols rows read again for every row (a bias).
  int64_t map_tile_operands = 0;
  int64_t map_row_operands = 0;
  // layernorm, rmsnorm: normalise X + Y (a residual added first): the first pass reads Y too, adds it and
  // keeps the sum in the output tile, which the later passes read instead of X.
  bool norm_adds_tile = false;
  // softmax, online_softmax: simple ops added to the max and exp passes per element: 1 for a scale (mul), 1
  // for a causal mask (select).
  int64_t softmax_extra_simple_ops = 0;
  // online_softmax: the first K/V tile of its rows (no running statistics to read).
  bool online_first = false;
  // merge_partials, weighted_sum: the partial results merged or summed (each a rows x cols tile read once).
  int64_t merge_parts = 1;
  // weighted_sum: a tile of the output's shape (Y) added to the weighted sum.
  bool weighted_adds_tile = false;
  // route (cols = the experts): the experts chosen per row (top_k), their groups (groups = 1: not
  // group-limited) and the groups kept (topk_groups), the scores: softmax over the row or sigmoid per
  // element.
  int64_t route_top_k = 1;
  int64_t route_groups = 1;
  int64_t route_topk_groups = 1;
  bool route_sigmoid = false;
  // pool: rows are output pixels, cols channels; each output reads a window of r*s inputs.
  int64_t pool_window = 0;
  bool pool_average = false;  // average (one more multiply, by 1/(r*s)) rather than max
  // rope: of each row's cols, those rotated in pairs (heads * rotary_dim); the rest are copied.
  int64_t rope_rotated_cols = 0;
};

// route's passes: three for the scores, the kept groups' and the experts' arg-max passes (each one VectorPass
// repeated) and two for the weights.
inline constexpr int kMaxVectorPasses = 7;
// The most partial results one merge_partials or weighted_sum takes (a split over every core of a large
// mesh).
inline constexpr int64_t kMaxMergeParts = 4096;
// The most experts one route scores (every shipped model has at most 256); bounds its repeated passes.
inline constexpr int64_t kMaxRouteExperts = 65536;

// One pass over the tile: every row, each as ceil(cols / lanes) vectors. Counts are per element of the tile.
struct VectorPass {
  const char* what = "";        // what the pass computes, for reports and messages
  int64_t cols = 0;             // of each row, the elements the pass covers; 0: all the tile's cols
  int64_t simple_ops = 0;       // one issue cycle per vector each
  int64_t special_ops = 0;      // special_issue_cycles per vector each
  bool reduces = false;         // each row ends in the lane tree: the row's statistic (sum or max)
  bool depends = false;         // row r waits for row r's statistic of the previous pass
  bool scalar_special = false;  // ... after a per-row scalar special function of it (reciprocal, rsqrt)
  // The pass runs `repeats` times in a row (route's arg-max passes: one per chosen expert), each repetition
  // after the first depending on the previous repetition's row statistic (the pass then reduces); `depends`
  // is the first repetition's. Counts and traffic below are per repetition.
  int64_t repeats = 1;
  // SRAM traffic in elements per element of the tile. The unit holds no tile: each pass re-reads its input.
  int64_t input_reads = 0;            // of the input tile (pool: the r*s inputs of the window)
  int64_t output_reads = 0;           // of the output tile, read back (softmax's exp values)
  int64_t parameter_reads = 0;        // of the gamma (and beta) rows, read again for every row of the tile;
                                      // rope: of the table row of cos and sin
  int64_t output_writes = 0;          // of the output tile
  bool writes_row_statistic = false;  // reduce_sum / reduce_max: one output element per row
  // 4-byte words per row read and written beside the tiles: online_softmax's running max, sum and correction
  // (fp32), weighted_sum's gate weights (fp32), route's chosen experts (int32).
  int64_t row_statistic_reads = 0;
  int64_t row_statistic_writes = 0;
};

struct VectorPasses {
  std::array<VectorPass, kMaxVectorPasses> pass{};
  int count = 0;
  void add(const VectorPass& next) { pass[count++] = next; }
  const VectorPass* begin() const { return pass.data(); }
  const VectorPass* end() const { return pass.data() + count; }
};

// The passes of an instruction, in the order the unit runs them (pass-major: every row of a pass, then the
// next pass): its kind descriptor's.
VectorPasses vector_passes(const VectorWork& work);

// Cycles count from the instruction's first issue cycle, 0. "End" cycles are exclusive (the cycle after).
struct VectorPassTiming {
  int64_t vector_issue_cycles = 0;  // c = simple_ops + special_ops * special_issue_cycles
  int64_t row_issue_cycles = 0;     // W = vectors per row * c
  int64_t first_row_start = 0;      // row 0's first issue cycle (a repeated pass: of its first repetition)
  int64_t last_row_start = 0;  // row rows-1's first issue cycle (a repeated pass: of its last repetition)
  int64_t issue_end = 0;       // the cycle after the pass's last issue cycle
  int64_t busy_cycles = 0;     // rows * W (a repeated pass: times its repeats)
  int64_t stall_cycles = 0;    // the port idle waiting for a row statistic, from the previous pass's end
};

struct VectorTiming {
  int64_t cycles = 0;           // the instruction's last result is complete (written) at the end of cycles-1
  int64_t issue_cycles = 0;     // the issue port is free from here (the last pass's issue_end)
  int64_t busy_cycles = 0;      // the port issuing; busy + stall + drain = cycles
  int64_t stall_cycles = 0;     // the port waiting for a row statistic
  int64_t drain_cycles = 0;     // after the last issue: latency, and the lane tree if the last pass reduces
  int64_t vectors_per_row = 0;  // of the whole tile's cols (a pass over fewer columns issues fewer)
  std::array<VectorPassTiming, kMaxVectorPasses> pass{};
  int passes = 0;
};

// "" when `work` can be timed on `spec` (a validated spec), else why not: a size or parameter out of range,
// or a cycle count that overflows int64. The ISA check reports it at the instruction.
std::string vector_work_problem(const VectorSpec& spec, const VectorWork& work);

// The instruction run alone from cycle 0. Throws InputError (field "vector <kind>") with
// vector_work_problem's message when that is not "".
VectorTiming vector_timing(const VectorSpec& spec, const VectorWork& work);

// Element sizes of the tiles in SRAM (the storage types; compute is fp32).
struct VectorElementBytes {
  int64_t input_bytes = 4;
  int64_t output_bytes = 4;     // softmax's exp values are stored in the output tile too
  int64_t parameter_bytes = 4;  // gamma and beta (rope: its table, fp32)
};

struct VectorPassTraffic {
  int64_t read_bytes = 0;
  int64_t write_bytes = 0;
};

struct VectorSramTraffic {
  std::array<VectorPassTraffic, kMaxVectorPasses> pass{};
  int passes = 0;
  int64_t read_bytes = 0;  // all passes
  int64_t write_bytes = 0;
};

// The SRAM bytes each pass reads and writes; the simulator books them on the banks. Throws InputError for an
// invalid tile (vector_work_problem's size rules) or a byte count that overflows int64.
VectorSramTraffic vector_sram_traffic(const VectorWork& work, const VectorElementBytes& bytes);

}  // namespace tessera::arch
