// pe post: a finished output tile through the PE array's output path (core.pe_array.output_steps).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "arch/isa/cause.hpp"
#include "arch/isa/fields.hpp"
#include "arch/isa/queue.hpp"
#include "arch/isa/vec_op.hpp"
#include "arch/spec.hpp"
#include "common/dtype.hpp"

namespace tessera::arch {

class LineReader;
class LineWriter;
class InstructionChecks;

// O[rows x cols] (`dtype`, the PE instructions' partial-sum type) = steps(O), in place: the output path a PE
// array applies to a finished tile as it drains (Eyeriss's ReLU, a TPU's activation unit), each step as an
// epilogue's (bias: + the 1 x cols row at b), computed in fp32 and rounded once to `dtype`. It takes no array
// time: it completes a cycle after the PE instructions before it on the queue (docs/tile-program.md, "post").
struct PePost {
  DType dtype = DType::fp32;
  uint64_t o_address = 0, b_address = 0;
  int64_t o_pitch_bytes = 0;  // 0 = packed rows
  int64_t rows = 0, cols = 0;
  std::vector<OutputStep> steps;  // in order; a machine's output_steps in the same order
  bool has_bias() const;
  // Its fields, in the order the binary form sends them (arch/isa/fields.hpp).
  template <class Visit>
  static void fields(Visit&& visit) {
    visit("dtype", &PePost::dtype), visit("o_address", &PePost::o_address);
    visit("b_address", &PePost::b_address), visit("o_pitch_bytes", &PePost::o_pitch_bytes);
    visit("rows", &PePost::rows), visit("cols", &PePost::cols), visit("steps", &PePost::steps);
  }
  bool operator==(const PePost& other) const { return equal_fields(*this, other); }

  static constexpr QueueKind kQueue = QueueKind::pe;
  // What a unit waiting on this instruction's signal is charged.
  static constexpr Cause kWaitersCause = Cause::sync;
  static const std::vector<std::string>& mnemonics();  // post
  static PePost read(LineReader& in, std::string_view mnemonic, int column);
  void write(LineWriter& out) const;
  void check(const InstructionChecks& checks) const;
};

}  // namespace tessera::arch
