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

// The run takes the slowest resource's time after the overhead. A fused epilogue's vec maps overlap the next
// tiles' matmuls: with the vector unit slower than the PE array, the array waits for it (the vector bound).
void settle_bound(Cost& cost) {
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
}

}  // namespace

CostModel::CostModel(const arch::ArchSpec& spec) : spec_(spec), timer_(spec) {
  // The network's own answers (arch/noc.hpp, remembered per thread): the simulator's fabric asks the same
  // model.
  average_dram_hops_ = arch::dram_round_trip_hops(spec);
  const int cores = spec.mesh.cores();
  for (int used = 1; used <= cores; ++used)
    if (cores % used == 0) hottest_link_share_.emplace_back(used, arch::dram_hottest_link_share(spec, used));
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

// What one mapping's estimate reads throughout: its stage, its plan, the types its tiles move in, and the
// busiest core's tiles.
struct CostModel::EstimateInputs {
  const Mapping& mapping;
  const ContractionStage& stage;
  const ContractionShape& problem;
  ContractionPlan plan;
  int64_t element = 0;      // of A and W
  int64_t accumulator = 0;  // of the partial sums
  // What a finished output tile is stored in: a fused epilogue's output type, else the accumulators.
  int64_t stored = 0;
  bool fused = false, unfused = false;
  // In the PE array's output path: no vector work, its bias slices loaded as a fused epilogue's.
  bool in_array = false;
  bool epilogue_loads_per_tile = false;  // fused or in the array
  int64_t pixels = 1, taps = 1, groups = 1;
  // A elements per unit of k for an extent of m (a direct conv's tiles read their input rows with the halo,
  // and no padding rows).
  ARowsRead a_rows;
  double a_coding = 1.0;  // the share of A's bytes a load moves where the machine codes a sparse input
  int cores_used = 1;
  // The busiest core: the most tiles along every dimension, all full-sized (no larger than the problem).
  int64_t tiles_m = 0, tiles_n = 0, tiles_k = 0;
  int64_t tile_m = 0, tile_n = 0, tile_k = 0;
  // The groups run back to back on every core, so per-core counts are one group's times `groups`; a tile
  // iteration runs pe_parts() instructions (a tile of several images: one an image).
  int64_t parts = 1, instructions = 0;

  EstimateInputs(const Mapping& estimated, const arch::ArchSpec& spec);
  int64_t reload(int64_t m_trips, int64_t n_trips, int64_t k_trips, bool depends_m, bool depends_n,
                 bool depends_k) const {
    return reload_factor({m_trips, n_trips, k_trips}, mapping.order, depends_m, depends_n, depends_k);
  }
  // How many times the busiest core loads each tile of A, of W (1: once).
  int64_t a_reload() const { return reload(tiles_m, tiles_n, tiles_k, true, false, true); }
  int64_t w_reload() const { return reload(tiles_m, tiles_n, tiles_k, false, true, true); }
};

// What the busiest core moves.
struct CostModel::CoreTraffic {
  int64_t a = 0, w = 0, o = 0;  // bytes of A and W loaded, of O stored
  int64_t stores = 0;           // output tiles stored
  // A fused epilogue: its operands' bytes and loads (on the store engine, with the stores), its vec map's
  // cycles on one tile and that map's SRAM traffic.
  int64_t epilogue = 0, epilogue_loads = 0;
  int64_t vector_tile = 0;
  arch::VectorSramTraffic vector_sram{};
};

// The busiest core's DMA streams: one engine's rate on each tensor's rows, the row blocks a transfer of
// each is cut into, and the loads of A and W.
struct CostModel::DmaStreams {
  double a_rate = 0, w_rate = 0, o_rate = 0;
  int64_t a_blocks = 1, w_blocks = 1, o_blocks = 1;
  int64_t a_loads = 0, w_loads = 0;
};

CostModel::EstimateInputs::EstimateInputs(const Mapping& estimated, const arch::ArchSpec& spec)
    : mapping(estimated),
      stage(stage_of(estimated)),
      problem(stage.shape()),
      plan(plan_contraction(estimated, spec)) {
  element = size_bytes(problem.dtype);
  accumulator = size_bytes(problem.o_dtype());
  fused = mapping.epilogue && mapping.fusion == Fusion::fused;
  unfused = mapping.epilogue && mapping.fusion == Fusion::unfused;
  in_array = mapping.epilogue && mapping.fusion == Fusion::array;
  epilogue_loads_per_tile = fused || in_array;
  stored = fused ? size_bytes(mapping.epilogue->out_dtype()) : accumulator;
  pixels = stage.pixels_per_m(), taps = stage.taps_per_k();
  groups = problem.groups;
  a_rows = stage.a_rows_read(mapping.tile_m);
  a_coding = arch::coded_fraction(spec.dram.rlc, problem.density.input, problem.dtype);
  cores_used = mapping.split_m * mapping.split_n * mapping.split_k;
  tiles_m = plan.parts[0].max_tile_count();
  tiles_n = plan.parts[1].max_tile_count();
  tiles_k = plan.parts[2].max_tile_count();
  tile_m = std::min(mapping.tile_m, problem.m);
  tile_n = std::min(mapping.tile_n, problem.n);
  tile_k = std::min(mapping.tile_k, problem.k);
  parts = stage.pe_parts();
  instructions = tiles_m * tiles_n * tiles_k * groups * parts;
}

// DRAM traffic, summed over every core (exact: the lowering moves these bytes). Returns the share of an
// output tile's bytes its store moves.
double CostModel::dram_traffic(const EstimateInputs& in, Cost& cost) const {
  const Mapping& mapping = in.mapping;
  const ContractionShape& problem = in.problem;
  const Classes &cm = in.plan.classes[0], &cn = in.plan.classes[1], &ck = in.plan.classes[2];
  const bool multicast_a = in.plan.multicast[kA], multicast_w = in.plan.multicast[kW];
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
        const int64_t a_factor = in.reload(m_class.count, n_class.count, k_class.count, true, false, true);
        const int64_t w_factor = in.reload(m_class.count, n_class.count, k_class.count, false, true, true);
        // Per class: sum over its parts of (extent product) times how many cores share it.
        const int64_t a_class = in.a_rows.of(m_class.extent_sum) * k_class.extent_sum * in.element * a_factor;
        a_bytes += a_class * n_class.parts;
        const int64_t w_class = k_class.extent_sum * in.taps * n_class.extent_sum * in.element * w_factor;
        w_bytes += w_class * m_class.parts;
        if (mapping.split_k == 1) {
          // O stays in SRAM for a run of k tiles; a tile met again later is stored accumulating (read +
          // write).
          const int64_t o_factor = in.reload(m_class.count, n_class.count, k_class.count, true, true, false);
          partial_stores = partial_stores || o_factor > 1;
          o_bytes += m_class.extent_sum * in.pixels * n_class.extent_sum *
                     (o_factor == 1 ? in.stored : in.accumulator) * (2 * o_factor - 1);
        }
      }
    }
  }
  // A multicast tile is read once for its whole group (every member's reload factor is the same then).
  if (multicast_a) a_bytes /= mapping.split_n;
  if (multicast_w) w_bytes /= mapping.split_m;
  if (mapping.split_k > 1) {
    // The root of each k group stores the reduced tile once.
    o_bytes = problem.m * in.pixels * problem.n * in.stored;
    cost.reduction_bytes = (mapping.split_k - 1) * problem.m * in.pixels * problem.n * in.accumulator;
  }
  // Every group moves the same bytes; an im2col view reads no DRAM for its padding zeros, a block-diagonal W
  // none for its zeros.
  const int64_t groups = in.groups;
  a_bytes = static_cast<int64_t>(std::llround(static_cast<double>(a_bytes) * in.stage.a_dram_fraction()));
  w_bytes /= in.stage.w_dram_divisor();
  a_bytes *= groups, w_bytes *= groups, o_bytes *= groups;
  // A machine that run-length codes DRAM traffic moves a sparse input, and a sparse output stored finished,
  // coded (arch/timing/compression.hpp; the lowering declares an output that takes partial sums, and an
  // unfused epilogue's raw Z, dense).
  const double o_coding =
      in.unfused || partial_stores
          ? 1.0
          : arch::coded_fraction(spec_.dram.rlc, problem.density.output,
                                 in.fused ? mapping.epilogue->out_dtype() : problem.o_dtype());
  a_bytes = arch::coded_bytes(a_bytes, in.a_coding);
  o_bytes = arch::coded_bytes(o_bytes, o_coding);
  cost.reduction_bytes *= groups;
  cost.dram_bytes_by_tensor = {a_bytes, w_bytes, o_bytes};
  // A fused epilogue loads, per output tile, its slice of the bias row and its tile of the residual (or of a
  // SwiGLU's up projection).
  const int64_t out_tiles_m = in.plan.parts[0].tiles();
  if (in.epilogue_loads_per_tile) {
    cost.epilogue_dram_bytes = ((mapping.epilogue->bias() ? out_tiles_m * problem.n : 0) +
                                (mapping.epilogue->tile() ? problem.m * in.pixels * problem.n : 0)) *
                               in.accumulator * groups;
  }
  cost.dram_bytes = a_bytes + w_bytes + o_bytes + cost.epilogue_dram_bytes;
  cost.dram_cycles = cycles_for(static_cast<double>(cost.dram_bytes), spec_.dram.bytes_per_cycle);
  return o_coding;
}

