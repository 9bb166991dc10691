// Timing runs with a cycle bound, and in persistent worker processes (sim/machine.hpp, run_timing): a bound
// stops a run exactly when its cycles would exceed it and leaves the machine as fresh; workers give the
// results run() gives, in order, are forked once, are replaced when one fails, and do not outlive the
// Machine; an op's rows keep their best as without stopping, and a candidate is stopped exactly when its
// cycles exceed the fewest of the earlier candidates of its row. Each TEST is its own process.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cerrno>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

#include "arch/isa/program_text.hpp"
#include "common/config.hpp"
#include "common/counters.hpp"
#include "e2e/pipeline_fixture.hpp"
#include "e2e/process_table.hpp"
#include "flow/candidates.hpp"
#include "flow/evaluate_op.hpp"
#include "mapper/lowering.hpp"
#include "mapper/search.hpp"
#include "ops/workload.hpp"
#include "sim/machine.hpp"

namespace tessera {
namespace {

// Two programs of one GEMM on mesh4x4 (16 cores): its best WS and OS mappings, 30k-60k cycles each.
struct TwoPrograms {
  arch::ArchSpec spec = load_arch("mesh4x4");
  ops::Op op = gemm_op(1024, 512, 256, DType::bf16);
  arch::Program ws = mapper::lower(op, 1, best_mapping(op, spec, arch::Dataflow::ws), spec, "gemm.ws");
  arch::Program os = mapper::lower(op, 1, best_mapping(op, spec, arch::Dataflow::os), spec, "gemm.os");
};

// Every figure of a timing run but its host time.
// `program` read back from its text with the first signal dropped: a wait can never be satisfied (the
// program check says so), as "broken.tprog".
arch::Program without_first_signal(const arch::Program& program) {
  std::string text = arch::write_program(program);
  const size_t signal = text.find(" ; signal ");
  if (signal == std::string::npos) throw std::logic_error("the program has a signal to drop");
  text.erase(signal, text.find('\n', signal) - signal);
  return arch::read_program(text, "broken.tprog");
}

// The message of the InputError `body` throws ("" if none).
template <class Body>
std::string error_of(Body&& body) {
  try {
    body();
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

// Every declared counter (common/counters.hpp) of the run and of each unit, walked from the lists.
void expect_same_run(const sim::RunResult& a, const sim::RunResult& b, const std::string& what) {
  EXPECT_EQ(a.stopped, b.stopped) << what;
  EXPECT_EQ(a.bound_cycles, b.bound_cycles) << what;
  EXPECT_EQ(a.end_ticks, b.end_ticks) << what;
  for (const CounterDecl<RunCounters>& counter : run_counters())
    EXPECT_EQ(a.counters.*counter.member, b.counters.*counter.member) << what << " " << counter.name;
  ASSERT_EQ(a.units.size(), b.units.size()) << what;
  for (size_t u = 0; u < a.units.size(); ++u) {
    EXPECT_EQ(a.units[u].name, b.units[u].name) << what;
    EXPECT_EQ(a.units[u].cycles, b.units[u].cycles) << what << " " << a.units[u].name;
    for (const CounterDecl<UnitCounters>& counter : unit_counters())
      EXPECT_EQ(a.units[u].counters.*counter.member, b.units[u].counters.*counter.member)
          << what << " " << a.units[u].name << " " << counter.name;
  }
}

TEST(CycleBound, ARunAfterAStoppedRunTakesWhatItTakesOnAFreshMachine) {
  const TwoPrograms programs;
  sim::Machine machine(programs.spec);
  const sim::RunResult fresh = machine.run(programs.ws, sim::RunOptions{false, false});
  ASSERT_FALSE(fresh.stopped);
  // Stopped early (units mid-instruction, semaphore waits, pending completions), then again near its end.
  for (const int64_t bound : {int64_t{1000}, fresh.counters.cycles / 2}) {
    const sim::RunResult stopped = machine.run(programs.os, sim::RunOptions{false, false, bound});
    EXPECT_TRUE(stopped.stopped) << bound;
    EXPECT_EQ(stopped.bound_cycles, bound);
    EXPECT_EQ(stopped.counters.cycles, 0) << "a stopped run has no cycles";
    EXPECT_TRUE(stopped.units.empty());
    expect_same_run(machine.run(programs.ws, sim::RunOptions{false, false}), fresh,
                    "after a run stopped at " + std::to_string(bound));
  }
  // With arithmetic too: the stopped run left no byte or semaphore behind that changes the outputs.
  machine.run(programs.ws, sim::RunOptions{false, false, fresh.counters.cycles / 3});
  const sim::RunResult functional = machine.run(programs.ws, sim::RunOptions{true, false});
  EXPECT_EQ(functional.counters.cycles, fresh.counters.cycles);
  std::string detail;
  EXPECT_TRUE(output_matches_reference(programs.op, 1, functional, &detail)) << detail;
}

TEST(CycleBound, StopsARunExactlyWhenItsCyclesWouldExceedTheBound) {
  const TwoPrograms programs;
  sim::Machine machine(programs.spec);
  const sim::RunResult full = machine.run(programs.os, sim::RunOptions{false, false});
  // A bound at or above the run's cycles stops nothing: the result is the unbounded one.
  for (const int64_t bound : {full.counters.cycles, full.counters.cycles + 1, int64_t{1} << 62, INT64_MAX})
    expect_same_run(machine.run(programs.os, sim::RunOptions{false, false, bound}), full,
                    "bound " + std::to_string(bound));
  // One cycle less: stopped.
  const sim::RunResult stopped =
      machine.run(programs.os, sim::RunOptions{false, false, full.counters.cycles - 1});
  EXPECT_TRUE(stopped.stopped);
  EXPECT_EQ(stopped.bound_cycles, full.counters.cycles - 1);
  EXPECT_EQ(stopped.counters.instructions, programs.os.instruction_count());
}

// Every declared counter comes back from a worker process as run() gives it (the fork-and-merge walks the
// lists), and the run's totals over its units merge them by their rule. Counters that stay 0 in this run
// carry nothing to compare: the test names them, so a new counter that this run exercises is checked.
TEST(Counters, EveryCounterComesBackFromAWorkerAsRunGivesIt) {
  const TwoPrograms programs;
  sim::Machine machine(programs.spec);
  const sim::RunResult here = machine.run(programs.ws, sim::RunOptions{false, false});
  const sim::RunResult os_here = machine.run(programs.os, sim::RunOptions{false, false});
  // Two threads: the parent runs one program, its worker the other and sends its result back.
  const std::vector<const arch::Program*> batch = {&programs.os, &programs.ws};
  const std::vector<sim::RunResult> from_workers = machine.run_timing(
      batch.size(), [&](size_t i) -> const arch::Program& { return *batch[i]; }, 2);
  ASSERT_EQ(machine.workers_started(), 1);
  expect_same_run(from_workers[0], os_here, "os, parent or worker");
  expect_same_run(from_workers[1], here, "ws, parent or worker");
  // A timing-only run has no hazards (functional runs only), this GEMM's transfers meet no bank conflict,
  // and without an epilogue it has no vector work.
  const std::set<std::string> zero_here = {"sram_hazards", "bank_conflict_ticks"},
                              zero_in_units = {"vector_elements"};
  for (const CounterDecl<RunCounters>& counter : run_counters())
    EXPECT_EQ(here.counters.*counter.member == 0, zero_here.count(counter.name) == 1) << counter.name;
  UnitCounters all_units;
  for (const sim::UnitResult& unit : here.units) merge_into(all_units, unit.counters, unit_counters());
  for (const CounterDecl<UnitCounters>& counter : unit_counters())
    EXPECT_EQ(all_units.*counter.member == 0, zero_in_units.count(counter.name) == 1) << counter.name;
  EXPECT_EQ(here.counters.pe_macs, all_units.macs);
  EXPECT_EQ(here.counters.active_pes, all_units.active_pes);
}

TEST(Workers, GiveTheResultsOfRunInOrderAndAreForkedOnce) {
  const TwoPrograms programs;
  sim::Machine machine(programs.spec);
  const sim::RunResult ws = machine.run(programs.ws, sim::RunOptions{false, false});
  const sim::RunResult os = machine.run(programs.os, sim::RunOptions{false, false});
  const sim::RunResult os_stopped =
      machine.run(programs.os, sim::RunOptions{false, false, os.counters.cycles - 1});
  const std::vector<const arch::Program*> batch = {&programs.ws, &programs.os, &programs.ws, &programs.os,
                                                   &programs.os};
  int made = 0;
  auto program_of = [&](size_t i) -> const arch::Program& {
    ++made;
    return *batch[i];
  };
  // The last program is bounded by the fewest cycles of the OS runs before it that have finished when it
  // starts: with or without a finished one, its bound stops it (os.counters.cycles - 1 at most).
  auto bound_of = [&](size_t i,
                      const std::vector<const sim::RunResult*>& finished) -> std::optional<int64_t> {
    if (i != 4) return std::nullopt;
    std::optional<int64_t> fewest;
    for (size_t j : {size_t{1}, size_t{3}})
      if (finished[j] && (!fewest || finished[j]->counters.cycles < *fewest))
        fewest = finished[j]->counters.cycles;
    return fewest ? *fewest - 1 : os.counters.cycles - 1;
  };
  for (int round = 0; round < 2; ++round) {
    const std::vector<sim::RunResult> results = machine.run_timing(batch.size(), program_of, 3, bound_of);
    ASSERT_EQ(results.size(), batch.size());
    expect_same_run(results[0], ws, "ws");
    expect_same_run(results[1], os, "os");
    expect_same_run(results[2], ws, "ws again");
    expect_same_run(results[3], os, "os again");
    expect_same_run(results[4], os_stopped, "os bounded");
  }
  EXPECT_EQ(made, 10) << "each program is made once per batch";
  EXPECT_EQ(machine.workers_started(), 2)
      << "two worker processes (and the parent), kept for the second batch";
  // Asked for 64 workers with 5 programs, it forks no more than 4 beside itself (a pool of its own: the one
  // of 2 is too small), then keeps them for a batch of 3 (issue "hardening 2": --threads 1024 forked 1,023
  // workers for 9 candidates).
  const std::vector<sim::RunResult> many = machine.run_timing(batch.size(), program_of, 64, bound_of);
  expect_same_run(many[1], os, "os with 64 workers asked for");
  expect_same_run(many[4], os_stopped, "os bounded with 64 workers asked for");
  EXPECT_EQ(machine.workers_started(), 4);
  const std::vector<sim::RunResult> fewer = machine.run_timing(3, program_of, 64, bound_of);
  expect_same_run(fewer[2], ws, "ws, a batch of 3");
  EXPECT_EQ(machine.workers_started(), 4) << "the larger pool is kept";
  // One worker gives results in order too (and starts none).
  const std::vector<sim::RunResult> alone = machine.run_timing(batch.size(), program_of, 1, bound_of);
  expect_same_run(alone[1], os, "os alone");
  expect_same_run(alone[4], os_stopped, "os bounded alone");
}

TEST(Workers, AProgramWhoseWorkerFailsIsRunHereAndThrowsItsErrorAndTheWorkerIsReplaced) {
  const TwoPrograms programs;
  // The WS program with its first signal dropped: a wait can never be satisfied (the program check says so).
  const arch::Program broken = without_first_signal(programs.ws);
  sim::Machine machine(programs.spec);
  const sim::RunResult os = machine.run(programs.os, sim::RunOptions{false, false});
  // It fails in the first worker long before the others' runs end; whatever that worker had been handed
  // after it is run elsewhere.
  const std::vector<const arch::Program*> batch = {&broken, &programs.os, &programs.os, &programs.os};
  const std::string thrown = error_of([&] {
    machine.run_timing(
        batch.size(), [&](size_t i) -> const arch::Program& { return *batch[i]; }, 3);
  });
  // The parent's own run threw it, naming the program's file as run() does.
  const std::string expected = error_of([&] { machine.run(broken, sim::RunOptions{false, false}); });
  EXPECT_NE(expected.find("broken.tprog:"), std::string::npos) << expected;
  EXPECT_EQ(thrown, expected);
  // The failed worker exited; the next program handed to it starts a new one (in this batch or the next,
  // depending on when its failure came in).
  const std::vector<const arch::Program*> next = {&programs.os, &programs.os};
  const std::vector<sim::RunResult> results = machine.run_timing(
      next.size(), [&](size_t i) -> const arch::Program& { return *next[i]; }, 3);
  expect_same_run(results[0], os, "os after a failure");
  expect_same_run(results[1], os, "os after a failure");
  EXPECT_GE(machine.workers_started(), 3) << "the failed worker was replaced";
}

// Made by the workers: each worker makes the programs it is sent the indices of, in its own copy of this
// process; the results are run()'s, in order, bounds included, and each batch forks its own workers (a
// worker forked for an earlier batch holds that batch's program_of: the second round's programs differ, so
// a worker kept from the first would give wrong results).
TEST(Workers, ThatMakeTheirOwnProgramsGiveTheResultsOfRunInOrderAndAreForkedForEachBatch) {
  const TwoPrograms programs;
  sim::Machine machine(programs.spec);
  const sim::RunResult ws = machine.run(programs.ws, sim::RunOptions{false, false});
  const sim::RunResult os = machine.run(programs.os, sim::RunOptions{false, false});
  const sim::RunResult os_stopped =
      machine.run(programs.os, sim::RunOptions{false, false, os.counters.cycles - 1});
  const sim::RunResult ws_stopped =
      machine.run(programs.ws, sim::RunOptions{false, false, os.counters.cycles - 1});
  auto bound_of = [&](size_t i, const std::vector<const sim::RunResult*>&) -> std::optional<int64_t> {
    if (i == 5) return os.counters.cycles - 1;
    return std::nullopt;
  };
  for (int round = 0; round < 2; ++round) {
    // A batch of its own each round, and made differently: the second round swaps WS and OS, so a worker
    // that made the first round's programs would give the wrong results.
    std::vector<const arch::Program*> batch;
    for (int i = 0; i < 6; ++i) batch.push_back((i + round) % 2 == 0 ? &programs.ws : &programs.os);
    std::vector<int> made(batch.size(), 0);  // this process's calls (a worker counts in its copy)
    auto program_of = [&](size_t i) -> const arch::Program& {
      ++made[i];
      return *batch[i];
    };
    const std::vector<sim::RunResult> results =
        machine.run_timing(batch.size(), program_of, 2, bound_of, {}, sim::ProgramsMadeBy::workers);
    ASSERT_EQ(results.size(), batch.size());
    for (size_t i = 0; i < batch.size(); ++i) {
      const bool is_ws = batch[i] == &programs.ws;
      expect_same_run(results[i], i < 5 ? (is_ws ? ws : os) : (is_ws ? ws_stopped : os_stopped),
                      "round " + std::to_string(round) + " program " + std::to_string(i));
    }
    int made_here = 0;
    for (int count : made) made_here += count;
    EXPECT_LT(made_here, static_cast<int>(batch.size())) << "the worker made some of them";
    EXPECT_EQ(machine.workers_started(), 1) << "the pool of this batch: one worker";
  }
}

TEST(Workers, ThatMakeTheirOwnProgramsPassAFailureToTheParentWhichThrowsIt) {
  const TwoPrograms programs;
  const arch::Program broken = without_first_signal(programs.ws);
  sim::Machine machine(programs.spec);
  const std::vector<const arch::Program*> batch = {&broken, &programs.os, &programs.os, &programs.os};
  const std::string thrown = error_of([&] {
    machine.run_timing(
        batch.size(), [&](size_t i) -> const arch::Program& { return *batch[i]; }, 2, {}, {},
        sim::ProgramsMadeBy::workers);
  });
  const std::string expected = error_of([&] { machine.run(broken, sim::RunOptions{false, false}); });
  EXPECT_EQ(thrown, expected);
}

TEST(Workers, AProgramWhoseWorkerDiesMidRunIsSaidAndRunHere) {
  const TwoPrograms programs;
  sim::Machine machine(programs.spec);
  const sim::RunResult ws = machine.run(programs.ws, sim::RunOptions{false, false});
  const sim::RunResult os = machine.run(programs.os, sim::RunOptions{false, false});
  const std::vector<const arch::Program*> batch = {&programs.ws, &programs.os, &programs.ws};
  const pid_t parent = ::getpid();
  // The worker sent program 1 (each worker is sent one before the parent runs any) dies as it makes it.
  auto program_of = [&](size_t i) -> const arch::Program& {
    if (i == 1 && ::getpid() != parent) ::raise(SIGKILL);
    return *batch[i];
  };
  std::vector<size_t> lost;
  const std::vector<sim::RunResult> results =
      machine.run_timing(batch.size(), program_of, 3, {}, {}, sim::ProgramsMadeBy::workers,
                         [&](size_t i) { lost.push_back(i); });
  EXPECT_EQ(lost, std::vector<size_t>{1});
  expect_same_run(results[0], ws, "ws");
  expect_same_run(results[1], os, "os, run here");
  expect_same_run(results[2], ws, "ws");
}

// With --threads 2, one worker process runs programs beside the parent.
TEST(Workers, TwoThreadsAreTheParentAndOneWorker) {
  const TwoPrograms programs;
  sim::Machine machine(programs.spec);
  const sim::RunResult ws = machine.run(programs.ws, sim::RunOptions{false, false});
  const sim::RunResult os = machine.run(programs.os, sim::RunOptions{false, false});
  const std::vector<const arch::Program*> batch = {&programs.ws, &programs.os, &programs.ws,
                                                   &programs.os, &programs.ws, &programs.os};
  const std::vector<sim::RunResult> results = machine.run_timing(
      batch.size(), [&](size_t i) -> const arch::Program& { return *batch[i]; }, 2);
  for (size_t i = 0; i < batch.size(); ++i)
    expect_same_run(results[i], i % 2 == 0 ? ws : os, "program " + std::to_string(i));
  EXPECT_EQ(machine.workers_started(), 1);
}

TEST(Workers, AProgramThatFailsInTheParentThrowsItsErrorOnceTheWorkersAreDone) {
  const TwoPrograms programs;
  const arch::Program broken = without_first_signal(programs.ws);
  // Two workers take the first two and one of them the third; with each busy with a program as large as the
  // last, the parent runs the last, the broken one, itself: its error is thrown as run() throws it, once the
  // workers are done.
  sim::Machine machine(programs.spec);
  const std::vector<const arch::Program*> batch = {&programs.os, &programs.os, &programs.os, &broken};
  const std::string thrown = error_of([&] {
    machine.run_timing(
        batch.size(), [&](size_t i) -> const arch::Program& { return *batch[i]; }, 3);
  });
  // The program check rejects it, which leaves the model able to run: run() on it gives the expected error.
  const std::string expected = error_of([&] { machine.run(broken, sim::RunOptions{false, false}); });
  EXPECT_NE(expected.find("broken.tprog:"), std::string::npos) << expected;
  EXPECT_EQ(thrown, expected);
  EXPECT_EQ(machine.workers_started(), 2) << "no worker failed";
}

// The worker processes of this process.
std::vector<pid_t> children() {
  return children_of(::getpid());
}

TEST(Workers, AWorkerThatDiesIsReplaced) {
  const TwoPrograms programs;
  sim::Machine machine(programs.spec);
  const sim::RunResult os = machine.run(programs.os, sim::RunOptions{false, false});
  // Three programs, so that three workers asked for are the parent and two worker processes.
  const std::vector<const arch::Program*> batch = {&programs.ws, &programs.os, &programs.ws};
  auto program_of = [&](size_t i) -> const arch::Program& { return *batch[i]; };
  machine.run_timing(batch.size(), program_of, 3);
  const std::vector<pid_t> workers = children();
  ASSERT_EQ(workers.size(), 2u);
  ASSERT_EQ(::kill(workers.front(), SIGKILL), 0);
  int status = 0;
  while (::waitpid(workers.front(), &status, WNOHANG) == 0 && ::kill(workers.front(), 0) == 0) {
  }
  const std::vector<sim::RunResult> results = machine.run_timing(batch.size(), program_of, 3);
  expect_same_run(results[1], os, "os");
  EXPECT_EQ(machine.workers_started(), 3);
  EXPECT_EQ(children().size(), 2u);
}

TEST(Workers, NoneOutlivesItsMachine) {
  const TwoPrograms programs;
  std::optional<sim::Machine> machine(std::in_place, programs.spec);
  // Three programs, so that three workers asked for are the parent and two worker processes.
  const std::vector<const arch::Program*> batch = {&programs.ws, &programs.os, &programs.ws};
  machine->run_timing(
      batch.size(), [&](size_t i) -> const arch::Program& { return *batch[i]; }, 3);
  ASSERT_EQ(machine->workers_started(), 2);
  machine.reset();
  // Every child was reaped: none is left, not even a zombie.
  int status = 0;
  EXPECT_EQ(::waitpid(-1, &status, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
}

// BERT's ffn1 on mesh4x4: its fused rows simulate three candidates each, and some stop.
TEST(EarlyStop, RowsKeepTheirBestAndACandidateStopsExactlyWhenAnEarlierOneOfItsRowIsFaster) {
  const arch::ArchSpec spec = load_arch("mesh4x4");
  const ops::Workload workload = ops::workload_from_yaml(
      config::load_file(std::string(TESSERA_SOURCE_DIR) + "/configs/workloads/bert-ffn.yaml"));
  const ops::Op& op = workload.ops.front();
  flow::RunSettings settings;
  settings.dataflows = spec.core.pe_array.dataflows;
  settings.timing_only = true;
  settings.threads = 2;
  settings.candidates.refine_rounds = 0;  // the candidates picked first, as below (refinement_test.cpp)
  sim::Machine machine(spec);
  const flow::OpOutcome outcome = flow::evaluate_op(op, workload.seed, spec, machine, settings);

  // The same candidates, each run to its end.
  mapper::SearchOptions options;
  options.dataflows = settings.dataflows;
  options.keep_per_dataflow = settings.candidates.kept_per_row();
  options.seed = workload.seed;
  const flow::CandidatePick pick =
      flow::pick_candidates(mapper::search_op(op, spec, options), settings.candidates);
  ASSERT_EQ(pick.rows.size(), outcome.record.runs.size());
  int stopped_in_all = 0;
  for (size_t r = 0; r < pick.rows.size(); ++r) {
    std::optional<int64_t> fewest;
    int stopped = 0;
    for (const mapper::Candidate& candidate : pick.rows[r].candidates) {
      const arch::Program program = mapper::lower(op, workload.seed, candidate.mapping, spec, "check");
      const int64_t cycles = machine.run(program, sim::RunOptions{false, false}).counters.cycles;
      if (fewest && cycles > *fewest) ++stopped;
      if (!fewest || cycles < *fewest) fewest = cycles;
    }
    const traces::RunRecord& record = outcome.record.runs[r];
    EXPECT_EQ(record.counters.cycles, *fewest) << pick.rows[r].label;
    EXPECT_EQ(record.candidates_simulated, static_cast<int64_t>(pick.rows[r].candidates.size()));
    EXPECT_EQ(record.candidates_stopped, stopped) << pick.rows[r].label;
    stopped_in_all += stopped;
  }
  EXPECT_GT(stopped_in_all, 0) << "the test covers a stop";
}

}  // namespace
}  // namespace tessera
