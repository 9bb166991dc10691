// `tessera run` as library code: every op of a workload through evaluate_op on one elaborated machine, with
// the layer cache, into the report; with tracing, the winners' timelines as one Chrome trace and every row's
// tile program as text, ready for the output folder.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "arch/spec.hpp"
#include "flow/evaluate_op.hpp"
#include "ops/workload.hpp"
#include "traces/report.hpp"

namespace tessera::flow {

struct WorkloadRun {
  traces::Report report;  // host_seconds left to the caller, who knows when the command started
  std::vector<std::pair<std::string, std::string>> program_files;  // with settings.trace: name -> text
  std::string chrome_trace;                                        // with settings.trace
};

// `settings.progress` lines are prefixed with the op's place ("[2/7] ..."); `settings.cache` is the run's
// own.
WorkloadRun run_workload(const ops::Workload& workload, const arch::ArchSpec& spec, RunSettings settings);

}  // namespace tessera::flow
