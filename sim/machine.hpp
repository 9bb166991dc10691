// The SystemC model of one machine (DESIGN.md, "SystemC in practice"): built once per process, then fed tile
// programs one after another — each run resets the resources and stats and starts from the current SystemC
// time. Different machines need different processes.
#pragma once

#include <memory>
#include <vector>

#include "arch/isa/program.hpp"
#include "sim/machine_state.hpp"
#include "sim/run_result.hpp"
#include "sim/scheduler.hpp"
#include "sim/unit.hpp"

namespace tessera::sim {

struct RunOptions {
  bool functional = true;  // move real bytes and do real arithmetic (false: --timing-only)
  bool trace = false;      // keep every unit's timeline segments for the Chrome trace
};

class Machine {
 public:
  // Elaborates the model. At most one Machine per process; construct it before any other SystemC object.
  explicit Machine(const arch::ArchSpec& spec);
  ~Machine();

  // Runs a program (checked with arch::check_program first). Throws InputError on a deadlock, naming every
  // unit that still waits and what for.
  RunResult run(const arch::Program& program, const RunOptions& options);

  // Timing-only runs of several programs, up to `workers` at once: each in a child process forked from this
  // one (the elaborated model is copied with it; SystemC elaborates once per process, so a process cannot
  // run two models side by side), its result sent back over a pipe. Results are exactly those of run(), in
  // the programs' order, whatever `workers` is. A program whose child fails is run here, so that its error is
  // thrown as run() would throw it.
  std::vector<RunResult> run_timing(const std::vector<const arch::Program*>& programs, int workers);

  const arch::ArchSpec& spec() const { return spec_; }

 private:
  void prepare_memory(const arch::Program& program, bool functional);

  arch::ArchSpec spec_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<MachineState> state_;
  std::vector<std::unique_ptr<Unit>> units_;
  bool initialized_ = false;  // SystemC's initialisation phase has run
  bool broken_ = false;       // a deadlock or fault left units blocked: this model cannot run again
};

}  // namespace tessera::sim
