#include "traces/map_report.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace tessera::traces {

namespace {
using Json = nlohmann::ordered_json;

Json ranked_json(const RankedMapping& ranked) {
  return Json{{"rank", ranked.rank},
              {"dataflow", ranked.mapping.dataflow},
              {"analytical_cycles", ranked.analytical_cycles},
              {"bound", ranked.bound},
              {"compute_cycles", ranked.compute_cycles},
              {"dram_bytes", ranked.dram_bytes},
              {"pe_utilization", ranked.pe_utilization},
              {"energy_uj", ranked.energy_uj},
              {"edge_waste", ranked.mapping.edge_waste},
              {"mapping", ranked.mapping.description}};
}
}  // namespace

std::string to_json(const MapReport& report) {
  Json json;
  json["machine"] = report.machine;
  json["workload"] = report.workload;
  json["objective"] = report.objective;
  Json ops = Json::array();
  for (const MapOp& op : report.ops) {
    Json entry{{"name", op.name},
               {"kind", op.kind},
               {"shape", op.shape},
               {"dtype", op.dtype},
               {"candidates", op.evaluated},
               {"host_seconds", op.host_seconds}};
    Json ranked = Json::array();
    for (const RankedMapping& mapping : op.ranked) ranked.push_back(ranked_json(mapping));
    entry["ranked"] = ranked;
    entry["pareto"] = pareto_json(op.pareto);
    Json per_dataflow = Json::array();
    for (const DataflowBest& best : op.per_dataflow) {
      Json item{{"dataflow", best.dataflow}, {"legal_mappings", best.legal}};
      if (best.has_best) item["best"] = ranked_json(best.best);
      if (!best.loses_because.empty()) item["loses_because"] = best.loses_because;
      if (!best.infeasible.empty()) item["infeasible"] = best.infeasible;
      per_dataflow.push_back(item);
    }
    entry["per_dataflow"] = per_dataflow;
    if (!op.program_files.empty()) entry["programs"] = op.program_files;
    if (!op.not_mapped.empty()) entry["not_mapped"] = op.not_mapped;
    ops.push_back(entry);
  }
  json["ops"] = ops;
  return json.dump(2) + "\n";
}

std::string to_table(const MapReport& report) {
  std::string out = fmt::format("tessera map — machine {}, workload {}{}\n", report.machine, report.workload,
                                report.objective == "cycles" ? "" : ", ranked by " + report.objective);
  for (const MapOp& op : report.ops) {
    if (!op.not_mapped.empty()) {
      out += fmt::format("\n{}  {} {} {}: not mapped: {}\n", op.name, op.kind, op.shape, op.dtype,
                         op.not_mapped);
      continue;
    }
    out += fmt::format("\n{}  {} {} {}: {} mappings scored in {:.2f} s\n", op.name, op.kind, op.shape,
                       op.dtype, op.evaluated, op.host_seconds);
    out += fmt::format("  {:>4} {:<9} {:>14} {:<8} {:>9} {:>6} {:>6}  {}\n", "rank", "dataflow",
                       "cycles (est.)", "bound", "DRAM_MB", "util", "waste", "mapping");
    for (const RankedMapping& ranked : op.ranked) {
      out += fmt::format("  {:>4} {:<9} {:>14} {:<8} {:>9.2f} {:>5.1f}% {:>5.1f}%  {}\n", ranked.rank,
                         ranked.mapping.dataflow, ranked.analytical_cycles, ranked.bound,
                         ranked.dram_bytes / 1e6, 100 * ranked.pe_utilization,
                         100 * ranked.mapping.edge_waste, ranked.mapping.description);
    }
    if (!op.pareto.empty()) {
      out += fmt::format("  Pareto front (estimated cycles x energy x DRAM bytes): {} mapping{}\n",
                         op.pareto.size(), op.pareto.size() == 1 ? "" : "s");
      out += fmt::format("    {:>14} {:>11} {:>9}  {}\n", "cycles (est.)", "energy_uj", "DRAM_MB", "mapping");
      for (const ParetoPoint& point : op.pareto)
        out += fmt::format("    {:>14} {:>11.2f} {:>9.2f}  {}\n", point.cycles, point.energy_uj,
                           point.dram_bytes / 1e6, point.mapping.description);
    }
    out += "  best of each dataflow:\n";
    for (const DataflowBest& best : op.per_dataflow) {
      if (!best.has_best) {
        out += fmt::format("    {:<9} no legal mapping: {}\n", best.dataflow, best.infeasible);
      } else if (best.loses_because.empty()) {
        out += fmt::format("    {:<9} wins: {} cycles, {}\n", best.dataflow, best.best.analytical_cycles,
                           best.best.mapping.description);
      } else {
        out += fmt::format("    {:<9} loses: {}\n", best.dataflow, best.loses_because);
      }
    }
  }
  return out;
}

}  // namespace tessera::traces
