#include "cli/evaluate.hpp"

#include <fmt/format.h>

#include <chrono>

#include "cli/report_builder.hpp"
#include "mapper/lower_gemm.hpp"
#include "mapper/search.hpp"
#include "ops/numerics.hpp"
#include "ops/reference.hpp"

namespace tessera::cli {

namespace {

struct Simulated {
  mapper::Candidate candidate;
  arch::Program program;
  sim::RunResult timing;
  int simulated = 0;
};
}  // namespace

namespace {
traces::Numerics numerics_record(const ops::NumericsResult& numerics, DType operand) {
  const ops::Tolerance tolerance = ops::tolerance_for(operand);
  traces::Numerics check;
  check.reference = numerics.reference;
  check.max_abs_err = numerics.max_abs_err;
  check.rel_l2_err = numerics.rel_l2_err;
  check.tolerance_rel_l2 = tolerance.rel_l2;
  check.exact = tolerance.exact;
  check.pass = numerics.pass;
  return check;
}
}  // namespace

GpuReferences find_gpu_references(const ops::Op& op, uint64_t seed, const std::string& workload,
                                  const std::string& root) {
  GpuReferences found;
  // The op's shape fields (m, n, k; batch, inputs, outputs; a conv's n, c, h, ...), as its workload entry.
  std::vector<std::pair<std::string, int64_t>> shape;
  for (const auto& field : ops::to_yaml(op)) {
    const std::string key = field.first.Scalar();
    if (key != "name" && key != "kind" && key != "dtype" && key != "mode")
      shape.emplace_back(key, field.second.as<int64_t>());
  }
  auto shape_text = [](const std::vector<std::pair<std::string, int64_t>>& fields) {
    std::string text;
    for (const auto& [key, value] : fields)
      text += fmt::format("{}{}={}", text.empty() ? "" : " ", key, value);
    return text;
  };
  for (const traces::GpuRecord& record : traces::find_gpu_records(root, workload, op.name)) {
    traces::GpuComparison comparison;
    comparison.gpu = record.gpu;
    comparison.date = record.date;
    comparison.file = record.file;
    if (!record.no_gpu_path.empty()) {
      comparison.note = record.no_gpu_path;
      found.comparisons.push_back(comparison);
      continue;
    }
    comparison.path = record.path;
    comparison.time_us = record.time_us;
    comparison.tflops = record.tflops;
    comparison.roofline_floor_us = record.roofline_floor_us;
    comparison.roofline_bound = record.roofline_bound;
    comparison.framework = record.framework;
    comparison.framework_path = record.framework_path;
    comparison.framework_us = record.framework_us.value_or(0);
    comparison.framework_runner_us = record.framework_runner_us;
    // Never compare mismatched things: the record must be of this very op, inputs included.
    bool same_shape = true;
    for (const auto& [key, value] : shape) {
      const auto recorded = record.shape.find(key);
      same_shape = same_shape && recorded != record.shape.end() && recorded->second == value;
    }
    const auto* pool = std::get_if<ops::PoolShape>(&op.shape);
    const std::string mode = pool ? (pool->mode == ops::PoolMode::max ? "max" : "avg") : "";
    const bool same = record.kind == op.kind() && same_shape && record.mode == mode &&
                      record.dtype == name_of(op.dtype) && record.seed == seed && record.index == op.index;
    comparison.compared = same;
    if (!same) {
      // The record's fields in this op's order when it is of the same kind, else all of them.
      std::vector<std::pair<std::string, int64_t>> recorded;
      if (record.kind == op.kind()) {
        for (const auto& [key, value] : shape)
          if (record.shape.count(key)) recorded.emplace_back(key, record.shape.at(key));
      } else {
        recorded.assign(record.shape.begin(), record.shape.end());
      }
      comparison.note = fmt::format(
          "the record was made for {}{} {} {} (op #{}, seed {}); this op is {}{} {} {} (op "
          "#{}, seed {})",
          record.kind, record.mode.empty() ? "" : " " + record.mode, shape_text(recorded), record.dtype,
          record.index, record.seed, op.kind(), mode.empty() ? "" : " " + mode, shape_text(shape),
          name_of(op.dtype), op.index, seed);
    } else {
      found.matched.push_back(record);
    }
    found.comparisons.push_back(comparison);
  }
  if (found.comparisons.empty())
    found.note = fmt::format("no recorded reference ({}/<gpu>/{}/{}.json)", root, workload, op.name);
  return found;
}

traces::Numerics check_against_gpu(const ops::Op& op, const traces::GpuRecord& record,
                                   const sim::RunResult& result, int output_tensor) {
  return numerics_record(
      ops::compare_at(result.outputs.at(output_tensor), record.indices, record.values, op.dtype,
                      "gpu-recorded " + record.gpu + (record.complete ? "" : " (sampled)")),
      op.dtype);
}

traces::Numerics check_against_cpu(const ops::Op& op, const std::vector<double>& reference,
                                   const sim::RunResult& result, int output_tensor) {
  return numerics_record(ops::compare_output(result.outputs.at(output_tensor), reference, op.dtype, "cpu"),
                         op.dtype);
}

OpOutcome evaluate_op(const ops::Op& op, uint64_t seed, const arch::ArchSpec& spec, sim::Machine& machine,
                      const RunSettings& settings) {
  OpOutcome outcome;
  outcome.record.name = op.name;
  outcome.record.kind = op.kind();
  outcome.record.shape = op.shape_text();
  outcome.record.dtype = name_of(op.dtype);
  outcome.record.macs = op.macs();
  if (op.gemm_count() == 0) {
    outcome.record.not_simulated =
        "the machine model has no vector unit: a pool is not lowered or timed (its output is not checked)";
    // The GPU's time for it is still worth showing next to the layers that are simulated.
    const GpuReferences gpu = find_gpu_references(op, seed, settings.workload_name, settings.reference_root);
    outcome.record.gpu = gpu.comparisons;
    outcome.record.gpu_note = gpu.note;
    return outcome;
  }
  auto say = [&](const std::string& line) {
    if (settings.progress) settings.progress(line);
  };

  mapper::SearchOptions options;
  options.dataflows = settings.dataflows;
  options.keep_per_dataflow = std::max(1, settings.simulate_top);
  options.threads = settings.threads;
  options.locate_field = settings.locate_machine_field;
  options.op_description =
      fmt::format("{} ({} {} {})", op.name, op.kind(), op.shape_text(), name_of(op.dtype));
  // The op's fields but its name: what its mapping and timing depend on (with the machine and the settings).
  std::string op_key;
  for (const auto& field : ops::to_yaml(op))
    if (field.first.Scalar() != "name") op_key += field.first.Scalar() + "=" + field.second.Scalar() + " ";
  mapper::SearchResult search;
  if (settings.cache && settings.cache->searches.count(op_key)) {
    search = settings.cache->searches.at(op_key);
    search.seconds = 0;  // nothing was searched for this layer
    say(fmt::format("{}: same shape as an earlier layer: its {} mappings' scores reused", op.name,
                    search.evaluated));
  } else {
    search = mapper::search_op(op, spec, options);
    say(fmt::format("{}: {} mappings scored in {:.2f} s", op.name, search.evaluated, search.seconds));
    if (settings.cache) settings.cache->searches.emplace(op_key, search);
  }

  // Simulate the best few of each dataflow (timing only); the fastest of each dataflow represents it.
  std::vector<Simulated> rows;
  int64_t best_estimate = 0;
  for (const mapper::DataflowSearch& dataflow : search.per_dataflow)
    if (!dataflow.best.empty() && (best_estimate == 0 || dataflow.best.front().cost.cycles < best_estimate))
      best_estimate = dataflow.best.front().cost.cycles;
  // Which candidates of which dataflow to simulate, lowered; then the ones not simulated before, all at once
  // (in parallel processes with --threads); then the fastest of each dataflow.
  struct Pending {
    size_t row = 0;
    mapper::Candidate candidate;
    arch::Program program;
    std::string timing_key;
  };
  std::vector<Pending> pending;
  std::vector<std::string> labels;
  for (const mapper::DataflowSearch& dataflow : search.per_dataflow) {
    if (dataflow.best.empty()) continue;
    const double behind =
        static_cast<double>(dataflow.best.front().cost.cycles) / std::max<int64_t>(1, best_estimate);
    if (settings.prune_ratio > 0 && behind > settings.prune_ratio) {
      outcome.record.pruned.emplace_back(dataflow.label(), behind);
      continue;
    }
    // Far behind (but not pruned), or behind the other form (implicit GEMM or direct) of the same dataflow:
    // its best candidate alone is simulated.
    bool behind_sibling = false;
    for (const mapper::DataflowSearch& sibling : search.per_dataflow)
      behind_sibling =
          behind_sibling ||
          (sibling.dataflow == dataflow.dataflow && sibling.direct != dataflow.direct &&
           !sibling.best.empty() && sibling.best.front().cost.cycles < dataflow.best.front().cost.cycles);
    const size_t simulated = behind > settings.narrow_ratio || behind_sibling ? 1 : dataflow.best.size();
    const std::string name = fmt::format("{}.{}", op.name, dataflow.label());
    for (size_t c = 0; c < simulated; ++c) {
      const mapper::Candidate& candidate = dataflow.best[c];
      pending.push_back(Pending{rows.size(), candidate,
                                mapper::lower_gemm(op, seed, candidate.mapping, spec, name),
                                op_key + candidate.mapping.describe()});
    }
    labels.push_back(dataflow.label());
    rows.emplace_back();
  }
  std::vector<const arch::Program*> to_run;
  std::vector<size_t> run_index(pending.size(), SIZE_MAX);
  for (size_t i = 0; i < pending.size(); ++i) {
    if (settings.cache && settings.cache->timings.count(pending[i].timing_key)) continue;
    run_index[i] = to_run.size();
    to_run.push_back(&pending[i].program);
  }
  std::vector<sim::RunResult> timings = machine.run_timing(to_run, settings.threads);
  for (size_t i = 0; i < pending.size(); ++i) {
    Pending& candidate = pending[i];
    sim::RunResult timing;
    if (run_index[i] == SIZE_MAX) {
      timing = settings.cache->timings.at(candidate.timing_key);
    } else {
      timing = std::move(timings[run_index[i]]);
      if (settings.cache) settings.cache->timings.emplace(candidate.timing_key, timing);
    }
    Simulated& best = rows[candidate.row];
    ++best.simulated;
    if (best.simulated == 1 || timing.cycles < best.timing.cycles) {
      best.candidate = candidate.candidate;
      best.program = std::move(candidate.program);
      best.timing = std::move(timing);
    }
  }
  for (size_t r = 0; r < rows.size(); ++r)
    say(fmt::format("{}: {} best of {} simulated: {} cycles", op.name, labels[r], rows[r].simulated,
                    rows[r].timing.cycles));
  size_t winner = 0;
  for (size_t i = 1; i < rows.size(); ++i)
    if (rows[i].timing.cycles < rows[winner].timing.cycles) winner = i;

  std::vector<double> reference;
  if (!settings.timing_only)
    reference = ops::reference_output(op, ops::generate_inputs(op, seed), settings.threads);

  const GpuReferences gpu = find_gpu_references(op, seed, settings.workload_name, settings.reference_root);

  outcome.record.gpu = gpu.comparisons;
  outcome.record.gpu_note = gpu.note;
  outcome.record.mapper_candidates = search.evaluated;
  outcome.record.mapper_seconds = search.seconds;
  outcome.record.winner = static_cast<int>(winner);
  for (size_t i = 0; i < rows.size(); ++i) {
    Simulated& row = rows[i];
    const bool is_winner = i == winner;
    sim::RunResult result;
    if (settings.timing_only) {
      result = is_winner && settings.trace ? machine.run(row.program, sim::RunOptions{false, true})
                                           : std::move(row.timing);
    } else {
      result = machine.run(row.program, sim::RunOptions{true, is_winner && settings.trace});
      // Arithmetic never changes timing: the functional run must reproduce the timing-only one exactly.
      TESSERA_ASSERT(result.cycles == row.timing.cycles,
                     "functional and timing-only runs take the same cycles");
    }
    traces::RunRecord record = record_of(result, spec, op.macs());
    record.dataflow = row.candidate.mapping.label();
    record.winner = is_winner;
    record.analytical_cycles = row.candidate.cost.cycles;
    record.analytical_bound = mapper::name_of(row.candidate.cost.bound);
    record.candidates_simulated = row.simulated;
    record.mapping = summary_of(row.candidate.mapping, row.candidate.cost);
    record.program_file = row.program.name + ".tprog";
    if (!settings.timing_only) {
      const int output = row.program.tensor_id("O");  // lower_gemm names the output O
      record.numerics.push_back(check_against_cpu(op, reference, result, output));
      for (const traces::GpuRecord& matched : gpu.matched)
        record.numerics.push_back(check_against_gpu(op, matched, result, output));
      say(fmt::format("{}: {} numerics {} (rel_l2_err {:.2e})", op.name, record.dataflow,
                      record.numerics.back().pass ? "pass" : "FAIL", record.numerics.back().rel_l2_err));
    }
    outcome.record.runs.push_back(std::move(record));
    if (is_winner) outcome.winner_result = std::move(result);
  }
  // Why the others lose, from each row's simulated timeline against the winner's.
  for (traces::RunRecord& record : outcome.record.runs)
    if (!record.winner) record.loses_because = traces::explain_gap(record, outcome.record.best());
  for (Simulated& row : rows)
    outcome.programs.emplace_back(row.program.name + ".tprog", std::move(row.program));
  return outcome;
}

}  // namespace tessera::cli
