// The checks of one instruction against the machine before a program runs (program_check.hpp), as each
// instruction kind's check() uses them: every failure is an InputError naming the instruction ("core 0,1 pe
// #3") and its line.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "arch/isa/program.hpp"
#include "arch/spec.hpp"

namespace tessera::arch {

class InstructionChecks {
 public:
  InstructionChecks(const Program& program, const ArchSpec& spec, const CoreProgram& core,
                    const Instruction& instruction, int64_t position)
      : program_(program), spec_(spec), core_(core), instruction_(instruction), position_(position) {}

  const Program& program() const { return program_; }
  const ArchSpec& spec() const { return spec_; }

  [[noreturn]] void fail(const std::string& message, const std::string& hint = "") const;
  // `rows` rows of `row_bytes` at `pitch` (0: packed) from `address` lie inside the core's SRAM.
  void sram_range(const char* what, uint64_t address, int64_t rows, int64_t row_bytes, int64_t pitch) const;
  // The region names a declared tensor and lies inside it.
  void region(const TensorRegion& region) const;
  void core_index(int index, const char* what) const;
  // The PE array runs `dataflow` on `dtype` operands.
  void pe_support(Dataflow dataflow, DType dtype) const;
  // 16-bit partial sums (psum=) are kept for 16-bit operands only.
  void partial_sums(DType dtype, std::optional<DType> psum) const;

 private:
  const Program& program_;
  const ArchSpec& spec_;
  const CoreProgram& core_;
  const Instruction& instruction_;
  int64_t position_;
};

}  // namespace tessera::arch