// The busiest core's PE array: its instructions one after another, the first's fill and the last's drain
// exposed.
InstructionProfile CostModel::tile_compute(const EstimateInputs& in, Cost& cost) const {
  const InstructionProfile pe =
      in.stage.profile(timer_, in.mapping.dataflow, in.tile_m, in.tile_n, in.tile_k);
  cost.compute_cycles = pe.lead_in + in.instructions * pe.interval - pe.cross + pe.tail;
  cost.stream_cycles = in.instructions * pe.stream_cycles;
  return pe;
}

// What the busiest core loads and stores (each tile as often as the loop order reloads it), and a fused
// epilogue's work on each of its output tiles.
CostModel::CoreTraffic CostModel::core_traffic(const EstimateInputs& in, double o_coding, Cost& cost) const {
  const Mapping& mapping = in.mapping;
  const ContractionStage& stage = in.stage;
  CoreTraffic core;
  core.a = arch::coded_bytes(static_cast<int64_t>(std::llround(
                                 static_cast<double>(in.tiles_m * in.tiles_k * stage.a_tile_rows(in.tile_m) *
                                                     in.tile_k * in.element * in.a_reload() * in.groups) *
                                 stage.a_dram_fraction())),
                             in.a_coding);
  core.w = in.tiles_k * in.tile_k * in.taps * in.tiles_n * in.tile_n * in.element * in.w_reload() *
           in.groups / stage.w_dram_divisor();
  const int64_t o_factor =
      mapping.split_k == 1 ? in.reload(in.tiles_m, in.tiles_n, in.tiles_k, true, true, false) : 1;
  core.o =
      arch::coded_bytes(in.tiles_m * in.tile_m * in.pixels * in.tiles_n * in.tile_n *
                            (o_factor == 1 ? in.stored : in.accumulator) * (2 * o_factor - 1) * in.groups,
                        o_coding);
  core.stores = in.tiles_m * in.tiles_n * o_factor * in.groups;
  // A fused epilogue on the busiest core: one vec map per output tile, and its operands' loads (on the store
  // engine, with the stores).
  if (in.fused) {
    const arch::VectorWork work = mapping.epilogue->tile_op(in.tile_m * in.pixels, in.tile_n).work();
    core.vector_tile = arch::vector_timing(*spec_.core.vector, work).cycles;
    core.vector_sram =
        arch::vector_sram_traffic(work, arch::VectorElementBytes{in.accumulator, in.stored, in.accumulator});
    cost.vector_cycles = core.vector_tile * core.stores;
  }
  if (in.epilogue_loads_per_tile) {
    core.epilogue = ((mapping.epilogue->bias() ? in.tile_n : 0) +
                     (mapping.epilogue->tile() ? in.tile_m * in.pixels * in.tile_n : 0)) *
                    in.accumulator * core.stores;
    core.epilogue_loads =
        ((mapping.epilogue->bias() ? 1 : 0) + (mapping.epilogue->tile() ? 1 : 0)) * core.stores;
  }
  return core;
}

