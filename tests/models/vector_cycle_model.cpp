#include "models/vector_cycle_model.hpp"

#include <deque>
#include <stdexcept>
#include <string>

namespace tessera::testmodels {
namespace {

using arch::VectorKind;
using arch::VectorWork;

void require(bool holds, const char* invariant, int64_t cycle) {
  if (!holds) {
    throw std::logic_error("vector cycle model: invariant '" + std::string(invariant) + "' broken at cycle " +
                           std::to_string(cycle));
  }
}

// One micro-op of a vector's chain: an operation on every lane of the vector.
struct MicroOp {
  const char* name = "";
  bool special = false;  // runs on the special-function pipe, special_per_cycle lanes per cycle
  // Reads its row's statistic of that pass. A chain latches its scalar operands when its first micro-op
  // issues, so the whole chain waits until every statistic it reads is published.
  int reads_statistic_of = -1;
  bool reads_previous_tile = false;  // reads what the previous pass wrote for the same vector
};

// A pass of docs/vector-unit.md's tables, as the micro-ops every vector of every row runs.
struct ModelPass {
  std::vector<MicroOp> chain;
  int64_t cols = 0;          // of each row, the elements the pass covers (set from the tile's cols if 0)
  bool final_part = false;   // its writes are the result for its columns (a later pass covers the others)
  bool reduces = false;      // the chain's last op adds the vector into its row's accumulator
  bool writes_tile = false;  // the chain's last op writes the vector's elements to SRAM
  // The row statistic goes through a scalar special function (reciprocal of softmax's sum, rsqrt of a
  // variance or mean square) before the pass that reads it may use it.
  bool statistic_through_scalar_special = false;
};

MicroOp simple(const char* name, int reads_statistic_of = -1) {
  return MicroOp{name, false, reads_statistic_of, false};
}

MicroOp special(const char* name) {
  return MicroOp{name, true, -1, false};
}

// A softmax's exponential pass after the row max: sub max [, mul scale] [, select mask], exp, add; the exp
// values into the output tile.
ModelPass exp_pass(const VectorWork& work) {
  ModelPass exp;
  exp.chain.push_back(simple("sub max", 0));
  for (int64_t e = 0; e < work.softmax_extra_simple_ops; ++e)
    exp.chain.push_back(simple(e == 0 ? "mul scale" : e == 1 ? "select mask" : "extra"));
  exp.chain.push_back(special("exp"));
  exp.chain.push_back(simple("add"));
  exp.reduces = true;
  exp.writes_tile = true;
  return exp;
}

// route over the experts of each row (docs/vector-unit.md, "route"): the scores over X with the selection's
// first step on them (each group's top-2, or the first arg-max), the kept groups' arg-max passes, the
// remaining arg-max passes over the kept experts, one pass after another (each reads its predecessor's
// winner), then the chosen scores gathered and summed and the weights.
void route_passes(const VectorWork& work, std::vector<ModelPass>& passes) {
  auto last = [&] { return static_cast<int>(passes.size()) - 1; };
  const bool grouped = work.route_groups > 1;
  const std::vector<MicroOp> first_step =
      grouped ? std::vector<MicroOp>{simple("compare with the best"), simple("compare with the second")}
              : std::vector<MicroOp>{simple("compare"), simple("select")};
  ModelPass scores;
  if (work.route_sigmoid) {
    scores.chain = std::vector<MicroOp>{special("sigmoid")};
  } else {
    ModelPass max;
    max.chain = std::vector<MicroOp>{simple("max")};
    max.reduces = true;
    passes.push_back(max);
    ModelPass exp;
    exp.chain = std::vector<MicroOp>{simple("sub max", last()), special("exp"), simple("add")};
    exp.reduces = true;
    exp.writes_tile = true;
    exp.statistic_through_scalar_special = true;  // 1/sum
    passes.push_back(exp);
    MicroOp scale = simple("mul 1/sum", last());
    scale.reads_previous_tile = true;
    scores.chain = std::vector<MicroOp>{scale};
  }
  scores.chain.insert(scores.chain.end(), first_step.begin(), first_step.end());
  scores.reduces = true;
  scores.writes_tile = true;
  passes.push_back(scores);
  int64_t choices_left = work.route_top_k - (grouped ? 0 : 1);
  for (int64_t kept = 0; grouped && kept < work.route_topk_groups; ++kept) {
    ModelPass keep;
    keep.chain = std::vector<MicroOp>{simple("compare group", last()), simple("select")};
    keep.cols = work.route_groups;
    keep.reduces = true;
    passes.push_back(keep);
  }
  for (int64_t choice = 0; choice < choices_left; ++choice) {
    ModelPass select;
    select.chain = std::vector<MicroOp>{simple("compare", last()), simple("select")};
    select.cols = work.route_topk_groups * (work.cols / work.route_groups);
    select.reduces = true;
    passes.push_back(select);
  }
  ModelPass gather;
  gather.chain = std::vector<MicroOp>{simple("add the gathered score", last())};
  gather.cols = work.route_top_k;
  gather.reduces = true;
  gather.writes_tile = true;
  gather.statistic_through_scalar_special = true;  // scaling/sum
  passes.push_back(gather);
  ModelPass weights;
  MicroOp scale = simple("mul scaling/sum", last());
  scale.reads_previous_tile = true;
  weights.chain = std::vector<MicroOp>{scale};
  weights.cols = work.route_top_k;
  weights.writes_tile = true;
  passes.push_back(weights);
}

// The instruction kinds of docs/vector-unit.md, "Instruction kinds and their passes", written out op by op.
std::vector<ModelPass> passes_of(const VectorWork& work) {
  std::vector<ModelPass> passes;
  switch (work.kind) {
    case VectorKind::map: {
      // The chain as given: its simple ops with its special ops after the first one (bias + GELU: add, erf,
      // then the rest); the order does not change the timing.
      ModelPass chain;
      chain.writes_tile = true;
      int64_t simple_left = work.map_simple_ops;
      if (simple_left > 0) {
        chain.chain.push_back(simple("simple"));
        --simple_left;
      }
      for (int64_t s = 0; s < work.map_special_ops; ++s) chain.chain.push_back(special("special"));
      for (; simple_left > 0; --simple_left) chain.chain.push_back(simple("simple"));
      passes.push_back(chain);
      break;
    }
    case VectorKind::reduce_sum:
    case VectorKind::reduce_max: {
      ModelPass reduce;
      reduce.chain = std::vector<MicroOp>{simple(work.kind == VectorKind::reduce_sum ? "add" : "max")};
      reduce.reduces = true;
      passes.push_back(reduce);
      break;
    }
    case VectorKind::softmax: {
      ModelPass max;
      max.chain = std::vector<MicroOp>{simple("max")};
      max.reduces = true;
      passes.push_back(max);
      ModelPass exp = exp_pass(work);
      exp.statistic_through_scalar_special = true;  // 1/sum
      passes.push_back(exp);
      ModelPass normalise;
      MicroOp scale = simple("mul 1/sum", 1);
      scale.reads_previous_tile = true;
      normalise.chain = std::vector<MicroOp>{scale};
      normalise.writes_tile = true;
      passes.push_back(normalise);
      break;
    }
    case VectorKind::layernorm: {
      ModelPass sum;
      sum.chain = std::vector<MicroOp>{simple("add")};
      sum.reduces = true;
      passes.push_back(sum);
      ModelPass variance;
      variance.chain = std::vector<MicroOp>{simple("sub mean", 0), simple("mul"), simple("add")};
      variance.reduces = true;
      variance.statistic_through_scalar_special = true;  // rsqrt
      passes.push_back(variance);
      ModelPass normalise;
      normalise.chain = std::vector<MicroOp>{simple("sub mean", 0), simple("mul rstd", 1),
                                             simple("mul gamma"), simple("add beta")};
      normalise.writes_tile = true;
      passes.push_back(normalise);
      break;
    }
    case VectorKind::rmsnorm: {
      ModelPass squares;
      squares.chain = std::vector<MicroOp>{simple("mul"), simple("add")};
      squares.reduces = true;
      squares.statistic_through_scalar_special = true;  // rsqrt
      passes.push_back(squares);
      ModelPass normalise;
      normalise.chain = std::vector<MicroOp>{simple("mul rstd", 0), simple("mul gamma")};
      normalise.writes_tile = true;
      passes.push_back(normalise);
      break;
    }
    case VectorKind::online_softmax: {
      // The tile's row max of the scaled, masked logits, then p = exp(x*scale - max) into the output tile and
      // its row sum; the running statistics' per-row update is off the issue port.
      ModelPass max;
      for (int64_t e = 0; e < work.softmax_extra_simple_ops; ++e)
        max.chain.push_back(simple(e == 0 ? "mul scale" : e == 1 ? "select mask" : "extra"));
      max.chain.push_back(simple("max"));
      max.reduces = true;
      passes.push_back(max);
      passes.push_back(exp_pass(work));
      break;
    }
    case VectorKind::scale_rows: {
      ModelPass scale;
      scale.chain = std::vector<MicroOp>{simple("mul factor")};
      scale.writes_tile = true;
      passes.push_back(scale);
      break;
    }
    case VectorKind::merge_partials: {
      // The parts' weights and 1/L are per-row scalars worked out off the issue port; every vector then
      // multiplies the first part's by its weight, multiplies and adds each further part's, and scales by
      // 1/L.
      ModelPass merge;
      merge.chain.push_back(simple("mul w_0"));
      for (int64_t part = 1; part < work.merge_parts; ++part) {
        merge.chain.push_back(simple("mul w_i"));
        merge.chain.push_back(simple("add"));
      }
      merge.chain.push_back(simple("mul 1/L"));
      merge.writes_tile = true;
      passes.push_back(merge);
      break;
    }
    case VectorKind::weighted_sum: {
      // The row's gate weights are scalar operands: g_0 x_0, then a multiply-add for each further part, then
      // the tile at y added.
      ModelPass sum;
      sum.chain.push_back(simple("mul g_0"));
      for (int64_t part = 1; part < work.merge_parts; ++part) sum.chain.push_back(simple("fma g_p"));
      if (work.weighted_adds_tile) sum.chain.push_back(simple("add y"));
      sum.writes_tile = true;
      passes.push_back(sum);
      break;
    }
    case VectorKind::route:
      route_passes(work, passes);
      break;
    case VectorKind::rope: {
      // Per pair (a, b) of the rotated columns: a*cos and b*cos, then a*cos - b*sin and b*cos + a*sin
      // fused: 4 ops per 2 elements, each vector's chain two ops; then the columns past rotary_dim copied.
      ModelPass rotate;
      rotate.chain = std::vector<MicroOp>{simple("mul cos"), simple("fma sin")};
      rotate.cols = work.rope_rotated_cols;
      rotate.writes_tile = true;
      passes.push_back(rotate);
      if (work.rope_rotated_cols < work.cols) {
        passes.back().final_part = true;
        ModelPass copy;
        copy.chain = std::vector<MicroOp>{simple("copy")};
        copy.cols = work.cols - work.rope_rotated_cols;
        copy.writes_tile = true;
        passes.push_back(copy);
      }
      break;
    }
    case VectorKind::pool: {
      ModelPass window;
      for (int64_t w = 0; w < work.pool_window; ++w)
        window.chain.push_back(simple(work.pool_average ? "add" : "max"));
      if (work.pool_average) window.chain.push_back(simple("mul 1/(r*s)"));
      window.writes_tile = true;
      passes.push_back(window);
      break;
    }
  }
  // A norm of X + Y: its first pass adds the tile at y first and keeps the sum in the output tile; the pass
  // after it reads that sum back (and the normalising pass of a layernorm, after the variance, too).
  if (work.norm_adds_tile && (work.kind == VectorKind::layernorm || work.kind == VectorKind::rmsnorm)) {
    passes.front().chain.insert(passes.front().chain.begin(), simple("add y"));
    passes.front().writes_tile = true;
    passes[1].chain.front().reads_previous_tile = true;
  }
  for (ModelPass& pass : passes)
    if (pass.cols == 0) pass.cols = work.cols;
  return passes;
}

// A micro-op (or one lane group of a special one) in the latency pipeline.
struct InFlight {
  bool valid = false;
  int pass = 0;
  int64_t row = 0;
  int64_t vector = 0;
  bool finishes_vector = false;  // the last lane group of the vector's last micro-op
};

struct TreeRow {
  int pass = 0;
  int64_t row = 0;
  std::vector<int64_t> covered;  // per tree node: elements of the row it has summed up
};

struct ScalarInFlight {
  int pass = 0;
  int64_t row = 0;
  int remaining_stages = 0;
};

class VectorUnitModel {
 public:
  VectorUnitModel(const VectorModelUnit& unit, const VectorWork& work)
      : unit_(unit),
        work_(work),
        passes_(passes_of(work)),
        pipeline_(static_cast<size_t>(unit.latency_cycles) + 1) {
    for (size_t p = 0; p < passes_.size(); ++p) {
      vectors_per_row_.push_back(count_vectors(passes_[p].cols, unit.lanes));
      published_.emplace_back(work.rows, false);
      written_.emplace_back(passes_[p].writes_tile ? work.rows * vectors_per_row_[p] : 0, false);
      accumulated_vectors_.emplace_back(passes_[p].reduces ? work.rows : 0, 0);
      accumulators_.emplace_back(passes_[p].reduces ? work.rows : 0, std::vector<int64_t>(unit.lanes, 0));
    }
    run_.passes.resize(passes_.size());
  }

