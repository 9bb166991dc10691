#include "arch/isa/dma_store.hpp"

#include <fmt/format.h>

#include "arch/isa/instruction_checks.hpp"
#include "arch/isa/text_reader.hpp"
#include "arch/isa/text_writer.hpp"

namespace tessera::arch {

namespace {
constexpr const char* kStoreSyntax = "a store is written: store ADDR [pitch=BYTES] -> T[r0:r1, c0:c1] [add]";
}  // namespace

const std::vector<std::string>& DmaStore::mnemonics() {
  static const std::vector<std::string> names = {"store"};
  return names;
}

DmaStore DmaStore::read(LineReader& in, std::string_view, int) {
  DmaStore store;
  store.sram_address = in.read_unsigned("an SRAM address");
  static const std::vector<std::string> source_options = {"pitch"};
  uint32_t given = 0;
  while (!in.accept_arrow()) {
    if (in.at_operation_end()) in.fail_expected(in.column(), "'->' and the destination region", kStoreSyntax);
    in.read_option(source_options, 0, given, "store", kStoreSyntax);
    store.sram_pitch_bytes = in.read_size("the SRAM row pitch in bytes");
  }
  store.destination = in.read_region();
  static const std::vector<std::string> destination_options = {"add"};
  constexpr uint32_t kAdd = 0b1;  // a flag, not key=value
  given = 0;
  while (!in.at_operation_end()) {
    in.read_option(destination_options, kAdd, given, "store", kStoreSyntax);
    store.accumulate = true;
  }
  return store;
}

void DmaStore::write(LineWriter& out) const {
  out.put("store 0x{:x}", sram_address);
  out.write_pitch("pitch", sram_pitch_bytes);
  out.put(" -> ");
  out.write_region(destination);
  if (accumulate) out.put(" add");
}

void DmaStore::check(const InstructionChecks& checks) const {
  const Program& program = checks.program();
  checks.region(destination);
  const TensorDecl& tensor = program.tensors[destination.tensor];
  if (tensor.role != TensorRole::output) {
    checks.fail(fmt::format("stores into tensor {}, which is not an output", tensor.name),
                "inputs and views are read-only; store into an output tensor");
  }
  const DType dtype = tensor.dtype;
  checks.sram_range("source", sram_address, destination.rows, destination.cols * size_bytes(dtype),
                    sram_pitch_bytes);
  if (accumulate && dtype == DType::int8) {
    checks.fail(
        fmt::format("an accumulating store adds partial sums (fp32, int32, bf16 or fp16); tensor {} "
                    "is {}",
                    tensor.name, name_of(dtype)));
  }
}

}  // namespace tessera::arch
