#include "flow/run_workload.hpp"

#include <fmt/format.h>

#include <exception>

#include "arch/isa/program_text.hpp"
#include "common/parallel.hpp"
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
  // Op i's progress line, as it is printed.
  auto say_of_op = [&](size_t i, const std::string& line) {
    say(fmt::format("[{}/{}] {}", i + 1, ops.size(), line));
  };
  search_ahead(ops, workload.seed, spec, settings);
  for (size_t i = 0; i < ops.size(); ++i) {
    settings.progress = say ? [&, i](const std::string& line) { say_of_op(i, line); }
                            : std::function<void(const std::string&)>();
    plans.push_back(plan_op(ops[i], workload.seed, spec, settings));
  }
  std::vector<PlannedOp*> batch;
  for (const PlannedOpPtr& plan : plans) batch.push_back(plan.get());
  run_planned(batch, spec, machine, settings);
  // Finished on --threads threads where no op needs the machine again (timing only, no trace), their progress
  // lines then printed in the ops' order; else one after another.
  std::vector<OpOutcome> outcomes(ops.size());
  bool apart = settings.threads > 1;
  for (const PlannedOpPtr& plan : plans) apart = apart && !finish_needs_machine(*plan, settings);
  if (apart) {
    std::vector<std::vector<std::string>> lines(ops.size());
    std::vector<std::exception_ptr> errors(ops.size());  // the first op's in the ops' order is rethrown
    for_each_item(static_cast<int64_t>(ops.size()), settings.threads, [&](int64_t i) {
      const auto op = static_cast<size_t>(i);
      try {
        outcomes[op] = finish_op(*plans[op], spec, machine, settings, &lines[op]);
      } catch (...) {
        errors[op] = std::current_exception();
      }
      plans[op].reset();
    });
    for (const std::exception_ptr& error : errors)
      if (error) std::rethrow_exception(error);
    if (say)
      for (size_t i = 0; i < ops.size(); ++i)
        for (const std::string& line : lines[i]) say_of_op(i, line);
  } else {
    for (size_t i = 0; i < ops.size(); ++i) {
      outcomes[i] = finish_op(*plans[i], spec, machine, settings);
      plans[i].reset();
    }
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    OpOutcome outcome = std::move(outcomes[i]);
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