  VectorModelRun run() {
    while (!port_done() || in_flight_ > 0 || !tree_.empty() || !scalar_.empty()) {
      if (port_done()) {
        ++run_.drain_cycles;
      } else if (issue()) {
        ++run_.busy_cycles;
      } else {
        ++run_.stall_cycles;
        ++run_.passes[pass_].stall_cycles;
        // Only work in flight publishes statistics: with none, the port would wait forever.
        if (in_flight_ == 0 && tree_.empty() && scalar_.empty())
          throw std::logic_error("vector cycle model: the port waits for a statistic nothing will publish");
      }
      // End of the cycle, the later stages first so that nothing moves two stages in one cycle.
      advance_scalar_pipe();
      advance_tree();
      leave_pipeline();
      ++cycle_;
    }
    check_all_results_written();
    require(last_write_ + 1 == cycle_, "the instruction ends with a result written", cycle_);
    run_.complete = cycle_;
    return run_;
  }

 private:
  static int64_t count_vectors(int64_t cols, int lanes) {
    int64_t vectors = 0;
    for (int64_t first = 0; first < cols; first += lanes) ++vectors;
    return vectors;
  }

  bool port_done() const { return pass_ == passes_.size(); }
  int64_t active_lanes(int pass, int64_t vector) const {
    const int64_t left = passes_[pass].cols - vector * unit_.lanes;
    return left < unit_.lanes ? left : unit_.lanes;
  }

