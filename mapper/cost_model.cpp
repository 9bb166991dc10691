#include "mapper/cost_model.hpp"

#include <algorithm>
#include <cmath>

#include "arch/timing/pe_traffic.hpp"
#include "arch/timing/rs_timing.hpp"
#include "arch/topology.hpp"

namespace tessera::mapper {

namespace {

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}
int64_t cycles_for(double bytes, double bytes_per_cycle) {
  return static_cast<int64_t>(std::ceil(bytes / bytes_per_cycle - 1e-9));
}

// The parts of a DimPartition grouped by how many tiles they hold (at most two counts: q and q + 1).
struct CountClass {
  int64_t count = 0;
  int parts = 0;
  int64_t extent_sum = 0;  // elements, summed over the parts of this class
};
struct Classes {
  CountClass entries[2];
  int size = 0;
};

Classes classes_of(const DimPartition& partition) {
  Classes classes;
  for (int part = 0; part < partition.parts; ++part) {
    const int64_t count = partition.tile_count(part);
    int slot = 0;
    while (slot < classes.size && classes.entries[slot].count != count) ++slot;
    if (slot == classes.size) classes.entries[classes.size++] = CountClass{count, 0, 0};
    classes.entries[slot].parts += 1;
    classes.entries[slot].extent_sum += partition.part_extent(part);
  }
  return classes;
}

// Elements of `extent` once each tile of `tile` is rounded up to whole array `block`s (ragged folds).
int64_t padded_extent(int64_t extent, int64_t tile, int64_t block) {
  const int64_t full = extent / tile;
  const int64_t rest = extent % tile;
  return full * ceil_div(tile, block) * block + ceil_div(rest, block) * block;
}

}  // namespace

// Fold timing of one instruction shape, from pairs of representative folds (the interval between two folds'
// stream starts depends only on the two folds when operands are ready).
struct InstructionProfile {
  int64_t lead_in = 0;   // first fold: load start to stream start
  int64_t interval = 0;  // stream start of this instruction to the next identical one's, in steady state
  int64_t cross = 0;     // ... of which the hop from its last fold to the next instruction's first
  int64_t tail = 0;      // last fold: stream start to completion
  int64_t folds = 0;
  int64_t stream_cycles = 0;
};

namespace {

InstructionProfile profile(const arch::PeArrayTiming& timing, arch::Dataflow dataflow, int64_t m, int64_t n,
                           int64_t k) {
  const bool os = dataflow == arch::Dataflow::os;
  const int64_t outer_extent = dataflow == arch::Dataflow::ws ? n : m;
  const int64_t inner_extent = os ? n : k;
  const int64_t outer_block = os ? timing.rows() : timing.cols();
  const int64_t inner_block = os ? timing.cols() : timing.rows();
  const int64_t stream = dataflow == arch::Dataflow::ws ? m : dataflow == arch::Dataflow::is ? n : k;
  const int64_t outer_count = ceil_div(outer_extent, outer_block);
  const int64_t inner_count = ceil_div(inner_extent, inner_block);
  const int64_t outer_last = outer_extent - (outer_count - 1) * outer_block;
  const int64_t inner_last = inner_extent - (inner_count - 1) * inner_block;
  const int64_t outer_first = outer_count >= 2 ? outer_block : outer_last;
  const int64_t inner_first = inner_count >= 2 ? inner_block : inner_last;
  auto fold = [&](int64_t outer, int64_t inner) {
    return os ? arch::Fold{outer, inner, stream} : arch::Fold{inner, outer, stream};
  };
  auto gap = [&](const arch::Fold& a, const arch::Fold& b) {
    arch::PePipeline pipeline;
    const int64_t first = timing.schedule(dataflow, a, 0, pipeline).stream_start;
    return timing.schedule(dataflow, b, 0, pipeline).stream_start - first;
  };
  auto within = [&](int64_t outer) -> int64_t {
    if (inner_count < 2) return 0;
    return (inner_count - 2) * gap(fold(outer, inner_block), fold(outer, inner_block)) +
           gap(fold(outer, inner_block), fold(outer, inner_last));
  };
  InstructionProfile result;
  result.folds = outer_count * inner_count;
  result.stream_cycles = result.folds * stream;
  int64_t interval = within(outer_last) + (outer_count - 1) * within(outer_block);
  if (outer_count >= 2) {
    interval += (outer_count - 2) * gap(fold(outer_block, inner_last), fold(outer_block, inner_first)) +
                gap(fold(outer_block, inner_last), fold(outer_last, inner_first));
  }
  result.cross = gap(fold(outer_last, inner_last), fold(outer_first, inner_first));
  result.interval = interval + result.cross;
  arch::PePipeline fresh;
  result.lead_in = timing.schedule(dataflow, fold(outer_first, inner_first), 0, fresh).stream_start;
  arch::PePipeline last;
  const arch::FoldTiming tail = timing.schedule(dataflow, fold(outer_last, inner_last), 0, last);
  result.tail = tail.complete - tail.stream_start;
  return result;
}

arch::ConvTileShape conv_tile_of(const GemmProblem& problem, int64_t tm, int64_t tn, int64_t tk) {
  const DirectConv& d = *problem.direct;
  return arch::ConvTileShape{tm, d.q, tn, tk, d.r, d.s, d.input_rows(tm), d.w};
}

}  // namespace

