// One workload op through the whole flow (DESIGN.md, "flow/"): the mapper scores the mapspace, the chosen
// candidates of each dataflow are lowered and simulated (timing only) and the fastest of each dataflow is its
// row; the fastest row wins; each row then runs functionally and is checked against the CPU reference and the
// recorded GPU outputs made for this op.
#pragma once

#include <functional>
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
  int simulate_top = 3;  // candidates simulated per dataflow
  // What the mapper ranks candidates by and the simulated rows are judged by (the winner: the least of it);
  // a candidate is stopped early only when it is cycles.
  mapper::Objective objective = mapper::Objective::cycles;
  CandidateRules candidates;
  std::function<SourceLocation(const std::string& field)> locate_machine_field;
  std::function<void(const std::string&)> progress;  // one line of progress, or nothing
  std::string workload_name;                         // where recorded GPU references are filed
  std::string reference_root;                        // traces/reference of this checkout, or --reference
  LayerCache* cache = nullptr;                       // reuse across the ops of one run, or none
  // Called once the op's search is done, before its candidates run: run_workload starts the next op's search
  // there (search_ahead), so that it overlaps these runs.
  std::function<void()> searched;
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

// Starts the search of `op` on a thread of its own (one search thread: the ranking does not depend on the
// thread count), filed in settings.cache for evaluate_op to take; nothing when the op is not mapped or its
// search is known or under way.
void search_ahead(const ops::Op& op, uint64_t seed, const arch::ArchSpec& spec, const RunSettings& settings);

OpOutcome evaluate_op(const ops::Op& op, uint64_t seed, const arch::ArchSpec& spec, sim::Machine& machine,
                      const RunSettings& settings);

}  // namespace tessera::flow
