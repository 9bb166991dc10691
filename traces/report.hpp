// The report of a run (DESIGN.md, "Outputs and conventions"): report.json is the machine-readable truth; the
// terminal table and the CSV are views of the same Report value. Units are in the key names.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/counters.hpp"
#include "common/named_value.hpp"

namespace tessera::traces {

// One unit's cycles split into busy and each bubble cause, in the order of the cause list.
struct UnitBubbles {
  std::string unit;  // "core0,1.pe"
  std::string kind;  // "pe", "dma", "noc"
  std::vector<std::pair<std::string, int64_t>> cycles;
  UnitCounters counters;  // as the simulator counted them (common/counters.hpp)
};

struct Numerics {
  std::string reference;  // "cpu", "gpu-recorded", "gpu-live"
  double max_abs_err = 0;
  double rel_l2_err = 0;
  double tolerance_rel_l2 = 0;
  bool exact = false;
  bool pass = false;
};

// A mapping as reports carry it: its row's name, its form's own fields (mapper::Mapping::fields: "form"
// first, then what that form chose, dotted names nesting) and the whole of it in one line.
struct MappingSummary {
  std::string dataflow;
  NamedValues fields;
  double edge_waste = 0;  // of a contraction's PE slots, on ragged edge folds (among its fields too)
  std::string description;
};

// One simulated mapping of an op: a row of the table. Its figures are the simulator's counters, declared once
// in common/counters.hpp, and the figures derived from them and from the search, declared in
// traces/run_stats.cpp; every writer walks both.
struct RunRecord {
  std::string dataflow;
  bool winner = false;
  std::string fusion;  // an epilogue's: "fused", "unfused"; "" for an op without one
  RunCounters counters;
  double time_us = 0;
  int64_t macs = 0;  // the op's: fewer than counters.pe_macs when packed groups multiply zeros
  double pe_utilization = 0;
  int64_t dram_bytes = 0;  // read and written
  double dram_gbps = 0;
  double energy_uj = 0;
  int64_t analytical_cycles = 0;
  std::string analytical_bound;
  int64_t candidates_simulated = 0;
  int64_t candidates_stopped = 0;
  MappingSummary mapping;
  std::vector<UnitBubbles> bubbles;
  std::vector<Numerics> numerics;  // empty with --timing-only
  std::string program_file;        // relative to the output folder, when written
  std::string loses_because;       // for a non-winner: why it loses to the winner
};

// A recorded GPU run of the same op (traces/gpu_record.hpp), as the report shows it.
struct GpuComparison {
  std::string gpu, path, date, file;
  double time_us = 0;   // device time (CUDA-graph replay)
  double eager_us = 0;  // launches back to back; 0 in records made before device time
  double tflops = 0, roofline_floor_us = 0;
  std::string roofline_bound;
  double fewest_bytes = 0, peak_tflops = 0, bandwidth_gbps = 0;  // the floor's bytes and roofs
  std::string framework, framework_path, framework_variant;
  double framework_us = 0;         // 0: no like-for-like framework time
  double framework_runner_us = 0;  // the runner's path the framework time is like for like with
  double framework_eager_us = 0;
  double ratio = 0, ratio_min = 0, ratio_max = 0;  // runner/framework over the A/B rounds
  bool contraction_only = false;  // recorded without the op's epilogue: times the contraction alone
  int rounds = 0;
  // Nsight Compute's counters of the reported path, where the record has them.
  bool profiled = false;
  double gpu_dram_bytes = 0;  // read plus written
  double tensor_pipe_pct = 0, sm_throughput_pct = 0, achieved_occupancy_pct = 0;
  std::vector<std::string> kernels;
  std::vector<std::pair<std::string, double>> top_stalls;
  bool compared = false;  // made for this op's shape, dtype and seed: its output was compared
  std::string note;       // why it was not compared
};

// Where a run sits on a roofline: its arithmetic intensity (FLOP per DRAM byte), the rate it attained, and
// the roof at that intensity, min(peak, intensity x bandwidth).
struct RooflinePosition {
  double flop_per_byte = 0, attained_tflops = 0, roof_tflops = 0;
  std::string bound;  // "compute" or "memory": which term of the roof is lower
};
RooflinePosition roofline_position(double flops, double dram_bytes, double seconds, double peak_tflops,
                                   double bandwidth_gbps);

// A mapping of the mapper's Pareto front: no other scored mapping is estimated no worse on cycles, energy
// and DRAM bytes and better on one.
struct ParetoPoint {
  MappingSummary mapping;
  int64_t cycles = 0;  // estimated
  double energy_uj = 0;
  int64_t dram_bytes = 0;
};

struct OpRecord {
  std::string name;
  std::string kind;
  std::string shape;  // "512x3072x768"
  std::string dtype;
  int64_t macs = 0;
  int64_t dram_minimum_bytes = 0;  // every input read once, the output written once (OpKind's)
  int64_t mapper_candidates = 0;
  double mapper_seconds = 0;
  std::vector<RunRecord> runs;     // one per dataflow simulated
  std::vector<GpuComparison> gpu;  // recorded GPU runs of this op
  std::string gpu_note;            // when there is none: where one was looked for
  int winner = -1;                 // index into runs
  std::string not_simulated;       // why an op has no runs (a pool)
  // Dataflows left unsimulated because the cost model puts them far behind: ("ws-direct", estimate / best).
  std::vector<std::pair<std::string, double>> pruned;
  std::vector<ParetoPoint> pareto;  // the mapper's front over every mapping scored, fewest cycles first
  const RunRecord& best() const { return runs.at(static_cast<size_t>(winner)); }
};

// What fusing an op's epilogue bought or cost: its best simulated fused run against its best unfused one.
struct FusionComparison {
  const RunRecord* fused = nullptr;
  const RunRecord* unfused = nullptr;
  const RunRecord* array = nullptr;  // the epilogue in the PE array's output path, where the machine has one
  bool available() const { return fused && unfused; }
  const char* winner() const;  // the fusion of the fewest cycles among those there
  std::string text()
      const;  // "fused ws 10,240 cycles, 1.6 MB DRAM ... vs unfused ...: fused is 1.31x faster"
};
FusionComparison fusion_comparison(const OpRecord& op);

// The front as JSON: one object per point (dataflow, analytical_cycles, energy_uj, dram_bytes, mapping).
nlohmann::ordered_json pareto_json(const std::vector<ParetoPoint>& front);

struct Report {
  std::string tool = "tessera";
  std::string command;   // "run", "sim"
  std::string machine;   // arch name
  std::string workload;  // workload name
  double clock_ghz = 1.0;
  double peak_tflops = 0;  // every core's PE array, one MAC (2 FLOP) per PE per cycle
  double dram_gbps = 0;    // the machine's DRAM bandwidth
  bool timing_only = false;
  std::string objective = "cycles";      // what the winners were picked by (--objective)
  std::vector<std::string> cause_names;  // the bubble causes, in order
  std::vector<OpRecord> ops;
  double host_seconds = 0;

