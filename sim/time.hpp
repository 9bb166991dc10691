// Simulated time. SystemC runs at 1 ps resolution and one machine cycle is 1 ns of SystemC time, whatever the
// clock: a tick is 1/1000 cycle, fine enough for fractional bandwidths (34 GB/s at 700 MHz is 48.57 B/cycle)
// while the PE array works in whole cycles. Reports convert to real time with clock_ghz.
#pragma once

#include <cstdint>

namespace tessera::sim {

using Tick = uint64_t;
constexpr Tick kTicksPerCycle = 1000;

constexpr Tick cycles_to_ticks(int64_t cycles) {
  return static_cast<Tick>(cycles) * kTicksPerCycle;
}
// Whole cycles needed to cover `ticks` (a boundary at 2.001 cycles counts as 3).
constexpr int64_t ticks_to_cycles_ceil(Tick ticks) {
  return static_cast<int64_t>((ticks + kTicksPerCycle - 1) / kTicksPerCycle);
}

}  // namespace tessera::sim
