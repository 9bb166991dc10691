#include "common/counters.hpp"

namespace tessera {

#define TESSERA_RUN_COUNTER_DECL(name, unit, merge, shown, table, description) \
  CounterDecl<RunCounters>{#name, unit, description, Merge::merge, Shown::shown, table, &RunCounters::name},
#define TESSERA_UNIT_COUNTER_DECL(name, unit, merge, shown, table, description) \
  CounterDecl<UnitCounters>{#name, unit, description, Merge::merge, Shown::shown, table, &UnitCounters::name},

const std::array<CounterDecl<RunCounters>, kRunCounters>& run_counters() {
  static const std::array<CounterDecl<RunCounters>, kRunCounters> counters = {
      {TESSERA_RUN_COUNTERS(TESSERA_RUN_COUNTER_DECL)}};
  return counters;
}

const std::array<CounterDecl<UnitCounters>, kUnitCounters>& unit_counters() {
  static const std::array<CounterDecl<UnitCounters>, kUnitCounters> counters = {
      {TESSERA_UNIT_COUNTERS(TESSERA_UNIT_COUNTER_DECL)}};
  return counters;
}

#undef TESSERA_RUN_COUNTER_DECL
#undef TESSERA_UNIT_COUNTER_DECL

}  // namespace tessera
