#include "flow/records.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "arch/figures.hpp"
#include "arch/isa/program_text.hpp"

namespace tessera::flow {

std::vector<std::string> cause_names() {
  std::vector<std::string> names;
  for (arch::Cause cause : arch::all_causes()) names.push_back(arch::name_of(cause));
  return names;
}

traces::Report empty_report(const std::string& command, const arch::ArchSpec& spec,
                            const std::string& workload, bool timing_only) {
  traces::Report report;
  report.command = command;
  report.machine = spec.name;
  report.workload = workload;
  report.clock_ghz = spec.clock_ghz;
  report.peak_tflops =
      2.0 * spec.mesh.cores() * spec.core.pe_array.rows * spec.core.pe_array.cols * spec.clock_ghz / 1e3;
  report.dram_gbps = spec.dram.bandwidth_gbps;
  report.timing_only = timing_only;
  report.cause_names = cause_names();
  return report;
}

traces::RunRecord record_of(const sim::RunResult& result, const arch::ArchSpec& spec, int64_t useful_macs) {
  traces::RunRecord record;
  const RunCounters& counters = result.counters;
  record.counters = counters;
  record.time_us = static_cast<double>(counters.cycles) / (spec.clock_ghz * 1000.0);
  record.macs = useful_macs >= 0 ? useful_macs : counters.pe_macs;
  record.pe_utilization = arch::pe_utilization(spec, record.macs, counters.cycles);
  record.dram_bytes = counters.dram_read_bytes + counters.dram_write_bytes;
  // bytes per ns is GB/s
  record.dram_gbps =
      counters.cycles > 0 ? static_cast<double>(record.dram_bytes) * spec.clock_ghz / counters.cycles : 0;
  arch::EnergyCounts counts;
  counts.macs = static_cast<double>(counters.pe_macs);
  counts.sram_bytes = static_cast<double>(counters.sram_read_bytes + counters.sram_write_bytes);
  counts.dram_bytes = static_cast<double>(record.dram_bytes);
  counts.noc_byte_hops = static_cast<double>(counters.noc_byte_hops);
  counts.cycles = counters.cycles;
  const double picojoules = arch::energy_pj(spec, counts);
  record.energy_uj = picojoules / 1e6;
  for (const sim::UnitResult& unit : result.units) {
    traces::UnitBubbles bubbles;
    bubbles.unit = unit.name;
    bubbles.kind = arch::name_of(unit.queue.kind);
    for (arch::Cause cause : arch::all_causes())
      bubbles.cycles.emplace_back(arch::name_of(cause), unit.cycles[static_cast<int>(cause)]);
    bubbles.counters = unit.counters;
    record.bubbles.push_back(std::move(bubbles));
  }
  return record;
}

std::vector<traces::ParetoPoint> pareto_of(const mapper::SearchResult& search) {
  std::vector<traces::ParetoPoint> points;
  for (const mapper::Candidate& candidate : search.pareto())
    points.push_back(traces::ParetoPoint{summary_of(candidate.mapping, candidate.cost), candidate.cost.cycles,
                                         candidate.cost.energy_pj / 1e6, candidate.cost.dram_bytes});
  return points;
}

traces::MappingSummary summary_of(const mapper::Mapping& mapping, const mapper::Cost& cost) {
  traces::MappingSummary summary;
  summary.dataflow = mapping.label();
  summary.fields = mapping.fields(cost);
  summary.edge_waste = cost.edge_waste;
  summary.description = mapping.describe();
  return summary;
}

void append_trace(const sim::RunResult& result, const arch::Program& program, const arch::ArchSpec& spec,
                  const std::string& op_name, double offset_us, std::vector<traces::TraceTrack>& tracks,
                  std::vector<traces::TraceInterval>& intervals) {
  const double us_per_tick = 1.0 / (spec.clock_ghz * 1000.0 * sim::kTicksPerCycle);
  for (const sim::UnitResult& unit : result.units) {
    if (unit.trace.empty()) continue;
    auto track = std::find_if(tracks.begin(), tracks.end(), [&](const traces::TraceTrack& t) {
      return t.thread_name == arch::name_of(unit.queue) && t.process == unit.core;
    });
    if (track == tracks.end()) {
      const arch::Coord coord = arch::core_coord(unit.core, spec.mesh);
      const int thread = unit.queue.kind == arch::QueueKind::pe    ? 0
                         : unit.queue.kind == arch::QueueKind::vec ? 1
                         : unit.queue.kind == arch::QueueKind::noc ? 2
                                                                   : 3 + unit.queue.index;
      tracks.push_back(traces::TraceTrack{unit.core, thread, fmt::format("core {},{}", coord.row, coord.col),
                                          arch::name_of(unit.queue)});
      track = tracks.end() - 1;
    }
    const int track_index = static_cast<int>(track - tracks.begin());
    // The unit's instructions, in the order of its queue, for labels.
    std::vector<const arch::Instruction*> queue;
    for (const arch::CoreProgram& core : program.cores)
      if (arch::core_index(core.coord, spec.mesh) == unit.core)
        for (const arch::Instruction& instruction : core.instructions)
          if (instruction.queue == unit.queue) queue.push_back(&instruction);
    for (const sim::TraceSegment& segment : unit.trace) {
      traces::TraceInterval interval;
      interval.track = track_index;
      interval.start_us = offset_us + static_cast<double>(segment.start) * us_per_tick;
      interval.duration_us = static_cast<double>(segment.end - segment.start) * us_per_tick;
      interval.category = arch::name_of(segment.cause);
      const bool labelled = segment.cause == arch::Cause::busy && segment.instruction >= 0 &&
                            static_cast<size_t>(segment.instruction) < queue.size();
      interval.name =
          labelled ? arch::format_instruction(program, *queue[static_cast<size_t>(segment.instruction)])
                   : interval.category;
      interval.op = op_name;
      intervals.push_back(std::move(interval));
    }
  }
}

}  // namespace tessera::flow
