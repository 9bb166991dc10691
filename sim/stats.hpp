// Every counter of a run declared once (STYLE.md, "Stats and reports"): its name, its unit, what it counts,
// and the member that holds it. Whatever handles counters generically walks these lists — the fork-and-merge
// of parallel runs sends each back over its pipe by them (parallel_runs.cpp) — so a new counter is a member
// and a line here.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/run_result.hpp"

namespace tessera::sim {

template <class Counters>
struct CounterDecl {
  const char* name;
  const char* unit;
  const char* description;
  int64_t Counters::*member;
};

const std::vector<CounterDecl<RunResult>>& run_counters();
const std::vector<CounterDecl<TrafficCounters>>& traffic_counters();
const std::vector<CounterDecl<UnitCounters>>& unit_counters();

}  // namespace tessera::sim
