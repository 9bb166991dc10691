// What the units of a machine share during a run: the resources (Fabric), the bytes of every SRAM and DRAM
// tensor, the semaphores, and the run's clock origin. Owned by Machine; units hold a reference.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <vector>

#include "arch/isa/program.hpp"
#include "common/job_pool.hpp"
#include "sim/fabric.hpp"
#include "sim/scheduler.hpp"
#include "sim/semaphore.hpp"

namespace tessera::sim {

// A write that landed in a core's SRAM: [begin, end) at `at` (relative ticks).
struct SramWrite {
  Tick at = 0;
  uint64_t begin = 0;
  uint64_t end = 0;
};

struct CoreState {
  std::vector<uint8_t> sram;  // sized only for functional runs
  // Recent DMA and NoC writes, in time order, so a PE instruction can tell whether its operands changed while
  // it was reading them (a race the program lets happen); the PE unit forgets what it no longer needs.
  std::vector<SramWrite> write_log;
  // PE instructions whose arithmetic runs on another thread (MachineState::arithmetic), with the SRAM bytes
  // they read ([begin, end) pairs): a write there waits for them first.
  struct Reading {
    JobPool::Ticket job;
    uint64_t begin[2] = {0, 0}, end[2] = {0, 0};
  };
  std::vector<Reading> reading;
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
  // Where a functional run's PE arithmetic runs (RunOptions::threads > 1), or none: then each instruction
  // computes in place.
  JobPool* arithmetic = nullptr;
  Tick origin = 0;           // absolute SystemC time of the run's start
  Tick last_completion = 0;  // relative: the latest completion of any instruction so far
  // Per core, its latest instruction completion so far (none: the core has no instruction in this run): the
  // end of the core's share, after which its idle units wait for the other cores (Cause::imbalance).
  std::vector<std::optional<Tick>> core_done;
  // Per core, its vector unit's latest completion so far: until then a unit done with its own work waits for
  // the core's vector work (an epilogue, a pass over an output) rather than for the other units.
  std::vector<std::optional<Tick>> vector_done;
  int64_t hazards = 0;  // PE instructions whose operands were overwritten while they read them
  // The run's cycle bound in ticks (RunOptions::cycle_bound): a completion scheduled past it makes the run's
  // cycles exceed the bound (its end is its last completion), so the run stops there.
  Tick stop_after = kNoStop;
  bool stopping = false;  // stopped: units leave at their next wait, nothing more is scheduled
  static constexpr Tick kNoStop = ~Tick{0};

  // A completion to fill, run `at` ticks after the run's origin (Scheduler::at); none once the run is
  // stopping (this one would pass its bound: it stops the run).
  Completion* complete_at(Tick at) {
    if (stopping) return nullptr;
    if (at > stop_after) {
      stop();
      return nullptr;
    }
    last_completion = at > last_completion ? at : last_completion;
    return &scheduler.at(origin + at);
  }
  // Stops the run: pending actions are dropped and every unit waiting on a semaphore is woken to leave (a
  // unit in a timed wait leaves when it wakes). sc_start then returns with every unit back at its start
  // event.
  void stop() {
    stopping = true;
    scheduler.drop_pending();
    for (CoreState& core : cores)
      for (Semaphore& semaphore : core.semaphores) semaphore.wake();
  }
  Tick now() const { return now_ticks() - origin; }
  // Every write into a core's SRAM is announced here before its bytes land: arithmetic still reading
  // [begin, end) on another thread finishes first, so what it reads is what the run had when it started.
  void before_sram_write(int core, uint64_t begin, uint64_t end) {
    if (arithmetic == nullptr) return;
    for (const CoreState::Reading& reading : cores[core].reading)
      for (int i = 0; i < 2; ++i)
        if (begin < reading.end[i] && reading.begin[i] < end) arithmetic->wait(reading.job);
  }
  // A DMA, NoC or vector write, logged (for a PE instruction reading there meanwhile: the race) and
  // announced.
  void log_sram_write(int core, uint64_t begin, uint64_t end) {
    before_sram_write(core, begin, end);
    cores[core].write_log.push_back(SramWrite{now(), begin, end});
  }
  void log_sram_write(int core, uint64_t address, int64_t rows, int64_t row_bytes, int64_t pitch) {
    log_sram_write(core, address, address + static_cast<uint64_t>((rows - 1) * pitch + row_bytes));
  }
};

}  // namespace tessera::sim
