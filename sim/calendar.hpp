// Contention on a shared resource by reservation (DESIGN.md, "Timing model"). A resource (an SRAM bank, a
// DRAM channel, a NoC link) has a capacity in bytes per cycle; time is cut into epochs of kEpochCycles and
// each epoch remembers how much of its capacity is booked. A booking placed at time t uses the capacity left
// in t's epoch, spread evenly over the epoch, and spills into later epochs when it does not fit, so streams
// that collide share the resource (and each is slowed) while streams that do not collide overlap freely. Cost
// is per booking and per epoch touched, never per byte or per cycle.
#pragma once

#include <cstdint>
#include <deque>

#include "sim/time.hpp"

namespace tessera::sim {

class BandwidthCalendar {
 public:
  static constexpr int64_t kEpochCycles = 128;
  static constexpr Tick kEpochTicks = kEpochCycles * kTicksPerCycle;

  explicit BandwidthCalendar(double bytes_per_cycle = 1.0) { set_capacity(bytes_per_cycle); }
  void set_capacity(double bytes_per_cycle);
  void reset();

  // Books `bytes` starting no earlier than `start`; returns when the last byte has passed. Uncontended, that
  // is start + bytes / capacity exactly.
  Tick book(Tick start, double bytes);

  // Books `bytes` spread evenly over [start, end) (a stream with a known duration, e.g. a PE instruction's
  // operand reads); what does not fit in the window spills past it. Returns when the last byte has passed
  // (>= end).
  Tick book_spread(Tick start, Tick end, double bytes);

  // Forgets epochs that end before `now`: no booking can start there any more.
  void retire_before(Tick now);

  double bytes_per_cycle() const { return bytes_per_cycle_; }

 private:
  double& used(uint64_t epoch);
  double capacity_per_epoch_ = 0;
  double bytes_per_cycle_ = 0;
  double bytes_per_tick_ = 0;
  uint64_t first_epoch_ = 0;  // epoch index of used_.front()
  std::deque<double> used_;
};

}  // namespace tessera::sim
