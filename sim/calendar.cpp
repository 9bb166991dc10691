#include "sim/calendar.hpp"

#include <algorithm>
#include <cmath>

#include "common/error.hpp"

namespace tessera::sim {

namespace {
// Rounding leaves crumbs of capacity; below this, an epoch counts as full.
constexpr double kCrumbBytes = 1e-6;

Tick ceil_ticks(double ticks) {
  return static_cast<Tick>(std::ceil(ticks - 1e-9));
}
}  // namespace

void BandwidthCalendar::set_capacity(double bytes_per_cycle) {
  TESSERA_ASSERT(bytes_per_cycle > 0, "resources have positive bandwidth");
  bytes_per_cycle_ = bytes_per_cycle;
  bytes_per_tick_ = bytes_per_cycle / static_cast<double>(kTicksPerCycle);
  capacity_per_epoch_ = bytes_per_cycle * static_cast<double>(kEpochCycles);
  reset();
}

void BandwidthCalendar::reset() {
  used_.clear();
  first_epoch_ = 0;
}

double& BandwidthCalendar::used(uint64_t epoch) {
  if (used_.empty()) first_epoch_ = epoch;
  if (epoch < first_epoch_) {
    // A booking earlier than any so far but not retired: extend the front.
    used_.insert(used_.begin(), first_epoch_ - epoch, 0.0);
    first_epoch_ = epoch;
  }
  const uint64_t offset = epoch - first_epoch_;
  if (offset >= used_.size()) used_.resize(offset + 1, 0.0);
  return used_[offset];
}

void BandwidthCalendar::retire_before(Tick now) {
  const uint64_t epoch = now / kEpochTicks;
  while (!used_.empty() && first_epoch_ < epoch) {
    used_.pop_front();
    ++first_epoch_;
  }
}

Tick BandwidthCalendar::book(Tick start, double bytes) {
  if (bytes <= 0) return start;
  uint64_t epoch = start / kEpochTicks;
  Tick at = start;
  double remaining = bytes;
  for (;;) {
    double& booked = used(epoch);
    const Tick epoch_end = (epoch + 1) * kEpochTicks;
    const double free_bytes = capacity_per_epoch_ - booked;
    if (free_bytes > kCrumbBytes) {
      // What is booked already is taken to be spread evenly over the epoch, so what is left flows at this
      // rate.
      const double rate = bytes_per_tick_ * (free_bytes / capacity_per_epoch_);
      const double room = rate * static_cast<double>(epoch_end - at);
      if (remaining <= room) {
        booked += remaining;
        return std::max(at, ceil_ticks(static_cast<double>(at) + remaining / rate));
      }
      booked += room;
      remaining -= room;
    }
    ++epoch;
    at = epoch * kEpochTicks;
  }
}

Tick BandwidthCalendar::book_spread(Tick start, Tick end, double bytes) {
  if (bytes <= 0) return std::max(start, end);
  if (end <= start) return book(start, bytes);
  const double per_tick = bytes / static_cast<double>(end - start);
  double carry = 0;
  for (uint64_t epoch = start / kEpochTicks; epoch * kEpochTicks < end; ++epoch) {
    const Tick from = std::max(start, epoch * kEpochTicks);
    const Tick to = std::min(end, (epoch + 1) * kEpochTicks);
    double& booked = used(epoch);
    const double wanted = per_tick * static_cast<double>(to - from) + carry;
    // Within the window the stream may use at most the capacity of the part of the epoch it covers.
    const double limit =
        std::min(capacity_per_epoch_ - booked, bytes_per_tick_ * static_cast<double>(to - from));
    const double taken = std::max(0.0, std::min(wanted, limit));
    booked += taken;
    carry = wanted - taken;
  }
  if (carry <= kCrumbBytes) return end;
  return book(end, carry);
}

}  // namespace tessera::sim
