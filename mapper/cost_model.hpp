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
#include "mapper/instruction_timer.hpp"
#include "mapper/mapping.hpp"
#include "mapper/stage.hpp"

namespace tessera::mapper {

enum class Bound : uint8_t { compute, dram, dma, noc, sram, vector };
const char* name_of(Bound bound);

struct Cost {
  int64_t cycles = 0;             // estimated run time
  int64_t compute_cycles = 0;     // busiest core's PE array, fill and drain included
  int64_t load_stall_cycles = 0;  // busiest core: tile loads slower than the PE instruction they hide under
  int64_t stream_cycles = 0;      // ... of which operands stream (busy)
  int64_t dram_cycles = 0;        // all DRAM traffic at full DRAM bandwidth
  int64_t dma_cycles = 0;         // busiest core's DMA engines
  int64_t noc_cycles = 0;         // busiest core's NoC port
  int64_t sram_cycles = 0;        // busiest core's SRAM banks
  int64_t vector_cycles = 0;      // busiest core's vector unit: a fused epilogue's tiles, or the unfused pass
  int64_t overhead_cycles = 0;    // first loads and last store, not overlapped
  Bound bound = Bound::compute;
  std::array<int64_t, 3> dram_bytes_by_tensor{};  // A, W, O
  int64_t dram_bytes = 0;                         // all of it: A, W, O and the epilogue's
  int64_t epilogue_dram_bytes = 0;  // the epilogue's operands, and (unfused) its pass over the output
  int64_t noc_bytes = 0;            // payload into the mesh, once per destination
  int64_t reduction_bytes = 0;      // partial sums sent between cores (k split)
  int64_t sram_bytes = 0;           // all cores, reads and writes
  double energy_pj = 0;
  double pe_utilization = 0;  // MACs over PE-cycles of the cores used... of the whole machine
  double edge_waste = 0;      // PE slots of the folds left idle by ragged edges
  bool multicast_a = false, multicast_w = false;
};

// Precomputed per machine.
class CostModel {
 public:
  explicit CostModel(const arch::ArchSpec& spec);
  // The estimate of a mapping: its form's (Form::estimate).
  Cost evaluate(const Mapping& mapping) const;
  // A contraction stage's (ContractionStage::estimate): the stage, then an unfused epilogue's pass.
  Cost evaluate_with_epilogue(const Mapping& mapping) const;
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
};

}  // namespace tessera::mapper