struct CostModel::RsCacheEntry {
  InstructionProfile profile;
  double edge_waste = 0;
};

std::shared_ptr<const CostModel::RsCacheEntry> CostModel::rs_entry(const GemmProblem& problem, int64_t tm,
                                                                   int64_t tn, int64_t tk) const {
  const DirectConv& d = *problem.direct;
  const std::array<int64_t, 8> key = {
      tm, tn, tk, d.q, d.r, d.s, d.input_rows(tm), static_cast<int64_t>(problem.dtype)};
  {
    std::lock_guard<std::mutex> lock(rs_cache_mutex_);
    auto found = rs_cache_.find(key);
    if (found != rs_cache_.end()) return found->second;
  }
  const arch::ConvTileShape shape = conv_tile_of(problem, tm, tn, tk);
  auto entry = std::make_shared<RsCacheEntry>();
  // The rounds of one instruction from a fresh pipeline, and the PE slots the rounds leave idle (folding of
  // sets onto the array). The next identical instruction's first round then starts as RsTiming::schedule
  // would start it: its load once the buses and scratchpads allow, its MACs once that load is in and this
  // instruction's last round has drained.
  InstructionProfile& result = entry->profile;
  arch::RsPipeline pipeline;
  int64_t first_start = -1, first_load = 0, last_start = 0, last_complete = 0;
  double used = 0, slots = 0;
  const double pes = static_cast<double>(spec_.core.pe_array.rows) * spec_.core.pe_array.cols;
  rs_timing_.for_each_round(shape, problem.dtype, [&](const arch::RsRound& round) {
    const arch::RsRoundTiming t = rs_timing_.schedule(round, 0, pipeline);
    if (first_start < 0)
      first_start = t.compute_start, first_load = round.load, result.lead_in = t.compute_start;
    ++result.folds;
    result.stream_cycles += round.compute;
    last_start = t.compute_start, last_complete = t.complete;
    used += static_cast<double>(round.pes) * round.compute;
    slots += pes * round.compute;
  });
  arch::RsPipeline next = pipeline;
  const arch::RsRoundTiming second = rs_timing_.schedule(arch::RsRound{first_load, 0, 0, 0}, 0, next);
  const int64_t second_start = second.compute_start;
  result.interval = second_start - first_start;
  result.tail = last_complete - last_start;
  result.cross = 0;
  entry->edge_waste = slots > 0 ? 1.0 - used / slots : 0.0;
  std::lock_guard<std::mutex> lock(rs_cache_mutex_);
  return rs_cache_.emplace(key, std::move(entry)).first->second;
}

InstructionProfile CostModel::conv_profile(const GemmProblem& problem, int64_t tm, int64_t tn, int64_t tk,
                                           arch::Dataflow dataflow) const {
  if (dataflow == arch::Dataflow::rs) return rs_entry(problem, tm, tn, tk)->profile;
  const arch::ConvMatmul mm = arch::matmul_of(conv_tile_of(problem, tm, tn, tk));
  return profile(timing_, dataflow, mm.m, mm.n, mm.k);
}

