#include "arch/timing/vector_timing.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "arch/isa/vector_kinds/vector_kind_info.hpp"

namespace tessera::arch {

namespace {

// int64 arithmetic that remembers whether any step overflowed (the result is then meaningless).
class CheckedArithmetic {
 public:
  int64_t add(int64_t a, int64_t b) {
    int64_t sum = 0;
    overflowed_ |= __builtin_add_overflow(a, b, &sum);
    return sum;
  }
  int64_t multiply(int64_t a, int64_t b) {
    int64_t product = 0;
    overflowed_ |= __builtin_mul_overflow(a, b, &product);
    return product;
  }
  bool overflowed() const { return overflowed_; }

 private:
  bool overflowed_ = false;
};

// The rules of a tile and its kind's parameters, which need no machine; "" when they hold.
std::string work_rule_problem(const VectorWork& work) {
  if (work.rows < 1) return fmt::format("rows must be >= 1, got {}", work.rows);
  if (work.cols < 1) return fmt::format("cols must be >= 1, got {}", work.cols);
  if (const auto work_problem = info_of(work.kind).work_problem) return work_problem(work);
  return "";
}

// What an InputError about a vector instruction names: "vector softmax".
std::string error_field(VectorKind kind) {
  return fmt::format("vector {}", name_of(kind));
}

std::string overflow_problem(const VectorSpec& spec, const VectorWork& work) {
  return fmt::format("{} x {} elements on {} lanes: the cycle count overflows int64", work.rows, work.cols,
                     spec.lanes);
}

// The closed form of docs/vector-unit.md, "Closed form". Only rows 0 and rows-1 of each pass are computed:
// every pass's row ends are a convex function of the row, so the latest constraint on any row comes from the
// first or the last row of the previous pass (the document proves it). Sets `overflowed` instead of timing
// when a cycle count does not fit in int64.
VectorTiming closed_form(const VectorSpec& spec, const VectorWork& work, bool& overflowed) {
  TESSERA_ASSERT(spec.special_issue_cycles > 0, "a VectorSpec is validated before it times anything");
  CheckedArithmetic checked;
  const VectorPasses passes = vector_passes(work);
  const int64_t latency = spec.latency_cycles;
  const int64_t tree = spec.tree_depth;
  const int64_t rows = work.rows;
  VectorTiming timing;
  timing.vectors_per_row = (work.cols - 1) / spec.lanes + 1;  // a partial last vector costs a full one
  timing.passes = passes.count;
  // Row 0's and row rows-1's issue ends in the previous pass (0 before the first pass).
  int64_t previous_first_end = 0;
  int64_t previous_last_end = 0;
  bool previous_reduces = false;
  for (int p = 0; p < passes.count; ++p) {
    const VectorPass& pass = passes.pass[p];
    VectorPassTiming& t = timing.pass[p];
    t.vector_issue_cycles =
        checked.add(pass.simple_ops, checked.multiply(pass.special_ops, spec.special_issue_cycles));
    const int64_t vectors = pass.cols == 0 ? timing.vectors_per_row : (pass.cols - 1) / spec.lanes + 1;
    t.row_issue_cycles = checked.multiply(vectors, t.vector_issue_cycles);
    // From row 0's start to row rows-1's when nothing waits.
    const int64_t later_rows = checked.multiply(rows - 1, t.row_issue_cycles);
    const int64_t pass_start = previous_last_end;
    TESSERA_ASSERT(pass.repeats == 1 || pass.reduces,
                   "a repeated pass reduces: each repetition depends on the last");
    // A repeated pass is `repeats` passes in a row, each after the first depending on the one before.
    for (int64_t repetition = 0; repetition < pass.repeats && !checked.overflowed(); ++repetition) {
      int64_t first_row_start = 0, last_row_start = 0;
      if (repetition > 0 || pass.depends) {
        TESSERA_ASSERT(p + repetition > 0 && (repetition > 0 || previous_reduces),
                       "a pass depends only on a previous pass that reduces its rows");
        // Row r's statistic of the previous pass is usable `wait` cycles after that row's last issue.
        const int64_t wait = latency + tree + (pass.scalar_special && repetition == 0 ? latency : 0);
        const int64_t first_ready = checked.add(previous_first_end, wait);
        first_row_start = std::max(previous_last_end, first_ready);
        last_row_start =
            std::max({checked.add(previous_last_end, later_rows), checked.add(first_ready, later_rows),
                      checked.add(previous_last_end, wait)});
      } else {
        first_row_start = previous_last_end;
        last_row_start = checked.add(previous_last_end, later_rows);
      }
      if (repetition == 0) t.first_row_start = first_row_start;
      t.last_row_start = last_row_start;
      previous_first_end = checked.add(first_row_start, t.row_issue_cycles);
      previous_last_end = checked.add(last_row_start, t.row_issue_cycles);
    }
    t.issue_end = previous_last_end;
    t.busy_cycles = checked.multiply(checked.multiply(rows, t.row_issue_cycles), pass.repeats);
    if (checked.overflowed()) break;
    t.stall_cycles = t.issue_end - pass_start - t.busy_cycles;
    timing.busy_cycles = checked.add(timing.busy_cycles, t.busy_cycles);
    timing.stall_cycles += t.stall_cycles;
    previous_reduces = pass.reduces;
  }
  timing.issue_cycles = previous_last_end;
  timing.drain_cycles = latency + (previous_reduces ? tree : 0);
  timing.cycles = checked.add(timing.issue_cycles, timing.drain_cycles);
  overflowed = checked.overflowed();
  return timing;
}

}  // namespace

const char* name_of(VectorKind kind) {
  if (static_cast<size_t>(kind) >= static_cast<size_t>(kVectorKindCount)) return "?";
  return info_of(kind).mnemonic;
}

// docs/vector-unit.md, "Instruction kinds and their passes", says each kind's descriptor's passes in words.
VectorPasses vector_passes(const VectorWork& work) {
  VectorPasses passes;
  info_of(work.kind).add_passes(work, passes);
  return passes;
}

std::string vector_work_problem(const VectorSpec& spec, const VectorWork& work) {
  if (std::string problem = work_rule_problem(work); !problem.empty()) return problem;
  bool overflowed = false;
  closed_form(spec, work, overflowed);
  return overflowed ? overflow_problem(spec, work) : "";
}

VectorTiming vector_timing(const VectorSpec& spec, const VectorWork& work) {
  std::string problem = work_rule_problem(work);
  VectorTiming timing;
  if (problem.empty()) {
    bool overflowed = false;
    timing = closed_form(spec, work, overflowed);
    if (overflowed) problem = overflow_problem(spec, work);
  }
  if (!problem.empty()) throw InputError(SourceLocation{}, error_field(work.kind), problem);
  return timing;
}

VectorSramTraffic vector_sram_traffic(const VectorWork& work, const VectorElementBytes& bytes) {
  if (std::string problem = work_rule_problem(work); !problem.empty())
    throw InputError(SourceLocation{}, error_field(work.kind), problem);
  CheckedArithmetic checked;
  const VectorPasses passes = vector_passes(work);
  VectorSramTraffic traffic;
  traffic.passes = passes.count;
  for (int p = 0; p < passes.count; ++p) {
    const VectorPass& pass = passes.pass[p];
    const int64_t elements =
        checked.multiply(checked.multiply(work.rows, pass.cols == 0 ? work.cols : pass.cols), pass.repeats);
    auto tile_bytes = [&](int64_t per_element, int64_t element_bytes) {
      return checked.multiply(elements, checked.multiply(per_element, element_bytes));
    };
    VectorPassTraffic& t = traffic.pass[p];
    t.read_bytes = checked.add(checked.add(tile_bytes(pass.input_reads, bytes.input_bytes),
                                           tile_bytes(pass.output_reads, bytes.output_bytes)),
                               tile_bytes(pass.parameter_reads, bytes.parameter_bytes));
    t.write_bytes = tile_bytes(pass.output_writes, bytes.output_bytes);
    if (pass.writes_row_statistic)
      t.write_bytes = checked.add(t.write_bytes, checked.multiply(work.rows, bytes.output_bytes));
    const int64_t row_words = checked.multiply(work.rows, pass.repeats);
    t.read_bytes = checked.add(t.read_bytes, checked.multiply(row_words, pass.row_statistic_reads * 4));
    t.write_bytes = checked.add(t.write_bytes, checked.multiply(row_words, pass.row_statistic_writes * 4));
    traffic.read_bytes = checked.add(traffic.read_bytes, t.read_bytes);
    traffic.write_bytes = checked.add(traffic.write_bytes, t.write_bytes);
  }
  if (checked.overflowed()) {
    throw InputError(SourceLocation{}, error_field(work.kind),
                     fmt::format("the SRAM bytes of {} x {} elements overflow int64", work.rows, work.cols));
  }
  return traffic;
}

}  // namespace tessera::arch
