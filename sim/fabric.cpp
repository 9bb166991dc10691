#include "sim/fabric.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/error.hpp"

namespace tessera::sim {

Fabric::Fabric(const arch::ArchSpec& spec)
    : spec_(spec),
      router_latency_(cycles_to_ticks(spec.noc.router_latency_cycles)),
      dram_latency_(cycles_to_ticks(spec.dram.latency_cycles)) {
  const int cores = spec.mesh.cores();
  channels_.assign(spec.dram.channels, BandwidthCalendar(spec.dram.channel_bytes_per_cycle));
  for (int channel = 0; channel < spec.dram.channels; ++channel)
    channel_router_.push_back(arch::core_index(arch::dram_channel_router(channel, spec), spec.mesh));
  links_.assign(static_cast<size_t>(cores) * arch::kDirections,
                BandwidthCalendar(spec.noc.link_bytes_per_cycle));
  inject_.assign(cores, BandwidthCalendar(spec.noc.link_bytes_per_cycle));
  eject_.assign(cores, BandwidthCalendar(spec.noc.link_bytes_per_cycle));
  banks_.assign(static_cast<size_t>(cores) * spec.core.sram.banks,
                BandwidthCalendar(static_cast<double>(spec.core.sram.bank_width_bytes)));
  scratch_words_.assign(spec.core.sram.banks, 0);
}

void Fabric::reset() {
  for (auto* group : {&channels_, &links_, &inject_, &eject_, &banks_})
    for (auto& calendar : *group) calendar.reset();
  traffic_ = TrafficCounters{};
  trees_.clear();
  destinations_.clear();
}

void Fabric::retire_before(Tick now) {
  for (auto* group : {&channels_, &links_, &inject_, &eject_, &banks_})
    for (auto& calendar : *group) calendar.retire_before(now);
}

Flow Fabric::through(BandwidthCalendar& resource, Flow in, double bytes, Tick latency) {
  const Tick ideal_end = in.head + resource.transfer_ticks(bytes);
  const Tick end = resource.book(in.head, bytes);
  const Tick delay = end > ideal_end ? end - ideal_end : 0;
  return Flow{in.head + delay + latency, std::max(end, in.tail) + latency};
}

Flow Fabric::dram_read(Tick issue, uint64_t dram_address, int64_t bytes, int& router) {
  const int channel = arch::dram_channel_of(dram_address, spec_.dram);
  router = channel_router_[channel];
  traffic_.dram_read_bytes += bytes;
  return through(channels_[channel], Flow{issue, issue}, static_cast<double>(bytes), dram_latency_);
}

void Fabric::begin_load(const std::vector<int>& destinations) {
  if (destinations == destinations_) return;
  destinations_ = destinations;
  trees_.clear();
}

const Fabric::Tree& Fabric::tree_of(int router) {
  for (const Tree& tree : trees_)
    if (tree.router == router) return tree;
  const std::vector<int>& destinations = destinations_;
  Tree tree;
  tree.router = router;
  tree.destinations = destinations;
  const arch::Coord source = arch::core_coord(router, spec_.mesh);
  for (int destination : destinations) {
    route_.clear();
    arch::append_xy_route(source, arch::core_coord(destination, spec_.mesh), spec_.mesh, route_);
    int parent = -1;
    for (int link : route_) {
      int entry = -1;
      for (size_t i = 0; i < tree.links.size(); ++i)
        if (tree.links[i].first == link) entry = static_cast<int>(i);
      if (entry < 0) {
        tree.links.emplace_back(link, parent);
        entry = static_cast<int>(tree.links.size()) - 1;
      }
      parent = entry;
    }
    tree.leaves.push_back(parent);
  }
  trees_.push_back(std::move(tree));
  return trees_.back();
}

Tick Fabric::load_burst(Tick issue, uint64_t dram_address, int64_t bytes) {
  int router = 0;
  const Flow from_dram = dram_read(issue, dram_address, bytes, router);
  const Tree& tree = tree_of(router);
  const std::vector<int>& destinations = destinations_;
  // Each link of the tree is booked once, after its parent: the shared trunk of a multicast carries one copy.
  tree_flows_.resize(tree.links.size());
  for (size_t i = 0; i < tree.links.size(); ++i) {
    const auto& [link, parent] = tree.links[i];
    tree_flows_[i] = through(links_[link], parent < 0 ? from_dram : tree_flows_[parent],
                             static_cast<double>(bytes), router_latency_);
  }
  traffic_.noc_byte_hops += bytes * static_cast<int64_t>(tree.links.size());
  Tick done = 0;
  for (size_t d = 0; d < destinations.size(); ++d) {
    const Flow at_router = tree.leaves[d] < 0 ? from_dram : tree_flows_[tree.leaves[d]];
    const Flow flow =
        through(eject_[destinations[d]], at_router, static_cast<double>(bytes), router_latency_);
    traffic_.noc_bytes += bytes;
    done = std::max(done, flow.tail);
  }
  return done;
}

Tick Fabric::store_burst(Tick issue, int source_core, int64_t bytes, uint64_t dram_address, bool accumulate) {
  Flow flow = through(inject_[source_core], Flow{issue, issue}, static_cast<double>(bytes), router_latency_);
  const int channel = arch::dram_channel_of(dram_address, spec_.dram);
  route_.clear();
  arch::append_xy_route(arch::core_coord(source_core, spec_.mesh),
                        arch::core_coord(channel_router_[channel], spec_.mesh), spec_.mesh, route_);
  for (int link : route_) flow = through(links_[link], flow, static_cast<double>(bytes), router_latency_);
  traffic_.noc_byte_hops += bytes * static_cast<int64_t>(route_.size());
  traffic_.noc_bytes += bytes;
  // A write is done when the channel has taken it and the DRAM acknowledged it; an accumulating store reads
  // the old contents through the same channel first.
  const double channel_bytes = static_cast<double>(bytes) * (accumulate ? 2.0 : 1.0);
  flow = through(channels_[channel], flow, channel_bytes, dram_latency_ * (accumulate ? 2 : 1));
  traffic_.dram_write_bytes += bytes;
  if (accumulate) traffic_.dram_read_bytes += bytes;
  return flow.tail;
}

Tick Fabric::send_burst(Tick issue, int source_core, int destination_core, int64_t bytes) {
  // The routers crossed are the source's, each one a link leads to: the injection port adds none of its own.
  Flow flow = through(inject_[source_core], Flow{issue, issue}, static_cast<double>(bytes), 0);
  route_.clear();
  arch::append_xy_route(arch::core_coord(source_core, spec_.mesh),
                        arch::core_coord(destination_core, spec_.mesh), spec_.mesh, route_);
  for (int link : route_) flow = through(links_[link], flow, static_cast<double>(bytes), router_latency_);
  traffic_.noc_byte_hops += bytes * static_cast<int64_t>(route_.size());
  traffic_.noc_bytes += bytes;
  flow = through(eject_[destination_core], flow, static_cast<double>(bytes), router_latency_);
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
  const auto& sram = spec_.core.sram;
  Tick worst = end;
  for (int bank = 0; bank < sram.banks; ++bank) {
    if (words[bank] == 0) continue;
    BandwidthCalendar& calendar = banks_[static_cast<size_t>(core) * sram.banks + bank];
    worst = std::max(
        worst, calendar.book_spread(start, end, static_cast<double>(words[bank] * sram.bank_width_bytes)));
  }
  return worst - end;
}

void Fabric::count_bank_words(uint64_t address, int64_t rows, int64_t row_bytes, int64_t pitch,
                              int64_t passes, std::vector<int64_t>& words) const {
  const auto& sram = spec_.core.sram;
  const auto banks = static_cast<uint64_t>(sram.banks);
  const auto width = static_cast<uint64_t>(sram.bank_width_bytes);
  const auto bank_row = static_cast<uint64_t>(sram.bank_row_bytes);
  // Rows r and r + period start at the same offset within a bank row, so they touch the same banks.
  const uint64_t step = static_cast<uint64_t>(pitch) % bank_row;
  const uint64_t period = step == 0 ? 1 : bank_row / std::gcd(step, bank_row);
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
