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
constexpr int kOutputTensor = 2;  // lower_gemm declares A, W, O

struct Simulated {
  mapper::Candidate candidate;
  arch::Program program;
  sim::RunResult timing;
  int simulated = 0;
};
}  // namespace

traces::Numerics check_against_cpu(const ops::Op& op, const std::vector<double>& reference,
                                   const sim::RunResult& result, int output_tensor) {
  const ops::NumericsResult numerics =
      ops::compare_output(result.outputs.at(output_tensor), reference, op.dtype, "cpu");
  const ops::Tolerance tolerance = ops::tolerance_for(op.dtype);
  traces::Numerics check;
  check.reference = numerics.reference;
  check.max_abs_err = numerics.max_abs_err;
  check.rel_l2_err = numerics.rel_l2_err;
  check.tolerance_rel_l2 = tolerance.rel_l2;
  check.exact = tolerance.exact;
  check.pass = numerics.pass;
  return check;
}

OpOutcome evaluate_op(const ops::Op& op, uint64_t seed, const arch::ArchSpec& spec, sim::Machine& machine,
                      const RunSettings& settings) {
  const auto& gemm = std::get<ops::GemmShape>(op.shape);
  const mapper::GemmProblem problem{gemm.m, gemm.n, gemm.k, op.dtype};
  auto say = [&](const std::string& line) {
    if (settings.progress) settings.progress(line);
  };

  mapper::SearchOptions options;
  options.dataflows = settings.dataflows;
  options.keep_per_dataflow = std::max(1, settings.simulate_top);
  options.threads = settings.threads;
  options.locate_field = settings.locate_machine_field;
  options.op_description =
      fmt::format("{} (gemm {}x{}x{} {})", op.name, gemm.m, gemm.n, gemm.k, name_of(op.dtype));
  const mapper::SearchResult search = mapper::search_gemm(problem, spec, options);
  say(fmt::format("{}: {} mappings scored in {:.2f} s", op.name, search.evaluated, search.seconds));

  // Simulate the best few of each dataflow (timing only); the fastest of each dataflow represents it.
  std::vector<Simulated> rows;
  for (const mapper::DataflowSearch& dataflow : search.per_dataflow) {
    if (dataflow.best.empty()) continue;
    Simulated best;
    for (const mapper::Candidate& candidate : dataflow.best) {
      const std::string name = fmt::format("{}.{}", op.name, arch::name_of(dataflow.dataflow));
      arch::Program program = mapper::lower_gemm(op, seed, candidate.mapping, spec, name);
      sim::RunResult timing = machine.run(program, sim::RunOptions{false, false});
      ++best.simulated;
      if (best.simulated == 1 || timing.cycles < best.timing.cycles) {
        best.candidate = candidate;
        best.program = std::move(program);
        best.timing = std::move(timing);
      }
    }
    say(fmt::format("{}: {} best of {} simulated: {} cycles", op.name, arch::name_of(dataflow.dataflow),
                    best.simulated, best.timing.cycles));
    rows.push_back(std::move(best));
  }
  size_t winner = 0;
  for (size_t i = 1; i < rows.size(); ++i)
    if (rows[i].timing.cycles < rows[winner].timing.cycles) winner = i;

  std::vector<double> reference;
  if (!settings.timing_only)
    reference = ops::reference_output(op, ops::generate_inputs(op, seed), settings.threads);

  OpOutcome outcome;
  outcome.record.name = op.name;
  outcome.record.kind = op.kind();
  outcome.record.shape = fmt::format("{}x{}x{}", gemm.m, gemm.n, gemm.k);
  outcome.record.dtype = name_of(op.dtype);
  outcome.record.macs = op.macs();
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
    traces::RunRecord record = record_of(result, spec);
    record.dataflow = arch::name_of(row.candidate.mapping.dataflow);
    record.winner = is_winner;
    record.analytical_cycles = row.candidate.cost.cycles;
    record.analytical_bound = mapper::name_of(row.candidate.cost.bound);
    record.candidates_simulated = row.simulated;
    record.mapping = summary_of(row.candidate.mapping, row.candidate.cost);
    record.program_file = row.program.name + ".tprog";
    if (!settings.timing_only) {
      record.numerics.push_back(check_against_cpu(op, reference, result, kOutputTensor));
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
