// The units of a core, built from one table keyed by queue kind (DESIGN.md, "One place per concept"): a unit
// kind is a sim module (a Unit) and a line here. The table's order is the order in which a core's units are
// built, which fixes the order of their SystemC processes and of their rows in reports.
#pragma once

#include <memory>
#include <vector>

#include "arch/isa/queue.hpp"
#include "arch/spec.hpp"
#include "sim/unit.hpp"

namespace tessera::sim {

struct UnitKind {
  arch::QueueKind queue;
  int (*queues_per_core)(const arch::ArchSpec& spec);
  std::unique_ptr<Unit> (*make)(sc_core::sc_module_name name, MachineState& machine, int core,
                                arch::QueueId queue);
};

const std::vector<UnitKind>& unit_table();

}  // namespace tessera::sim
