// pe ws|os|is: a matrix product on the PE array.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "arch/isa/cause.hpp"
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
  bool operator==(const PeMatmul& other) const {
    return dataflow == other.dataflow && dtype == other.dtype && a_address == other.a_address &&
           w_address == other.w_address && o_address == other.o_address &&
           a_pitch_bytes == other.a_pitch_bytes && w_pitch_bytes == other.w_pitch_bytes &&
           o_pitch_bytes == other.o_pitch_bytes && m == other.m && n == other.n && k == other.k &&
           accumulate == other.accumulate && w_transposed == other.w_transposed && psum == other.psum;
  }

  static constexpr QueueKind kQueue = QueueKind::pe;
  // What a unit waiting on this instruction's signal is charged.
  static constexpr Cause kWaitersCause = Cause::sync;
  static const std::vector<std::string>& mnemonics();  // the operation words it is written with
  static PeMatmul read(LineReader& in, std::string_view mnemonic, int column);
  void write(LineWriter& out) const;
  void check(const InstructionChecks& checks) const;
};

}  // namespace tessera::arch
