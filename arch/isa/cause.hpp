// Why a unit was not busy (DESIGN.md, "Pipeline bubbles"); busy + all causes = the run's cycles, per unit.
// Part of the instruction set: each instruction kind names the cause a unit waiting on its signal is charged
// (instruction_table.hpp, waiters_cause).
#pragma once

#include <array>
#include <cstdint>

namespace tessera::arch {

enum class Cause : uint8_t {
  busy,
  input_starvation,     // waiting for a DMA load
  output_backpressure,  // waiting for a DMA store to free a buffer
  noc,                  // waiting for a core-to-core transfer
  bank_conflict,        // slowed by SRAM bank arbitration
  sync,                 // waiting for another unit (a PE result, the end of the run)
  fill_drain,           // PE array: preload, skewed fill and drain not hidden under a stream
};
constexpr int kCauses = 7;
const char* name_of(Cause cause);
const std::array<Cause, kCauses>& all_causes();  // in the order reports list them

}  // namespace tessera::arch