// DMA engines, grouped as the plan says (mapper/kit/dma_engines.hpp, as in the lowering): A's loads on one
// group and W's on the other, each load cut into row blocks that its group's engines carry at once; the
// stores cut likewise over theirs. Each engine runs at the rate its rows allow: a tile's runs (stage.runs: an
// im2col row gathered in short runs, a tile of whole rows one contiguous run) set its bursts. Every block
// pays its setup on its engine.
CostModel::DmaStreams CostModel::dma_streams(const EstimateInputs& in, const CoreTraffic& core,
                                             double o_coding, Cost& cost) const {
  const ContractionStage& stage = in.stage;
  const ContractionPlan& plan = in.plan;
  const auto& dma = spec_.core.dma;
  const TileRuns runs = stage.runs(in.tile_m, in.tile_n, in.tile_k);
  DmaStreams streams;
  streams.a_rate = dma_bytes_per_cycle(runs.a * in.element, in.a_coding);
  streams.w_rate = dma_bytes_per_cycle(runs.w * in.element);
  streams.o_rate = dma_bytes_per_cycle(runs.o * in.stored, o_coding);
  streams.a_blocks =
      blocks_of(stage.a_tile_rows(in.tile_m), in.tile_k * in.element, plan.load_group(kA), dma);
  streams.w_blocks = blocks_of(in.tile_k * in.taps, in.tile_n * in.element, plan.load_group(kW), dma);
  // A store waiting for the other cores' partial sums stays whole.
  const EngineGroup& store_group = plan.store_group(core.a, core.w);
  streams.o_blocks =
      in.mapping.split_k > 1 ? 1 : blocks_of(in.tile_m * in.pixels, in.tile_n * in.stored, store_group, dma);
  streams.a_loads = in.tiles_m * in.tiles_k * in.a_reload() * in.groups;
  streams.w_loads = in.tiles_k * in.tiles_n * in.w_reload() * in.groups;
  const double setup =
      static_cast<double>(dma.setup_cycles) *
      static_cast<double>(streams.a_loads * streams.a_blocks + streams.w_loads * streams.w_blocks +
                          core.stores * streams.o_blocks + core.epilogue_loads);
  const double stored_bytes = static_cast<double>(core.o + core.epilogue);
  if (dma.engines >= 2) {
    const double store_time = stored_bytes / streams.o_rate / static_cast<double>(streams.o_blocks);
    // Shared with the lighter loads' engine, or spread over every engine.
    const bool shared = plan.engines.stores_shared, store_with_a = store_group == plan.load_group(kA);
    const double a_engine =
        static_cast<double>(core.a) / streams.a_rate / static_cast<double>(streams.a_blocks) +
        (!shared || store_with_a ? store_time : 0);
    const double w_engine =
        static_cast<double>(core.w) / streams.w_rate / static_cast<double>(streams.w_blocks) +
        (!shared || !store_with_a ? store_time : 0);
    cost.dma_cycles = static_cast<int64_t>(std::ceil(std::max(a_engine, w_engine))) +
                      static_cast<int64_t>(setup / dma.engines);
  } else {
    // One engine moves one transfer at a time, none faster than the whole DRAM delivers (Eyeriss's engine
    // takes 8 B a cycle, its link 2.4): a latency-bound stream of short bursts and a DRAM-bound one add up.
    const double dram = spec_.dram.bytes_per_cycle;
    cost.dma_cycles = static_cast<int64_t>(std::ceil(core.a / std::min(streams.a_rate, dram) +
                                                     core.w / std::min(streams.w_rate, dram) +
                                                     stored_bytes / std::min(streams.o_rate, dram))) +
                      static_cast<int64_t>(setup);
  }
  return streams;
}

