#include "flow/map_workload.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "arch/isa/program_text.hpp"
#include "flow/records.hpp"
#include "mapper/explain.hpp"
#include "mapper/lowering.hpp"
#include "mapper/op_stages.hpp"
#include "mapper/search.hpp"

namespace tessera::flow {

namespace {

traces::RankedMapping ranked_of(const mapper::Candidate& candidate, int rank) {
  traces::RankedMapping ranked;
  ranked.rank = rank;
  ranked.mapping = summary_of(candidate.mapping, candidate.cost);
  ranked.analytical_cycles = candidate.cost.cycles;
  ranked.bound = mapper::name_of(candidate.cost.bound);
  ranked.dram_bytes = candidate.cost.dram_bytes;
  ranked.compute_cycles = candidate.cost.compute_cycles;
  ranked.pe_utilization = candidate.cost.pe_utilization;
  ranked.energy_uj = candidate.cost.energy_pj / 1e6;
  return ranked;
}

}  // namespace

WorkloadMap map_workload(const ops::Workload& workload, const arch::ArchSpec& spec,
                         const MapSettings& settings) {
  WorkloadMap map;
  traces::MapReport& report = map.report;
  report.machine = spec.name;
  report.workload = workload.name;
  report.objective = mapper::name_of(settings.objective);
  const int top = settings.top;
  for (const ops::Op& op : workload.ops) {
    traces::MapOp entry;
    entry.name = op.name;
    entry.kind = op.kind_name();
    entry.shape = op.shape_text();
    entry.dtype = name_of(op.dtype);
    if (const mapper::OpStages stages = mapper::stages_of(op, spec, settings.dataflows); !stages.mapped()) {
      entry.not_mapped = fmt::format("{}: a {} is not mapped", stages.not_mapped, op.kind_name());
      report.ops.push_back(std::move(entry));
      continue;
    }
    mapper::SearchOptions options;
    options.dataflows = settings.dataflows;
    options.keep_per_dataflow = std::max(1, top);
    options.objective = settings.objective;
    options.seed = workload.seed;
    options.threads = settings.threads;
    options.locate_field = settings.locate_machine_field;
    options.op_description =
        fmt::format("{} ({} {} {})", op.name, op.kind_name(), op.shape_text(), name_of(op.dtype));
    const mapper::SearchResult search = mapper::search_op(op, spec, options);
    if (settings.progress)
      settings.progress(
          fmt::format("{}: {} mappings scored in {:.2f} s", op.name, search.evaluated, search.seconds));

    entry.evaluated = search.evaluated;
    entry.pareto = pareto_of(search);
    entry.host_seconds = search.seconds;
    const std::vector<mapper::Candidate> ranked = search.ranked();
    for (size_t i = 0; i < ranked.size() && static_cast<int>(i) < top; ++i)
      entry.ranked.push_back(ranked_of(ranked[i], static_cast<int>(i) + 1));
    const mapper::Candidate& winner = ranked.front();
    for (const mapper::DataflowSearch& dataflow : search.per_dataflow) {
      traces::DataflowBest best;
      best.dataflow = dataflow.label();
      best.legal = dataflow.legal;
      if (dataflow.best.empty()) {
        best.infeasible = dataflow.why_none.message;
        entry.per_dataflow.push_back(best);
        continue;
      }
      const mapper::Candidate& candidate = dataflow.best.front();
      best.has_best = true;
      const auto position = std::find_if(ranked.begin(), ranked.end(), [&](const mapper::Candidate& c) {
        return c.index == candidate.index && c.mapping.dataflow == candidate.mapping.dataflow;
      });
      best.best = ranked_of(candidate, static_cast<int>(position - ranked.begin()) + 1);
      if (!(candidate.mapping == winner.mapping)) {
        best.loses_because = mapper::why_loses(candidate.mapping, candidate.cost, candidate.cost.cycles,
                                               winner.mapping, winner.cost, winner.cost.cycles);
      }
      if (settings.write_programs) {
        std::string name = fmt::format("{}.{}", op.name, best.dataflow);
        std::replace(name.begin(), name.end(), ' ', '-');  // "ffn1.ws-fused"
        map.program_files.emplace_back(
            name + ".tprog",
            arch::write_program(mapper::lower(op, workload.seed, candidate.mapping, spec, name)));
        entry.program_files.push_back(name + ".tprog");
      }
      entry.per_dataflow.push_back(best);
    }
    report.ops.push_back(std::move(entry));
  }
  return map;
}

}  // namespace tessera::flow