  bool numerics_pass() const;  // every numerics check of every run passed (true when none ran)
};

// Why `loser` is slower than `winner`, from their simulated timelines: the PE-array bubble cause that grew
// the most, and DRAM traffic when it differs ("1.31x the cycles: its PE arrays wait for DMA loads 24% of the
// time (winner 9%); 1.6x the DRAM traffic").
std::string explain_gap(const RunRecord& loser, const RunRecord& winner);

// How a run's work spread over its cores (from its per-unit bubbles): each core's PE busy cycles and the
// cycle its units finished their share (the run's cycles less the least any of its units waited for other
// cores at the end: imbalance); the straggler is the core with the most PE work (ties: the later done), a
// lower bound of the run's cycles. Empty for a run of one core.
struct CoreLoad {
  std::string core;  // "0,1"
  int64_t pe_busy = 0;
  int64_t done = 0;
};
struct CoreLoads {
  std::vector<CoreLoad> cores;
  size_t straggler = 0;
  int64_t imbalance_cycles = 0;  // every unit's, summed
};
CoreLoads core_loads(const RunRecord& run, int64_t cycles);

// The JSON text of the report (stable key order, fixed number formatting: same inputs, same bytes).
// report.json's version of docs/report.schema.json: it changes when a key is removed or changes meaning (keys
// may be added within a version).
constexpr int kReportSchemaVersion = 1;
std::string to_json(const Report& report, bool include_host_seconds = true);
// A terminal table: per op one row per dataflow (winner marked), bubbles of the winner, totals.
std::string to_table(const Report& report);
// One CSV row per simulated run.
std::string to_csv(const Report& report);

}  // namespace tessera::traces