// A core's port carries what it receives; the hottest mesh link carries its share of every core's loads (a
// multicast tree shares its trunk, so a shared tensor counts once per sharing group there).
void CostModel::noc_share(const EstimateInputs& in, const CoreTraffic& core, Cost& cost) const {
  const Mapping& mapping = in.mapping;
  const double reduction_per_core = mapping.split_k > 1
                                        ? static_cast<double>(in.tiles_m * in.tile_m * in.pixels *
                                                              in.tiles_n * in.tile_n * in.accumulator) *
                                              (mapping.split_k - 1) * in.groups
                                        : 0.0;
  const double linked_a = static_cast<double>(core.a) / (in.plan.multicast[kA] ? mapping.split_n : 1);
  const double linked_w = static_cast<double>(core.w) / (in.plan.multicast[kW] ? mapping.split_m : 1);
  const double hottest_link =
      (linked_a + linked_w + static_cast<double>(core.o + core.epilogue)) * hottest_link_share(in.cores_used);
  cost.noc_cycles =
      cycles_for(std::max({static_cast<double>(core.a + core.w + core.epilogue) + reduction_per_core,
                           static_cast<double>(core.o), hottest_link}),
                 spec_.noc.link_bytes_per_cycle);
}

// The busiest core's SRAM banks: the PE array's reads and writes, the DMA's and a fused epilogue's.
void CostModel::sram_traffic(const EstimateInputs& in, const CoreTraffic& core, Cost& cost) const {
  // An output tile's first instruction (each part's) starts its partial sums; the rest read them back.
  const arch::PeSramTraffic pe_traffic =
      in.stage.pe_traffic(in.mapping.dataflow, in.tile_m, in.tile_n, in.tile_k, spec_);
  const int64_t adding_instructions = in.instructions - std::min(in.instructions, core.stores * in.parts);
  const int64_t core_sram = in.instructions * (pe_traffic.read_bytes + pe_traffic.write_bytes) +
                            adding_instructions * pe_traffic.o_bytes + core.a + core.w + core.o +
                            core.epilogue +
                            core.stores * (core.vector_sram.read_bytes + core.vector_sram.write_bytes);
  cost.sram_cycles =
      cycles_for(static_cast<double>(core_sram), static_cast<double>(spec_.core.sram.bank_row_bytes));
  cost.sram_bytes = core_sram * spec_.mesh.cores();  // estimate: every used core like the busiest
}

