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
  for (size_t i = 0; i < ops.size(); ++i) {
    settings.progress =
        say ? [&, i](const std::string& line) { say(fmt::format("[{}/{}] {}", i + 1, ops.size(), line)); }
            : std::function<void(const std::string&)>();
    // With workers, the next layer's search overlaps this layer's runs (the candidates' runs leave a core
    // idle while the parent lowers and sends; the search kept both busy while the worker waited).
    settings.searched = [&, i] {
      if (settings.threads > 1 && i + 1 < ops.size()) search_ahead(ops[i + 1], workload.seed, spec, settings);
    };
    OpOutcome outcome = evaluate_op(ops[i], workload.seed, spec, machine, settings);
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
