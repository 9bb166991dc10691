// Contention on a shared resource by reservation (DESIGN.md, "Timing model"). A resource (an SRAM bank, a
// DRAM channel, a NoC link) has a capacity in bytes per cycle; time is cut into epochs of kEpochCycles and
// each epoch remembers how much of its capacity is booked. A booking placed at time t uses the capacity left
// in t's epoch, spread evenly over the epoch, and spills into later epochs when it does not fit, so streams
// that collide share the resource (and each is slowed) while streams that do not collide overlap freely. Cost
// is per booking and per epoch touched, never per byte or per cycle.
#pragma once

#include <cstdint>
#include <vector>

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
  // is start + bytes / capacity exactly. The common case (the booking fits in the open epoch it starts in) is
  // inline; the rest walks the epochs.
  Tick book(Tick start, double bytes) {
    const uint64_t epoch = start / kEpochTicks;
    if (bytes > 0 && epoch >= first_open_epoch_ && epoch < end_epoch_) {
      double& booked = ring_[epoch & mask_];
      const double free_bytes = capacity_per_epoch_ - booked;
      if (free_bytes > full_threshold_) {
        // The same arithmetic as the walk's first step (book_walk), so both give the same ticks.
        const double slowdown = capacity_per_epoch_ / free_bytes;
        const double room =
            static_cast<double>((epoch + 1) * kEpochTicks - start) * bytes_per_tick_ / slowdown;
        if (bytes <= room) {
          booked += bytes;
          const Tick end = ceil_ticks(static_cast<double>(start) + bytes * ticks_per_byte_ * slowdown);
          if (capacity_per_epoch_ - booked <= full_threshold_) note_full(epoch);
          return end > start ? end : start;
        }
      }
    }
    return book_walk(start, bytes);
  }

  // Books `bytes` spread evenly over [start, end) (a stream with a known duration, e.g. a PE instruction's
  // operand reads); what does not fit in the window spills past it. Returns when the last byte has passed
  // (>= end).
  Tick book_spread(Tick start, Tick end, double bytes);

  // Forgets epochs that end before `now`: no booking can start there any more. Cheap when there is nothing to
  // forget, so the Fabric calls it lazily, just before it books this resource.
  void retire_before(Tick now) {
    if (now / kEpochTicks > first_epoch_) retire_epochs_before(now / kEpochTicks);
  }

  double bytes_per_cycle() const { return bytes_per_cycle_; }
  // Ticks `bytes` take at full bandwidth, rounded up.
  Tick transfer_ticks(double bytes) const { return ceil_ticks(bytes * ticks_per_byte_); }

  // ceil(ticks), forgiving a rounding error of 1e-9 tick; 0 for what rounds to nothing. Integer arithmetic,
  // the same result as std::ceil without a call into libm on machines without SSE4.1's roundsd.
  static Tick ceil_ticks(double ticks) {
    const double wanted = ticks - 1e-9;
    if (!(wanted > 0)) return 0;
    const auto whole = static_cast<Tick>(wanted);
    return static_cast<double>(whole) < wanted ? whole + 1 : whole;
  }

 private:
  Tick book_walk(Tick start, double bytes);
  void retire_epochs_before(uint64_t epoch);
  double& used(uint64_t epoch) {
    return epoch >= first_epoch_ && epoch < end_epoch_ ? ring_[epoch & mask_] : grow_to(epoch);
  }
  double& grow_to(uint64_t epoch);
  void note_full(uint64_t epoch);

  double capacity_per_epoch_ = 0;
  double full_threshold_ = 0;  // an epoch with no more than this left counts as full
  double bytes_per_cycle_ = 0;
  double bytes_per_tick_ = 0;
  double ticks_per_byte_ = 0;
  // The epochs [first_epoch_, end_epoch_) live in a ring whose size is a power of two.
  std::vector<double> ring_;
  uint64_t mask_ = 0;
  uint64_t first_epoch_ = 0;
  uint64_t end_epoch_ = 0;
  // Every epoch from first_epoch_ up to (not including) this one is full: a booking starting earlier skips
  // straight here, so booking a saturated resource costs O(1) instead of a walk along its queue.
  uint64_t first_open_epoch_ = 0;
};

}  // namespace tessera::sim
