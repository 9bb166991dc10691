// vec <kind>: an instruction of the vector unit on tiles in the core's SRAM (docs/tile-program.md, "vec";
// docs/vector-unit.md: the unit, the passes of each kind and their closed-form timing).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "arch/isa/cause.hpp"
#include "arch/isa/queue.hpp"
#include "arch/timing/vector_timing.hpp"
#include "common/dtype.hpp"
#include "common/element_fn.hpp"

namespace tessera::arch {

class LineReader;
class LineWriter;
class InstructionChecks;

// The steps of an elementwise chain (vec map fn=bias+gelu): the element functions of a vector chain
// (common/element_fn.hpp, kInVectorChain). add, mul and swiglu take the tile at y; bias the 1 x cols row at b
// (a chain may take both: an epilogue's bias and residual); scale multiplies by the instruction's `scale=`
// (attention's naive form: S = scale * Q K^T rounded to the op's type, and with scale 1 a plain conversion of
// an fp32 accumulator).
using VecFn = ElementFn;

constexpr int64_t kNoCausalMask = std::numeric_limits<int64_t>::min();

// X [rows x cols] -> O [rows x cols] (reduce_*: O [rows x 1]; pool: X is ih x iw pixels of cols channels and
// O e x q pixels, rows = e * q): X, Y, gamma and beta of `dtype`, O of `out_dtype` (fp32 compute). Pitches in
// bytes, 0 = packed rows.
struct VecOp {
  VectorKind kind = VectorKind::map;
  DType dtype = DType::bf16;
  DType out_dtype = DType::bf16;  // `out=`; written only where it differs from dtype
  uint64_t x_address = 0, y_address = 0, g_address = 0, b_address = 0, o_address = 0;
  int64_t x_pitch_bytes = 0, y_pitch_bytes = 0, o_pitch_bytes = 0;
  int64_t rows = 0, cols = 0;
  std::vector<VecFn> chain;              // map; layernorm and rmsnorm: {add} to add the tile at y first
  double scale = 1.0;                    // softmax: of the logits; map: the factor of a `scale` step
  int64_t causal_shift = kNoCausalMask;  // softmax: row i sees columns 0 .. i + causal_shift
  double eps = 0;                        // layernorm, rmsnorm
  // pool: the input tile, the output tile's pixels, the window (padding occupies no SRAM)
  int64_t ih = 0, iw = 0, e = 0, q = 0, r = 1, s = 1, stride = 1, pad_top = 0, pad_left = 0;
  bool average = false;
  // online_softmax: the first K/V tile of its rows (the running statistics at g start afresh, unread);
  // scale_rows: by 1/sum (the final normalisation) rather than by the step's correction.
  bool first = false;
  bool by_inverse_sum = false;
  // merge_partials: the partial results of the same rows, stacked at x (part i's rows at x + i * rows rows)
  // with their statistics stacked likewise at g. weighted_sum: row r's parts at x rows r * parts + p, their
  // fp32 weights at g (rows x parts, packed), `chain` {add} when the tile at y is added.
  int64_t parts = 1;

  // What the operands hold follows the kind's descriptor (arch/isa/vector_kinds/vector_kind_info.hpp).
  // online_softmax and scale_rows keep each row's running max, sum and correction (fp32) at g;
  // merge_partials reads each part's.
  static constexpr int64_t kRowStatistics = 3;
  bool uses_statistics() const;
  // The statistics are read (all but an online_softmax of the rows' first K/V tile).
  bool reads_statistics() const;
  // One row of statistics per row of X (merge_partials: each part's).
  int64_t statistics_rows() const { return x_rows(); }
  // a map with a step that reads the tile at y (add, mul, swiglu), norm_adds_y, or a weighted_sum with y=
  bool uses_y() const;
  bool norm_adds_y() const;  // a layernorm or rmsnorm of X + Y (fn=add: a residual added first)
  bool uses_b() const;       // a layernorm (beta), or a map with a bias step (the row at b)
  // The closed form's description of the instruction (arch/timing/vector_timing.hpp).
  VectorWork work() const;
  bool operator==(const VecOp& other) const;
  int64_t x_rows() const;  // pool: ih * iw; merge_partials, weighted_sum: parts * rows; else rows
  int64_t o_cols() const;  // reduce_*: 1; else cols

  // An instruction of `kind` on a rows x cols tile: X at `x` of `dtype`, O at `o` of `out_dtype`; the other
  // operands and options are the caller's to set.
  static VecOp on_tile(VectorKind kind, DType dtype, DType out_dtype, int64_t rows, int64_t cols,
                       uint64_t x = 0, uint64_t o = 0) {
    VecOp op;
    op.kind = kind;
    op.dtype = dtype;
    op.out_dtype = out_dtype;
    op.rows = rows;
    op.cols = cols;
    op.x_address = x;
    op.o_address = o;
    return op;
  }

  static constexpr QueueKind kQueue = QueueKind::vec;
  // What a unit waiting on this instruction's signal is charged.
  static constexpr Cause kWaitersCause = Cause::vector;
  static const std::vector<std::string>& mnemonics();  // the table's VecOp kinds: map, ..., weighted_sum
  static VecOp read(LineReader& in, std::string_view mnemonic, int column);
  void write(LineWriter& out) const;
  void check(const InstructionChecks& checks) const;
};

}  // namespace tessera::arch
