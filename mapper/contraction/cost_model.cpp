#include "mapper/contraction/cost_model.hpp"

#include "arch/timing/compression.hpp"

#include "mapper/kit/vector_stage.hpp"

#include <algorithm>
#include <cmath>

#include "arch/figures.hpp"
#include "arch/noc.hpp"
#include "arch/timing/pe_traffic.hpp"
#include "arch/timing/vector_timing.hpp"
#include "mapper/contraction/plan.hpp"

namespace tessera::mapper {

namespace {

int64_t cycles_for(double bytes, double bytes_per_cycle) {
  return static_cast<int64_t>(std::ceil(bytes / bytes_per_cycle - 1e-9));
}

}  // namespace

CostModel::CostModel(const arch::ArchSpec& spec) : spec_(spec), timer_(spec) {
  // The network's own answers (arch/noc.hpp): the simulator's fabric asks the same model.
  const std::unique_ptr<arch::NocModel> noc = arch::make_noc(spec);
  average_dram_hops_ = arch::dram_round_trip_hops(spec);
  const int cores = spec.mesh.cores();
  for (int used = 1; used <= cores; ++used)
    if (cores % used == 0) hottest_link_share_.emplace_back(used, noc->hottest_link_share(used));
  round_trip_cycles_ = spec.dram.latency_cycles + (average_dram_hops_ + 1) * spec.noc.router_latency_cycles;
}

double CostModel::dma_bytes_per_cycle(int64_t row_bytes, double coding) const {
  // Bursts stop at tile rows (and at burst_bytes, and at DRAM interleave blocks). Little's law: an engine
  // with B bursts of S bytes in flight over a round trip of L cycles moves B*S/L, so short rows starve it. A
  // coded burst carries the code of its values (sim/transfer_engine.cpp): as many bursts, each shorter.
  const auto& dma = spec_.core.dma;
  const double burst =
      static_cast<double>(std::min({row_bytes, dma.burst_bytes, spec_.dram.interleave_bytes})) * coding;
  const double round_trip = round_trip_cycles_ + burst / spec_.noc.link_bytes_per_cycle;
  return std::min(dma.bytes_per_cycle, dma.outstanding_bursts * burst / round_trip);
}

double CostModel::hottest_link_share(int cores_used) const {
  for (const auto& [used, share] : hottest_link_share_)
    if (used == cores_used) return share;
  return hottest_link_share_.back().second;
}

Cost CostModel::evaluate(const Mapping& mapping) const {
  if (!(mapping.epilogue && mapping.fusion == Fusion::unfused)) return evaluate_contraction(mapping);
  // Unfused: the contraction stores its raw output, every core meets at a barrier, then the epilogue's pass
  // streams it through the vector units: one after the other. evaluate_contraction leaves an unfused
  // epilogue out (no copy of the mapping without it: copying its shared stage and epilogue had the search's
  // threads contend for their reference counts), and the pass, the same for every mapping of a search, is
  // estimated once.
  Cost cost = evaluate_contraction(mapping);
  if (pass_estimated_ != mapping.epilogue_pass.get()) {
    // The pass stores the finished output: coded where the machine codes a sparse one.
    const double coded = arch::coded_fraction(spec_.dram.rlc, stage_of(mapping).shape().density.output,
                                              mapping.epilogue->out_dtype());
    pass_cost_ = evaluate_vector(*mapping.epilogue_pass, spec_, coded);
    pass_estimated_ = mapping.epilogue_pass.get();
  }
  const Cost& pass = pass_cost_;
  cost.cycles += pass.cycles;
  cost.overhead_cycles += pass.overhead_cycles;
  cost.vector_cycles = pass.compute_cycles;
  cost.dram_bytes += pass.dram_bytes;
  cost.epilogue_dram_bytes = pass.dram_bytes;
  cost.noc_bytes += pass.dram_bytes;
  cost.sram_bytes += pass.sram_bytes;
  cost.energy_pj += pass.energy_pj +
                    static_cast<double>(pass.dram_bytes) * average_dram_hops_ * spec_.energy_pj.noc_byte_hop;
  cost.pe_utilization = arch::pe_utilization(spec_, stage_of(mapping).useful_macs(), cost.cycles);
  return cost;
}

Cost CostModel::evaluate_contraction(const Mapping& mapping) const {
  Cost cost;
  const arch::ArchSpec& spec = spec_;
  const ContractionStage& stage = stage_of(mapping);
  const ContractionShape& problem = stage.shape();
  const int64_t element = size_bytes(problem.dtype);
  const int64_t accumulator = size_bytes(problem.o_dtype());  // of the partial sums
  const bool fused = mapping.epilogue && mapping.fusion == Fusion::fused;
  // In the PE array's output path: no vector work, its bias slices loaded as a fused epilogue's.
  const bool in_array = mapping.epilogue && mapping.fusion == Fusion::array;
  const bool epilogue_loads_per_tile = fused || in_array;
  // What a finished output tile is stored in: a fused epilogue's output type, else the accumulators.
  const int64_t stored = fused ? size_bytes(mapping.epilogue->out_dtype()) : accumulator;
  const ContractionPlan plan = plan_contraction(mapping, spec);
  const DimPartition &pm = plan.parts[0], &pn = plan.parts[1], &pk = plan.parts[2];
  const Classes &cm = plan.classes[0], &cn = plan.classes[1], &ck = plan.classes[2];
  const int64_t pixels = stage.pixels_per_m(), taps = stage.taps_per_k();
  // A elements per unit of k for `extent` rows of m (a direct conv's tiles read their input rows with the
  // halo, and no padding rows).
  const ARowsRead a_rows = stage.a_rows_read(mapping.tile_m);
  auto a_m_elements = [&](int64_t extent) -> int64_t { return a_rows.of(extent); };

  // DRAM traffic, summed over every core (exact: the lowering moves these bytes).
  auto reload = [&](int64_t tm, int64_t tn, int64_t tk, bool dm, bool dn, bool dk) {
    return reload_factor({tm, tn, tk}, mapping.order, dm, dn, dk);
  };
  const bool multicast_a = plan.multicast[kA], multicast_w = plan.multicast[kW];
  cost.multicast_a = multicast_a;
  cost.multicast_w = multicast_w;
  int64_t a_bytes = 0, w_bytes = 0, o_bytes = 0;
  bool partial_stores = false;  // some output tile is stored as partial sums and added to later
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
          partial_stores = partial_stores || o_factor > 1;
          o_bytes += m_class.extent_sum * pixels * n_class.extent_sum *
                     (o_factor == 1 ? stored : accumulator) * (2 * o_factor - 1);
        }
      }
    }
  }
  // A multicast tile is read once for its whole group (every member's reload factor is the same then).
  if (multicast_a) a_bytes /= mapping.split_n;
  if (multicast_w) w_bytes /= mapping.split_m;
  if (mapping.split_k > 1) {
    // The root of each k group stores the reduced tile once.
    o_bytes = problem.m * pixels * problem.n * stored;
    cost.reduction_bytes = (mapping.split_k - 1) * problem.m * pixels * problem.n * accumulator;
  }
  // Every group moves the same bytes; an im2col view reads no DRAM for its padding zeros, a block-diagonal W
  // none for its zeros.
  const int64_t groups = problem.groups;
  a_bytes = static_cast<int64_t>(std::llround(static_cast<double>(a_bytes) * stage.a_dram_fraction()));
  w_bytes /= stage.w_dram_divisor();
  a_bytes *= groups, w_bytes *= groups, o_bytes *= groups;
  // A machine that run-length codes DRAM traffic moves a sparse input, and a sparse output stored finished,
  // coded (arch/timing/compression.hpp; the lowering declares an output that takes partial sums, and an
  // unfused epilogue's raw Z, dense).
  const double a_coding = arch::coded_fraction(spec.dram.rlc, problem.density.input, problem.dtype);
  const bool unfused = mapping.epilogue && mapping.fusion == Fusion::unfused;
  const double o_coding =
      unfused || partial_stores
          ? 1.0
          : arch::coded_fraction(spec.dram.rlc, problem.density.output,
                                 fused ? mapping.epilogue->out_dtype() : problem.o_dtype());
  a_bytes = arch::coded_bytes(a_bytes, a_coding);
  o_bytes = arch::coded_bytes(o_bytes, o_coding);
  cost.reduction_bytes *= groups;
  cost.dram_bytes_by_tensor = {a_bytes, w_bytes, o_bytes};
  // A fused epilogue loads, per output tile, its slice of the bias row and its tile of the residual (or of a
  // SwiGLU's up projection).
  const int64_t out_tiles_m = pm.tiles();
  if (epilogue_loads_per_tile) {
    cost.epilogue_dram_bytes = ((mapping.epilogue->bias() ? out_tiles_m * problem.n : 0) +
                                (mapping.epilogue->tile() ? problem.m * pixels * problem.n : 0)) *
                               accumulator * groups;
  }
  cost.dram_bytes = a_bytes + w_bytes + o_bytes + cost.epilogue_dram_bytes;

  // The busiest core: the most tiles along every dimension, all full-sized.
  const int64_t tiles_m = pm.max_tile_count(), tiles_n = pn.max_tile_count(), tiles_k = pk.max_tile_count();
  const int64_t tm = std::min(mapping.tile_m, problem.m), tn = std::min(mapping.tile_n, problem.n),
                tk = std::min(mapping.tile_k, problem.k);
  // The groups run back to back on every core, so per-core counts are one group's times `groups`; a tile
  // iteration runs pe_parts() instructions (a tile of several images: one an image).
  const int64_t parts = stage.pe_parts();
  const int64_t instructions = tiles_m * tiles_n * tiles_k * groups * parts;
  const InstructionProfile pe = stage.profile(timer_, mapping.dataflow, tm, tn, tk);
  cost.compute_cycles = pe.lead_in + instructions * pe.interval - pe.cross + pe.tail;
  cost.stream_cycles = instructions * pe.stream_cycles;

  const int64_t core_a = arch::coded_bytes(
      static_cast<int64_t>(
          std::llround(static_cast<double>(tiles_m * tiles_k * stage.a_tile_rows(tm) * tk * element *
                                           reload(tiles_m, tiles_n, tiles_k, true, false, true) * groups) *
                       stage.a_dram_fraction())),
      a_coding);
  const int64_t core_w = tiles_k * tk * taps * tiles_n * tn * element *
                         reload(tiles_m, tiles_n, tiles_k, false, true, true) * groups /
                         stage.w_dram_divisor();
  const int64_t o_factor = mapping.split_k == 1 ? reload(tiles_m, tiles_n, tiles_k, true, true, false) : 1;
  const int64_t core_o =
      arch::coded_bytes(tiles_m * tm * pixels * tiles_n * tn * (o_factor == 1 ? stored : accumulator) *
                            (2 * o_factor - 1) * groups,
                        o_coding);
  const int64_t stores = tiles_m * tiles_n * o_factor * groups;
  // A fused epilogue on the busiest core: one vec map per output tile, and its operands' loads (on the store
  // engine, with the stores).
  int64_t vector_tile = 0, core_epilogue = 0, epilogue_loads = 0;
  arch::VectorSramTraffic vector_sram{};
  if (fused) {
    const arch::VectorWork work = mapping.epilogue->tile_op(tm * pixels, tn).work();
    vector_tile = arch::vector_timing(*spec.core.vector, work).cycles;
    const int64_t acc = accumulator;
    vector_sram = arch::vector_sram_traffic(work, arch::VectorElementBytes{acc, stored, acc});
    cost.vector_cycles = vector_tile * stores;
  }
  if (epilogue_loads_per_tile) {
    core_epilogue =
        ((mapping.epilogue->bias() ? tn : 0) + (mapping.epilogue->tile() ? tm * pixels * tn : 0)) *
        accumulator * stores;
    epilogue_loads = ((mapping.epilogue->bias() ? 1 : 0) + (mapping.epilogue->tile() ? 1 : 0)) * stores;
  }

  // DMA engines, grouped as the plan says (mapper/kit/dma_engines.hpp, as in the lowering): A's loads on one
  // group and W's on the other, each load cut into row blocks that its group's engines carry at once; the
  // stores cut likewise over theirs (mapper/kit/dma_engines.hpp). Each engine runs at the rate its rows
  // allow: a tile's runs (stage.runs: an im2col row gathered in short runs, a tile of whole rows one
  // contiguous run) set its bursts. Every block pays its setup on its engine.
  const auto& dma = spec.core.dma;
  const TileRuns runs = stage.runs(tm, tn, tk);
  const double a_rate = dma_bytes_per_cycle(runs.a * element, a_coding),
               w_rate = dma_bytes_per_cycle(runs.w * element),
               o_rate = dma_bytes_per_cycle(runs.o * stored, o_coding);
  const int64_t a_blocks = blocks_of(stage.a_tile_rows(tm), tk * element, plan.load_group(kA), dma),
                w_blocks = blocks_of(tk * taps, tn * element, plan.load_group(kW), dma);
  // A store waiting for the other cores' partial sums stays whole.
  const int64_t o_blocks =
      mapping.split_k > 1 ? 1 : blocks_of(tm * pixels, tn * stored, plan.store_group(core_a, core_w), dma);
  const int64_t a_loads = tiles_m * tiles_k * reload(tiles_m, tiles_n, tiles_k, true, false, true) * groups;
  const int64_t w_loads = tiles_k * tiles_n * reload(tiles_m, tiles_n, tiles_k, false, true, true) * groups;
  const double setup =
      static_cast<double>(dma.setup_cycles) *
      static_cast<double>(a_loads * a_blocks + w_loads * w_blocks + stores * o_blocks + epilogue_loads);
  if (dma.engines >= 2) {
    const EngineGroup& store_group = plan.store_group(core_a, core_w);
    const double store_time =
        static_cast<double>(core_o + core_epilogue) / o_rate / static_cast<double>(o_blocks);
    // Shared with the lighter loads' engine, or spread over every engine.
    const bool shared = plan.engines.stores_shared, store_with_a = store_group == plan.load_group(kA);
    const double a_engine = static_cast<double>(core_a) / a_rate / static_cast<double>(a_blocks) +
                            (!shared || store_with_a ? store_time : 0);
    const double w_engine = static_cast<double>(core_w) / w_rate / static_cast<double>(w_blocks) +
                            (!shared || !store_with_a ? store_time : 0);
    cost.dma_cycles = static_cast<int64_t>(std::ceil(std::max(a_engine, w_engine))) +
                      static_cast<int64_t>(setup / dma.engines);
  } else {
    // One engine moves one transfer at a time, none faster than the whole DRAM delivers (Eyeriss's engine
    // takes 8 B a cycle, its link 2.4): a latency-bound stream of short bursts and a DRAM-bound one add up.
    const double dram = spec.dram.bytes_per_cycle;
    cost.dma_cycles = static_cast<int64_t>(
                          std::ceil(core_a / std::min(a_rate, dram) + core_w / std::min(w_rate, dram) +
                                    static_cast<double>(core_o + core_epilogue) / std::min(o_rate, dram))) +
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
      (linked_a + linked_w + static_cast<double>(core_o + core_epilogue)) * hottest_link_share(cores_used);
  cost.noc_cycles =
      cycles_for(std::max({static_cast<double>(core_a + core_w + core_epilogue) + reduction_per_core,
                           static_cast<double>(core_o), hottest_link}),
                 spec.noc.link_bytes_per_cycle);
  // An output tile's first instruction (each part's) starts its partial sums; the rest read them back.
  const arch::PeSramTraffic pe_traffic = stage.pe_traffic(mapping.dataflow, tm, tn, tk, spec);
  const int64_t adding_instructions = instructions - std::min(instructions, stores * parts);
  const int64_t core_sram = instructions * (pe_traffic.read_bytes + pe_traffic.write_bytes) +
                            adding_instructions * pe_traffic.o_bytes + core_a + core_w + core_o +
                            core_epilogue + stores * (vector_sram.read_bytes + vector_sram.write_bytes);
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
    const double a_load = load_cycles(static_cast<double>(stage.a_tile_rows(tm) * tk * element) * a_coding,
                                      a_rate * static_cast<double>(a_blocks), multicast_a, mapping.split_n);
    const double w_load = load_cycles(static_cast<double>(tk * taps * tn * element),
                                      w_rate * static_cast<double>(w_blocks), multicast_w, mapping.split_m);
    // The buffer is freed when the instruction before last completes (after its drain) and is needed before
    // the next instruction's preload; with one buffer the load cannot overlap an instruction at all.
    const double drain = static_cast<double>(pe.tail) - static_cast<double>(pe.stream_cycles / pe.folds);
    const double window_a = mapping.double_buffer_inputs
                                ? std::max(0.0, static_cast<double>(pe.interval * parts) - drain - pe.lead_in)
                                : 0.0;
    const double a_stall = std::max(0.0, a_load - window_a) * static_cast<double>(a_loads);
    const double w_stall = std::max(0.0, w_load - window_a) * static_cast<double>(w_loads);
    // With one DMA engine the two operands' loads queue behind each other.
    double stall = dma.engines >= 2 ? std::max(a_stall, w_stall) : a_stall + w_stall;
    if (!mapping.double_buffer_output) {
      // One O buffer: the next output tile cannot start before this one's store (or, fused, the epilogue
      // that reads it into its E buffer) has drained it. Fused with one engine and one input buffer, the
      // next tile's loads follow the store in the engine's queue (they are issued after it), so the store
      // stalls the array too.
      const double store_dma = route + static_cast<double>(tm * pixels * tn * accumulator) * o_coding /
                                           (o_rate * static_cast<double>(o_blocks));
      const double store = !fused ? store_dma
                                  : static_cast<double>(vector_tile) +
                                        (dma.engines == 1 && !mapping.double_buffer_inputs ? store_dma : 0.0);
      stall += store * static_cast<double>(stores);
    }
    cost.load_stall_cycles = static_cast<int64_t>(stall);
  }

  // Not overlapped: the first tiles' loads before any compute, and the last tile's store after it.
  const double first_bytes = static_cast<double>(stage.a_tile_rows(tm) * tk) * element * a_coding +
                             static_cast<double>(tk * taps * tn * element);
  const double last_bytes = static_cast<double>(tm * pixels * tn * stored) * o_coding;
  const double route_latency = (average_dram_hops_ + 1) * spec.noc.router_latency_cycles;
  cost.overhead_cycles =
      static_cast<int64_t>(2 * (spec.dram.latency_cycles + route_latency + dma.setup_cycles) +
                           first_bytes / std::min(a_rate * static_cast<double>(a_blocks),
                                                  w_rate * static_cast<double>(w_blocks)) +
                           last_bytes / (o_rate * static_cast<double>(o_blocks))) +
      vector_tile;  // the last tile's epilogue

  // A fused epilogue's vec maps overlap the next tiles' matmuls: with the vector unit slower than the PE
  // array, the array waits for it (the vector bound).
  const std::array<std::pair<int64_t, Bound>, 6> limits = {
      {{cost.compute_cycles + cost.load_stall_cycles, Bound::compute},
       {cost.dram_cycles, Bound::dram},
       {cost.dma_cycles, Bound::dma},
       {cost.noc_cycles, Bound::noc},
       {cost.sram_cycles, Bound::sram},
       {cost.vector_cycles, Bound::vector}}};
  auto slowest = std::max_element(limits.begin(), limits.end(),
                                  [](const auto& a, const auto& b) { return a.first < b.first; });
  cost.bound = slowest->second;
  cost.cycles = cost.overhead_cycles + slowest->first;

  cost.noc_bytes = cost.dram_bytes + cost.reduction_bytes;
  const double byte_hops = static_cast<double>(cost.dram_bytes) * average_dram_hops_ +
                           static_cast<double>(cost.reduction_bytes) * 2.0;
  arch::EnergyCounts counts;
  counts.macs = static_cast<double>(stage.macs());
  counts.sram_bytes = static_cast<double>(cost.sram_bytes);
  counts.dram_bytes = static_cast<double>(cost.dram_bytes);
  counts.noc_byte_hops = byte_hops;
  counts.cycles = cost.cycles;
  cost.energy_pj = arch::energy_pj(spec, counts);
  cost.pe_utilization = arch::pe_utilization(spec, stage.useful_macs(), cost.cycles);
  cost.edge_waste = stage.edge_waste(timer_, mapping);
  return cost;
}

}  // namespace tessera::mapper
