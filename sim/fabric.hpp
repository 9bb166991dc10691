// The machine's shared resources and how a burst travels through them (DESIGN.md, "Timing model"): every DRAM
// channel, directed mesh link, router port and SRAM bank is a BandwidthCalendar. A burst books the resources
// on its path in order; its head is delayed by router latencies and by contention, its tail cannot pass a
// resource before it arrived there. Plain C++: the units that live in simulated time call it.
#pragma once

#include <cstdint>
#include <vector>

#include "arch/spec.hpp"
#include "arch/topology.hpp"
#include "sim/calendar.hpp"
#include "sim/run_result.hpp"

namespace tessera::sim {

// The first and the last byte of a burst at some point of its path.
struct Flow {
  Tick head = 0;
  Tick tail = 0;
};

// Where a burst lands in, or comes from, one core's SRAM: a contiguous byte range.
struct SramSpan {
  int core = 0;
  uint64_t address = 0;
  int64_t bytes = 0;
};

struct BurstTiming {
  Tick done = 0;        // the last byte has arrived (loads, sends) or is written (stores)
  Tick bank_delay = 0;  // part of the burst's time added by SRAM bank conflicts
};

class Fabric {
 public:
  explicit Fabric(const arch::ArchSpec& spec);
  void reset();

  // DRAM -> the SRAMs of `destinations` (one read; a multicast tree when there are several).
  BurstTiming load_burst(Tick issue, uint64_t dram_address, int64_t bytes,
                         const std::vector<SramSpan>& destinations);
  // SRAM -> DRAM; `accumulate` reads the DRAM contents first (read-modify-write).
  BurstTiming store_burst(Tick issue, const SramSpan& source, uint64_t dram_address, bool accumulate);
  // SRAM of one core -> SRAM of another; `accumulate` reads the destination first.
  BurstTiming send_burst(Tick issue, const SramSpan& source, const SramSpan& destination, bool accumulate);

  // Books the SRAM traffic of a PE-array instruction: per bank, `words[bank]` bank-width words spread over
  // [start, end). Returns how far past `end` the slowest bank pushes it (0 if every bank keeps up).
  Tick book_pe_traffic(int core, Tick start, Tick end, const std::vector<int64_t>& words);

  // Adds the bank-width words per bank that `passes` passes over `rows` rows of `row_bytes` at `pitch` from
  // `address` touch.
  void count_bank_words(uint64_t address, int64_t rows, int64_t row_bytes, int64_t pitch, int64_t passes,
                        std::vector<int64_t>& words) const;

  void retire_before(Tick now);
  TrafficCounters& traffic() { return traffic_; }
  const arch::ArchSpec& spec() const { return spec_; }

 private:
  Flow through(BandwidthCalendar& resource, Flow in, double bytes, Tick latency);
  Flow through_banks(int core, Flow in, uint64_t address, int64_t bytes, bool read_and_write,
                     Tick& bank_delay);
  Flow dram_read(Tick issue, uint64_t dram_address, int64_t bytes, int& router);

  const arch::ArchSpec& spec_;
  Tick router_latency_ = 0;
  Tick dram_latency_ = 0;
  std::vector<BandwidthCalendar> channels_;
  std::vector<int> channel_router_;        // core index of the router each channel attaches to
  std::vector<BandwidthCalendar> links_;   // link_index(router, direction)
  std::vector<BandwidthCalendar> inject_;  // core -> its router
  std::vector<BandwidthCalendar> eject_;   // router -> its core
  std::vector<BandwidthCalendar> banks_;   // core * banks + bank
  std::vector<int> route_;                 // scratch
  std::vector<int64_t> scratch_words_;     // per bank, zero between uses
  std::vector<int> touched_;
  TrafficCounters traffic_;
};

}  // namespace tessera::sim
