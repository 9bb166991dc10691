#include "flow/evaluate_op.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "arch/timing/compression.hpp"
#include "common/parallel.hpp"
#include "flow/gpu_references.hpp"
#include "flow/numerics.hpp"
#include "flow/records.hpp"
#include "mapper/lowering.hpp"
#include "mapper/op_stages.hpp"
#include "mapper/search.hpp"
#include "ops/reference.hpp"

namespace tessera::flow {

namespace {

// A candidate's run taking this long (host seconds) gets a progress line of its own.
constexpr double kLongRunSeconds = 1.0;

// The best simulated candidate of a row so far.
struct Simulated {
  mapper::Candidate candidate;
  std::string name;       // the row's program name ("ffn1.ws-fused")
  arch::Program program;  // only when it is run functionally or written out
  sim::RunResult timing;
  int simulated = 0;
  int stopped = 0;  // of the simulated, stopped once they could no longer beat an earlier one
};

// The least DRAM traffic the op can take: each tensor moved once, a sparse activation coded where the machine
// codes its DRAM traffic (as the lowering moves it).
int64_t minimum_dram_bytes(const ops::Op& op, const arch::ArchSpec& spec) {
  int64_t bytes = op.minimum_dram_bytes();
  if (!spec.dram.rlc) return bytes;
  for (const ops::TensorDesc& tensor : ops::tensors_of(op)) {
    if (tensor.density >= 1.0) continue;
    const int64_t raw = tensor.rows * tensor.cols * size_bytes(tensor.dtype);
    bytes -= raw - arch::coded_bytes(raw, arch::coded_fraction(spec.dram.rlc, tensor.density, tensor.dtype));
  }
  return bytes;
}

mapper::SearchOptions search_options(const ops::Op& op, uint64_t seed, const RunSettings& settings) {
  mapper::SearchOptions options;
  options.dataflows = settings.dataflows;
  options.keep_per_dataflow = std::max(1, settings.candidates.kept_per_row());
  options.objective = settings.objective;
  options.seed = seed;
  options.threads = settings.threads;
  options.locate_field = settings.locate_machine_field;
  options.op_description =
      fmt::format("{} ({} {} {})", op.name, op.kind_name(), op.shape_text(), name_of(op.dtype));
  return options;
}

mapper::SearchResult search_or_reuse(const ops::Op& op, uint64_t seed, const arch::ArchSpec& spec,
                                     const RunSettings& settings, const ops::OpIdentity& key,
                                     const std::function<void(const std::string&)>& say) {
  if (settings.cache && settings.cache->searches.count(key)) {
    mapper::SearchResult search = settings.cache->searches.at(key);
    search.seconds = 0;  // nothing was searched for this layer
    say(fmt::format("{}: same shape as an earlier layer: its {} mappings' scores reused", op.name,
                    search.evaluated));
    return search;
  }
  mapper::SearchResult search;
  if (settings.cache && settings.cache->searched_ahead.count(key)) {
    auto ahead = settings.cache->searched_ahead.find(key);
    search = std::move(ahead->second);
    settings.cache->searched_ahead.erase(ahead);
  } else {
    search = mapper::search_op(op, spec, search_options(op, seed, settings));
  }
  say(fmt::format("{}: {} mappings scored in {:.2f} s", op.name, search.evaluated, search.seconds));
  if (settings.cache) settings.cache->searches.emplace(key, search);
  return search;
}

}  // namespace

void search_ahead(const std::vector<ops::Op>& ops, uint64_t seed, const arch::ArchSpec& spec,
                  const RunSettings& settings) {
  if (!settings.cache || settings.threads <= 1) return;
  std::vector<std::pair<ops::OpIdentity, const ops::Op*>> unique;
  std::set<ops::OpIdentity> seen;
  for (const ops::Op& op : ops) {
    ops::OpIdentity key = ops::identity_of(op);
    if (settings.cache->searches.count(key) || settings.cache->searched_ahead.count(key) ||
        !mapper::stages_of(op, spec, settings.dataflows).mapped() || !seen.insert(key).second)
      continue;
    unique.emplace_back(std::move(key), &op);
  }
  if (unique.size() < 2) return;  // one op's search is faster on every thread
  // A search that fails is not filed: plan_op searches that op again and throws its error in the ops' order.
  std::vector<std::optional<mapper::SearchResult>> found(unique.size());
  for_each_item(static_cast<int64_t>(unique.size()), settings.threads, [&](int64_t i) {
    const ops::Op& op = *unique[static_cast<size_t>(i)].second;
    mapper::SearchOptions options = search_options(op, seed, settings);
    options.threads = 1;
    try {
      found[static_cast<size_t>(i)] = mapper::search_op(op, spec, options);
    } catch (const std::exception&) {
    }
  });
  for (size_t i = 0; i < unique.size(); ++i)
    if (found[i]) settings.cache->searched_ahead.emplace(std::move(unique[i].first), std::move(*found[i]));
}

// A candidate chosen for simulation: its row, its place in the row, its program when lowered, its timing
// once known (cached, or simulated).
struct Pending {
  size_t row = 0;
  size_t rank = 0;  // its place in the row, in the mapper's order
  mapper::Candidate candidate;
  std::optional<arch::Program> program;
  std::pair<ops::OpIdentity, std::string> timing_key;
  std::optional<sim::RunResult> timing;
};

struct PlannedOp {
  const ops::Op* op = nullptr;
  uint64_t seed = 0;
  std::function<void(const std::string&)> say;
  ops::OpIdentity key;  // of the op: its timings' cache key with the mapping
  OpOutcome outcome;
  bool mapped = false;  // else outcome is final
  mapper::SearchResult search;
  CandidatePick pick;
  std::vector<Pending> pending;
  std::vector<std::string> row_names;
  std::vector<size_t> to_run;  // indices into pending of the candidates not timed yet, in the order they run
  // Per row: the reserve's candidates taken by refinement so far, and its refinement rounds.
  std::vector<size_t> reserve_taken;
  std::vector<int> refine_rounds;

