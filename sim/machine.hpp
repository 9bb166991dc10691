// The SystemC model of one machine (DESIGN.md, "SystemC in practice"): built once per process, then fed tile
// programs one after another — each run resets the resources and stats and starts from the current SystemC
// time. Different machines need different processes.
#pragma once

#include <memory>
#include <vector>

#include "arch/program.hpp"
#include "sim/machine_state.hpp"
#include "sim/pe_unit.hpp"
#include "sim/run_result.hpp"
#include "sim/transfer_engine.hpp"

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
