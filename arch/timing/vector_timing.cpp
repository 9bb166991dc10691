#include "arch/timing/vector_timing.hpp"

#include <fmt/format.h>

#include <algorithm>

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
  switch (work.kind) {
    case VectorKind::map:
      if (work.map_simple_ops < 0)
        return fmt::format("map_simple_ops must be >= 0, got {}", work.map_simple_ops);
      if (work.map_special_ops < 0)
        return fmt::format("map_special_ops must be >= 0, got {}", work.map_special_ops);
      if (work.map_simple_ops == 0 && work.map_special_ops == 0)
        return "a map needs at least one op per element (map_simple_ops + map_special_ops >= 1)";
      if (work.map_tile_operands < 0 || work.map_row_operands < 0 || work.map_tile_operands > 4 ||
          work.map_row_operands > 4)
        return fmt::format("a map takes 0 to 4 tile and 0 to 4 row operands, got {} and {}",
                           work.map_tile_operands, work.map_row_operands);
      break;
    case VectorKind::softmax:
    case VectorKind::online_softmax:
      if (work.softmax_extra_simple_ops < 0)
        return fmt::format("softmax_extra_simple_ops must be >= 0, got {}", work.softmax_extra_simple_ops);
      break;
    case VectorKind::pool:
      if (work.pool_window < 1) return fmt::format("pool_window must be >= 1, got {}", work.pool_window);
      break;
    case VectorKind::merge_partials:
    case VectorKind::weighted_sum:
      if (work.merge_parts < 1 || work.merge_parts > kMaxMergeParts)
        return fmt::format("merge_parts must be in [1, {}], got {}", kMaxMergeParts, work.merge_parts);
      break;
    case VectorKind::route:
      if (work.cols > kMaxRouteExperts)
        return fmt::format("a route scores at most {} experts (cols), got {}", kMaxRouteExperts, work.cols);
      if (work.route_groups < 1 || work.cols % work.route_groups != 0)
        return fmt::format("route_groups must divide the {} experts (cols), got {}", work.cols,
                           work.route_groups);
      if (work.route_topk_groups < 1 || work.route_topk_groups > work.route_groups)
        return fmt::format("route_topk_groups must be in [1, route_groups] = [1, {}], got {}",
                           work.route_groups, work.route_topk_groups);
      if (work.route_top_k < 1 || work.route_top_k > work.route_topk_groups * (work.cols / work.route_groups))
        return fmt::format("route_top_k must be in [1, the experts of the kept groups] = [1, {}], got {}",
                           work.route_topk_groups * (work.cols / work.route_groups), work.route_top_k);
      break;
    case VectorKind::rope:
      if (work.rope_rotated_cols < 1 || work.rope_rotated_cols > work.cols)
        return fmt::format("rope_rotated_cols must be in [1, cols] = [1, {}], got {}", work.cols,
                           work.rope_rotated_cols);
      break;
    case VectorKind::reduce_sum:
    case VectorKind::reduce_max:
    case VectorKind::layernorm:
    case VectorKind::rmsnorm:
    case VectorKind::scale_rows:
      break;
  }
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

// A pass of `simple_ops` simple ops per element that reads the input tile once.
VectorPass simple_pass(const char* what, int64_t simple_ops) {
  VectorPass pass;
  pass.what = what;
  pass.simple_ops = simple_ops;
  pass.input_reads = 1;
  return pass;
}

// A softmax's exponential pass: sub [+ mul by the scale] [+ select of the mask], exp, add, after the row max;
// the exp values go to the output tile.
VectorPass exp_pass(const char* what, const VectorWork& work) {
  VectorPass exp = simple_pass(what, 2 + work.softmax_extra_simple_ops);
  exp.special_ops = 1;
  exp.reduces = true;
  exp.depends = true;
  exp.output_writes = 1;
  return exp;
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
  switch (kind) {
    case VectorKind::map:
      return "map";
    case VectorKind::reduce_sum:
      return "reduce_sum";
    case VectorKind::reduce_max:
      return "reduce_max";
    case VectorKind::softmax:
      return "softmax";
    case VectorKind::layernorm:
      return "layernorm";
    case VectorKind::rmsnorm:
      return "rmsnorm";
    case VectorKind::pool:
      return "pool";
    case VectorKind::online_softmax:
      return "online_softmax";
    case VectorKind::scale_rows:
      return "scale_rows";
    case VectorKind::merge_partials:
      return "merge_partials";
    case VectorKind::weighted_sum:
      return "weighted_sum";
    case VectorKind::rope:
      return "rope";
    case VectorKind::route:
      return "route";
  }
  return "?";
}

