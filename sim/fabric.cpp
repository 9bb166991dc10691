#include "sim/fabric.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/error.hpp"

namespace tessera::sim {

namespace {
Tick transfer_ticks(double bytes, double bytes_per_cycle) {
  return static_cast<Tick>(std::ceil(bytes * static_cast<double>(kTicksPerCycle) / bytes_per_cycle - 1e-9));
}
}  // namespace

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
}

void Fabric::retire_before(Tick now) {
  for (auto* group : {&channels_, &links_, &inject_, &eject_, &banks_})
    for (auto& calendar : *group) calendar.retire_before(now);
}

Flow Fabric::through(BandwidthCalendar& resource, Flow in, double bytes, Tick latency) {
  const Tick ideal_end = in.head + transfer_ticks(bytes, resource.bytes_per_cycle());
  const Tick end = resource.book(in.head, bytes);
  const Tick delay = end > ideal_end ? end - ideal_end : 0;
  return Flow{in.head + delay + latency, std::max(end, in.tail) + latency};
}

Flow Fabric::through_banks(int core, Flow in, uint64_t address, int64_t bytes, bool read_and_write,
                           Tick& bank_delay) {
  const auto& sram = spec_.core.sram;
  const uint64_t width = static_cast<uint64_t>(sram.bank_width_bytes);
  const uint64_t first_word = address / width;
  const uint64_t last_word = (address + static_cast<uint64_t>(bytes) - 1) / width;
  // A burst touches few words: count them per bank in reused scratch.
  touched_.clear();
  for (uint64_t word = first_word; word <= last_word; ++word) {
    const int bank = static_cast<int>(word % static_cast<uint64_t>(sram.banks));
    if (scratch_words_[bank]++ == 0) touched_.push_back(bank);
  }
  const int accesses = read_and_write ? 2 : 1;
  Tick tail = in.tail;
  Tick delay = 0;
  for (int bank_index : touched_) {
    const int64_t words = scratch_words_[bank_index];
    scratch_words_[bank_index] = 0;
    BandwidthCalendar& bank = banks_[static_cast<size_t>(core) * sram.banks + bank_index];
    const double bank_bytes = static_cast<double>(words * accesses) * static_cast<double>(width);
    const Tick end = bank.book(in.head, bank_bytes);
    const Tick ideal = in.head + cycles_to_ticks(words * accesses);
    delay = std::max(delay, end > ideal ? end - ideal : 0);
    tail = std::max(tail, end);
  }
  bank_delay += delay;
  traffic_.bank_conflict_ticks += static_cast<int64_t>(delay);
  return Flow{in.head + delay, tail};
}

Flow Fabric::dram_read(Tick issue, uint64_t dram_address, int64_t bytes, int& router) {
  const int channel = arch::dram_channel_of(dram_address, spec_.dram);
  router = channel_router_[channel];
  traffic_.dram_read_bytes += bytes;
  return through(channels_[channel], Flow{issue, issue}, static_cast<double>(bytes), dram_latency_);
}

BurstTiming Fabric::load_burst(Tick issue, uint64_t dram_address, int64_t bytes,
                               const std::vector<SramSpan>& destinations) {
  int router = 0;
  const Flow from_dram = dram_read(issue, dram_address, bytes, router);
  const arch::Coord source = arch::core_coord(router, spec_.mesh);
  // Links already booked for this burst (the shared trunk of a multicast tree) and the flow after each.
  struct Booked {
    int link;
    Flow flow;
  };
  std::vector<Booked> tree;
  BurstTiming timing;
  for (const SramSpan& destination : destinations) {
    route_.clear();
    arch::append_xy_route(source, arch::core_coord(destination.core, spec_.mesh), spec_.mesh, route_);
    Flow flow = from_dram;
    for (int link : route_) {
      auto found = std::find_if(tree.begin(), tree.end(), [link](const Booked& b) { return b.link == link; });
      if (found != tree.end()) {
        flow = found->flow;
        continue;
      }
      flow = through(links_[link], flow, static_cast<double>(bytes), router_latency_);
      tree.push_back(Booked{link, flow});
      traffic_.noc_byte_hops += bytes;
    }
    flow = through(eject_[destination.core], flow, static_cast<double>(bytes), router_latency_);
    flow = through_banks(destination.core, flow, destination.address, bytes, false, timing.bank_delay);
    traffic_.noc_bytes += bytes;
    traffic_.sram_write_bytes += bytes;
    timing.done = std::max(timing.done, flow.tail);
  }
  return timing;
}

BurstTiming Fabric::store_burst(Tick issue, const SramSpan& source, uint64_t dram_address, bool accumulate) {
  BurstTiming timing;
  Flow flow =
      through_banks(source.core, Flow{issue, issue}, source.address, source.bytes, false, timing.bank_delay);
  traffic_.sram_read_bytes += source.bytes;
  flow = through(inject_[source.core], flow, static_cast<double>(source.bytes), router_latency_);
  const int channel = arch::dram_channel_of(dram_address, spec_.dram);
  route_.clear();
  arch::append_xy_route(arch::core_coord(source.core, spec_.mesh),
                        arch::core_coord(channel_router_[channel], spec_.mesh), spec_.mesh, route_);
  for (int link : route_)
    flow = through(links_[link], flow, static_cast<double>(source.bytes), router_latency_);
  traffic_.noc_byte_hops += source.bytes * static_cast<int64_t>(route_.size());
  traffic_.noc_bytes += source.bytes;
  // A write is done when the channel has taken it and the DRAM acknowledged it; an accumulating store reads
  // the old contents through the same channel first.
  const double channel_bytes = static_cast<double>(source.bytes) * (accumulate ? 2.0 : 1.0);
  flow = through(channels_[channel], flow, channel_bytes, dram_latency_ * (accumulate ? 2 : 1));
  traffic_.dram_write_bytes += source.bytes;
  if (accumulate) traffic_.dram_read_bytes += source.bytes;
  timing.done = flow.tail;
  return timing;
}

BurstTiming Fabric::send_burst(Tick issue, const SramSpan& source, const SramSpan& destination,
                               bool accumulate) {
  BurstTiming timing;
  Flow flow =
      through_banks(source.core, Flow{issue, issue}, source.address, source.bytes, false, timing.bank_delay);
  traffic_.sram_read_bytes += source.bytes;
  flow = through(inject_[source.core], flow, static_cast<double>(source.bytes), router_latency_);
  route_.clear();
  arch::append_xy_route(arch::core_coord(source.core, spec_.mesh),
                        arch::core_coord(destination.core, spec_.mesh), spec_.mesh, route_);
  for (int link : route_)
    flow = through(links_[link], flow, static_cast<double>(source.bytes), router_latency_);
  traffic_.noc_byte_hops += source.bytes * static_cast<int64_t>(route_.size());
  traffic_.noc_bytes += source.bytes;
  flow = through(eject_[destination.core], flow, static_cast<double>(source.bytes), router_latency_);
  flow = through_banks(destination.core, flow, destination.address, destination.bytes, accumulate,
                       timing.bank_delay);
  traffic_.sram_write_bytes += destination.bytes;
  if (accumulate) traffic_.sram_read_bytes += destination.bytes;
  timing.done = flow.tail;
  return timing;
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
