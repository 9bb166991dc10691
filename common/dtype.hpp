// Element types of tensors and PE operands. int8 operands accumulate in int32; every floating type
// accumulates in fp32 (DESIGN.md, "Functional execution and numerics").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tessera {

enum class DType : uint8_t { fp32, bf16, fp16, int8, int32 };

constexpr int size_bytes(DType type) {
  switch (type) {
    case DType::fp32:
      return 4;
    case DType::bf16:
      return 2;
    case DType::fp16:
      return 2;
    case DType::int8:
      return 1;
    case DType::int32:
      return 4;
  }
  return 0;
}

// The type a contraction over `operand` accumulates (and stores its output) in.
constexpr DType accumulator_of(DType operand) {
  return operand == DType::int8 ? DType::int32 : DType::fp32;
}

// The type a contraction keeps its partial sums in between passes, and stores its output in: `psum` when
// given (bf16 or fp16, for bf16 or fp16 operands: a 16-bit accelerator's psum buffers, each pass's products
// summed in fp32 and the sum rounded as it is written back), else the accumulator's.
constexpr DType partial_sum_of(DType operand, std::optional<DType> psum) {
  return psum ? *psum : accumulator_of(operand);
}
// Whether partial sums of `psum` type may be kept for `operand` operands.
constexpr bool takes_partial_sums(DType operand, DType psum) {
  return psum == accumulator_of(operand) ||
         ((psum == DType::bf16 || psum == DType::fp16) && (operand == DType::bf16 || operand == DType::fp16));
}

constexpr bool is_integer(DType type) {
  return type == DType::int8 || type == DType::int32;
}

const char* name_of(DType type);
std::optional<DType> parse_dtype(const std::string& text);

// The operand types a workload may name (int32 is an accumulator type only).
const std::vector<std::string>& operand_dtype_names();

}  // namespace tessera
