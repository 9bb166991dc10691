// The analytical cost model (DESIGN.md, "Dataflows"): for a mapping of a contraction stage, the bytes each
// level moves, the PE array's cycles with fill and drain (from the simulator's own closed forms, through the
// stage), the time each resource needs, and the energy. What it must agree on with the lowering it reads from
// the mapping's plan (plan.hpp). Fast enough to score a million candidates per second per core; the top
// candidates are then simulated.
#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "arch/spec.hpp"
#include "mapper/contraction/stage.hpp"
#include "mapper/cost.hpp"
#include "mapper/kit/instruction_timer.hpp"
#include "mapper/mapping.hpp"

namespace tessera::mapper {

// Precomputed per machine.
class CostModel {
 public:
  explicit CostModel(const arch::ArchSpec& spec);
  // The estimate of a mapping of a contraction stage: the stage, then an unfused epilogue's pass.
  Cost evaluate(const Mapping& mapping) const;
  // The estimate of the contraction stage alone (an unfused epilogue and its pass are evaluate's to add).
  Cost evaluate_contraction(const Mapping& mapping) const;
  const arch::ArchSpec& spec() const { return spec_; }

 private:
  const arch::ArchSpec& spec_;
  InstructionTimer timer_;
  double average_dram_hops_ = 0;  // mean XY distance from a DRAM channel's router to a core
  // For the first n cores in use (n a divisor of the core count): the largest fraction, over all mesh links,
  // of the DRAM traffic of one core that crosses a single link, summed over the cores — DRAM bytes spread
  // over every channel, and XY routes from the edge funnel into the links next to the channels.
  std::vector<std::pair<int, double>> hottest_link_share_;  // (cores used, share)
  double hottest_link_share(int cores_used) const;
  double round_trip_cycles_ = 0;  // DRAM latency and the routers to a core and back: what a burst waits
  // One engine's bandwidth, in the bytes it moves, when a tensor's tile rows are `row_bytes` long and move
  // run-length coded to `coding` of their size (a coded burst is as many bursts, each shorter).
  double dma_bytes_per_cycle(int64_t row_bytes, double coding = 1.0) const;
  // The last unfused epilogue pass estimated, and its estimate. A CostModel serves one thread (the search
  // gives each of its threads its own).
  mutable const Mapping* pass_estimated_ = nullptr;
  mutable Cost pass_cost_;

  // evaluate_contraction's parts, in the order it computes them (cost_model.cpp): what the estimate reads
  // throughout, then each resource's share of the estimate, each adding its figures to `cost`.
  struct EstimateInputs;
  struct CoreTraffic;
  struct DmaStreams;
  double dram_traffic(const EstimateInputs& in, Cost& cost) const;  // returns the output's coding
  InstructionProfile tile_compute(const EstimateInputs& in, Cost& cost) const;
  CoreTraffic core_traffic(const EstimateInputs& in, double o_coding, Cost& cost) const;
  DmaStreams dma_streams(const EstimateInputs& in, const CoreTraffic& core, double o_coding,
                         Cost& cost) const;
  void noc_share(const EstimateInputs& in, const CoreTraffic& core, Cost& cost) const;
  void sram_traffic(const EstimateInputs& in, const CoreTraffic& core, Cost& cost) const;
  void load_stalls(const EstimateInputs& in, const CoreTraffic& core, const DmaStreams& streams,
                   const InstructionProfile& pe, double o_coding, Cost& cost) const;
  void overhead(const EstimateInputs& in, const CoreTraffic& core, const DmaStreams& streams, double o_coding,
                Cost& cost) const;
  void energy(const EstimateInputs& in, Cost& cost) const;
};

}  // namespace tessera::mapper
