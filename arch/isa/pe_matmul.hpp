// pe ws|os|is: a matrix product on the PE array.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "arch/isa/cause.hpp"
#include "arch/isa/fields.hpp"
#include "arch/isa/queue.hpp"
#include "arch/spec.hpp"
#include "common/dtype.hpp"

namespace tessera::arch {

class LineReader;
class LineWriter;
class InstructionChecks;

// O[m x n] (+)= A[m x k] * W[k x n] on the PE array. Operands are `dtype`, O is o_dtype(). With
// `w_transposed` (wt=1) W is stored as its transpose, n rows of k (attention's S = Q K^T reads K's rows as
// they are): the array loads or streams the same elements, in the other order, at the same cost.
struct PeMatmul {
  Dataflow dataflow = Dataflow::ws;
  DType dtype = DType::bf16;
  uint64_t a_address = 0, w_address = 0, o_address = 0;
  int64_t a_pitch_bytes = 0, w_pitch_bytes = 0, o_pitch_bytes = 0;  // 0 = packed rows
  int64_t m = 0, n = 0, k = 0;
  bool accumulate = false;
  bool w_transposed = false;
  // The type O's partial sums are kept in (`psum=fp16`): absent, the accumulator's; a 16-bit one for 16-bit
  // operands (common/dtype.hpp, partial_sum_of).
  std::optional<DType> psum;
  DType o_dtype() const { return partial_sum_of(dtype, psum); }
  // W's rows and row length in SRAM.
  int64_t w_rows() const { return w_transposed ? n : k; }
  int64_t w_cols() const { return w_transposed ? k : n; }
  // Its fields, in the order the binary form sends them (arch/isa/fields.hpp).
  template <class Visit>
  static void fields(Visit&& visit) {
    visit("dataflow", &PeMatmul::dataflow), visit("dtype", &PeMatmul::dtype);
    visit("a_address", &PeMatmul::a_address), visit("w_address", &PeMatmul::w_address);
    visit("o_address", &PeMatmul::o_address), visit("a_pitch_bytes", &PeMatmul::a_pitch_bytes);
    visit("w_pitch_bytes", &PeMatmul::w_pitch_bytes), visit("o_pitch_bytes", &PeMatmul::o_pitch_bytes);
    visit("m", &PeMatmul::m), visit("n", &PeMatmul::n), visit("k", &PeMatmul::k);
    visit("accumulate", &PeMatmul::accumulate), visit("w_transposed", &PeMatmul::w_transposed);
    visit("psum", &PeMatmul::psum);
  }
  bool operator==(const PeMatmul& other) const { return equal_fields(*this, other); }

  static constexpr QueueKind kQueue = QueueKind::pe;
  // What a unit waiting on this instruction's signal is charged.
  static constexpr Cause kWaitersCause = Cause::sync;
  static const std::vector<std::string>& mnemonics();  // the operation words it is written with
  static PeMatmul read(LineReader& in, std::string_view mnemonic, int column);
  void write(LineWriter& out) const;
  void check(const InstructionChecks& checks) const;
};

}  // namespace tessera::arch
