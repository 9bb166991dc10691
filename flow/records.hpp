// Turns what the stages produced (sim::RunResult, mapper costs) into the report's plain records and the
// Chrome trace's intervals: the figures derived from a run's counters (time, utilisation, bandwidth, energy)
// are computed here, once, for every command.
#pragma once

#include <string>
#include <vector>

#include "arch/isa/program.hpp"
#include "mapper/cost.hpp"
#include "mapper/mapping.hpp"
#include "mapper/search.hpp"
#include "sim/run_result.hpp"
#include "traces/chrome_trace.hpp"
#include "traces/report.hpp"

namespace tessera::flow {

std::vector<std::string> cause_names();

// An empty report of `command` ("run", "sim") of `workload` on the machine: its header filled.
traces::Report empty_report(const std::string& command, const arch::ArchSpec& spec,
                            const std::string& workload, bool timing_only);

// Cycles, time, traffic, utilisation, energy and bubbles of one simulated run.
// `useful_macs`: the op's own multiply-accumulates, when the PE arrays also multiply zeros (packed groups'
// block-diagonal weights); utilisation counts only these. -1: every MAC performed is useful.
traces::RunRecord record_of(const sim::RunResult& result, const arch::ArchSpec& spec,
                            int64_t useful_macs = -1);

traces::MappingSummary summary_of(const mapper::Mapping& mapping, const mapper::Cost& cost);

// The search's Pareto front of estimated cycles, energy and DRAM bytes, fewest cycles first.
std::vector<traces::ParetoPoint> pareto_of(const mapper::SearchResult& search);

// Appends the run's unit timelines as trace intervals starting at `offset_us`; tracks are shared across ops.
void append_trace(const sim::RunResult& result, const arch::Program& program, const arch::ArchSpec& spec,
                  const std::string& op_name, double offset_us, std::vector<traces::TraceTrack>& tracks,
                  std::vector<traces::TraceInterval>& intervals);

}  // namespace tessera::flow
