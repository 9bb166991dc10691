// An estimate of a mapping (DESIGN.md, "Dataflows"): what the cost model of its form says it takes — cycles,
// the time each resource needs, bytes moved at each level, energy — and which resource bounds it. Every form
// fills one (mapper/form.hpp, Form::estimate); the search ranks candidates by it.
#pragma once

#include <array>
#include <cstdint>

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

}  // namespace tessera::mapper