// Double buffering hides a tile's load under one PE instruction: the load into a buffer starts when the
// instruction before last frees it and must land before the next one starts. A load that takes longer
// (setup, DRAM latency, the route, the bytes at the core's share of bandwidth) stalls the array by the rest.
void CostModel::load_stalls(const EstimateInputs& in, const CoreTraffic& core, const DmaStreams& streams,
                            const InstructionProfile& pe, double o_coding, Cost& cost) const {
  const Mapping& mapping = in.mapping;
  const auto& dma = spec_.core.dma;
  const double route = spec_.dram.latency_cycles +
                       (average_dram_hops_ + 1) * spec_.noc.router_latency_cycles + dma.setup_cycles;
  auto load_cycles = [&](double tile_bytes, double engine_rate, bool shared, int group) {
    const double issuers = shared ? static_cast<double>(in.cores_used) / group : in.cores_used;
    const double rate = std::min(
        {engine_rate, spec_.noc.link_bytes_per_cycle, spec_.dram.bytes_per_cycle / std::max(1.0, issuers)});
    return route + tile_bytes / rate;
  };
  const double a_load = load_cycles(
      static_cast<double>(in.stage.a_tile_rows(in.tile_m) * in.tile_k * in.element) * in.a_coding,
      streams.a_rate * static_cast<double>(streams.a_blocks), in.plan.multicast[kA], mapping.split_n);
  const double w_load = load_cycles(static_cast<double>(in.tile_k * in.taps * in.tile_n * in.element),
                                    streams.w_rate * static_cast<double>(streams.w_blocks),
                                    in.plan.multicast[kW], mapping.split_m);
  // The buffer is freed when the instruction before last completes (after its drain) and is needed before
  // the next instruction's preload; with one buffer the load cannot overlap an instruction at all.
  const double drain = static_cast<double>(pe.tail) - static_cast<double>(pe.stream_cycles / pe.folds);
  const double window = mapping.double_buffer_inputs
                            ? std::max(0.0, static_cast<double>(pe.interval * in.parts) - drain - pe.lead_in)
                            : 0.0;
  const double a_stall = std::max(0.0, a_load - window) * static_cast<double>(streams.a_loads);
  const double w_stall = std::max(0.0, w_load - window) * static_cast<double>(streams.w_loads);
  // With one DMA engine the two operands' loads queue behind each other.
  double stall = dma.engines >= 2 ? std::max(a_stall, w_stall) : a_stall + w_stall;
  if (!mapping.double_buffer_output) {
    // One O buffer: the next output tile cannot start before this one's store (or, fused, the epilogue
    // that reads it into its E buffer) has drained it. Fused with one engine and one input buffer, the
    // next tile's loads follow the store in the engine's queue (they are issued after it), so the store
    // stalls the array too.
    const double store_dma = route + static_cast<double>(in.tile_m * in.pixels * in.tile_n * in.accumulator) *
                                         o_coding / (streams.o_rate * static_cast<double>(streams.o_blocks));
    const double store = !in.fused
                             ? store_dma
                             : static_cast<double>(core.vector_tile) +
                                   (dma.engines == 1 && !mapping.double_buffer_inputs ? store_dma : 0.0);
    stall += store * static_cast<double>(core.stores);
  }
  cost.load_stall_cycles = static_cast<int64_t>(stall);
}

