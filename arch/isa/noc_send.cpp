#include "arch/isa/noc_send.hpp"

#include <fmt/format.h>

#include "arch/isa/instruction_checks.hpp"
#include "arch/isa/text_reader.hpp"
#include "arch/isa/text_writer.hpp"

namespace tessera::arch {

namespace {
constexpr const char* kSendSyntax =
    "a send is written: send ADDR rows=R bytes=B [pitch=P] -> R,C ADDR [pitch=P] [add=fp32|int32]";

// What a reduction adds in (common/dtype.hpp, accumulator_of).
const std::vector<std::string>& accumulator_dtype_names() {
  static const std::vector<std::string> names = {name_of(DType::fp32), name_of(DType::int32),
                                                 name_of(DType::bf16), name_of(DType::fp16)};
  return names;
}
}  // namespace

const std::vector<std::string>& NocSend::mnemonics() {
  static const std::vector<std::string> names = {"send"};
  return names;
}

NocSend NocSend::read(LineReader& in, std::string_view, int operation_column) {
  NocSend send;
  send.source_address = in.read_unsigned("the source SRAM address");
  enum SourceOption : size_t { key_rows, key_bytes, key_pitch };
  static const std::vector<std::string> source_options = {"rows", "bytes", "pitch"};
  uint32_t given = 0;
  while (!in.accept_arrow()) {
    if (in.at_operation_end()) in.fail_expected(in.column(), "'->' and the destination core", kSendSyntax);
    switch (in.read_option(source_options, 0, given, "send", kSendSyntax)) {
      case key_rows:
        send.rows = in.read_positive("rows");
        break;
      case key_bytes:
        send.row_bytes = in.read_positive("bytes");
        break;
      case key_pitch:
        send.source_pitch_bytes = in.read_size("the source row pitch in bytes");
        break;
    }
  }
  in.require_options(source_options, given, 0b011, operation_column, "send", kSendSyntax);
  send.destination_core = in.read_core_index();
  send.destination_address = in.read_unsigned("the destination SRAM address");
  static const std::vector<std::string> destination_options = {"pitch", "add"};
  given = 0;
  while (!in.at_operation_end()) {
    if (in.read_option(destination_options, 0, given, "send", kSendSyntax) == 0) {
      send.destination_pitch_bytes = in.read_size("the destination row pitch in bytes");
    } else {
      send.accumulate = true;
      send.accumulate_dtype = in.read_dtype("accumulation type", accumulator_dtype_names());
    }
  }
  return send;
}

void NocSend::write(LineWriter& out) const {
  out.put("send 0x{:x} rows={} bytes={}", source_address, rows, row_bytes);
  out.write_pitch("pitch", source_pitch_bytes);
  out.put(" -> ");
  out.write_core(destination_core);
  out.put(" 0x{:x}", destination_address);
  out.write_pitch("pitch", destination_pitch_bytes);
  if (accumulate) out.put(" add={}", name_of(accumulate_dtype));
}

void NocSend::check(const InstructionChecks& checks) const {
  if (rows <= 0 || row_bytes <= 0) checks.fail("rows and bytes must be positive");
  checks.core_index(destination_core, "the send");
  checks.sram_range("source", source_address, rows, row_bytes, source_pitch_bytes);
  checks.sram_range("destination", destination_address, rows, row_bytes, destination_pitch_bytes);
  if (accumulate) {
    if (accumulate_dtype == DType::int8)
      checks.fail("a reducing send adds fp32, int32, bf16 or fp16 partial sums");
    if (row_bytes % size_bytes(accumulate_dtype) != 0)
      checks.fail("a reducing send moves whole elements per row");
  }
}

}  // namespace tessera::arch