namespace {

// route over a rows x experts tile of fp32 logits at x (docs/vector-unit.md, "route"): the scores written
// over the logits, the selection as the hardware makes it (group scores, kept groups, top_k arg-max passes),
// then the chosen experts' weights into o. The pass that writes the scores also takes the selection's first
// step on them (the group scores, or the first arg-max) while they are in the unit: a separate pass would
// read them back right behind their writes.
template <class Add>
void add_route_passes(const VectorWork& work, Add&& add) {
  const bool grouped = work.route_groups > 1;
  // The first step: each group's two highest scores (a compare against each of the two running best), or
  // the row's arg-max (a compare and a select); either way the row ends in the lane tree.
  constexpr int64_t kFirstStepOps = 2;
  if (work.route_sigmoid) {
    VectorPass sigmoid = simple_pass(
        grouped ? "scores sigmoid(x) over x, group top-2 sums" : "scores sigmoid(x) over x, first arg-max",
        kFirstStepOps);
    sigmoid.special_ops = 1;
    sigmoid.output_writes = 1;
    sigmoid.reduces = true;
    add(sigmoid);
  } else {
    VectorPass max = simple_pass("row max", 1);
    max.reduces = true;
    add(max);
    VectorPass exp = simple_pass("exp(x - max) over x, row sum", 2);  // sub, exp, add
    exp.special_ops = 1;
    exp.reduces = true;
    exp.depends = true;
    exp.output_writes = 1;
    add(exp);
    VectorPass normalise = simple_pass(
        grouped ? "scores exp * 1/sum over x, group top-2 sums" : "scores exp * 1/sum over x, first arg-max",
        1 + kFirstStepOps);
    normalise.output_writes = 1;
    normalise.reduces = true;
    normalise.depends = true;
    normalise.scalar_special = true;  // the reciprocal of the sum
    add(normalise);
  }
  int64_t choices_left = work.route_top_k;
  if (grouped) {
    // The kept groups: topk_groups arg-max passes over the row's group scores (kept in the unit like a row
    // statistic), each after the previous one's winner.
    VectorPass keep = simple_pass("kept groups: arg-max of the group scores", 2);  // compare, select
    keep.cols = work.route_groups;
    keep.input_reads = 0;
    keep.reduces = true;
    keep.depends = true;
    keep.repeats = work.route_topk_groups;
    add(keep);
  } else {
    --choices_left;  // the first arg-max was the scores pass's
  }
  if (choices_left > 0) {
    // The remaining arg-max passes over the kept groups' experts (a compare and a select an element, the
    // experts chosen so far masked), each after the previous one's winner.
    VectorPass select = simple_pass("top-k: arg-max of the scores", 2);
    select.cols = work.route_topk_groups * (work.cols / work.route_groups);
    select.reduces = true;
    select.depends = true;
    select.repeats = choices_left;
    add(select);
  }
  // The chosen experts' scores (the int32 table at i, top_k a row) gathered into o, their row sum; then
  // times routed_scaling / sum (the reciprocal a scalar special function of the sum).
  VectorPass gather = simple_pass("gather the chosen scores into o, row sum", 1);
  gather.cols = work.route_top_k;
  gather.row_statistic_reads = work.route_top_k;
  gather.output_writes = 1;
  gather.reduces = true;
  gather.depends = true;
  add(gather);
  VectorPass weights = simple_pass("weights: o * scaling/sum", 1);
  weights.cols = work.route_top_k;
  weights.input_reads = 0;
  weights.output_reads = 1;
  weights.output_writes = 1;
  weights.depends = true;
  weights.scalar_special = true;
  add(weights);
}

}  // namespace