// Not overlapped: the first tiles' loads before any compute, and the last tile's store (and a fused
// epilogue's vec map on it) after it.
void CostModel::overhead(const EstimateInputs& in, const CoreTraffic& core, const DmaStreams& streams,
                         double o_coding, Cost& cost) const {
  const double first_bytes =
      static_cast<double>(in.stage.a_tile_rows(in.tile_m) * in.tile_k) * in.element * in.a_coding +
      static_cast<double>(in.tile_k * in.taps * in.tile_n * in.element);
  const double last_bytes = static_cast<double>(in.tile_m * in.pixels * in.tile_n * in.stored) * o_coding;
  const double route_latency = (average_dram_hops_ + 1) * spec_.noc.router_latency_cycles;
  cost.overhead_cycles =
      static_cast<int64_t>(2 * (spec_.dram.latency_cycles + route_latency + spec_.core.dma.setup_cycles) +
                           first_bytes / std::min(streams.a_rate * static_cast<double>(streams.a_blocks),
                                                  streams.w_rate * static_cast<double>(streams.w_blocks)) +
                           last_bytes / (streams.o_rate * static_cast<double>(streams.o_blocks))) +
      core.vector_tile;
}

// The NoC's bytes and the energy of it all.
void CostModel::energy(const EstimateInputs& in, Cost& cost) const {
  cost.noc_bytes = cost.dram_bytes + cost.reduction_bytes;
  const double byte_hops = static_cast<double>(cost.dram_bytes) * average_dram_hops_ +
                           static_cast<double>(cost.reduction_bytes) * 2.0;
  arch::EnergyCounts counts;
  counts.macs = static_cast<double>(in.stage.macs());
  counts.sram_bytes = static_cast<double>(cost.sram_bytes);
  counts.dram_bytes = static_cast<double>(cost.dram_bytes);
  counts.noc_byte_hops = byte_hops;
  counts.cycles = cost.cycles;
  cost.energy_pj = arch::energy_pj(spec_, counts);
  cost.pe_utilization = arch::pe_utilization(spec_, in.stage.useful_macs(), cost.cycles);
  cost.edge_waste = in.stage.edge_waste(timer_, in.mapping);
}

Cost CostModel::evaluate_contraction(const Mapping& mapping) const {
  const EstimateInputs in(mapping, spec_);
  Cost cost;
  const double o_coding = dram_traffic(in, cost);
  const InstructionProfile pe = tile_compute(in, cost);
  const CoreTraffic core = core_traffic(in, o_coding, cost);
  const DmaStreams streams = dma_streams(in, core, o_coding, cost);
  noc_share(in, core, cost);
  sram_traffic(in, core, cost);
  load_stalls(in, core, streams, pe, o_coding, cost);
  overhead(in, core, streams, o_coding, cost);
  settle_bound(cost);
  energy(in, cost);
  return cost;
}

}  // namespace tessera::mapper