double CostModel::edge_waste(const GemmProblem& problem, const GemmMapping& mapping) const {
  const int64_t rows = spec_.core.pe_array.rows, cols = spec_.core.pe_array.cols;
  if (mapping.dataflow == arch::Dataflow::rs)
    return rs_entry(problem, std::min(mapping.tile_m, problem.m), std::min(mapping.tile_n, problem.n),
                    std::min(mapping.tile_k, problem.k))
        ->edge_waste;
  // The matmul the array runs: a direct conv's m counts pixels and k taps x channels.
  const int64_t pixels = problem.m_pixels(), taps = problem.taps();
  const int64_t m = problem.m * pixels, n = problem.n, k = problem.k * taps;
  const int64_t tile_m = mapping.tile_m * pixels, tile_n = mapping.tile_n, tile_k = mapping.tile_k * taps;
  int64_t padded_m = m, padded_n = n, padded_k = k;
  switch (mapping.dataflow) {
    case arch::Dataflow::ws:
      padded_k = padded_extent(k, tile_k, rows), padded_n = padded_extent(n, tile_n, cols);
      break;
    case arch::Dataflow::is:
      padded_k = padded_extent(k, tile_k, rows), padded_m = padded_extent(m, tile_m, cols);
      break;
    case arch::Dataflow::os:
      padded_m = padded_extent(m, tile_m, rows), padded_n = padded_extent(n, tile_n, cols);
      break;
    case arch::Dataflow::rs:
      break;
  }
  return 1.0 -
         static_cast<double>(m * n * k) /
             (static_cast<double>(padded_m) * static_cast<double>(padded_n) * static_cast<double>(padded_k));
}

const char* name_of(Bound bound) {
  switch (bound) {
    case Bound::compute:
      return "compute";
    case Bound::dram:
      return "dram";
    case Bound::dma:
      return "dma";
    case Bound::noc:
      return "noc";
    case Bound::sram:
      return "sram";
  }
  return "?";
}

int64_t reload_factor(const std::array<int64_t, 3>& trips, const std::array<Dim, 3>& order, bool depends_m,
                      bool depends_n, bool depends_k) {
  auto depends = [&](Dim dim) { return dim == Dim::m ? depends_m : dim == Dim::n ? depends_n : depends_k; };
  int innermost = -1;
  for (int level = 0; level < 3; ++level)
    if (trips[static_cast<int>(order[level])] > 1 && depends(order[level])) innermost = level;
  int64_t factor = 1;
  for (int level = 0; level < innermost; ++level) {
    const Dim dim = order[level];
    if (!depends(dim)) factor *= trips[static_cast<int>(dim)];
  }
  return factor;
}

CostModel::CostModel(const arch::ArchSpec& spec)
    : spec_(spec), timing_(spec.core.pe_array), rs_timing_(spec) {
  double hops = 0;
  for (int channel = 0; channel < spec.dram.channels; ++channel)
    for (int core = 0; core < spec.mesh.cores(); ++core)
      hops += arch::hops(arch::dram_channel_router(channel, spec), arch::core_coord(core, spec.mesh));
  average_dram_hops_ = hops / (spec.dram.channels * spec.mesh.cores());
  const int cores = spec.mesh.cores();
  std::vector<int> route;
  for (int used = 1; used <= cores; ++used) {
    if (cores % used != 0) continue;
    std::vector<double> load(static_cast<size_t>(cores) * arch::kDirections, 0.0);
    for (int core = 0; core < used; ++core)
      for (int channel = 0; channel < spec.dram.channels; ++channel) {
        route.clear();
        arch::append_xy_route(arch::dram_channel_router(channel, spec), arch::core_coord(core, spec.mesh),
                              spec.mesh, route);
        for (int link : route) load[link] += 1.0 / spec.dram.channels;
      }
    hottest_link_share_.emplace_back(used, *std::max_element(load.begin(), load.end()));
  }
  round_trip_cycles_ = spec.dram.latency_cycles + (average_dram_hops_ + 1) * spec.noc.router_latency_cycles;
}