  // The issue port: the next micro-op of the current vector if the statistic it reads is published.
  bool issue() {
    const ModelPass& pass = passes_[pass_];
    const MicroOp& op = pass.chain[op_];
    if (op_ == 0 && lane_group_ == 0) {  // a vector's chain latches its row statistics when it starts
      for (const MicroOp& later : pass.chain)
        if (later.reads_statistic_of >= 0 && !published_[later.reads_statistic_of][row_]) return false;
    }
    if (op.reads_previous_tile) {
      require(written_[pass_ - 1][row_ * vectors_per_row_[pass_ - 1] + vector_],
              "a pass reads back only elements the previous pass has written", cycle_);
    }
    VectorModelPass& stats = run_.passes[pass_];
    if (vector_ == 0 && op_ == 0 && lane_group_ == 0) {
      if (row_ == 0) stats.first_row_start = cycle_;
      if (row_ == work_.rows - 1) stats.last_row_start = cycle_;
    }
    ++stats.busy_cycles;
    stats.issue_end = cycle_ + 1;

    bool op_issued = true;
    if (op.special) {  // one group of special_per_cycle lanes, masked lanes of a partial vector included
      lane_group_ += unit_.special_per_cycle;
      op_issued = lane_group_ >= unit_.lanes;
      if (op_issued) lane_group_ = 0;
    }
    const bool finishes_vector = op_issued && op_ + 1 == pass.chain.size();
    enter_pipeline(InFlight{true, static_cast<int>(pass_), row_, vector_, finishes_vector});
    if (!op_issued) return true;
    if (++op_ < pass.chain.size()) return true;
    op_ = 0;
    if (++vector_ < vectors_per_row_[pass_]) return true;
    vector_ = 0;
    if (++row_ < work_.rows) return true;
    row_ = 0;
    ++pass_;
    return true;
  }

