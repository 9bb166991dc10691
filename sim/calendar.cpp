#include "sim/calendar.hpp"

#include <algorithm>
#include <cmath>

#include "common/error.hpp"

namespace tessera::sim {

namespace {
// Rounding and rate-proportional bookings leave slivers of capacity that no booking can use well; an epoch
// with less than this fraction left counts as full (the bandwidth it forgoes is under 2%).
constexpr double kFullFraction = 1.0 / 64;
constexpr double kCrumbBytes = 1e-6;

// a * b + c as the compiler computes it when it sees the expression whole: fused into one multiply-add where
// the target has FMA (GCC contracts under -std=c++17 too), rounded twice where it has not. Spelled out so
// that a product hoisted out of a loop (whose add GCC then no longer fuses) rounds as before.
inline double multiply_add(double a, double b, double c) {
#if defined(__FMA__)
  return std::fma(a, b, c);
#else
  return a * b + c;
#endif
}
}  // namespace

void BandwidthCalendar::set_capacity(double bytes_per_cycle) {
  TESSERA_ASSERT(bytes_per_cycle > 0, "resources have positive bandwidth");
  bytes_per_cycle_ = bytes_per_cycle;
  bytes_per_tick_ = bytes_per_cycle / static_cast<double>(kTicksPerCycle);
  ticks_per_byte_ = 1.0 / bytes_per_tick_;
  capacity_per_epoch_ = bytes_per_cycle * static_cast<double>(kEpochCycles);
  full_threshold_ = std::max(kCrumbBytes, capacity_per_epoch_ * kFullFraction);
  reset();
}

void BandwidthCalendar::reset() {
  ring_.assign(16, 0.0);
  mask_ = ring_.size() - 1;
  first_epoch_ = end_epoch_ = first_open_epoch_ = 0;
}

void BandwidthCalendar::note_full(uint64_t epoch) {
  if (epoch != first_open_epoch_) return;
  while (capacity_per_epoch_ - used(first_open_epoch_) <= full_threshold_) ++first_open_epoch_;
}

double& BandwidthCalendar::grow_to(uint64_t epoch) {
  if (first_epoch_ == end_epoch_) first_epoch_ = end_epoch_ = first_open_epoch_ = epoch;
  // Grow the live window to take `epoch`: new epochs are empty.
  const uint64_t first = std::min(first_epoch_, epoch);
  const uint64_t end = std::max(end_epoch_, epoch + 1);
  if (end - first > ring_.size()) {
    size_t size = ring_.size();
    while (size < end - first) size *= 2;
    std::vector<double> grown(size, 0.0);
    for (uint64_t e = first_epoch_; e < end_epoch_; ++e) grown[e & (size - 1)] = ring_[e & mask_];
    ring_ = std::move(grown);
    mask_ = size - 1;
  }
  for (uint64_t e = first; e < first_epoch_; ++e) ring_[e & mask_] = 0.0;
  for (uint64_t e = end_epoch_; e < end; ++e) ring_[e & mask_] = 0.0;
  if (first < first_epoch_) first_open_epoch_ = std::min(first_open_epoch_, first);
  first_epoch_ = first;
  end_epoch_ = end;
  return ring_[epoch & mask_];
}

void BandwidthCalendar::retire_epochs_before(uint64_t epoch) {
  first_epoch_ = std::min(epoch, end_epoch_);
  first_open_epoch_ = std::max(first_open_epoch_, first_epoch_);
}

Tick BandwidthCalendar::book_walk(Tick start, double bytes) {
  if (bytes <= 0) return start;
  uint64_t epoch = start / kEpochTicks;
  Tick at = start;
  if (epoch >= first_epoch_ && epoch < first_open_epoch_) {
    epoch = first_open_epoch_;
    at = epoch * kEpochTicks;
  }
  double remaining = bytes;
  for (;;) {
    double& booked = used(epoch);
    const Tick epoch_end = (epoch + 1) * kEpochTicks;
    const double free_bytes = capacity_per_epoch_ - booked;
    if (free_bytes > full_threshold_) {
      // What is booked already is taken to be spread evenly over the epoch, so what is left flows at this
      // rate.
      const double slowdown = capacity_per_epoch_ / free_bytes;  // >= 1: ticks per byte grow by this
      const double room = static_cast<double>(epoch_end - at) * bytes_per_tick_ / slowdown;
      if (remaining <= room) {
        booked += remaining;
        const Tick end =
            std::max(at, ceil_ticks(static_cast<double>(at) + remaining * ticks_per_byte_ * slowdown));
        if (capacity_per_epoch_ - booked <= full_threshold_) note_full(epoch);
        return end;
      }
      booked += room;
      remaining -= room;
      if (capacity_per_epoch_ - booked <= full_threshold_) note_full(epoch);
    } else {
      note_full(epoch);
    }
    ++epoch;
    at = epoch * kEpochTicks;
  }
}

Tick BandwidthCalendar::book_spread(Tick start, Tick end, double bytes) {
  if (bytes <= 0) return std::max(start, end);
  if (end <= start) return book(start, bytes);
  // Tick differences are converted through int64_t (one instruction; they are far below 2^63): the same
  // doubles as converting the unsigned values.
  const double per_tick = bytes / static_cast<double>(static_cast<int64_t>(end - start));
  const uint64_t first = start / kEpochTicks;
  const uint64_t last = (end - 1) / kEpochTicks;
  // Every epoch of the window live in the ring before the walk (new ones are empty), so the walk indexes it
  // directly.
  if (first < first_epoch_ || first >= end_epoch_) grow_to(first);
  if (last >= end_epoch_) {
    // The common growth, inline: the live window moves on within the ring (what grow_to does then).
    if (last - first_epoch_ < ring_.size()) {
      for (uint64_t epoch = end_epoch_; epoch <= last; ++epoch) ring_[epoch & mask_] = 0.0;
      end_epoch_ = last + 1;
    } else {
      grow_to(last);
    }
  }
  // Each epoch takes the window's bytes over the part of it the window covers, plus what earlier epochs could
  // not take; within the window the stream may use at most the capacity of that part.
  double carry = 0;
  const auto take = [&](uint64_t epoch, double wanted, double most) {
    double& booked = ring_[epoch & mask_];
    const double limit = std::min(capacity_per_epoch_ - booked, most);
    const double taken = std::max(0.0, std::min(wanted, limit));
    booked += taken;
    carry = wanted - taken;
    if (capacity_per_epoch_ - booked <= full_threshold_) note_full(epoch);
  };
  if (first == last) {
    const auto span = static_cast<double>(static_cast<int64_t>(end - start));
    take(first, multiply_add(per_tick, span, carry), bytes_per_tick_ * span);
  } else {
    const auto head = static_cast<double>(static_cast<int64_t>((first + 1) * kEpochTicks - start));
    take(first, multiply_add(per_tick, head, carry), bytes_per_tick_ * head);
    // The epochs the window covers whole: the same span each, so the same limit.
    constexpr auto whole = static_cast<double>(kEpochTicks);
    const double most = bytes_per_tick_ * whole;
    for (uint64_t epoch = first + 1; epoch < last; ++epoch)
      take(epoch, multiply_add(per_tick, whole, carry), most);
    const auto tail = static_cast<double>(static_cast<int64_t>(end - last * kEpochTicks));
    take(last, multiply_add(per_tick, tail, carry), bytes_per_tick_ * tail);
  }
  if (carry <= kCrumbBytes) return end;
  return book(end, carry);
}

}  // namespace tessera::sim
