// The machine's shared resources and how traffic moves through them (DESIGN.md, "Timing model"): every DRAM
// channel, directed mesh link, router port and SRAM bank is a BandwidthCalendar. A burst books the channel
// and links on its path in order; its head is delayed by router latencies and by contention, its tail cannot
// pass a resource before it arrived there. SRAM banks are booked per transfer or PE instruction, spread over
// the time its bytes come and go, so the cost stays per burst and per tile, never per word. Plain C++: the
// units that live in simulated time call it.
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

// A 2-D region of one core's SRAM that a transfer reads or writes.
struct SramRegion {
  int core = 0;
  uint64_t address = 0;
  int64_t rows = 0;
  int64_t row_bytes = 0;
  int64_t pitch_bytes = 0;  // 0 = packed
};

class Fabric {
 public:
  explicit Fabric(const arch::ArchSpec& spec);
  void reset();

  // Each burst returns when its last byte has passed its last port.
  // DRAM -> the NoC ports of the destinations of the current load (one read; a multicast tree when there are
  // several). begin_load names them once per transfer; its bursts share the trees.
  void begin_load(const std::vector<int>& destinations);
  Tick load_burst(Tick issue, uint64_t dram_address, int64_t bytes);
  // A core's NoC port -> DRAM; `accumulate` reads the DRAM contents first (read-modify-write).
  Tick store_burst(Tick issue, int source_core, int64_t bytes, uint64_t dram_address, bool accumulate);
  // A core's NoC port -> another core's.
  Tick send_burst(Tick issue, int source_core, int destination_core, int64_t bytes);

  // Books `passes` accesses to every word of `region` on its core's banks, spread over [start, end). Returns
  // how far past `end` the slowest bank pushes the transfer (0 if every bank keeps up).
  Tick book_sram_region(const SramRegion& region, int64_t passes, Tick start, Tick end);
  // Books per-bank word counts (a PE instruction's operand traffic) spread over [start, end); same return.
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
  // The links of the XY multicast tree from `router` to `destinations`, each after its parent (parent -1: the
  // root), and where each destination leaves the tree (-1: at the root). Cached: a transfer's bursts share
  // it.
  struct Tree {
    int router = -1;
    std::vector<int> destinations;
    std::vector<std::pair<int, int>> links;  // (link, parent entry)
    std::vector<int> leaves;                 // per destination: the entry of its last link
  };
  const Tree& tree_of(int router);
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
  std::vector<int64_t> scratch_words_;     // per bank
  std::vector<int> destinations_;          // of the current load
  std::vector<Tree> trees_;                // the current load's trees, one per source router
  std::vector<Flow> tree_flows_;           // scratch: the flow after each tree link
  TrafficCounters traffic_;
};

}  // namespace tessera::sim
