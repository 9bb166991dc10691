// The SystemC model of one machine (DESIGN.md, "SystemC in practice"): built once per process, then fed tile
// programs one after another — each run resets the resources and stats and starts from the current SystemC
// time. Different machines need different processes.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "arch/isa/program.hpp"
#include "sim/machine_state.hpp"
#include "sim/run_result.hpp"
#include "sim/scheduler.hpp"
#include "sim/unit.hpp"

namespace tessera::sim {

struct RunOptions {
  RunOptions(bool functional_run = true, bool traced = false, std::optional<int64_t> bound = std::nullopt)
      : functional(functional_run), trace(traced), cycle_bound(bound) {}
  bool functional;  // move real bytes and do real arithmetic (false: --timing-only)
  bool trace;       // keep every unit's timeline segments for the Chrome trace
  // Stop the run as soon as its cycles are sure to exceed this many (a completion is scheduled past it): the
  // result is then RunResult::stopped. A run that ends within the bound is exactly as without one.
  std::optional<int64_t> cycle_bound;
  // A functional run's PE arithmetic on up to this many threads, this one among them; the result is the same
  // bytes and cycles whatever the count.
  int threads = 1;
};

// The cycle bound a timing run of Machine::run_timing gets when it starts, from the results in so far
// (finished[j] is null until program j's result is in; a later bound never changes a started run).
using CycleBoundOf =
    std::function<std::optional<int64_t>(size_t index, const std::vector<const RunResult*>& finished)>;

class WorkerPool;

// Who makes run_timing's programs: this process, sending each to a worker in its binary form, or the workers
// themselves, each from its copy of this process (forked for the call), sent only the index.
enum class ProgramsMadeBy { this_process, workers };

class Machine {
 public:
  // Elaborates the model. At most one Machine per process; construct it before any other SystemC object.
  explicit Machine(const arch::ArchSpec& spec);
  ~Machine();

  // Runs a program (checked with arch::check_program first). Throws InputError on a deadlock, naming every
  // unit that still waits and what for.
  RunResult run(const arch::Program& program, const RunOptions& options);

  // Timing-only runs of `count` programs, up to `workers` at once, each with the cycle bound `bound_of` gives
  // it when it starts (none without bound_of). program_of(i) makes program i when it is needed — so the
  // caller may lower it then, while earlier programs run; the reference it returns need only stay valid until
  // the next call of program_of (the caller may keep one program at a time), and a second call for the same
  // i must make the same program.
  // With workers > 1 this process and `workers - 1` worker processes run them: the workers are forked from
  // this one on the first such call and kept for the life of the Machine (the elaborated model comes with the
  // fork; SystemC elaborates once per process, so a process cannot run two models side by side): a program
  // travels in its binary form (arch/isa/program_binary.hpp), its result comes back in a flat form. This
  // process makes the programs in turn and hands each to the least busy worker, ahead of the one it runs,
  // unless that worker has enough in hand to stay busy while this process runs the program itself. Results
  // are exactly those of run() with the same bound, in the programs' order, whatever `workers` is. A program
  // whose worker fails is run here, so that its error is thrown as run() would throw it; a worker that dies
  // is replaced.
  // `result_in(i, result)`, when given, is told of each result as it comes in (for progress; in the order
  // the runs end, which depends on the workers).
  // With `made_by` workers, each worker makes the programs it runs: program_of(i) is called in the worker's
  // own copy of this process (forked afresh by this call, so program_of and what it reads must not change
  // during it), and only i travels; this process keeps each worker two programs ahead and makes and runs the
  // others itself. The parent then no longer makes every program while the workers only simulate.
  // `worker_lost(i)`, when given, is told of each program whose worker died before it replied (killed, out of
  // memory), before the program is run again here.
  std::vector<RunResult> run_timing(size_t count,
                                    const std::function<const arch::Program&(size_t)>& program_of,
                                    int workers, const CycleBoundOf& bound_of = {},
                                    const std::function<void(size_t, const RunResult&)>& result_in = {},
                                    ProgramsMadeBy made_by = ProgramsMadeBy::this_process,
                                    const std::function<void(size_t)>& worker_lost = {});
  // Worker processes started so far (sim/worker_pool.hpp), for tests.
  int workers_started() const;

  const arch::ArchSpec& spec() const { return spec_; }

 private:
  void prepare_memory(const arch::Program& program, bool functional);
  std::optional<std::string> serve_worker_request(const std::string& request);

  arch::ArchSpec spec_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<MachineState> state_;
  std::vector<std::unique_ptr<Unit>> units_;
  bool initialized_ = false;  // SystemC's initialisation phase has run
  bool broken_ = false;       // a deadlock or fault left units blocked: this model cannot run again
  std::unique_ptr<WorkerPool> workers_;  // started by the first run_timing with workers > 1
  // The program_of of the run_timing call whose workers make their programs (ProgramsMadeBy::workers): set
  // in this process for the call, so that a worker forked meanwhile has it in its copy.
  const std::function<const arch::Program&(size_t)>* workers_make_ = nullptr;
};

}  // namespace tessera::sim