  // The pipeline is latency_cycles + 1 registers: stage 0 holds what issues this cycle; a micro-op moves one
  // stage per cycle and leaves from stage latency_cycles at the end of the cycle (latency 0: the cycle it
  // issued).
  InFlight& stage(int index) { return pipeline_[(pipeline_head_ + index) % pipeline_.size()]; }

  void enter_pipeline(const InFlight& item) {
    require(!stage(0).valid, "one micro-op enters the pipeline per cycle", cycle_);
    stage(0) = item;
    ++in_flight_;
  }

  void leave_pipeline() {
    InFlight& leaving = stage(unit_.latency_cycles);
    const InFlight item = leaving;
    leaving = InFlight{};
    pipeline_head_ = (pipeline_head_ + pipeline_.size() - 1) % pipeline_.size();  // every stage moves one on
    if (!item.valid) return;
    --in_flight_;
    if (item.finishes_vector) complete_vector(item);
  }

  void complete_vector(const InFlight& item) {
    const ModelPass& pass = passes_[item.pass];
    const int64_t active = active_lanes(item.pass, item.vector);
    if (pass.writes_tile) {
      written_[item.pass][item.row * vectors_per_row_[item.pass] + item.vector] = true;
      if (item.pass + 1 == static_cast<int>(passes_.size()) || pass.final_part)
        output_elements_written_ += active;
      last_write_ = cycle_;
    }
    if (!pass.reduces) return;
    std::vector<int64_t>& accumulator = accumulators_[item.pass][item.row];
    for (int64_t lane = 0; lane < active; ++lane) ++accumulator[lane];
    if (++accumulated_vectors_[item.pass][item.row] < vectors_per_row_[item.pass]) return;
    TreeRow entering{item.pass, item.row, accumulator};
    if (entering.covered.size() == 1) {  // one lane: no tree
      leave_tree(entering);
    } else {
      tree_.push_back(std::move(entering));
    }
  }