double CostModel::dma_bytes_per_cycle(int64_t row_bytes) const {
  // Bursts stop at tile rows (and at burst_bytes, and at DRAM interleave blocks). Little's law: an engine
  // with B bursts of S bytes in flight over a round trip of L cycles moves B*S/L, so short rows starve it.
  const auto& dma = spec_.core.dma;
  const double burst =
      static_cast<double>(std::min({row_bytes, dma.burst_bytes, spec_.dram.interleave_bytes}));
  const double round_trip = round_trip_cycles_ + burst / spec_.noc.link_bytes_per_cycle;
  return std::min(dma.bytes_per_cycle, dma.outstanding_bursts * burst / round_trip);
}

double CostModel::hottest_link_share(int cores_used) const {
  for (const auto& [used, share] : hottest_link_share_)
    if (used == cores_used) return share;
  return hottest_link_share_.back().second;
}

GemmCost CostModel::evaluate(const GemmProblem& problem, const GemmMapping& mapping) const {
  GemmCost cost;
  const arch::ArchSpec& spec = spec_;
  const int64_t element = size_bytes(problem.dtype);
  const int64_t accumulator = size_bytes(accumulator_of(problem.dtype));
  const DimPartition pm(problem.m, mapping.tile_m, mapping.split_m);
  const DimPartition pn(problem.n, mapping.tile_n, mapping.split_n);
  const DimPartition pk(problem.k, mapping.tile_k, mapping.split_k);
  const Classes cm = classes_of(pm), cn = classes_of(pn), ck = classes_of(pk);
  const bool multicast = spec.noc.multicast;
  const int64_t pixels = problem.m_pixels(), taps = problem.taps();
  // A elements per unit of k for `extent` rows of m: a direct conv's tiles read their input rows with the
  // halo, and no padding rows (a share of the whole image's input rows read, proportional to the extent).
  const double a_rows_read =
      problem.direct
          ? static_cast<double>(problem.direct->input_rows_read(mapping.tile_m) * problem.direct->w)
          : 0.0;
  auto a_m_elements = [&](int64_t extent) -> int64_t {
    if (!problem.direct) return extent;
    return static_cast<int64_t>(std::llround(a_rows_read * static_cast<double>(extent) / problem.m));
  };

  // DRAM traffic, summed over every core (exact: the lowering moves these bytes).
  // A is shared by the cores of one (m, k) part that differ in n; it may be multicast to them when their
  // sequences of A tiles are identical: all load each tile once, or all hold the same number of n tiles.
  auto reload = [&](int64_t tm, int64_t tn, int64_t tk, bool dm, bool dn, bool dk) {
    return reload_factor({tm, tn, tk}, mapping.order, dm, dn, dk);
  };
  // Cores that differ only in n share A; they can take it by multicast when their sequences of A tiles are
  // identical: all hold as many n tiles, or none of them reloads A. Likewise W across cores differing in m.
  bool a_reloaded = false, w_reloaded = false;
  for (int i = 0; i < cm.size; ++i)
    for (int j = 0; j < cn.size; ++j)
      for (int l = 0; l < ck.size; ++l) {
        const int64_t counts_m = cm.entries[i].count, counts_n = cn.entries[j].count,
                      counts_k = ck.entries[l].count;
        a_reloaded = a_reloaded || reload(counts_m, counts_n, counts_k, true, false, true) > 1;
        w_reloaded = w_reloaded || reload(counts_m, counts_n, counts_k, false, true, true) > 1;
      }
  const bool multicast_a = multicast && mapping.split_n > 1 && (cn.size == 1 || !a_reloaded);
  const bool multicast_w = multicast && mapping.split_m > 1 && (cm.size == 1 || !w_reloaded);
  cost.multicast_a = multicast_a;
  cost.multicast_w = multicast_w;
  int64_t a_bytes = 0, w_bytes = 0, o_bytes = 0;
  for (int i = 0; i < cm.size; ++i) {
    const CountClass& m_class = cm.entries[i];
    for (int l = 0; l < ck.size; ++l) {
      const CountClass& k_class = ck.entries[l];
      for (int j = 0; j < cn.size; ++j) {
        const CountClass& n_class = cn.entries[j];
        const int64_t a_factor = reload(m_class.count, n_class.count, k_class.count, true, false, true);
        const int64_t w_factor = reload(m_class.count, n_class.count, k_class.count, false, true, true);
        // Per class: sum over its parts of (extent product) times how many cores share it.
        const int64_t a_class = a_m_elements(m_class.extent_sum) * k_class.extent_sum * element * a_factor;
        a_bytes += a_class * n_class.parts;
        const int64_t w_class = k_class.extent_sum * taps * n_class.extent_sum * element * w_factor;
        w_bytes += w_class * m_class.parts;
        if (mapping.split_k == 1) {
          // O stays in SRAM for a run of k tiles; a tile met again later is stored accumulating (read +
          // write).
          const int64_t o_factor = reload(m_class.count, n_class.count, k_class.count, true, true, false);
          o_bytes += m_class.extent_sum * pixels * n_class.extent_sum * accumulator * (2 * o_factor - 1);
        }
      }
    }
  }
  // A multicast tile is read once for its whole group (every member's reload factor is the same then).
  if (multicast_a) a_bytes /= mapping.split_n;
  if (multicast_w) w_bytes /= mapping.split_m;
  if (mapping.split_k > 1) {
    // The root of each k group stores the reduced tile once.
    o_bytes = problem.m * pixels * problem.n * accumulator;
    cost.reduction_bytes = (mapping.split_k - 1) * problem.m * pixels * problem.n * accumulator;
  }
  // Every group moves the same bytes; an im2col view reads no DRAM for its padding zeros, a block-diagonal W
  // none for its zeros.
  const int64_t groups = problem.groups;
  a_bytes = static_cast<int64_t>(std::llround(static_cast<double>(a_bytes) * problem.a_dram_fraction));
  w_bytes /= problem.packed;
  a_bytes *= groups, w_bytes *= groups, o_bytes *= groups;
  cost.reduction_bytes *= groups;
  cost.dram_bytes_by_tensor = {a_bytes, w_bytes, o_bytes};
  cost.dram_bytes = a_bytes + w_bytes + o_bytes;

  // The busiest core: the most tiles along every dimension, all full-sized.
  const int64_t tiles_m = pm.max_tile_count(), tiles_n = pn.max_tile_count(), tiles_k = pk.max_tile_count();
  const int64_t tm = std::min(mapping.tile_m, problem.m), tn = std::min(mapping.tile_n, problem.n),
                tk = std::min(mapping.tile_k, problem.k);
  // The groups run back to back on every core, so per-core counts are one group's times `groups`.
  const int64_t instructions = tiles_m * tiles_n * tiles_k * groups;
  const InstructionProfile pe = problem.direct ? conv_profile(problem, tm, tn, tk, mapping.dataflow)
                                               : profile(timing_, mapping.dataflow, tm, tn, tk);
  cost.compute_cycles = pe.lead_in + instructions * pe.interval - pe.cross + pe.tail;
  cost.stream_cycles = instructions * pe.stream_cycles;

  const int64_t core_a = static_cast<int64_t>(
      std::llround(static_cast<double>(tiles_m * tiles_k * problem.a_tile_elements(tm, tk) * element *
                                       reload(tiles_m, tiles_n, tiles_k, true, false, true) * groups) *
                   problem.a_dram_fraction));
  const int64_t core_w = tiles_k * tk * taps * tiles_n * tn * element *
                         reload(tiles_m, tiles_n, tiles_k, false, true, true) * groups / problem.packed;
  const int64_t o_factor = mapping.split_k == 1 ? reload(tiles_m, tiles_n, tiles_k, true, true, false) : 1;
  const int64_t core_o = tiles_m * tm * pixels * tiles_n * tn * accumulator * (2 * o_factor - 1) * groups;
  const int64_t loads = (tiles_m * tiles_k * reload(tiles_m, tiles_n, tiles_k, true, false, true) +
                         tiles_k * tiles_n * reload(tiles_m, tiles_n, tiles_k, false, true, true)) *
                        groups;
  const int64_t stores = tiles_m * tiles_n * o_factor * groups;

  // DMA engines: A on one, W on another, stores with the lighter one (the lowering does the same), each at
  // the rate its rows allow.
  const auto& dma = spec.core.dma;
  // An im2col row is gathered in runs of at most a_run elements: shorter bursts, lower rate.
  // A direct conv's input tile is one run when it holds every channel of its pixels, else a run per pixel.
  // A tile that spans whole rows of its tensor is one contiguous run (the engines merge its rows).
  const int64_t a_run = problem.direct      ? (tk == problem.direct->c ? problem.a_tile_elements(tm, tk) : tk)
                        : problem.a_run > 0 ? std::min(tk, problem.a_run)
                        : tk == problem.k   ? tm * tk
                                            : tk;
  const int64_t w_run = problem.w_run > 0 ? std::min(tn, problem.w_run)
                        : tn == problem.n ? tk * taps * tn
                                          : tn;
  const bool o_whole_rows =
      tn == problem.n && (problem.direct ? problem.direct->conv_groups : problem.groups) == 1;
  const double a_rate = dma_bytes_per_cycle(a_run * element), w_rate = dma_bytes_per_cycle(w_run * element),
               o_rate = dma_bytes_per_cycle((o_whole_rows ? tm * pixels * tn : tn) * accumulator);
  const double setup = static_cast<double>(dma.setup_cycles) * static_cast<double>(loads + stores);
  if (dma.engines >= 2) {
    const double store_time = static_cast<double>(core_o) / o_rate;
    const double engine0 = static_cast<double>(core_a) / a_rate + (core_a <= core_w ? store_time : 0);
    const double engine1 = static_cast<double>(core_w) / w_rate + (core_a <= core_w ? 0 : store_time);
    cost.dma_cycles = static_cast<int64_t>(std::ceil(std::max(engine0, engine1))) +
                      static_cast<int64_t>(setup / dma.engines);
  } else {
    cost.dma_cycles = static_cast<int64_t>(std::ceil(core_a / a_rate + core_w / w_rate + core_o / o_rate)) +
                      static_cast<int64_t>(setup);
  }
  cost.dram_cycles = cycles_for(static_cast<double>(cost.dram_bytes), spec.dram.bytes_per_cycle);
  const double reduction_per_core =
      mapping.split_k > 1 ? static_cast<double>(tiles_m * tm * pixels * tiles_n * tn * accumulator) *
                                (mapping.split_k - 1) * groups
                          : 0.0;
  // A core's port carries what it receives; the hottest mesh link carries its share of every core's loads
  // (a multicast tree shares its trunk, so a shared tensor counts once per sharing group there).
  const int cores_used = mapping.split_m * mapping.split_n * mapping.split_k;
  const double linked_a = static_cast<double>(core_a) / (multicast_a ? mapping.split_n : 1);
  const double linked_w = static_cast<double>(core_w) / (multicast_w ? mapping.split_m : 1);
  const double hottest_link =
      (linked_a + linked_w + static_cast<double>(core_o)) * hottest_link_share(cores_used);
  cost.noc_cycles = cycles_for(std::max({static_cast<double>(core_a + core_w) + reduction_per_core,
                                         static_cast<double>(core_o), hottest_link}),
                               spec.noc.link_bytes_per_cycle);
  const arch::PeSramTraffic pe_traffic =
      problem.direct ? arch::conv_sram_traffic(mapping.dataflow, problem.dtype,
                                               conv_tile_of(problem, tm, tn, tk), false, spec)
                     : arch::pe_sram_traffic(mapping.dataflow, problem.dtype, tm, tn, tk, false,
                                             spec.core.pe_array.rows, spec.core.pe_array.cols);
  const int64_t core_sram =
      instructions * (pe_traffic.read_bytes + pe_traffic.write_bytes) + core_a + core_w + core_o;
  cost.sram_cycles =
      cycles_for(static_cast<double>(core_sram), static_cast<double>(spec.core.sram.bank_row_bytes));
  cost.sram_bytes = core_sram * spec.mesh.cores();  // estimate: every used core like the busiest

  // Double buffering hides a tile's load under one PE instruction: the load into a buffer starts when the
  // instruction before last frees it and must land before the next one starts. A load that takes longer
  // (setup, DRAM latency, the route, the bytes at the core's share of bandwidth) stalls the array by the
  // rest.
  {
    const double route = spec.dram.latency_cycles +
                         (average_dram_hops_ + 1) * spec.noc.router_latency_cycles + dma.setup_cycles;
    auto load_cycles = [&](double tile_bytes, double engine_rate, bool shared, int group) {
      const double issuers = shared ? static_cast<double>(cores_used) / group : cores_used;
      const double rate = std::min(
          {engine_rate, spec.noc.link_bytes_per_cycle, spec.dram.bytes_per_cycle / std::max(1.0, issuers)});
      return route + tile_bytes / rate;
    };
    const double a_load = load_cycles(static_cast<double>(problem.a_tile_elements(tm, tk) * element), a_rate,
                                      multicast_a, mapping.split_n);
    const double w_load =
        load_cycles(static_cast<double>(tk * taps * tn * element), w_rate, multicast_w, mapping.split_m);
    const int64_t a_loads = tiles_m * tiles_k * reload(tiles_m, tiles_n, tiles_k, true, false, true) * groups;
    const int64_t w_loads = tiles_k * tiles_n * reload(tiles_m, tiles_n, tiles_k, false, true, true) * groups;
    // The buffer is freed when the instruction before last completes (after its drain) and is needed before
    // the next instruction's preload; with one buffer the load cannot overlap an instruction at all.
    const double drain = static_cast<double>(pe.tail) - static_cast<double>(pe.stream_cycles / pe.folds);
    const double window_a = mapping.double_buffer_inputs
                                ? std::max(0.0, static_cast<double>(pe.interval) - drain - pe.lead_in)
                                : 0.0;
    const double a_stall = std::max(0.0, a_load - window_a) * static_cast<double>(a_loads);
    const double w_stall = std::max(0.0, w_load - window_a) * static_cast<double>(w_loads);
    // With one DMA engine the two operands' loads queue behind each other.
    double stall = dma.engines >= 2 ? std::max(a_stall, w_stall) : a_stall + w_stall;
    if (!mapping.double_buffer_output) {
      // One O buffer: the next output tile cannot start before this one's store has drained it.
      const double store = route + static_cast<double>(tm * pixels * tn * accumulator) / o_rate;
      stall += store * static_cast<double>(stores);
    }
    cost.load_stall_cycles = static_cast<int64_t>(stall);
  }

  // Not overlapped: the first tiles' loads before any compute, and the last tile's store after it.
  const double first_bytes = static_cast<double>(problem.a_tile_elements(tm, tk) + tk * taps * tn) * element;
  const double last_bytes = static_cast<double>(tm * pixels * tn * accumulator);
  const double route_latency = (average_dram_hops_ + 1) * spec.noc.router_latency_cycles;
  cost.overhead_cycles =
      static_cast<int64_t>(2 * (spec.dram.latency_cycles + route_latency + dma.setup_cycles) +
                           first_bytes / std::min(a_rate, w_rate) + last_bytes / o_rate);

  const std::array<std::pair<int64_t, Bound>, 5> limits = {
      {{cost.compute_cycles + cost.load_stall_cycles, Bound::compute},
       {cost.dram_cycles, Bound::dram},
       {cost.dma_cycles, Bound::dma},
       {cost.noc_cycles, Bound::noc},
       {cost.sram_cycles, Bound::sram}}};
  auto slowest = std::max_element(limits.begin(), limits.end(),
                                  [](const auto& a, const auto& b) { return a.first < b.first; });
  cost.bound = slowest->second;
  cost.cycles = cost.overhead_cycles + slowest->first;

  cost.noc_bytes = cost.dram_bytes + cost.reduction_bytes;
  const double byte_hops = static_cast<double>(cost.dram_bytes) * average_dram_hops_ +
                           static_cast<double>(cost.reduction_bytes) * 2.0;
  cost.energy_pj = problem.macs() * spec.energy_pj.mac +
                   static_cast<double>(cost.sram_bytes) * spec.energy_pj.sram_byte +
                   static_cast<double>(cost.dram_bytes) * spec.energy_pj.dram_byte +
                   byte_hops * spec.energy_pj.noc_byte_hop;
  cost.pe_utilization = static_cast<double>(problem.useful_macs()) /
                        (static_cast<double>(cost.cycles) * spec.mesh.cores() * spec.core.pe_array.pes());

  cost.edge_waste = edge_waste(problem, mapping);
  return cost;
}

}  // namespace tessera::mapper
