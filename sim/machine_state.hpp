// What the units of a machine share during a run: the resources (Fabric), the bytes of every SRAM and DRAM
// tensor, the semaphores, and the run's clock origin. Owned by Machine; units hold a reference.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "arch/program.hpp"
#include "sim/fabric.hpp"
#include "sim/scheduler.hpp"
#include "sim/semaphore.hpp"

namespace tessera::sim {

struct CoreState {
  std::vector<uint8_t> sram;         // sized only for functional runs
  std::deque<Semaphore> semaphores;  // one per Program::semaphores entry (sc_event cannot be copied)
};

struct MachineState {
  MachineState(const arch::ArchSpec& machine_spec, Scheduler& machine_scheduler)
      : spec(machine_spec), fabric(machine_spec), scheduler(machine_scheduler) {}

  const arch::ArchSpec& spec;
  Fabric fabric;
  Scheduler& scheduler;
  std::deque<CoreState> cores;  // deque: CoreState holds sc_events, which cannot be copied or moved
  std::vector<std::vector<uint8_t>> dram;  // per program tensor, row-major, sized only for functional runs
  const arch::Program* program = nullptr;
  bool functional = true;
  Tick origin = 0;           // absolute SystemC time of the run's start
  Tick last_completion = 0;  // relative: the latest completion of any instruction so far

  // Runs `action` at `at` ticks after the run's origin.
  void at(Tick at, std::function<void()> action) {
    last_completion = at > last_completion ? at : last_completion;
    scheduler.at(origin + at, std::move(action));
  }
  Tick now() const { return now_ticks() - origin; }
};

}  // namespace tessera::sim
