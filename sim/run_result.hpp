// What one simulated run of a tile program produces: cycles, per-unit time split into busy and bubbles by
// cause, traffic and work counters, the optional trace, and (with functional execution) the output tensors.
// Stats are typed integers counted on the hot path; derived figures (bandwidth, utilisation, energy) are
// computed when the report is built (cli/report_builder.cpp), and the report's keys carry the units.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "arch/isa/program.hpp"
#include "ops/tensor.hpp"
#include "sim/time.hpp"

namespace tessera::sim {

// Per unit, its cycles busy and in each bubble cause (arch/isa/cause.hpp), indexed by the cause.
using CauseCycles = std::array<int64_t, arch::kCauses>;

// One interval of a unit's timeline, for the Chrome trace.
struct TraceSegment {
  Tick start = 0;  // relative to the run's start
  Tick end = 0;
  arch::Cause cause = arch::Cause::busy;
  int32_t instruction = -1;  // index into the unit's instruction list, -1 for idle time between instructions
};

struct UnitCounters {
  int64_t instructions = 0;
  int64_t macs = 0;         // PE array
  int64_t folds = 0;        // PE array: folds (RS: rounds)
  int64_t active_pes = 0;   // PE array: the most PEs one fold or round used
  int64_t bytes_moved = 0;  // DMA and NoC engines: payload bytes delivered
  int64_t bursts = 0;       // DMA and NoC engines
};

struct UnitResult {
  int core = 0;
  arch::QueueId queue;
  std::string name;  // "core0,1.pe"
  CauseCycles cycles{};
  UnitCounters counters;
  std::vector<TraceSegment> trace;  // empty unless tracing was asked for
};

struct TrafficCounters {
  int64_t dram_read_bytes = 0;
  int64_t dram_write_bytes = 0;
  int64_t sram_read_bytes = 0;
  int64_t sram_write_bytes = 0;
  int64_t noc_bytes = 0;            // payload bytes that entered the mesh (counted once per destination)
  int64_t noc_byte_hops = 0;        // bytes times mesh links crossed
  int64_t bank_conflict_ticks = 0;  // delay added by SRAM bank arbitration, summed over transfers
};

struct RunResult {
  Tick end_ticks = 0;  // the last unit finished here, relative to the run's start
  int64_t cycles = 0;  // ticks_to_cycles_ceil(end_ticks)
  int64_t instructions = 0;
  int64_t macs = 0;
  int64_t active_pes = 0;  // the most PEs of one core's array a fold or round used
  // PE instructions whose operand tiles another unit overwrote while the array was reading them: the program
  // races a write against a read (functional runs only; the result then uses the new bytes, as hardware
  // would).
  int64_t sram_hazards = 0;
  TrafficCounters traffic;
  std::vector<UnitResult> units;
  bool functional = false;
  std::map<int, ops::HostTensor> outputs;  // program tensor index -> contents at the end (functional runs)
  double host_seconds = 0;
};

}  // namespace tessera::sim
