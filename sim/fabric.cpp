#include "sim/fabric.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/error.hpp"

namespace tessera::sim {

Fabric::Fabric(const arch::ArchSpec& spec)
    : spec_(spec),
      noc_(arch::make_noc(spec)),
      router_latency_(cycles_to_ticks(spec.noc.router_latency_cycles)),
      dram_latency_(cycles_to_ticks(spec.dram.latency_cycles)),
      channel_map_(spec.dram) {
  const int cores = spec.mesh.cores();
  channels_.assign(spec.dram.channels, BandwidthCalendar(spec.dram.channel_bytes_per_cycle));
  for (int channel = 0; channel < spec.dram.channels; ++channel)
    channel_router_.push_back(noc_->channel_router(channel));
  links_.assign(static_cast<size_t>(noc_->links()), BandwidthCalendar(spec.noc.link_bytes_per_cycle));
  inject_.assign(cores, BandwidthCalendar(spec.noc.link_bytes_per_cycle));
  eject_.assign(cores, BandwidthCalendar(spec.noc.link_bytes_per_cycle));
  banks_.assign(static_cast<size_t>(cores) * spec.core.sram.banks,
                BandwidthCalendar(static_cast<double>(spec.core.sram.bank_width_bytes)));
  for (int core = 0; core < cores; ++core) bank_leader_.insert(bank_leader_.end(), spec.core.sram.banks, 0);
  scratch_words_.assign(spec.core.sram.banks, 0);
  trees_ = &tree_sets_[destinations_];
  link_ticks_per_byte_ = static_cast<double>(kTicksPerCycle) / spec.noc.link_bytes_per_cycle;
  slowest_ticks_per_byte_ = static_cast<double>(kTicksPerCycle) /
                            std::min(spec.noc.link_bytes_per_cycle, spec.dram.channel_bytes_per_cycle);
}

void Fabric::reset() {
  for (auto* group : {&channels_, &links_, &inject_, &eject_, &banks_})
    for (auto& calendar : *group) calendar.reset();
  std::fill(bank_leader_.begin(), bank_leader_.end(), 0);
  traffic_ = RunCounters{};
  destinations_.clear();
  tree_sets_.clear();
  trees_ = &tree_sets_[destinations_];
  horizon_ = 0;
}

void Fabric::begin_load(const std::vector<int>& destinations) {
  if (destinations == destinations_) return;
  destinations_ = destinations;
  if (tree_sets_.size() >= 4096) tree_sets_.clear();  // bounded: programs with ever new groups
  trees_ = &tree_sets_[destinations_];
}

const std::vector<int>& Fabric::route_between(int from_router, int to_router) {
  const int64_t key = static_cast<int64_t>(from_router) * spec_.mesh.cores() + to_router;
  auto found = routes_.find(key);
  if (found != routes_.end()) return found->second;
  std::vector<int> route;
  noc_->append_route(from_router, to_router, route);
  return routes_.emplace(key, std::move(route)).first->second;
}

const Fabric::Tree& Fabric::build_tree(int router) {
  Tree tree;
  static_cast<arch::MulticastTree&>(tree) = noc_->multicast_tree(router, destinations_);
  tree.router = router;
  tree.destinations = destinations_;
  trees_->push_back(std::move(tree));
  if (tree_flows_.size() < trees_->back().links.size()) tree_flows_.resize(trees_->back().links.size());
  return trees_->back();
}

Tick Fabric::load_latency(int channel) {
  const Tree& tree = tree_of(channel_router_[static_cast<size_t>(channel)]);
  return dram_latency_ + router_latency_ * static_cast<Tick>(tree.depth + 1);
}

Tick Fabric::store_latency(int source_core, int channel, bool accumulate) {
  const size_t hops = route_between(source_core, channel_router_[static_cast<size_t>(channel)]).size();
  return dram_latency_ * (accumulate ? 2 : 1) + router_latency_ * static_cast<Tick>(hops + 1);
}

Tick Fabric::send_latency(int source_core, int destination_core) {
  const size_t hops = route_between(source_core, destination_core).size();
  return router_latency_ * static_cast<Tick>(hops + 1);
}

Tick Fabric::load_stream(int channel, Flow issued, int64_t bytes, Tick& first_arrival) {
  const int router = channel_router_[static_cast<size_t>(channel)];
  const auto amount = static_cast<double>(bytes);
  traffic_.dram_read_bytes += bytes;
  const Flow from_dram = pass(channels_[static_cast<size_t>(channel)], issued, amount, dram_latency_);
  const Tree& tree = tree_of(router);
  // Each link of the tree is booked once, after its parent: the shared trunk of a multicast carries one copy.
  for (size_t i = 0; i < tree.links.size(); ++i) {
    const auto& [link, parent] = tree.links[i];
    tree_flows_[i] =
        pass(links_[static_cast<size_t>(link)],
             parent < 0 ? from_dram : tree_flows_[static_cast<size_t>(parent)], amount, router_latency_);
  }
  traffic_.noc_byte_hops += bytes * static_cast<int64_t>(tree.links.size());
  Tick done = 0;
  for (size_t d = 0; d < destinations_.size(); ++d) {
    const Flow at_router = tree.leaves[d] < 0 ? from_dram : tree_flows_[static_cast<size_t>(tree.leaves[d])];
    const Flow flow = pass(eject_[static_cast<size_t>(destinations_[d])], at_router, amount, router_latency_);
    traffic_.noc_bytes += bytes;
    done = std::max(done, flow.tail);
    first_arrival = std::min(first_arrival, flow.head);
  }
  return done;
}

Tick Fabric::store_stream(int source_core, int channel, Flow issued, int64_t bytes, bool accumulate) {
  const auto amount = static_cast<double>(bytes);
  Flow flow = pass(inject_[static_cast<size_t>(source_core)], issued, amount, router_latency_);
  const std::vector<int>& route = route_between(source_core, channel_router_[static_cast<size_t>(channel)]);
  for (int link : route) flow = pass(links_[static_cast<size_t>(link)], flow, amount, router_latency_);
  traffic_.noc_byte_hops += bytes * static_cast<int64_t>(route.size());
  traffic_.noc_bytes += bytes;
  // A write is done when the channel has taken it and the DRAM acknowledged it; an accumulating store reads
  // the old contents through the same channel first.
  flow = pass(channels_[static_cast<size_t>(channel)], flow, amount * (accumulate ? 2.0 : 1.0),
              dram_latency_ * (accumulate ? 2 : 1));
  traffic_.dram_write_bytes += bytes;
  if (accumulate) traffic_.dram_read_bytes += bytes;
  return flow.tail;
}

Tick Fabric::send_stream(int source_core, int destination_core, Flow issued, int64_t bytes,
                         Tick& first_arrival) {
  const auto amount = static_cast<double>(bytes);
  // The routers crossed are the source's, each one a link leads to: the injection port adds none of its own.
  Flow flow = pass(inject_[static_cast<size_t>(source_core)], issued, amount, 0);
  const std::vector<int>& route = route_between(source_core, destination_core);
  for (int link : route) flow = pass(links_[static_cast<size_t>(link)], flow, amount, router_latency_);
  traffic_.noc_byte_hops += bytes * static_cast<int64_t>(route.size());
  traffic_.noc_bytes += bytes;
  flow = pass(eject_[static_cast<size_t>(destination_core)], flow, amount, router_latency_);
  first_arrival = std::min(first_arrival, flow.head);
  return flow.tail;
}

Tick Fabric::book_sram_region(const SramRegion& region, int64_t passes, Tick start, Tick end) {
  std::fill(scratch_words_.begin(), scratch_words_.end(), 0);
  count_bank_words(region.address, region.rows, region.row_bytes,
                   region.pitch_bytes != 0 ? region.pitch_bytes : region.row_bytes, passes, scratch_words_);
  const Tick stretch = book_pe_traffic(region.core, start, end, scratch_words_);
  traffic_.bank_conflict_ticks += static_cast<int64_t>(stretch);
  return stretch;
}

Tick Fabric::book_pe_traffic(int core, Tick start, Tick end, const std::vector<int64_t>& words) {
  const int banks = spec_.core.sram.banks;
  BandwidthCalendar* const calendars = &banks_[static_cast<size_t>(core) * banks];
  int* const leader = &bank_leader_[static_cast<size_t>(core) * banks];
  // A booking that gives two banks of one class different words splits the class: the banks of each word
  // count follow the first of them, which takes a copy of the old leader's calendar (exact: every bank of the
  // class took the same bookings in the same order).
  bool splits = false;
  for (int bank = 1; bank < banks && !splits; ++bank) splits = words[bank] != words[leader[bank]];
  if (splits) {
    std::vector<int>& before = scratch_leaders_;
    before.assign(leader, leader + banks);
    for (int bank = 1; bank < banks; ++bank) {
      const int old = before[bank];
      if (words[bank] == words[old]) continue;
      int joined = -1;
      for (int other = old + 1; other < bank && joined < 0; ++other)
        if (before[other] == old && words[other] == words[bank]) joined = leader[other];
      if (joined < 0) {
        calendars[bank] = calendars[old];
        joined = bank;
      }
      leader[bank] = joined;
    }
  }
  Tick worst = end;
  for (int bank = 0; bank < banks; ++bank) {
    if (leader[bank] != bank || words[bank] == 0) continue;
    BandwidthCalendar& calendar = calendars[bank];
    calendar.retire_before(horizon_);
    worst =
        std::max(worst, calendar.book_spread(
                            start, end, static_cast<double>(words[bank] * spec_.core.sram.bank_width_bytes)));
  }
  return worst - end;
}

void Fabric::count_bank_words(uint64_t address, int64_t rows, int64_t row_bytes, int64_t pitch,
                              int64_t passes, std::vector<int64_t>& words) const {
  const auto& sram = spec_.core.sram;
  const auto banks = static_cast<uint64_t>(sram.banks);
  const auto width = static_cast<uint64_t>(sram.bank_width_bytes);
  const auto bank_row = static_cast<uint64_t>(sram.bank_row_bytes);
  // Packed rows of whole words from a word boundary touch every word of their span once: one row of them all
  // (a region lies inside SRAM, so the product is small; the bound only keeps a hostile caller exact).
  if (pitch == row_bytes && rows > 1 && row_bytes > 0 && address % width == 0 &&
      static_cast<uint64_t>(row_bytes) % width == 0 && row_bytes <= (int64_t{1} << 40) / rows) {
    row_bytes *= rows;
    pitch = row_bytes;
    rows = 1;
  }
  // Rows r and r + period start at the same offset within a bank row, so they touch the same banks.
  const uint64_t step = static_cast<uint64_t>(pitch) % bank_row;
  const uint64_t period = step == 0 || rows == 1 ? 1 : bank_row / std::gcd(step, bank_row);
  const int64_t explicit_rows = std::min<int64_t>(rows, static_cast<int64_t>(period));
  for (int64_t row = 0; row < explicit_rows; ++row) {
    const int64_t repeats =
        passes * ((rows - row + static_cast<int64_t>(period) - 1) / static_cast<int64_t>(period));
    const uint64_t start = address + static_cast<uint64_t>(row * pitch);
    const uint64_t first_word = start / width;
    const uint64_t last_word = (start + static_cast<uint64_t>(row_bytes) - 1) / width;
    const uint64_t count = last_word - first_word + 1;
    const int64_t every_bank = static_cast<int64_t>(count / banks);
    if (every_bank > 0)
      for (auto& bank_words : words) bank_words += every_bank * repeats;
    for (uint64_t word = first_word + (count / banks) * banks; word <= last_word; ++word)
      words[word % banks] += repeats;
  }
}

}  // namespace tessera::sim
