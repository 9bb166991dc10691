#include "flow/run_workload.hpp"

#include <fmt/format.h>

#include "arch/isa/program_text.hpp"
#include "flow/records.hpp"
#include "sim/machine.hpp"
#include "traces/chrome_trace.hpp"

namespace tessera::flow {

WorkloadRun run_workload(const ops::Workload& workload, const arch::ArchSpec& spec, RunSettings settings) {
  const std::function<void(const std::string&)> say = settings.progress;
  LayerCache cache;
  settings.cache = &cache;
  sim::Machine machine(spec);
  WorkloadRun run;
  traces::Report& report = run.report;
  report = empty_report("run", spec, workload.name, settings.timing_only);
  std::vector<traces::TraceTrack> tracks;
  std::vector<traces::TraceInterval> intervals;
  double offset_us = 0;
  const auto& ops = workload.ops;
  // Every op planned (searched, its candidates picked), then all their candidates run as one batch, then
  // each op finished in order: no op's last run leaves a worker idle while the next op's wait.
  std::vector<PlannedOpPtr> plans;
  search_ahead(ops, workload.seed, spec, settings);
  for (size_t i = 0; i < ops.size(); ++i) {
    settings.progress =
        say ? [&, i](const std::string& line) { say(fmt::format("[{}/{}] {}", i + 1, ops.size(), line)); }
            : std::function<void(const std::string&)>();
    plans.push_back(plan_op(ops[i], workload.seed, spec, settings));
  }
  std::vector<PlannedOp*> batch;
  for (const PlannedOpPtr& plan : plans) batch.push_back(plan.get());
  run_planned(batch, spec, machine, settings);
  for (size_t i = 0; i < ops.size(); ++i) {
    OpOutcome outcome = finish_op(*plans[i], spec, machine, settings);
    plans[i].reset();
    if (settings.trace && outcome.record.winner >= 0) {
      append_trace(outcome.winner_result, outcome.winner_program(), spec, ops[i].name, offset_us, tracks,
                   intervals);
      for (const auto& [file, program] : outcome.programs)
        run.program_files.emplace_back(file, arch::write_program(program));
    }
    if (outcome.record.winner >= 0) offset_us += outcome.record.best().time_us;
    report.ops.push_back(std::move(outcome.record));
  }
  if (settings.trace) run.chrome_trace = traces::to_chrome_trace(tracks, intervals);
  return run;
}

}  // namespace tessera::flow
