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
  sync,                 // waiting for another unit of the core (a PE result, its own core's last store)
  fill_drain,           // PE array: preload, skewed fill and drain not hidden under a stream; vector unit:
                        //   its pipeline waiting for a row's statistic and draining
  vector,               // waiting for a result of the vector unit (the softmax between two GEMMs)
  imbalance,            // the unit's core has finished its share and waits for the other cores
};
constexpr int kCauses = 9;
const char* name_of(Cause cause);
const std::array<Cause, kCauses>& all_causes();  // in the order reports list them

}  // namespace tessera::arch
