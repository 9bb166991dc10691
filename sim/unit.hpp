// A unit queue of one core (a DMA engine, the PE array, the NoC engine): one SC_THREAD that takes its
// instructions in order, waits for their semaphores, runs them, and posts their signals when they complete.
// Subclasses say how an instruction runs; the base keeps the timeline, the counters and the deadlock report.
#pragma once

#include <cstddef>
#include <exception>
#include <string>
#include <systemc>
#include <vector>

#include "arch/isa/program.hpp"
#include "sim/machine_state.hpp"
#include "sim/timeline.hpp"

namespace tessera::sim {

// The stack of every unit's SC_THREAD, the only SystemC threads tessera makes (docs/design-notes.md, "SystemC
// thread stacks"). A functional PE instruction runs Eigen's GEMM on it, which places its two packed blocks on
// the stack up to EIGEN_STACK_ALLOCATION_LIMIT (128 KiB) each: with tessera's frames (under 64 KiB measured)
// at most ~320 KiB in a release build, where SystemC's default is 256 KiB (measured: the default workload
// needs 96-112 KiB; a tile whose two blocks both reach the limit would overflow). ASan's instrumented frames
// are 2-3x larger. 1 MiB leaves 3x over the release bound and 2x over the ASan one; the pages are only
// reserved (a 64x64 mesh, 28,672 threads, runs with the same resident memory as with 256 KiB).
constexpr size_t kUnitStackBytes = size_t{1} << 20;

class Unit : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Unit);
  Unit(sc_core::sc_module_name name, MachineState& machine, int core, arch::QueueId queue);

  // Gives the unit its part of the program (the instructions of its queue on its core) for the next run.
  void load(const arch::CoreProgram* core_program, bool trace);
  void start();
  bool finished() const { return next_ >= instructions_.size(); }
  // "core 0,1 pe #3 (prog.tprog:17) waits for a_full[0] of core 0,1 (0 of 1 signals)"
  std::string describe_blocked() const;
  std::exception_ptr error() const { return error_; }
  // Closes the timeline at the run's end and hands over what was measured.
  UnitResult finish(Tick end);

  int core() const { return core_; }
  const arch::QueueId& queue() const { return queue_; }

 protected:
  // Runs one instruction whose waits are satisfied now. Must schedule its completion with complete_at().
  virtual void execute(const arch::Instruction& instruction, int32_t position) = 0;
  // Extra timeline closing (the PE array's final drain).
  virtual void close_timeline() {}
  virtual void reset_run_state() {}

  // At `at` (relative ticks): runs `commit` (the functional effect), then posts the instruction's signals.
  void complete_at(Tick at, const arch::Instruction& instruction, std::function<void()> commit);
  // A run-time error of the instruction at `position` of this queue (what it found in SRAM, not its text, is
  // wrong): an InputError at its line, naming it as the program checks do.
  [[noreturn]] void fail_instruction(const arch::Instruction& instruction, int32_t position,
                                     const std::string& message, const std::string& hint = "") const;
  // Sleeps in simulated time until `at` (relative ticks).
  void wait_until(Tick at);
  Tick now() const { return machine_.now(); }

  MachineState& machine_;
  UnitTimeline timeline_;
  UnitCounters counters_;
  std::vector<WaitSegment> waits_;  // the current instruction's waits, for bubble attribution
  int core_;
  arch::QueueId queue_;

 private:
  struct Stopped {};  // thrown from a wait of a stopped run (MachineState::stop): the unit leaves its work
  void thread();
  void acquire(const arch::Instruction& instruction);
  Semaphore& semaphore(const arch::SemaphoreRef& ref);

  const arch::CoreProgram* core_program_ = nullptr;
  std::vector<const arch::Instruction*> instructions_;
  size_t next_ = 0;
  bool start_requested_ = false;
  sc_core::sc_event start_;
  const arch::SemaphoreWait* blocked_on_ = nullptr;
  int blocked_signals_taken_ = 0;
  std::exception_ptr error_;
};

}  // namespace tessera::sim
