// noc send: SRAM of this core -> SRAM of another core over the NoC, optionally reducing into it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "arch/isa/cause.hpp"
#include "arch/isa/fields.hpp"
#include "arch/isa/queue.hpp"
#include "common/dtype.hpp"

namespace tessera::arch {

class LineReader;
class LineWriter;
class InstructionChecks;

// SRAM of this core -> SRAM of another core over the NoC, 2-D. With accumulate, the destination adds the
// incoming `accumulate_dtype` elements to what it holds (reduction of partial sums).
struct NocSend {
  uint64_t source_address = 0;
  int64_t source_pitch_bytes = 0;  // 0 = packed
  int64_t rows = 0;
  int64_t row_bytes = 0;
  int destination_core = 0;
  uint64_t destination_address = 0;
  int64_t destination_pitch_bytes = 0;  // 0 = packed
  bool accumulate = false;
  DType accumulate_dtype = DType::fp32;
  // Its fields, in the order the binary form sends them (arch/isa/fields.hpp).
  template <class Visit>
  static void fields(Visit&& visit) {
    visit("source_address", &NocSend::source_address);
    visit("source_pitch_bytes", &NocSend::source_pitch_bytes), visit("rows", &NocSend::rows);
    visit("row_bytes", &NocSend::row_bytes), visit("destination_core", &NocSend::destination_core);
    visit("destination_address", &NocSend::destination_address);
    visit("destination_pitch_bytes", &NocSend::destination_pitch_bytes);
    visit("accumulate", &NocSend::accumulate), visit("accumulate_dtype", &NocSend::accumulate_dtype);
  }
  // Not equal_fields: a send that does not accumulate has no accumulate dtype to compare (the text leaves
  // it out, and reads it back as the default).
  bool operator==(const NocSend& other) const {
    return source_address == other.source_address && source_pitch_bytes == other.source_pitch_bytes &&
           rows == other.rows && row_bytes == other.row_bytes && destination_core == other.destination_core &&
           destination_address == other.destination_address &&
           destination_pitch_bytes == other.destination_pitch_bytes && accumulate == other.accumulate &&
           (!accumulate || accumulate_dtype == other.accumulate_dtype);
  }

  static constexpr QueueKind kQueue = QueueKind::noc;
  // What a unit waiting on this instruction's signal is charged.
  static constexpr Cause kWaitersCause = Cause::noc;
  static const std::vector<std::string>& mnemonics();  // the operation words it is written with
  static NocSend read(LineReader& in, std::string_view mnemonic, int column);
  void write(LineWriter& out) const;
  void check(const InstructionChecks& checks) const;
};

}  // namespace tessera::arch
