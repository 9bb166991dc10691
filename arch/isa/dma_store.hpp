// dma store: SRAM -> DRAM (an output tensor region), optionally adding into it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "arch/isa/cause.hpp"
#include "arch/isa/fields.hpp"
#include "arch/isa/queue.hpp"
#include "arch/isa/region.hpp"

namespace tessera::arch {

class LineReader;
class LineWriter;
class InstructionChecks;

// SRAM -> DRAM. With accumulate, the DRAM contents are read, added to, and written back (partial sums).
struct DmaStore {
  uint64_t sram_address = 0;
  int64_t sram_pitch_bytes = 0;
  TensorRegion destination;
  bool accumulate = false;
  // Its fields, in the order the binary form sends them (arch/isa/fields.hpp).
  template <class Visit>
  static void fields(Visit&& visit) {
    visit("sram_address", &DmaStore::sram_address), visit("sram_pitch_bytes", &DmaStore::sram_pitch_bytes);
    visit("destination", &DmaStore::destination), visit("accumulate", &DmaStore::accumulate);
  }
  bool operator==(const DmaStore& other) const { return equal_fields(*this, other); }

  static constexpr QueueKind kQueue = QueueKind::dma;
  // What a unit waiting on this instruction's signal is charged.
  static constexpr Cause kWaitersCause = Cause::output_backpressure;
  static const std::vector<std::string>& mnemonics();  // the operation words it is written with
  static DmaStore read(LineReader& in, std::string_view mnemonic, int column);
  void write(LineWriter& out) const;
  void check(const InstructionChecks& checks) const;
};

}  // namespace tessera::arch
