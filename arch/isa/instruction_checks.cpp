#include "arch/isa/instruction_checks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>

namespace tessera::arch {

void InstructionChecks::fail(const std::string& message, const std::string& hint) const {
  throw InputError(
      location_of(program_, instruction_), describe_instruction(program_, core_, instruction_, position_),
      message,
      hint.empty() ? "docs/tile-program.md gives each instruction's options and their limits" : hint);
}

void InstructionChecks::sram_range(const char* what, uint64_t address, int64_t rows, int64_t row_bytes,
                                   int64_t pitch) const {
  if (pitch != 0 && pitch < row_bytes) {
    fail(fmt::format("{}: row pitch {} B is shorter than a row ({} B)", what, pitch, row_bytes),
         "rows would overlap; use a pitch of at least the row size, or omit it for packed rows");
  }
  // In 128 bits: a hostile address, row count or pitch cannot wrap past the end of the SRAM.
  using Wide = unsigned __int128;
  const Wide end = Wide{address} +
                   Wide{static_cast<uint64_t>(std::max<int64_t>(rows - 1, 0))} *
                       Wide{static_cast<uint64_t>(pitch != 0 ? pitch : row_bytes)} +
                   Wide{static_cast<uint64_t>(row_bytes)};
  if (end > Wide{static_cast<uint64_t>(spec_.core.sram.bytes)}) {
    const std::string end_text =
        end > Wide{UINT64_MAX} ? std::string("past 2^64") : fmt::format("0x{:x}", static_cast<uint64_t>(end));
    fail(fmt::format("{}: SRAM bytes 0x{:x}..{} run past the end of the {} KiB SRAM (0x{:x})", what, address,
                     end_text, spec_.core.sram.kib, spec_.core.sram.bytes),
         "addresses are per core and start at 0");
  }
}

void InstructionChecks::region(const TensorRegion& region) const {
  if (region.tensor < 0 || region.tensor >= static_cast<int>(program_.tensors.size()))
    fail("names no declared tensor");
  const TensorDecl& tensor = program_.tensors[region.tensor];
  if (region.rows <= 0 || region.cols <= 0 || region.row < 0 || region.col < 0 ||
      region.row + region.rows > tensor.rows || region.col + region.cols > tensor.cols) {
    fail(
        fmt::format("region {}[{}:{}, {}:{}] is not inside the {}x{} tensor", tensor.name, region.row,
                    region.row + region.rows, region.col, region.col + region.cols, tensor.rows, tensor.cols),
        fmt::format("rows r0:r1 cover r0 .. r1-1: {} has rows 0:{} and columns 0:{}", tensor.name,
                    tensor.rows, tensor.cols));
  }
}

void InstructionChecks::core_index(int index, const char* what) const {
  if (index < 0 || index >= spec_.mesh.cores()) {
    fail(fmt::format("{} names core #{}, outside the {}x{} mesh", what, index, spec_.mesh.rows,
                     spec_.mesh.cols));
  }
}

void InstructionChecks::partial_sums(DType dtype, std::optional<DType> psum) const {
  if (psum && !takes_partial_sums(dtype, *psum))
    fail(fmt::format("{} partial sums (psum={}) take 16-bit operands, not {}", tessera::name_of(*psum),
                     tessera::name_of(*psum), tessera::name_of(dtype)),
         "leave psum= out: the partial sums are kept in the accumulator's type");
}

void InstructionChecks::pe_support(Dataflow dataflow, DType dtype) const {
  if (!spec_.core.pe_array.supports(dataflow)) {
    fail(fmt::format("dataflow {} is not supported by machine '{}'", name_of(dataflow), spec_.name),
         "core.pe_array.dataflows lists what the array supports");
  }
  if (!spec_.core.pe_array.supports(dtype) || dtype == DType::int32) {
    fail(fmt::format("operand type {} is not supported by machine '{}'", tessera::name_of(dtype), spec_.name),
         "core.pe_array.dtypes lists what the array supports");
  }
  // The operand tiles are bytes DMA copied from the program's tensors: a type that none of its inputs has
  // reads them as something else (int8 on bf16 tiles ran, then failed the numerics with inf).
  std::string input_types;
  for (const TensorDecl& tensor : program_.tensors) {
    if (tensor.role == TensorRole::output) continue;
    if (tensor.dtype == dtype) return;
    const std::string type = tessera::name_of(tensor.dtype);
    if (input_types.find(type) == std::string::npos) input_types += (input_types.empty() ? "" : ", ") + type;
  }
  if (!input_types.empty()) {
    fail(fmt::format("dtype={} but no input tensor of the program is {} (they are {})",
                     tessera::name_of(dtype), tessera::name_of(dtype), input_types),
         "a PE instruction's dtype is the type of the tiles it reads: write the inputs' dtype");
  }
}

}  // namespace tessera::arch