  // Adds candidate `candidate` of row `r` to those simulated (its timing from the cache when known).
  void add(size_t r, const mapper::Candidate& candidate, const RunSettings& settings) {
    size_t rank = 0;
    for (const Pending& other : pending) rank += other.row == r ? 1 : 0;
    pending.push_back(Pending{r, rank, candidate, std::nullopt,
                              std::make_pair(key, candidate.mapping.describe()), std::nullopt});
    Pending& added = pending.back();
    if (settings.cache && settings.cache->timings.count(added.timing_key))
      added.timing = settings.cache->timings.at(added.timing_key);
    else
      to_run.push_back(pending.size() - 1);
  }
  // Refinement (CandidateRules): each row whose next reserved candidate estimates more than the margin
  // below the row's best simulated cycles, and below the op's best (it could still win), takes its next
  // candidates, as many as it simulated at first.
  // Whether any row did; what each did is said.
  bool refine(const RunSettings& settings) {
    const CandidateRules& rules = settings.candidates;
    if (!mapped || settings.objective != mapper::Objective::cycles) return false;
    bool refined = false;
    std::optional<int64_t> op_best;  // the fewest cycles of any row so far
    for (const Pending& candidate : pending)
      if (!candidate.timing->stopped && (!op_best || candidate.timing->counters.cycles < *op_best))
        op_best = candidate.timing->counters.cycles;
    for (size_t r = 0; r < pick.rows.size(); ++r) {
      const std::vector<mapper::Candidate>& reserve = pick.rows[r].reserve;
      if (refine_rounds[r] >= rules.refine_rounds || reserve_taken[r] >= reserve.size()) continue;
      std::optional<int64_t> best;
      for (const Pending& candidate : pending)
        if (candidate.row == r && !candidate.timing->stopped &&
            (!best || candidate.timing->counters.cycles < *best))
          best = candidate.timing->counters.cycles;
      const int64_t next_estimate = reserve[reserve_taken[r]].cost.cycles;
      // Only a candidate that could still win the op is worth a simulation.
      if (!best ||
          static_cast<double>(next_estimate) * (1 + rules.refine_margin) >= static_cast<double>(*best) ||
          next_estimate >= *op_best)
        continue;
      const size_t step = std::min(pick.rows[r].candidates.size(), reserve.size() - reserve_taken[r]);
      for (size_t k = 0; k < step; ++k) add(r, reserve[reserve_taken[r]++], settings);
      ++refine_rounds[r];
      refined = true;
      if (say)
        say(fmt::format(
            "{}: {}: best simulated {} cycles, the next candidate estimated {} ({:.1f}% below): {} "
            "more simulated",
            op->name, pick.rows[r].label, *best, next_estimate,
            100.0 * (1.0 - static_cast<double>(next_estimate) / static_cast<double>(*best)), step));
    }
    return refined;
  }

