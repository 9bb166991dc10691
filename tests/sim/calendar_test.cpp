#include "sim/calendar.hpp"

#include <gtest/gtest.h>

namespace tessera::sim {

constexpr Tick cycles(int64_t n) {
  return cycles_to_ticks(n);
}

TEST(BandwidthCalendar, UncontendedBookingTakesBytesOverBandwidth) {
  BandwidthCalendar link(64.0);
  EXPECT_EQ(link.book(cycles(10), 256), cycles(14));
  // Fractional bandwidth: 100 bytes at 48.57 B/cycle is 2.0589 cycles.
  BandwidthCalendar dram(34.0 / 0.7);
  EXPECT_EQ(dram.book(0, 100), 2059u);
}

TEST(BandwidthCalendar, StreamsThatCollideShareTheCapacity) {
  // Two streams each asking for the full bandwidth of one epoch: together they need two epochs.
  BandwidthCalendar link(64.0);
  const double epoch_bytes = 64.0 * BandwidthCalendar::kEpochCycles;
  const Tick first = link.book(0, epoch_bytes);
  const Tick second = link.book(0, epoch_bytes);
  EXPECT_EQ(first, BandwidthCalendar::kEpochTicks);
  EXPECT_EQ(second, 2 * BandwidthCalendar::kEpochTicks);
}

TEST(BandwidthCalendar, StreamsThatDoNotCollideOverlap) {
  BandwidthCalendar link(64.0);
  const Tick early = link.book(0, 64.0 * 10);
  // Ten epochs later the resource is idle again: no delay.
  const Tick late = link.book(10 * BandwidthCalendar::kEpochTicks, 64.0 * 10);
  EXPECT_EQ(early, cycles(10));
  EXPECT_EQ(late, 10 * BandwidthCalendar::kEpochTicks + cycles(10));
}

TEST(BandwidthCalendar, HalfBookedEpochServesAtHalfRate) {
  BandwidthCalendar bank(1.0);  // one word per cycle
  const double half = BandwidthCalendar::kEpochCycles / 2.0;
  bank.book_spread(0, BandwidthCalendar::kEpochTicks, half);  // a stream using half the bank over the epoch
  EXPECT_EQ(bank.book(0, 8), cycles(16));                     // 8 words at the half rate left
}

TEST(BandwidthCalendar, SpreadBookingThatDoesNotFitSpillsPastItsWindow) {
  BandwidthCalendar bank(1.0);
  // 200 words in a 128-cycle window on a 1 word/cycle bank: 72 words spill past the window.
  EXPECT_EQ(bank.book_spread(0, cycles(128), 200), cycles(200));
}

TEST(BandwidthCalendar, RetiredEpochsAreForgotten) {
  BandwidthCalendar link(1.0);
  link.book(0, 128);  // fills epoch 0
  link.retire_before(BandwidthCalendar::kEpochTicks);
  // A booking in epoch 1 sees a free resource.
  EXPECT_EQ(link.book(BandwidthCalendar::kEpochTicks, 10), BandwidthCalendar::kEpochTicks + cycles(10));
}

}  // namespace tessera::sim