// docs/vector-unit.md, "Instruction kinds and their passes", is this table in words.
VectorPasses vector_passes(const VectorWork& work) {
  VectorPasses passes;
  auto add = [&](const VectorPass& pass) { passes.pass[passes.count++] = pass; };
  switch (work.kind) {
    case VectorKind::map: {
      VectorPass chain = simple_pass("elementwise chain", work.map_simple_ops);
      chain.special_ops = work.map_special_ops;
      chain.input_reads += work.map_tile_operands;
      chain.parameter_reads = work.map_row_operands;
      chain.output_writes = 1;
      add(chain);
      break;
    }
    case VectorKind::reduce_sum:
    case VectorKind::reduce_max: {
      VectorPass reduce = simple_pass(work.kind == VectorKind::reduce_sum ? "row sum" : "row max", 1);
      reduce.reduces = true;
      reduce.writes_row_statistic = true;
      add(reduce);
      break;
    }
    case VectorKind::softmax: {
      VectorPass max = simple_pass("row max", 1);
      max.reduces = true;
      add(max);
      add(exp_pass("exp(x*scale - max) and row sum", work));
      VectorPass normalise = simple_pass("exp values * 1/sum", 1);
      normalise.input_reads = 0;
      normalise.output_reads = 1;
      normalise.output_writes = 1;
      normalise.depends = true;
      normalise.scalar_special = true;  // the reciprocal of the sum
      add(normalise);
      break;
    }
    case VectorKind::layernorm: {
      VectorPass sum = simple_pass(work.norm_adds_tile ? "x + y kept in o, row sum (mean)" : "row sum (mean)",
                                   work.norm_adds_tile ? 2 : 1);
      sum.reduces = true;
      add(sum);
      VectorPass deviations = simple_pass("row sum of squared deviations (variance)", 3);  // sub, mul, add
      deviations.reduces = true;
      deviations.depends = true;
      add(deviations);
      VectorPass normalise = simple_pass("(x - mean) * rstd * gamma + beta", 4);  // sub, mul, mul, add
      normalise.parameter_reads = 2;
      normalise.output_writes = 1;
      normalise.depends = true;
      normalise.scalar_special = true;  // rsqrt of the variance
      add(normalise);
      break;
    }
    case VectorKind::rmsnorm: {
      VectorPass squares =
          simple_pass(work.norm_adds_tile ? "x + y kept in o, row sum of squares" : "row sum of squares",
                      work.norm_adds_tile ? 3 : 2);  // [add,] mul, add
      squares.reduces = true;
      add(squares);
      VectorPass normalise = simple_pass("x * rstd * gamma", 2);  // mul, mul
      normalise.parameter_reads = 1;
      normalise.output_writes = 1;
      normalise.depends = true;
      normalise.scalar_special = true;  // rsqrt of the mean square
      add(normalise);
      break;
    }
    case VectorKind::online_softmax: {
      // The row max of this tile [scaled, masked]; the new running max is the larger of it and the old one.
      VectorPass max = simple_pass("row max of x*scale", 1 + work.softmax_extra_simple_ops);
      max.reduces = true;
      add(max);
      // p = exp(x*scale - new max) to the output tile (the next matmul's operand), its row sum; then per row
      // the correction exp(old max - new max) and the running sum (a scalar special function each row).
      VectorPass exp = exp_pass("p = exp(x*scale - max), row sum", work);
      exp.row_statistic_reads = work.online_first ? 0 : 2;  // the old max and sum
      exp.row_statistic_writes = 3;                         // max, sum, correction
      add(exp);
      break;
    }
    case VectorKind::scale_rows: {
      // The accumulator's rows times the step's correction (or 1/sum: the reciprocal is a scalar per row).
      VectorPass scale = simple_pass("x * the row's factor", 1);
      scale.output_writes = 1;
      scale.row_statistic_reads = 1;
      add(scale);
      break;
    }
    case VectorKind::merge_partials: {
      // Per row, off the issue port (as online_softmax's correction): m = the largest of the parts' maxima,
      // each part's weight w = exp(m_i - m) and 1/L, L = the sum of w_i * l_i. The pass: w_0 x_0, then a
      // multiply and an add for each further part, times 1/L.
      VectorPass merge =
          simple_pass("sum of w_i * x_i over the parts, times 1/sum of w_i * l_i", 2 * work.merge_parts);
      merge.input_reads = work.merge_parts;
      merge.output_writes = 1;
      merge.row_statistic_reads = 2 * work.merge_parts;  // each part's max and sum
      add(merge);
      break;
    }
    case VectorKind::rope: {
      // Per rotated pair (a, b): a*cos, b*cos, then the fused a*cos - b*sin and b*cos + a*sin: 4 simple ops
      // per 2 elements, reading the table row's cos and sin (one fp32 word per element). The columns past
      // rotary_dim in each head are copied (one op), in a second pass over them alone.
      VectorPass rotate = simple_pass("rotate pairs: x*cos -+ x'*sin", 2);
      rotate.cols = work.rope_rotated_cols;
      rotate.parameter_reads = 1;
      rotate.output_writes = 1;
      add(rotate);
      if (work.rope_rotated_cols < work.cols) {
        VectorPass copy = simple_pass("copy the columns past rotary_dim", 1);
        copy.cols = work.cols - work.rope_rotated_cols;
        copy.output_writes = 1;
        add(copy);
      }
      break;
    }
    case VectorKind::weighted_sum: {
      // Per vector: g_0 x_0, then a multiply-add for each further part (the row's weights are scalar
      // operands, read once a row), [+ y].
      const int64_t parts = work.merge_parts, tile = work.weighted_adds_tile ? 1 : 0;
      VectorPass sum = simple_pass("sum of g_p * x_p over the parts [+ y]", parts + tile);
      sum.input_reads = parts + tile;
      sum.output_writes = 1;
      sum.row_statistic_reads = parts;  // the row's P fp32 weights
      add(sum);
      break;
    }
    case VectorKind::route:
      add_route_passes(work, add);
      break;
    case VectorKind::pool: {
      // max or add over the window in each lane, then the multiply by 1/(r*s) for an average.
      VectorPass window = simple_pass("window max or sum", work.pool_window + (work.pool_average ? 1 : 0));
      window.input_reads = work.pool_window;
      window.output_writes = 1;
      add(window);
      break;
    }
  }
  // A norm of X + Y: the first pass reads both and writes their sum into the output tile; every later pass
  // reads that sum back instead of X (the unit holds no tile).
  if (work.norm_adds_tile && (work.kind == VectorKind::layernorm || work.kind == VectorKind::rmsnorm)) {
    passes.pass[0].input_reads = 2;
    passes.pass[0].output_writes = 1;
    for (int p = 1; p < passes.count; ++p) {
      passes.pass[p].input_reads = 0;
      passes.pass[p].output_reads = 1;
    }
  }
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