  // Every row in the lane tree goes down one level: pairs of nodes are added, an odd last node passes.
  void advance_tree() {
    for (auto it = tree_.begin(); it != tree_.end();) {
      std::vector<int64_t> next;
      for (size_t node = 0; node < it->covered.size(); node += 2)
        next.push_back(it->covered[node] + (node + 1 < it->covered.size() ? it->covered[node + 1] : 0));
      it->covered = std::move(next);
      if (it->covered.size() == 1) {
        leave_tree(*it);
        it = tree_.erase(it);
      } else {
        ++it;
      }
    }
  }

  void leave_tree(const TreeRow& row) {
    require(row.covered.front() == passes_[row.pass].cols,
            "a row statistic covers exactly the row's elements", cycle_);
    if (passes_[row.pass].statistic_through_scalar_special && unit_.latency_cycles > 0) {
      scalar_.push_back(ScalarInFlight{row.pass, row.row, unit_.latency_cycles});
    } else {
      publish(row.pass, row.row);
    }
  }

  void advance_scalar_pipe() {
    for (auto it = scalar_.begin(); it != scalar_.end();) {
      if (--it->remaining_stages == 0) {
        publish(it->pass, it->row);
        it = scalar_.erase(it);
      } else {
        ++it;
      }
    }
  }

