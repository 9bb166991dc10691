// What the forms that estimate by their units' busiest core (attention, MoE) share: one DMA transfer's and
// one vector instruction's cycles, and the figures of an estimate that follow from what the form filled in.
#pragma once

#include <cstdint>
#include <vector>

#include "arch/isa/vec_op.hpp"
#include "arch/spec.hpp"
#include "mapper/cost.hpp"

namespace tessera::mapper {

// One DMA transfer's cycles on an engine: its descriptors' setup and its bytes at the engine's rate.
int64_t transfer_cycles(const arch::DmaSpec& dma, int64_t bytes, int64_t descriptors);
// A vector instruction's cycles (arch/timing/vector_timing.hpp).
int64_t vector_cycles(const arch::VectorSpec& vector, arch::VectorKind kind, int64_t rows, int64_t cols,
                      int64_t extra_simple_ops = 0);

// An estimate's figures that follow from what the form filled in (dram_bytes; compute, vector, DMA and NoC
// cycles) and its busiest core's cycles when `cores_used` cores work: DRAM time; the mesh's, where the
// DRAM's bytes, spread over the channels and those cores, cross the busiest link (arch/noc.hpp: on a 4x4
// mesh with 8 edge channels, two cores' shares pass one link when all 16 read, capping 64 B/cycle links at
// 512 B/cycle whatever the DRAM delivers); the overhead (`round_trips` DRAM latencies: the barriers' and the
// first load's); cycles, the bound, PE utilisation over the op's `macs` and energy (its SRAM and NoC
// traffic are not estimated).
struct EstimateTotals {
  int64_t busiest_core_cycles = 0;
  int cores_used = 1;
  double macs = 0;
  int round_trips = 0;
};
void finish_estimate(Cost& cost, const EstimateTotals& totals, const arch::ArchSpec& spec);
// How many of `per_core` are non-zero (cores that have work): at least 1.
int cores_with_work(const std::vector<int64_t>& per_core);

}  // namespace tessera::mapper
