#include "arch/vector_timing_checks.hpp"

#include <algorithm>
#include <sstream>

#include "models/vector_cycle_model.hpp"

namespace tessera::arch::vector_checks {

namespace {

using testmodels::VectorModelRun;
using testmodels::VectorModelUnit;

VectorModelRun run_model(const VectorSpec& spec, const VectorWork& work) {
  return testmodels::run_vector_cycle_model(
      VectorModelUnit{spec.lanes, spec.special_per_cycle, spec.latency_cycles}, work);
}

}  // namespace

VectorSpec make_spec(int lanes, int special_per_cycle, int latency_cycles) {
  VectorSpec spec;
  spec.lanes = lanes;
  spec.special_per_cycle = special_per_cycle;
  spec.latency_cycles = latency_cycles;
  spec.validate();
  return spec;
}

VectorWork make_work(VectorKind kind, int64_t rows, int64_t cols) {
  VectorWork work;
  work.kind = kind;
  work.rows = rows;
  work.cols = cols;
  return work;
}

VectorWork weighted_sum_work(int64_t rows, int64_t cols, int64_t parts, bool adds_y) {
  VectorWork work = make_work(VectorKind::weighted_sum, rows, cols);
  work.merge_parts = parts;
  work.weighted_adds_tile = adds_y;
  return work;
}

VectorWork route_work(int64_t rows, int64_t experts, int64_t top_k, bool sigmoid, int64_t groups,
                      int64_t topk_groups) {
  VectorWork work = make_work(VectorKind::route, rows, experts);
  work.route_top_k = top_k;
  work.route_sigmoid = sigmoid;
  work.route_groups = groups;
  work.route_topk_groups = topk_groups;
  return work;
}

std::string describe(const VectorSpec& spec, const VectorWork& work) {
  std::ostringstream out;
  out << name_of(work.kind) << " rows " << work.rows << " cols " << work.cols;
  if (work.kind == VectorKind::map)
    out << " (simple " << work.map_simple_ops << ", special " << work.map_special_ops << ")";
  if (work.kind == VectorKind::softmax || work.kind == VectorKind::online_softmax)
    out << " (extra simple " << work.softmax_extra_simple_ops << ")";
  if (work.kind == VectorKind::rope) out << " (rotated " << work.rope_rotated_cols << ")";
  if (work.kind == VectorKind::pool)
    out << " (window " << work.pool_window << (work.pool_average ? ", average)" : ", max)");
  if (work.kind == VectorKind::merge_partials) out << " (parts " << work.merge_parts << ")";
  if (work.kind == VectorKind::weighted_sum)
    out << " (parts " << work.merge_parts << (work.weighted_adds_tile ? ", + y)" : ")");
  if (work.kind == VectorKind::route)
    out << " (top_k " << work.route_top_k << ", groups " << work.route_groups << ", topk_groups "
        << work.route_topk_groups << (work.route_sigmoid ? ", sigmoid)" : ", softmax)");
  out << " on lanes " << spec.lanes << ", special_per_cycle " << spec.special_per_cycle << ", latency "
      << spec.latency_cycles;
  return out.str();
}

::testing::AssertionResult closed_form_equals_cycle_model(const VectorSpec& spec, const VectorWork& work) {
  VectorModelRun run;
  try {
    run = run_model(spec, work);
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << describe(spec, work) << "\n  the cycle model threw: " << e.what();
  }
  const VectorTiming timing = vector_timing(spec, work);
  std::ostringstream differences;
  auto compare = [&](const char* what, int64_t closed, int64_t modelled) {
    if (closed != modelled)
      differences << "\n  " << what << ": closed form " << closed << ", cycle model " << modelled;
  };
  compare("cycles", timing.cycles, run.complete);
  compare("busy", timing.busy_cycles, run.busy_cycles);
  compare("stall", timing.stall_cycles, run.stall_cycles);
  compare("drain", timing.drain_cycles, run.drain_cycles);
  // A pass the closed form repeats (route's arg-max passes) is that many passes of the model: its first
  // repetition's first row start, its last's last row start and issue end, their busy and stall cycles.
  const VectorPasses table = vector_passes(work);
  int64_t modelled_passes = 0;
  for (int p = 0; p < table.count; ++p) modelled_passes += table.pass[p].repeats;
  compare("passes (repetitions counted)", modelled_passes, static_cast<int64_t>(run.passes.size()));
  compare("passes", timing.passes, table.count);
  if (modelled_passes == static_cast<int64_t>(run.passes.size())) {
    size_t first = 0;
    for (int p = 0; p < timing.passes; ++p) {
      const size_t last = first + static_cast<size_t>(table.pass[p].repeats) - 1;
      int64_t busy = 0, stall = 0;
      for (size_t m = first; m <= last; ++m)
        busy += run.passes[m].busy_cycles, stall += run.passes[m].stall_cycles;
      const std::string pass = "pass " + std::to_string(p + 1) + " ";
      compare((pass + "first row start").c_str(), timing.pass[p].first_row_start,
              run.passes[first].first_row_start);
      compare((pass + "last row start").c_str(), timing.pass[p].last_row_start,
              run.passes[last].last_row_start);
      compare((pass + "issue end").c_str(), timing.pass[p].issue_end, run.passes[last].issue_end);
      compare((pass + "busy").c_str(), timing.pass[p].busy_cycles, busy);
      compare((pass + "stall").c_str(), timing.pass[p].stall_cycles, stall);
      first = last + 1;
    }
  }
  compare("closed form busy + stall + drain vs cycles",
          timing.busy_cycles + timing.stall_cycles + timing.drain_cycles, timing.cycles);
  compare("cycle model busy + stall + drain vs complete",
          run.busy_cycles + run.stall_cycles + run.drain_cycles, run.complete);
  if (differences.str().empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << describe(spec, work) << differences.str();
}

}  // namespace tessera::arch::vector_checks
