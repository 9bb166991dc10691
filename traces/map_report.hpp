// What `tessera map` shows: per op, the ranked candidates of the mapspace with their analytical figures, and
// each dataflow's best with why it loses to the winner. Like report.hpp, JSON is the truth and the table a
// view.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "traces/report.hpp"

namespace tessera::traces {

struct RankedMapping {
  int rank = 0;
  MappingSummary mapping;
  int64_t analytical_cycles = 0;
  std::string bound;
  int64_t dram_bytes = 0;
  int64_t compute_cycles = 0;
  double pe_utilization = 0;
  double energy_uj = 0;
};

struct DataflowBest {
  std::string dataflow;
  int64_t legal = 0;
  bool has_best = false;
  RankedMapping best;
  std::string loses_because;  // empty for the winner
  std::string infeasible;     // when there is no legal mapping
};

struct MapOp {
  std::string name, kind, shape, dtype;
  int64_t evaluated = 0;
  double host_seconds = 0;
  std::vector<RankedMapping> ranked;
  std::vector<ParetoPoint> pareto;  // the front over every mapping scored, fewest cycles first
  std::vector<DataflowBest> per_dataflow;
  std::vector<std::string> program_files;
  std::string not_mapped;  // why an op has no mappings (a pool)
};

struct MapReport {
  std::string machine;
  std::string workload;
  std::string objective = "cycles";  // what the candidates are ranked by (--objective)
  std::vector<MapOp> ops;
};

std::string to_json(const MapReport& report);
std::string to_table(const MapReport& report);

}  // namespace tessera::traces
