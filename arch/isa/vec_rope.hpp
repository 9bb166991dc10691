// vec rope: rotary position embedding of a tile of X on the vector unit (docs/tile-program.md, "vec rope";
// docs/vector-unit.md: its passes and their cost). Its own instruction kind beside VecOp: its operands (the
// per-row cos/sin table, the head geometry) are no other vector instruction's.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "arch/isa/cause.hpp"
#include "arch/isa/fields.hpp"
#include "arch/isa/queue.hpp"
#include "arch/timing/vector_timing.hpp"
#include "common/dtype.hpp"

namespace tessera::arch {

class LineReader;
class LineWriter;
class InstructionChecks;

// X [rows x cols] of `dtype` (cols = heads * head_dim) -> O of the same shape and type; Y [rows x
// rotary_dim] fp32 holds each row's table row (cos of pair i's angle at column i, sin at rotary_dim/2 + i):
// the lowering stages the table rows of the tile's tokens beside it, so a tile spanning several sequences
// loads each one's rows. In each head, pairs (i, i + rotary_dim/2) (interleaved: (2i, 2i+1)) become (a cos -
// b sin, b cos + a sin); columns past rotary_dim are copied. Pitches in bytes, 0 = packed rows.
struct VecRope {
  DType dtype = DType::bf16;
  uint64_t x_address = 0, y_address = 0, o_address = 0;
  int64_t x_pitch_bytes = 0, y_pitch_bytes = 0, o_pitch_bytes = 0;
  int64_t rows = 0, cols = 0, head_dim = 0, rotary_dim = 0;
  bool interleaved = false;

  // The closed form's description of the instruction (arch/timing/vector_timing.hpp).
  VectorWork work() const;
  // Its fields, in the order the binary form sends them (arch/isa/fields.hpp).
  template <class Visit>
  static void fields(Visit&& visit) {
    visit("dtype", &VecRope::dtype), visit("x_address", &VecRope::x_address);
    visit("y_address", &VecRope::y_address), visit("o_address", &VecRope::o_address);
    visit("x_pitch_bytes", &VecRope::x_pitch_bytes), visit("y_pitch_bytes", &VecRope::y_pitch_bytes);
    visit("o_pitch_bytes", &VecRope::o_pitch_bytes), visit("rows", &VecRope::rows);
    visit("cols", &VecRope::cols), visit("head_dim", &VecRope::head_dim);
    visit("rotary_dim", &VecRope::rotary_dim), visit("interleaved", &VecRope::interleaved);
  }
  bool operator==(const VecRope& other) const { return equal_fields(*this, other); }

  static constexpr QueueKind kQueue = QueueKind::vec;
  static constexpr Cause kWaitersCause = Cause::vector;
  static const std::vector<std::string>& mnemonics();  // rope
  static VecRope read(LineReader& in, std::string_view mnemonic, int column);
  void write(LineWriter& out) const;
  void check(const InstructionChecks& checks) const;
};

}  // namespace tessera::arch
