// One workload op through the whole flow (DESIGN.md, "flow/"): the mapper scores the mapspace, the chosen
// candidates of each dataflow are lowered and simulated (timing only) and the fastest of each dataflow is its
// row; the fastest row wins; each row then runs functionally and is checked against the CPU reference and the
// recorded GPU outputs made for this op.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "arch/isa/program.hpp"
#include "arch/spec.hpp"
#include "flow/candidates.hpp"
#include "flow/layer_cache.hpp"
#include "mapper/objective.hpp"
#include "ops/op.hpp"
#include "sim/machine.hpp"
#include "traces/report.hpp"

namespace tessera::flow {

struct RunSettings {
  std::vector<arch::Dataflow> dataflows;
  bool timing_only = false;
  bool trace = false;  // record the winners' timelines
  int threads = 1;
  // What the mapper ranks candidates by and the simulated rows are judged by (the winner: the least of it);
  // a candidate is stopped early only when it is cycles.
  mapper::Objective objective = mapper::Objective::cycles;
  CandidateRules candidates;  // which of each row's candidates are simulated, refinement included
  std::function<SourceLocation(const std::string& field)> locate_machine_field;
  std::function<void(const std::string&)> progress;  // one line of progress, or nothing
  std::function<void(const std::string&)> warn;      // a line said even when progress is not
  std::string workload_name;                         // where recorded GPU references are filed
  std::string reference_root;                        // traces/reference of this checkout, or --reference
  LayerCache* cache = nullptr;                       // reuse across the ops of one run, or none
};

struct OpOutcome {
  traces::OpRecord record;
  // File name -> program, per run row; only with the trace or a functional run (timing-only runs without
  // the trace need no program after their candidates' runs, and lowering one costs as much as running it).
  std::vector<std::pair<std::string, arch::Program>> programs;
  sim::RunResult winner_result;  // with the trace when asked for
  const arch::Program& winner_program() const {
    return programs.at(static_cast<size_t>(record.winner)).second;
  }
};

// The searches of `ops`' distinct mapped shapes not known yet, on settings.threads threads, one thread a
// search (the ranking does not depend on the thread count), filed in settings.cache for plan_op to take;
// nothing with one thread, no cache, or fewer than two such shapes (one search is faster on every thread).
void search_ahead(const std::vector<ops::Op>& ops, uint64_t seed, const arch::ArchSpec& spec,
                  const RunSettings& settings);

// An op in three steps, so that the candidates of several ops run as one batch (run_workload): plan_op
// searches its mapspace and picks its candidates (or finds it is not mapped), with `settings.progress` as its
// progress; run_planned simulates every plan's candidates not timed yet, timing-only, in one batch over the
// workers; finish_op decides the early stops and the rows, runs them functionally when asked, and makes the
// op's record. evaluate_op is the three for one op.
struct PlannedOp;
struct PlannedOpDeleter {
  void operator()(PlannedOp* plan) const;
};
using PlannedOpPtr = std::unique_ptr<PlannedOp, PlannedOpDeleter>;
PlannedOpPtr plan_op(const ops::Op& op, uint64_t seed, const arch::ArchSpec& spec,
                     const RunSettings& settings);
void run_planned(const std::vector<PlannedOp*>& plans, const arch::ArchSpec& spec, sim::Machine& machine,
                 const RunSettings& settings);
// finish_op runs the machine only where finish_needs_machine says so (a functional run, the trace, or a stop
// at a looser bound to run again); where it does not, plans may be finished on several threads at once, each
// with its progress lines kept in `progress_lines` (to print in the ops' order) rather than printed.
OpOutcome finish_op(PlannedOp& plan, const arch::ArchSpec& spec, sim::Machine& machine,
                    const RunSettings& settings, std::vector<std::string>* progress_lines = nullptr);
bool finish_needs_machine(const PlannedOp& plan, const RunSettings& settings);

OpOutcome evaluate_op(const ops::Op& op, uint64_t seed, const arch::ArchSpec& spec, sim::Machine& machine,
                      const RunSettings& settings);

}  // namespace tessera::flow
