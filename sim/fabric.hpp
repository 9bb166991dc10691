// The machine's shared resources and how traffic moves through them (DESIGN.md, "Timing model"): every DRAM
// channel, directed NoC link, router port and SRAM bank is a BandwidthCalendar. A transfer's stream (its
// bursts bound for one channel or core) books the channel and links on its path in order, each once, spread
// over the window its bytes pass in; routers delay it, contention stretches it, and it cannot pass a resource
// before it arrived there. SRAM banks are booked per transfer or PE instruction, spread over the time its
// bytes come and go, so the cost stays per stream and per tile, never per burst or word. Plain C++: the units
// that live in simulated time call it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

#include "arch/noc.hpp"
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

  // Transfers are booked as streams: the bytes one transfer moves along one path (one DRAM channel's share of
  // a load or a store, a send), issued by its engine over [issued.head, issued.tail). Each resource on the
  // path takes the stream's bytes spread over the window in which they pass it
  // (BandwidthCalendar::book_spread): contention with other streams stretches the window, which the next
  // resource then sees; each router adds its latency. One booking per resource and stream, however many
  // bursts the engine cut the stream into (docs/design-notes.md, "Transfers booked as streams").
  //
  // DRAM channel `channel` -> the NoC ports of the current load's destinations (one read; a multicast tree
  // when there are several). begin_load names them once per transfer; its streams share the trees. Returns
  // when the last byte has reached every destination; `first_arrival` is lowered to when the first one did.
  void begin_load(const std::vector<int>& destinations);
  Tick load_stream(int channel, Flow issued, int64_t bytes, Tick& first_arrival);
  // A core's NoC port -> DRAM channel `channel`; `accumulate` reads the DRAM contents first
  // (read-modify-write).
  Tick store_stream(int source_core, int channel, Flow issued, int64_t bytes, bool accumulate);
  // A core's NoC port -> another core's; `first_arrival` as for loads.
  Tick send_stream(int source_core, int destination_core, Flow issued, int64_t bytes, Tick& first_arrival);
  // The channel serving a DRAM address.
  int channel_of(uint64_t dram_address) const { return channel_map_.of(dram_address); }
  // A burst's uncontended round trip, for engines that keep a bounded number of bursts in flight: the
  // latencies of the path (DRAM channel `channel` to the current load's farthest destination, `source_core`
  // to its store channel, or between cores) plus burst_ticks(bytes), its bytes at the path's slowest rate.
  Tick load_latency(int channel);
  Tick store_latency(int source_core, int channel, bool accumulate);
  Tick send_latency(int source_core, int destination_core);
  Tick burst_ticks(int64_t bytes, bool through_dram) const {
    return BandwidthCalendar::ceil_ticks(static_cast<double>(bytes) *
                                         (through_dram ? slowest_ticks_per_byte_ : link_ticks_per_byte_));
  }

  // Books `passes` accesses to every word of `region` on its core's banks, spread over [start, end). Returns
  // how far past `end` the slowest bank pushes the transfer (0 if every bank keeps up).
  Tick book_sram_region(const SramRegion& region, int64_t passes, Tick start, Tick end);
  // Books per-bank word counts (a PE instruction's operand traffic) spread over [start, end); same return.
  // Banks that have taken the same words in every booking so far have equal calendars: they form a class, and
  // its first bank alone is booked and stands for the others (a GEMM's tiles whose rows cover whole bank rows
  // keep a core's banks one class; a tile of half a bank row splits them in two). A booking that gives a
  // class's banks different words splits it, each new class starting from a copy of the old one's calendar
  // (exact: each bank would have taken the same bookings in the same order).
  Tick book_pe_traffic(int core, Tick start, Tick end, const std::vector<int64_t>& words);

  // Adds the bank-width words per bank that `passes` passes over `rows` rows of `row_bytes` at `pitch` from
  // `address` touch.
  void count_bank_words(uint64_t address, int64_t rows, int64_t row_bytes, int64_t pitch, int64_t passes,
                        std::vector<int64_t>& words) const;

  // Forgets every resource's epochs before `now` (no booking starts earlier any more). Lazy: each calendar
  // forgets when it is next booked.
  void retire_before(Tick now) { horizon_ = now; }
  // The run's traffic counters (DRAM, SRAM and NoC bytes, bank conflicts), counted by the fabric and the
  // units.
  RunCounters& traffic() { return traffic_; }
  const arch::ArchSpec& spec() const { return spec_; }

 private:
  // A stream through one resource: its bytes spread over its window; the window's end moves out by what the
  // resource could not take in time; both ends move on by the router's `latency`.
  Flow pass(BandwidthCalendar& resource, Flow in, double bytes, Tick latency) {
    resource.retire_before(horizon_);
    const Tick end = resource.book_spread(in.head, in.tail, bytes);
    return Flow{in.head + latency, (end > in.tail ? end : in.tail) + latency};
  }
  // The network's multicast tree from `router` to `destinations` (arch::NocModel::multicast_tree: each link
  // after its parent, where each destination leaves it, its depth). Cached: a transfer's bursts share it.
  struct Tree : arch::MulticastTree {
    int router = -1;
    std::vector<int> destinations;
  };
  const Tree& tree_of(int router) {
    for (const Tree& tree : *trees_)
      if (tree.router == router) return tree;
    return build_tree(router);
  }
  const Tree& build_tree(int router);
  // The network's route between two routers (cached: links in order).
  const std::vector<int>& route_between(int from_router, int to_router);

  const arch::ArchSpec& spec_;
  std::unique_ptr<arch::NocModel> noc_;  // the routes, trees and DRAM attach points (noc.impl)
  Tick router_latency_ = 0;
  Tick dram_latency_ = 0;
  std::vector<BandwidthCalendar> channels_;
  std::vector<int> channel_router_;        // core index of the router each channel attaches to
  std::vector<BandwidthCalendar> links_;   // per link of the network
  std::vector<BandwidthCalendar> inject_;  // core -> its router
  std::vector<BandwidthCalendar> eject_;   // router -> its core
  std::vector<BandwidthCalendar> banks_;   // core * banks + bank
  std::vector<int> bank_leader_;  // per core and bank: the first bank of its class (whose calendar is booked)
  std::vector<int> scratch_leaders_;
  std::unordered_map<int64_t, std::vector<int>> routes_;  // route_between's cache, by from * cores + to
  std::vector<int64_t> scratch_words_;                    // per bank
  std::vector<int> destinations_;                         // of the current load
  // Trees by destination set, one per source router, kept across loads (a program multicasts to the same few
  // groups over and over); trees_ is the current load's.
  std::map<std::vector<int>, std::vector<Tree>> tree_sets_;
  std::vector<Tree>* trees_ = nullptr;
  std::vector<Flow> tree_flows_;  // scratch: the flow after each tree link
  RunCounters traffic_;
  Tick horizon_ = 0;  // no booking starts before this any more
  arch::DramChannelMap channel_map_;
  double link_ticks_per_byte_ = 0;     // a NoC link's (and port's)
  double slowest_ticks_per_byte_ = 0;  // the slower of a link and a DRAM channel
};

}  // namespace tessera::sim
