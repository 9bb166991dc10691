// A vector instruction kind as data (docs/design-notes.md, "Vector kinds as data"): what the `vec` reader,
// writer and checks, the closed-form timing, the vector unit's SRAM bookings and the mapper's vector forms
// need to know of a kind, in one descriptor per kind (arch/isa/vector_kinds/<kind>.cpp) listed by the one
// table, arch/isa/vector_kinds/vector_kind_list.hpp.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "arch/timing/vector_timing.hpp"

namespace tessera::arch {

struct VecOp;
class InstructionChecks;

// The options of a `vec` line (docs/tile-program.md, "vec"), as bits of a VecOptionSet.
namespace vec_option {
enum Option : uint8_t {
  x,
  y,
  g,
  b,
  o,
  rows,
  cols,
  dtype,
  x_pitch,
  y_pitch,
  o_pitch,
  fn,
  scale,
  causal_shift,
  eps,
  ih,
  iw,
  e,
  q,
  r,
  s,
  stride,
  pad_top,
  pad_left,
  mode,
  out,
  first,
  by,
  parts,
  count
};
}  // namespace vec_option

using VecOptionSet = uint32_t;
static_assert(vec_option::count <= 32, "a VecOptionSet holds every option as one bit");

constexpr VecOptionSet options(std::initializer_list<vec_option::Option> list) {
  VecOptionSet set = 0;
  for (vec_option::Option option : list) set |= VecOptionSet{1} << option;
  return set;
}
constexpr bool has(VecOptionSet set, vec_option::Option option) {
  return (set & (VecOptionSet{1} << option)) != 0;
}
// Every option's spelling, in the order of vec_option::Option.
const std::vector<std::string>& vec_option_names();

// The options of a tile from X to O, and the storage options every such kind may add.
inline constexpr VecOptionSet kTileOptions =
    options({vec_option::x, vec_option::o, vec_option::rows, vec_option::cols, vec_option::dtype});
inline constexpr VecOptionSet kStorageOptions =
    options({vec_option::x_pitch, vec_option::o_pitch, vec_option::out});

// The rows of the tile at X: the instruction's rows; its parts' rows stacked (parts * rows); a pool's input
// pixels (ih * iw).
enum class XRows : uint8_t { rows, parts_of_rows, pool_input };
// The columns of the result at O: those of X, or one per row (a row reduction).
enum class OutputCols : uint8_t { cols, one };
// The tile at Y, of the output's shape: unused; read by a step of the chain that reads a tile (map's add,
// mul, swiglu; weighted_sum's add); or a residual added to X before everything else (a norm's fn=add).
enum class YRole : uint8_t { none, chain_step, residual };
// What G holds: nothing; a 1 x cols parameter row read for every row (gamma); VecOp::kRowStatistics fp32
// statistics per row of X, read, or read (unless the rows' first tile) and written; rows x parts fp32
// weights.
enum class GRole : uint8_t { none, parameter_row, statistics_read, statistics_updated, weights };
// What B holds: nothing; a 1 x cols parameter row (beta); the 1 x cols row of a chain's bias step.
enum class BRole : uint8_t { none, parameter_row, bias_step };

struct VectorOperandRoles {
  XRows x_rows = XRows::rows;
  YRole y = YRole::none;
  GRole g = GRole::none;
  BRole b = BRole::none;
  OutputCols o_cols = OutputCols::cols;
};

struct VectorKindInfo {
  VectorKind kind = VectorKind::map;
  const char* mnemonic = "";  // `vec <mnemonic>`, and name_of(kind)
  // A VecOp's kind; else the kind of an instruction of its own (VecRope, VecRoute) that names it for timing,
  // whose options, operands and syntax are that instruction's.
  bool is_vec_op = true;
  VecOptionSet required = 0;
  VecOptionSet optional = 0;
  VectorOperandRoles operands;
  // The syntax for messages: the options after the shared tile form ("map|reduce_sum|... x=ADDR o=ADDR
  // rows=R ..., then map: <syntax>"), or the whole line after the mnemonic.
  bool shares_tile_syntax = false;
  const char* syntax = "";
  // The rules of the kind's VectorWork parameters beyond a tile's rows and cols (>= 1); "" when they hold.
  std::string (*work_problem)(const VectorWork& work) = nullptr;
  // Its passes, in the order the unit runs them (docs/vector-unit.md, "Instruction kinds and their passes").
  void (*add_passes)(const VectorWork& work, VectorPasses& passes) = nullptr;
  // The checks of a VecOp's own fields (a chain, eps, a window), before the timing's; nullptr: none.
  void (*check)(const VecOp& op, const InstructionChecks& checks) = nullptr;

  VecOptionSet allowed() const { return required | optional; }
};

// A descriptor's parts that every kind spells alike, for its file to start from: a kind of the tile form
// (kTileOptions required, kStorageOptions optional) with `required` and `optional` options more and `syntax`
// (after the shared tile form's where `shares_tile_syntax`); or a kind that is an instruction of its own
// (is_vec_op false: its options, operands and syntax are its instruction's). Its kind and mnemonic come from
// its line of the table (vector_kind_list.hpp).
VectorKindInfo tile_kind(VecOptionSet required, VecOptionSet optional, const char* syntax,
                         bool shares_tile_syntax);
VectorKindInfo own_instruction_kind();
// `info` with its passes, the rules of its work (nullptr: none beyond a tile's) and its own checks (nullptr:
// none).
VectorKindInfo with_rules(VectorKindInfo info, void (*add_passes)(const VectorWork&, VectorPasses&),
                          std::string (*work_problem)(const VectorWork&) = nullptr,
                          void (*check)(const VecOp&, const InstructionChecks&) = nullptr);

// Each kind's descriptor (arch/isa/vector_kinds/<kind>.cpp), its kind and mnemonic aside.
#define TESSERA_DECLARE_VECTOR_KIND_INFO(name) VectorKindInfo name##_kind_info();
TESSERA_VECTOR_KINDS(TESSERA_DECLARE_VECTOR_KIND_INFO)
#undef TESSERA_DECLARE_VECTOR_KIND_INFO

// Every kind's descriptor, in the order of VectorKind.
const std::array<VectorKindInfo, kVectorKindCount>& vector_kinds();
const VectorKindInfo& info_of(VectorKind kind);

}  // namespace tessera::arch