  // Candidate i's program, lowered when first needed.
  arch::Program lower(size_t i, const arch::ArchSpec& spec) const {
    return mapper::lower(*op, seed, pending[i].candidate.mapping, spec, row_names[pending[i].row]);
  }
  // The fewest cycles known of candidate i's row among those before it (its bound), from `known(j)`; none
  // when the objective is not cycles (a slower candidate may still win on energy or DRAM bytes).
  template <typename Known>
  std::optional<int64_t> fewest_before(size_t i, mapper::Objective objective, const Known& known) const {
    std::optional<int64_t> fewest;
    if (objective != mapper::Objective::cycles) return fewest;
    for (size_t j = 0; j < pending.size(); ++j) {
      if (pending[j].row != pending[i].row || pending[j].rank >= pending[i].rank) continue;
      const auto* timing = known(j);
      if (timing && !timing->stopped && (!fewest || timing->counters.cycles < *fewest))
        fewest = timing->counters.cycles;
    }
    return fewest;
  }
};

void PlannedOpDeleter::operator()(PlannedOp* plan) const {
  delete plan;
}

PlannedOpPtr plan_op(const ops::Op& op, uint64_t seed, const arch::ArchSpec& spec,
                     const RunSettings& settings) {
  PlannedOpPtr plan(new PlannedOp);
  plan->op = &op;
  plan->seed = seed;
  plan->say = settings.progress;
  OpOutcome& outcome = plan->outcome;
  outcome.record.name = op.name;
  outcome.record.kind = op.kind_name();
  outcome.record.shape = op.shape_text();
  outcome.record.dtype = name_of(op.dtype);
  outcome.record.macs = op.macs();
  outcome.record.dram_minimum_bytes = minimum_dram_bytes(op, spec);
  if (const mapper::OpStages stages = mapper::stages_of(op, spec, settings.dataflows); !stages.mapped()) {
    outcome.record.not_simulated =
        fmt::format("{}: this {} op is not lowered or timed (its output is not checked)", stages.not_mapped,
                    op.kind_name());
    // The GPU's time for it is still worth showing next to the layers that are simulated.
    const GpuReferences gpu =
        find_gpu_references(op, seed, settings.workload_name, settings.reference_root, /*outputs=*/false);
    outcome.record.gpu = gpu.comparisons;
    outcome.record.gpu_note = gpu.note;
    return plan;
  }
  plan->mapped = true;
  auto say = [&](const std::string& line) {
    if (plan->say) plan->say(line);
  };
  const ops::OpIdentity key = ops::identity_of(op);
  plan->key = key;
  plan->search = search_or_reuse(op, seed, spec, settings, key, say);
  plan->pick = pick_candidates(plan->search, settings.candidates);
  outcome.record.pruned = plan->pick.pruned;
  outcome.record.pareto = pareto_of(plan->search);
  const CandidatePick& pick = plan->pick;
  for (size_t r = 0; r < pick.rows.size(); ++r) {
    std::string name = fmt::format("{}.{}", op.name, pick.rows[r].label);
    std::replace(name.begin(), name.end(), ' ', '-');  // "ffn1.ws-fused"
    plan->row_names.push_back(name);
    for (const mapper::Candidate& candidate : pick.rows[r].candidates) plan->add(r, candidate, settings);
  }
  plan->reserve_taken.assign(pick.rows.size(), 0);
  plan->refine_rounds.assign(pick.rows.size(), 0);
  return plan;
}

namespace {

void run_batch(const std::vector<PlannedOp*>& plans, const arch::ArchSpec& spec, sim::Machine& machine,
               const RunSettings& settings) {
  // Every op's candidates not timed yet, run all at once (in worker processes with --threads): the rows'
  // first candidates of every op first (they are never stopped), then the second ones, and so on, so that
  // later ones start with a bound and no op's last run leaves a core idle while the next op's wait. A
  // candidate of the same op identity and mapping as one before it (a repeated layer) is not run again: it
  // takes that one's timing.
  // Candidate i of a row is stopped iff its cycles exceed the fewest of the row's candidates 0..i-1 (it
  // cannot win the row): its run may stop at a looser bound known when it starts, and one that ran to the end
  // past the bound counts as stopped all the same, so the report is the same whatever the worker count
  // (docs/design-notes.md, "Early stop").
  struct Job {
    PlannedOp* plan = nullptr;
    size_t index = 0;  // into the plan's pending
  };
  std::vector<Job> jobs;
  for (PlannedOp* plan : plans)
    for (size_t i : plan->to_run) jobs.push_back(Job{plan, i});
  if (jobs.empty()) return;
  // What every lowering of an op reads (a MoE layer's routing) is computed here, before the workers that
  // lower candidates are forked, rather than once in each: once per op and form its rows map to.
  for (PlannedOp* plan : plans) {
    std::set<const mapper::Form*> prepared;
    for (size_t i : plan->to_run) {
      const mapper::Mapping& mapping = plan->pending[i].candidate.mapping;
      if (prepared.insert(mapping.form.get()).second)
        mapper::prepare_lowering(*plan->op, plan->seed, mapping);
    }
  }
  std::stable_sort(jobs.begin(), jobs.end(), [](const Job& a, const Job& b) {
    return a.plan->pending[a.index].rank < b.plan->pending[b.index].rank;
  });
  // Each candidate's job, and each job's first of its timing key (itself, or the one it copies).
  std::map<std::pair<const PlannedOp*, size_t>, size_t> job_of;
  std::map<std::pair<ops::OpIdentity, std::string>, size_t> first_of_key;
  std::vector<size_t> runs;                 // jobs that run, in order
  std::vector<size_t> run_of(jobs.size());  // a job's run
  for (size_t t = 0; t < jobs.size(); ++t) {
    job_of[{jobs[t].plan, jobs[t].index}] = t;
    const auto& key = jobs[t].plan->pending[jobs[t].index].timing_key;
    const auto [first, added] = first_of_key.emplace(key, runs.size());
    if (added) runs.push_back(t);
    run_of[t] = first->second;
  }
  // One candidate's program is kept at a time: run_timing is done with a program once it has run it or
  // made its worker request, and a 4096^3 GEMM's program is ~40 MB, so keeping every candidate's would fault
  // in fresh pages for each lowering (most of a lowering's time) where the freed ones are reused. A row's
  // best is lowered again for the report (the lowering is a function of the mapping).
  auto program_of = [&](size_t r) -> const arch::Program& {
    const Job& job = jobs[runs[r]];
    Pending& candidate = job.plan->pending[job.index];
    if (!candidate.program) {
      for (PlannedOp* plan : plans)
        for (Pending& other : plan->pending) other.program.reset();
      candidate.program = job.plan->lower(job.index, spec);
    }
    return *candidate.program;
  };
  // Per run, the plans whose candidates it times (a repeated layer's too), and per plan the runs it waits
  // for: an op says when its last candidate is in.
  std::vector<std::vector<PlannedOp*>> plans_of_run(runs.size());
  std::map<const PlannedOp*, size_t> awaited;
  for (size_t t = 0; t < jobs.size(); ++t) {
    std::vector<PlannedOp*>& waiting = plans_of_run[run_of[t]];
    if (std::find(waiting.begin(), waiting.end(), jobs[t].plan) == waiting.end()) {
      waiting.push_back(jobs[t].plan);
      ++awaited[jobs[t].plan];
    }
  }
  size_t runs_in = 0;
  std::vector<sim::RunResult> timings = machine.run_timing(
      runs.size(), program_of, settings.threads,
      [&](size_t r, const std::vector<const sim::RunResult*>& finished) {
        const Job& job = jobs[runs[r]];
        return job.plan->fewest_before(job.index, settings.objective, [&](size_t j) -> const sim::RunResult* {
          const Pending& other = job.plan->pending[j];
          if (other.timing) return &*other.timing;
          return finished[run_of[job_of.at({job.plan, j})]];
        });
      },
      [&](size_t r, const sim::RunResult& timing) {
        // A long run says when each candidate is in (a 8192^3 GEMM's take seconds each); short ones stay
        // quiet.
        ++runs_in;
        for (PlannedOp* plan : plans_of_run[r])
          if (--awaited[plan] == 0 && plan->say)
            plan->say(fmt::format("{}: its candidates are in ({} of {} runs done)", plan->op->name, runs_in,
                                  runs.size()));
        if (timing.host_seconds < kLongRunSeconds) return;
        const Job& job = jobs[runs[r]];
        if (job.plan->say)
          job.plan->say(
              fmt::format("{}: candidate {} of {} in ({}): {} in {:.1f} s", job.plan->op->name, runs_in,
                          runs.size(), job.plan->pending[job.index].candidate.mapping.describe(),
                          timing.stopped ? fmt::format("stopped past {} cycles", timing.bound_cycles)
                                         : fmt::format("{} cycles", timing.counters.cycles),
                          timing.host_seconds));
      },
      // Each worker lowers the candidates it runs (program_of reads only the plans, made before this call,
      // and its own cache): the lowering no longer waits on this process alone.
      sim::ProgramsMadeBy::workers,
      [&](size_t r) {
        if (!settings.warn) return;
        const Job& job = jobs[runs[r]];
        settings.warn(fmt::format(
            "{}: the worker process simulating candidate {} ({}) died (killed, or out "
            "of memory); the candidate is run again in this process",
            job.plan->op->name, job.index + 1, job.plan->pending[job.index].candidate.mapping.describe()));
      });
  for (size_t t = 0; t < jobs.size(); ++t) {
    Pending& candidate = jobs[t].plan->pending[jobs[t].index];
    candidate.timing = timings[run_of[t]];
    if (settings.cache) settings.cache->timings.emplace(candidate.timing_key, *candidate.timing);
  }
  for (PlannedOp* plan : plans) plan->to_run.clear();
}

}  // namespace

void run_planned(const std::vector<PlannedOp*>& plans, const arch::ArchSpec& spec, sim::Machine& machine,
                 const RunSettings& settings) {
  run_batch(plans, spec, machine, settings);
  // Refinement rounds: each a batch of the rows that take more candidates, until none does.
  for (;;) {
    std::vector<PlannedOp*> refined;
    for (PlannedOp* plan : plans)
      if (plan->refine(settings)) refined.push_back(plan);
    if (refined.empty()) return;
    run_batch(refined, spec, machine, settings);
  }
}

bool finish_needs_machine(const PlannedOp& plan, const RunSettings& settings) {
  if (!plan.mapped) return false;
  if (!settings.timing_only || settings.trace) return true;
  // The stop decisions of finish_op without their runs: does a stop at a looser bound need a run again?
  // A candidate's run as fewest_before reads it (stopped, counters.cycles, bound_cycles).
  struct Known {
    bool stopped = false;
    RunCounters counters;
    int64_t bound_cycles = 0;
  };
  std::vector<Known> known;
  for (const Pending& candidate : plan.pending)
    known.push_back(
        Known{candidate.timing->stopped, candidate.timing->counters, candidate.timing->bound_cycles});
  for (size_t i = 0; i < known.size(); ++i) {
    const std::optional<int64_t> bound =
        plan.fewest_before(i, settings.objective, [&](size_t j) -> const Known* { return &known[j]; });
    if (known[i].stopped && (!bound || known[i].bound_cycles < *bound)) return true;
    if (bound && (known[i].stopped || known[i].counters.cycles > *bound)) known[i] = Known{true, {}, *bound};
  }
  return false;
}

OpOutcome finish_op(PlannedOp& plan, const arch::ArchSpec& spec, sim::Machine& machine,
                    const RunSettings& settings, std::vector<std::string>* progress_lines) {
  if (!plan.mapped) return std::move(plan.outcome);
  TESSERA_ASSERT(plan.to_run.empty(), "an op's candidates are run before it is finished");
  const ops::Op& op = *plan.op;
  const uint64_t seed = plan.seed;
  OpOutcome& outcome = plan.outcome;
  const mapper::SearchResult& search = plan.search;
  const CandidatePick& pick = plan.pick;
  std::vector<Pending>& pending = plan.pending;
  const std::vector<std::string>& row_names = plan.row_names;
  auto say = [&](const std::string& line) {
    if (progress_lines)
      progress_lines->push_back(line);
    else if (plan.say)
      plan.say(line);
  };
  auto program_of = [&](Pending& candidate) -> const arch::Program& {
    if (!candidate.program) {
      for (Pending& other : pending) other.program.reset();
      candidate.program = plan.lower(static_cast<size_t>(&candidate - pending.data()), spec);
    }
    return *candidate.program;
  };
  auto fewest_before = [&](size_t i, const auto& known) {
    return plan.fewest_before(i, settings.objective, known);
  };

  // A simulated run's figure of the objective, and which of two runs is the better (ties: fewer cycles).
  auto judged = [&](const sim::RunResult& timing) {
    const traces::RunRecord record = record_of(timing, spec, op.macs());
    return mapper::objective_value(settings.objective, static_cast<double>(record.counters.cycles),
                                   record.energy_uj, static_cast<double>(record.dram_bytes));
  };
  auto judged_before = [&](const sim::RunResult& a, const sim::RunResult& b) {
    if (settings.objective == mapper::Objective::cycles) return a.counters.cycles < b.counters.cycles;
    const double va = judged(a), vb = judged(b);
    return va != vb ? va < vb : a.counters.cycles < b.counters.cycles;
  };
  // Each row in the mapper's order: the stop decisions, then the best by the objective (the first of equals).
  std::vector<Simulated> rows(pick.rows.size());
  std::vector<size_t> best_of_row(pick.rows.size(), SIZE_MAX);
  for (size_t i = 0; i < pending.size(); ++i) {
    Pending& candidate = pending[i];
    const std::optional<int64_t> bound =
        fewest_before(i, [&](size_t j) -> const sim::RunResult* { return &*pending[j].timing; });
    sim::RunResult& timing = *candidate.timing;
    // A stop at a bound below this one (a cached run of another row) says nothing: run it again here.
    if (timing.stopped && (!bound || timing.bound_cycles < *bound))
      timing = machine.run(program_of(candidate), sim::RunOptions{false, false, bound});
    if (bound && (timing.stopped || timing.counters.cycles > *bound)) {
      sim::RunResult stopped;
      stopped.stopped = true;
      stopped.bound_cycles = *bound;
      stopped.counters.instructions = timing.counters.instructions;
      timing = std::move(stopped);
    }
    Simulated& row = rows[candidate.row];
    ++row.simulated;
    if (timing.stopped) {
      ++row.stopped;
      continue;
    }
    const size_t best = best_of_row[candidate.row];
    if (best == SIZE_MAX || judged_before(timing, *pending[best].timing)) best_of_row[candidate.row] = i;
  }
  // The program is needed for a functional run or to be written out (with the trace), not for a report: each
  // row's best is lowered again (but the one still kept), the rows on up to --threads threads (a lowering
  // reads only its op and mapping).
  const bool programs_needed = settings.trace || !settings.timing_only;
  std::vector<size_t> to_lower;
  for (size_t r = 0; r < rows.size(); ++r) {
    TESSERA_ASSERT(best_of_row[r] != SIZE_MAX, "a row's first candidate is never stopped");
    if (programs_needed && !pending[best_of_row[r]].program) to_lower.push_back(r);
  }
  for_each_item(static_cast<int64_t>(to_lower.size()), settings.threads, [&](int64_t k) {
    const size_t r = to_lower[static_cast<size_t>(k)];
    Pending& best = pending[best_of_row[r]];
    best.program = mapper::lower(op, seed, best.candidate.mapping, spec, row_names[r]);
  });
  for (size_t r = 0; r < rows.size(); ++r) {
    Pending& best = pending[best_of_row[r]];
    rows[r].candidate = best.candidate;
    rows[r].name = row_names[r];
    if (programs_needed) rows[r].program = std::move(*best.program);
    rows[r].timing = std::move(*best.timing);
  }
  for (size_t r = 0; r < rows.size(); ++r)
    say(fmt::format("{}: {} best of {} simulated{}: {} cycles", op.name, pick.rows[r].label,
                    rows[r].simulated,
                    rows[r].stopped > 0 ? fmt::format(" ({} stopped early)", rows[r].stopped) : "",
                    rows[r].timing.counters.cycles));
  size_t winner = 0;
  for (size_t i = 1; i < rows.size(); ++i)
    if (judged_before(rows[i].timing, rows[winner].timing)) winner = i;

  std::vector<double> reference;
  if (!settings.timing_only)
    reference = ops::reference_output(op, ops::generate_inputs(op, seed), settings.threads);

  const GpuReferences gpu =
      find_gpu_references(op, seed, settings.workload_name, settings.reference_root, !settings.timing_only);

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
      sim::RunOptions functional{true, is_winner && settings.trace};
      functional.threads = settings.threads;
      result = machine.run(row.program, functional);
      // Arithmetic never changes timing: the functional run must reproduce the timing-only one exactly.
      TESSERA_ASSERT(result.counters.cycles == row.timing.counters.cycles,
                     "functional and timing-only runs take the same cycles");
    }
    traces::RunRecord record = record_of(result, spec, op.macs());
    record.dataflow = row.candidate.mapping.label();
    if (row.candidate.mapping.fusion != mapper::Fusion::none)
      record.fusion = mapper::name_of(row.candidate.mapping.fusion);
    record.winner = is_winner;
    record.analytical_cycles = row.candidate.cost.cycles;
    record.analytical_bound = mapper::name_of(row.candidate.cost.bound);
    record.candidates_simulated = row.simulated;
    record.candidates_stopped = row.stopped;
    record.mapping = summary_of(row.candidate.mapping, row.candidate.cost);
    record.program_file = row.name + ".tprog";
    if (!settings.timing_only) {
      const int output = row.program.tensor_id("O");  // the lowering names the output O
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
  if (settings.trace || !settings.timing_only)
    for (Simulated& row : rows) outcome.programs.emplace_back(row.name + ".tprog", std::move(row.program));
  return std::move(outcome);
}

OpOutcome evaluate_op(const ops::Op& op, uint64_t seed, const arch::ArchSpec& spec, sim::Machine& machine,
                      const RunSettings& settings) {
  PlannedOpPtr plan = plan_op(op, seed, spec, settings);
  run_planned({plan.get()}, spec, machine, settings);
  return finish_op(*plan, spec, machine, settings);
}

}  // namespace tessera::flow
