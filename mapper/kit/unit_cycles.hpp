// What the forms that estimate by their units' busiest core (attention, MoE) share: one DMA transfer's and
// one vector instruction's cycles, and the figures of an estimate that follow from what the form filled in.
#pragma once

#include <cstdint>

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
// cycles) and its busiest core's cycles: DRAM time, the overhead (`round_trips` DRAM latencies: the
// barriers' and the first load's), cycles, the bound, PE utilisation over the op's `macs` and energy (its
// SRAM and NoC traffic are not estimated).
void finish_estimate(Cost& cost, int64_t busiest_core_cycles, const arch::ArchSpec& spec, double macs,
                     int round_trips);

}  // namespace tessera::mapper
