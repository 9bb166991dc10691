// What one simulated run of a tile program produces: cycles, per-unit time split into busy and bubbles by
// cause, traffic and work counters, the optional trace, and (with functional execution) the output tensors.
// Stats are typed integers counted on the hot path, declared once in common/counters.hpp; derived figures
// (bandwidth, utilisation, energy) are computed when the report is built (flow/records.cpp), and the report's
// keys carry the units.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "arch/isa/program.hpp"
#include "common/counters.hpp"
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

struct UnitResult {
  int core = 0;
  arch::QueueId queue;
  std::string name;  // "core0,1.pe"
  CauseCycles cycles{};
  UnitCounters counters;            // declared in common/counters.hpp
  std::vector<TraceSegment> trace;  // empty unless tracing was asked for
};

struct RunResult {
  // The run passed its cycle bound (RunOptions::cycle_bound) and was stopped there: it takes more than
  // bound_cycles cycles, and no other figure of it is known (cycles and the rest stay zero).
  bool stopped = false;
  int64_t bound_cycles = 0;
  Tick end_ticks = 0;    // the last unit finished here, relative to the run's start
  RunCounters counters;  // cycles, work and traffic, declared in common/counters.hpp
  std::vector<UnitResult> units;
  bool functional = false;
  std::map<int, ops::HostTensor> outputs;  // program tensor index -> contents at the end (functional runs)
  double host_seconds = 0;
};

}  // namespace tessera::sim
