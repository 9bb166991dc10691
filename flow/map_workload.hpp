// `tessera map` as library code: per op, the ranked candidates of the mapspace, each dataflow's best and why
// it loses to the winner (from the cost model alone), and, when asked, each dataflow's best lowered to a tile
// program.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "arch/spec.hpp"
#include "common/error.hpp"
#include "mapper/objective.hpp"
#include "ops/workload.hpp"
#include "traces/map_report.hpp"

namespace tessera::flow {

struct MapSettings {
  std::vector<arch::Dataflow> dataflows;
  int top = 10;                                             // ranked candidates shown per op
  mapper::Objective objective = mapper::Objective::cycles;  // what they are ranked by
  int threads = 1;
  bool write_programs = false;
  std::function<SourceLocation(const std::string& field)> locate_machine_field;
  std::function<void(const std::string&)> progress;  // one line of progress, or nothing
};

struct WorkloadMap {
  traces::MapReport report;
  std::vector<std::pair<std::string, std::string>> program_files;  // with write_programs: name -> text
};

WorkloadMap map_workload(const ops::Workload& workload, const arch::ArchSpec& spec,
                         const MapSettings& settings);

}  // namespace tessera::flow