  void publish(int pass, int64_t row) {
    require(!published_[pass][row], "a row statistic is published once", cycle_);
    published_[pass][row] = true;
    if (pass + 1 == static_cast<int>(passes_.size())) {
      ++statistics_written_;
      last_write_ = cycle_;
    }
  }

  void check_all_results_written() const {
    const ModelPass& last = passes_.back();
    int64_t outputs = 0;  // the last pass's columns and those of the passes whose writes are final
    for (const ModelPass& pass : passes_)
      if (&pass == &last || pass.final_part) outputs += work_.rows * pass.cols;
    if (last.writes_tile)
      require(output_elements_written_ == outputs, "every output element is written", cycle_);
    if (last.reduces) require(statistics_written_ == work_.rows, "every row statistic is written", cycle_);
  }

  VectorModelUnit unit_;
  VectorWork work_;
  std::vector<ModelPass> passes_;
  std::vector<int64_t> vectors_per_row_;  // per pass
  VectorModelRun run_;
  int64_t cycle_ = 0;

  // The issue port's position: pass, row, vector, micro-op of the chain, first lane of the next lane group.
  size_t pass_ = 0;
  int64_t row_ = 0;
  int64_t vector_ = 0;
  size_t op_ = 0;
  int lane_group_ = 0;

  std::vector<InFlight> pipeline_;
  size_t pipeline_head_ = 0;
  int64_t in_flight_ = 0;
  std::deque<TreeRow> tree_;
  std::deque<ScalarInFlight> scalar_;

  std::vector<std::vector<bool>> published_;                     // per pass, per row
  std::vector<std::vector<bool>> written_;                       // per pass that writes, per (row, vector)
  std::vector<std::vector<int64_t>> accumulated_vectors_;        // per reducing pass, per row
  std::vector<std::vector<std::vector<int64_t>>> accumulators_;  // per reducing pass, per row, per lane
  int64_t output_elements_written_ = 0;
  int64_t statistics_written_ = 0;
  int64_t last_write_ = -1;
};

}  // namespace

VectorModelRun run_vector_cycle_model(const VectorModelUnit& unit, const VectorWork& work) {
  if (unit.lanes < 1 || unit.special_per_cycle < 1 || unit.special_per_cycle > unit.lanes ||
      unit.latency_cycles < 0)
    throw std::invalid_argument(
        "vector cycle model: needs lanes >= 1, 1 <= special_per_cycle <= lanes, latency >= 0");
  if (work.rows < 1 || work.cols < 1)
    throw std::invalid_argument("vector cycle model: rows, cols must be >= 1");
  if ((work.kind == VectorKind::map && work.map_simple_ops + work.map_special_ops < 1) ||
      (work.kind == VectorKind::pool && work.pool_window < 1))
    throw std::invalid_argument("vector cycle model: every pass needs at least one micro-op");
  if (work.kind == VectorKind::rope && (work.rope_rotated_cols < 1 || work.rope_rotated_cols > work.cols))
    throw std::invalid_argument("vector cycle model: a rope rotates 1 .. cols columns of a row");
  return VectorUnitModel(unit, work).run();
}

}  // namespace tessera::testmodels
