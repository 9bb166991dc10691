// dma load: DRAM (a tensor region, or a view gathered from its source) -> SRAM, optionally multicast.
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

// DRAM -> SRAM, a 2-D strided copy. With destinations, one read from DRAM is multicast over the NoC to the
// same SRAM address of every listed core (the issuing core included only if listed).
struct DmaLoad {
  TensorRegion source;
  uint64_t sram_address = 0;
  int64_t sram_pitch_bytes = 0;   // bytes between rows in SRAM; 0 = rows packed (cols * element size)
  std::vector<int> destinations;  // core indices; empty = the issuing core only
  // Its fields, in the order the binary form sends them (arch/isa/fields.hpp).
  template <class Visit>
  static void fields(Visit&& visit) {
    visit("source", &DmaLoad::source), visit("sram_address", &DmaLoad::sram_address);
    visit("sram_pitch_bytes", &DmaLoad::sram_pitch_bytes), visit("destinations", &DmaLoad::destinations);
  }
  bool operator==(const DmaLoad& other) const { return equal_fields(*this, other); }

  static constexpr QueueKind kQueue = QueueKind::dma;
  // What a unit waiting on this instruction's signal is charged.
  static constexpr Cause kWaitersCause = Cause::input_starvation;
  static const std::vector<std::string>& mnemonics();  // the operation words it is written with
  static DmaLoad read(LineReader& in, std::string_view mnemonic, int column);
  void write(LineWriter& out) const;
  void check(const InstructionChecks& checks) const;
};

// A signal a multicast load posts on its own core is posted on every destination core instead.
inline const std::vector<int>& signal_destinations(const DmaLoad& load) {
  return load.destinations;
}

}  // namespace tessera::arch
