#include "models/pe_cycle_model.hpp"

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>

namespace tessera::testmodels {
namespace {

using arch::Dataflow;

// Register-level invariant of docs/pe-array-timing.md; a violation means the schedule let two things meet
// that the document says never meet.
void require(bool holds, const char* invariant, int64_t cycle, int64_t row, int64_t col) {
  if (!holds) {
    throw std::logic_error("PE cycle model: invariant '" + std::string(invariant) + "' broken at cycle " +
                           std::to_string(cycle) + ", PE(" + std::to_string(row) + "," + std::to_string(col) +
                           ")");
  }
}

// One fold, as the document's table defines it. The offsets locate the fold's block in the operands.
struct FoldPlan {
  int instruction = 0;
  int64_t ready_cycle = 0;
  int64_t rows_used = 0;   // sr
  int64_t cols_used = 0;   // sc
  int64_t stream = 0;      // L
  int64_t row_offset = 0;  // WS/IS: k0 (first k of the block); OS: m0
  int64_t col_offset = 0;  // WS: n0; IS: m0; OS: n0
};

// The fold order of the document's table: WS n-blocks outer, k-blocks inner; IS m-blocks outer, k-blocks
// inner; OS m-blocks outer, n-blocks inner. Edge blocks are ragged, never padded.
std::vector<FoldPlan> plan_folds(int rows, int cols, Dataflow dataflow,
                                 const std::vector<PeModelInstruction>& instructions) {
  std::vector<FoldPlan> plans;
  for (size_t index = 0; index < instructions.size(); ++index) {
    const PeModelInstruction& in = instructions[index];
    auto add = [&](int64_t rows_used, int64_t cols_used, int64_t stream, int64_t row_offset,
                   int64_t col_offset) {
      plans.push_back(FoldPlan{static_cast<int>(index), in.ready_cycle, rows_used, cols_used, stream,
                               row_offset, col_offset});
    };
    switch (dataflow) {
      case Dataflow::ws:
        for (int64_t n0 = 0; n0 < in.n; n0 += cols)
          for (int64_t k0 = 0; k0 < in.k; k0 += rows)
            add(std::min<int64_t>(rows, in.k - k0), std::min<int64_t>(cols, in.n - n0), in.m, k0, n0);
        break;
      case Dataflow::is:
        for (int64_t m0 = 0; m0 < in.m; m0 += cols)
          for (int64_t k0 = 0; k0 < in.k; k0 += rows)
            add(std::min<int64_t>(rows, in.k - k0), std::min<int64_t>(cols, in.m - m0), in.n, k0, m0);
        break;
      case Dataflow::os:
        for (int64_t m0 = 0; m0 < in.m; m0 += rows)
          for (int64_t n0 = 0; n0 < in.n; n0 += cols)
            add(std::min<int64_t>(rows, in.m - m0), std::min<int64_t>(cols, in.n - n0), in.k, m0, n0);
        break;
      case Dataflow::rs:  // row stationary has its own model: tests/models/rs_cycle_model.hpp
        throw std::logic_error("the GEMM per-cycle model does not run RS; rs_cycle_model does");
    }
  }
  return plans;
}

// A value moving through the array with the tags the hardware carries alongside it.
struct Operand {
  bool valid = false;
  int fold = -1;
  int64_t s = 0;  // stream element
  int64_t value = 0;
  bool first = false;  // WS/IS: the switch tag on the first stream element
  bool last = false;   // OS: the last MAC of the fold
};

struct Psum {
  bool valid = false;
  int fold = -1;
  int64_t s = 0;
  int64_t value = 0;
};

// A stationary register. block_row is the row of the fold's block it holds; -1 while the shift chain has not
// brought a row of the block yet.
struct WeightRegister {
  int fold = -1;
  int64_t block_row = -1;
  int64_t value = 0;
};

// OS accumulator. After sending its own result up it is a stage of the column's upward shift path until the
// results of the rows below (rows_below of them) have passed; then it is free for another fold.
enum class AccumulatorState : uint8_t { free, accumulating, sending, forwarding };

struct Accumulator {
  AccumulatorState state = AccumulatorState::free;
  int fold = -1;
  int64_t value = 0;
  int64_t rows_below = 0;
  bool holding = false;  // a result received from below, forwarded next cycle
  int64_t held_row = 0;
  int64_t held_value = 0;
};

struct Result {  // OS: a result on the upward path
  bool valid = false;
  int fold = -1;
  int64_t row = 0;  // the array row that computed it
  int64_t value = 0;
};

struct Pe {
  WeightRegister active;        // WS/IS
  WeightRegister shadow;        // WS/IS with drain or full overlap
  Operand input;                // WS/IS: the stream; OS: A. Moves right.
  Operand top_input;            // OS: W. Moves down.
  Psum psum;                    // WS/IS. Moves down.
  Accumulator accumulators[2];  // OS; [1] only with full overlap
};

struct FoldProgress {
  int64_t load_start = -1;
  int64_t stream_start = -1;
  int64_t complete = -1;
  bool loaded = false;  // WS/IS: the shift chain has finished
  int64_t results_written = 0;
};

class PeArrayModel {
 public:
  PeArrayModel(int rows, int cols, Dataflow dataflow, arch::FoldOverlap overlap_folds,
               const std::vector<PeModelInstruction>* instructions,
               std::shared_ptr<const std::vector<FoldPlan>> plans)
      : rows_(rows),
        cols_(cols),
        dataflow_(dataflow),
        overlap_(overlap_folds),
        instructions_(instructions),
        plans_(std::move(plans)),
        pes_(static_cast<size_t>(rows) * cols),
        left_skew_(rows),
        top_skew_(cols),
        progress_(plans_->size()),
        last_top_write_(cols, -1),
        first_top_write_(cols, -1) {
    for (int i = 0; i < rows; ++i) left_skew_[i].resize(i);
    for (int j = 0; j < cols; ++j) top_skew_[j].resize(j);
    for (const PeModelInstruction& in : *instructions_) outputs_.emplace_back(in.m * in.n, 0);
  }

  bool done() const {
    return std::all_of(progress_.begin(), progress_.end(),
                       [](const FoldProgress& p) { return p.complete >= 0; });
  }

  // One cycle: the controller decides from the state at the end of the previous cycle, then every register
  // takes its next value from the previous values of itself and its neighbours.
  void step(bool controller_enabled) {
    if (controller_enabled) control();
    const std::vector<Pe> old = pes_;
    if (dataflow_ == Dataflow::os) {
      step_os(old);
    } else {
      step_loader(old);
      step_ws_is(old);
    }
    ++cycle_;
  }

  int64_t cycle() const { return cycle_; }
  const std::vector<FoldProgress>& progress() const { return progress_; }
  const std::vector<std::vector<int64_t>>& outputs() const { return outputs_; }

 private:
  Pe& pe(int64_t i, int64_t j) { return pes_[i * cols_ + j]; }
  static const Pe& pe_in(const std::vector<Pe>& pes, int cols, int64_t i, int64_t j) {
    return pes[i * cols + j];
  }
  const FoldPlan& plan(int fold) const { return (*plans_)[fold]; }
  const PeModelInstruction& instruction_of(int fold) const {
    return (*instructions_)[plan(fold).instruction];
  }
  int folds() const { return static_cast<int>(plans_->size()); }
  bool in_rectangle(int fold, int64_t i, int64_t j) const {
    return i < plan(fold).rows_used && j < plan(fold).cols_used;
  }
  // WS/IS: drain and full preload into shadow registers. OS: with full overlap consecutive folds alternate
  // between the two accumulators.
  bool shadow() const { return overlap_ != arch::FoldOverlap::none; }
  int bank_of(int fold) const { return overlap_ == arch::FoldOverlap::full ? fold % 2 : 0; }

  // Operand values of a fold, as the document's table places them.
  int64_t stationary_value(int fold, int64_t i, int64_t j) const {  // WS/IS: the value PE(i,j) holds
    const FoldPlan& p = plan(fold);
    const PeModelInstruction& in = instruction_of(fold);
    if (dataflow_ == Dataflow::ws)
      return in.w[(p.row_offset + i) * in.n + p.col_offset + j];  // W[k0+i, n0+j]
    return in.a[(p.col_offset + j) * in.k + p.row_offset + i];    // A[m0+j, k0+i]
  }
  int64_t stream_value(int fold, int64_t s, int64_t i) const {  // WS/IS: element s entering array row i
    const FoldPlan& p = plan(fold);
    const PeModelInstruction& in = instruction_of(fold);
    if (dataflow_ == Dataflow::ws) return in.a[s * in.k + p.row_offset + i];  // A[s, k0+i]
    return in.w[(p.row_offset + i) * in.n + s];                               // W[k0+i, s]
  }

  bool pusher_busy() const { return pusher_fold_ >= 0; }
  bool loader_busy() const { return loader_fold_ >= 0; }

  // ---- controller ----

  void control() {
    const int64_t t = cycle_;
    if (dataflow_ == Dataflow::os) {
      const int g = next_stream_;
      if (g >= folds() || t < plan(g).ready_cycle || pusher_busy()) return;
      bool may_start = g == 0 || progress_[g - 1].complete >= 0;  // none
      if (overlap_ == arch::FoldOverlap::full) may_start = drain_order_allows(g, t);
      if (overlap_ == arch::FoldOverlap::drain) may_start = accumulators_free_in_time(g, t);
      if (may_start) {
        start_stream(g, t);
        progress_[g].load_start = t;  // OS has no stationary load
      }
      return;
    }
    // WS/IS. A stream starts once its fold's weights are in place and the left edge is free (the previous
    // stream has entered): without overlap the latter always holds, the previous fold having completed.
    const int g = next_stream_;
    if (g < next_load_ && progress_[g].loaded && !pusher_busy()) start_stream(g, t);
    const int h = next_load_;
    if (h < folds() && !loader_busy() && t >= plan(h).ready_cycle) {
      bool may_load = true;
      if (h > 0) {
        switch (overlap_) {
          case arch::FoldOverlap::full:
            may_load = every_pe_switched_to(h - 1);
            break;
          case arch::FoldOverlap::drain:  // and the previous fold's stream has all entered the array
            may_load = every_pe_switched_to(h - 1) && next_stream_ >= h && pusher_fold_ != h - 1;
            break;
          case arch::FoldOverlap::none:
            may_load = progress_[h - 1].complete >= 0;
            break;
        }
      }
      if (may_load) {
        loader_fold_ = h;
        loader_step_ = 0;
        progress_[h].load_start = t;
        ++next_load_;
      }
    }
  }

  void start_stream(int fold, int64_t t) {
    pusher_fold_ = fold;
    pusher_next_ = 0;
    progress_[fold].stream_start = t;
    ++next_stream_;
  }

  // With overlap: the shadow registers may be reloaded once every PE of the previous fold has copied them
  // (its active register holds that fold's weights).
  bool every_pe_switched_to(int fold) const {
    for (int64_t i = 0; i < plan(fold).rows_used; ++i)
      for (int64_t j = 0; j < plan(fold).cols_used; ++j)
        if (pes_[i * cols_ + j].active.fold != fold) return false;
    return true;
  }

  // OS with drain overlap (one accumulator): fold g may start at t if each PE of its block will have a free
  // accumulator when g's first MAC reaches it (at t + i + j). A copy of the array with no new fold started
  // runs until the earlier folds are done, noting the cycle from which each PE's accumulator stays free.
  // The look-ahead is made once per fold: until g starts no fold does, so the array's future is the same
  // whichever cycle it is computed from.
  bool accumulators_free_in_time(int g, int64_t t) {
    if (g == 0) return true;
    if (free_from_fold_ != g) {
      PeArrayModel ahead = *this;
      std::vector<int64_t>& free_from = free_from_;
      free_from.assign(pes_.size(), -1);
      auto note = [&] {
        for (size_t p = 0; p < ahead.pes_.size(); ++p) {
          const bool free = ahead.pes_[p].accumulators[0].state == AccumulatorState::free;
          if (!free) free_from[p] = -1;
          if (free && free_from[p] < 0) free_from[p] = ahead.cycle_;
        }
      };
      note();
      while (!std::all_of(ahead.progress_.begin(), ahead.progress_.begin() + g,
                          [](const FoldProgress& p) { return p.complete >= 0; })) {
        ahead.step(false);
        note();
      }
      free_from_fold_ = g;
    }
    for (int64_t i = 0; i < plan(g).rows_used; ++i)
      for (int64_t j = 0; j < plan(g).cols_used; ++j)
        if (free_from_[i * cols_ + j] > t + i + j) return false;
    return true;
  }

  // OS with full overlap: fold g may start at t if, in every column it uses, its first result would leave the
  // top edge after every result of the earlier folds has. The controller looks ahead twice: a copy of the
  // array with no new fold started runs until the folds in flight have drained (when does each column's last
  // pending result leave?), and fold g alone on an empty array says how many cycles after its start its
  // first result leaves each column (the array never stalls, so that offset does not depend on the start).
  bool drain_order_allows(int g, int64_t t) {
    if (g == 0) return true;
    if (first_leave_fold_ != g) {
      auto alone = std::make_shared<std::vector<FoldPlan>>(1, plan(g));
      alone->front().ready_cycle = 0;
      PeArrayModel empty_array(rows_, cols_, dataflow_, overlap_, instructions_, alone);
      while (!empty_array.done()) empty_array.step(true);
      first_leave_offset_ = empty_array.first_top_write_;
      first_leave_fold_ = g;
    }
    PeArrayModel drained = *this;
    while (!std::all_of(drained.progress_.begin(), drained.progress_.begin() + g,
                        [](const FoldProgress& p) { return p.complete >= 0; }))
      drained.step(false);
    for (int64_t j = 0; j < plan(g).cols_used; ++j)
      if (t + first_leave_offset_[j] <= drained.last_top_write_[j]) return false;
    return true;
  }

  // The stream port: one column vector per cycle into the skew lines.
  void push_stream(std::vector<Operand>& left, std::vector<Operand>& top) {
    if (!pusher_busy()) return;
    const int f = pusher_fold_;
    const FoldPlan& p = plan(f);
    const int64_t s = pusher_next_;
    const bool first = s == 0;
    const bool last = s == p.stream - 1;
    if (dataflow_ == Dataflow::os) {
      const PeModelInstruction& in = instruction_of(f);
      for (int64_t i = 0; i < p.rows_used; ++i)
        left[i] = Operand{true, f, s, in.a[(p.row_offset + i) * in.k + s], first, last};  // A[m0+i, s]
      for (int64_t j = 0; j < p.cols_used; ++j)
        top[j] = Operand{true, f, s, in.w[s * in.n + p.col_offset + j], first, last};  // W[s, n0+j]
    } else {
      // Every row receives the element; rows outside the fold's block get zeros.
      for (int64_t i = 0; i < rows_; ++i)
        left[i] = Operand{true, f, s, i < p.rows_used ? stream_value(f, s, i) : 0, first, last};
    }
    if (++pusher_next_ == p.stream) pusher_fold_ = -1;
  }

  // Skew line of row (column) `lane`: lane registers, so a value pushed at t reaches the array at t + lane.
  static Operand advance_skew(std::vector<Operand>& line, const Operand& pushed) {
    if (line.empty()) return pushed;
    const Operand out = line.back();
    for (size_t d = line.size() - 1; d > 0; --d) line[d] = line[d - 1];
    line[0] = pushed;
    return out;
  }

  // ---- WS / IS ----

  // The stationary shift chain: each cycle row 0 of the fold's columns takes the next row of the block from
  // the top edge (last row first) and every row below takes the value of the row above, so after sr cycles
  // row i holds block row i. Without overlap it shifts through the active registers, with overlap through
  // the shadow ones.
  void step_loader(const std::vector<Pe>& old) {
    if (!loader_busy()) return;
    const int f = loader_fold_;
    const FoldPlan& p = plan(f);
    const int64_t q = loader_step_;
    for (int64_t j = 0; j < p.cols_used; ++j) {
      for (int64_t i = 0; i < p.rows_used; ++i) {
        const Pe& before = pe_in(old, cols_, i, j);
        const WeightRegister& target_before = shadow() ? before.shadow : before.active;
        if (shadow()) {
          require(
              target_before.fold < 0 || target_before.fold == f || before.active.fold == target_before.fold,
              "a shadow register is not overwritten before its PE has switched to it", cycle_, i, j);
        }
        WeightRegister next;
        if (i == 0) {
          next = WeightRegister{f, p.rows_used - 1 - q, stationary_value(f, p.rows_used - 1 - q, j)};
        } else {
          const Pe& above = pe_in(old, cols_, i - 1, j);
          const WeightRegister& from_above = shadow() ? above.shadow : above.active;
          next = from_above.fold == f ? from_above : WeightRegister{f, -1, 0};
        }
        (shadow() ? pe(i, j).shadow : pe(i, j).active) = next;
      }
    }
    if (++loader_step_ == p.rows_used) {
      progress_[f].loaded = true;
      loader_fold_ = -1;
    }
  }

  void step_ws_is(const std::vector<Pe>& old) {
    std::vector<Operand> left(rows_), top(cols_);
    push_stream(left, top);
    std::vector<Operand> entering(rows_);
    for (int i = 0; i < rows_; ++i) entering[i] = advance_skew(left_skew_[i], left[i]);

    for (int64_t i = 0; i < rows_; ++i) {
      for (int64_t j = 0; j < cols_; ++j) {
        const Pe& before = pe_in(old, cols_, i, j);
        const Operand in = j == 0 ? entering[i] : pe_in(old, cols_, i, j - 1).input;
        Psum psum;
        if (i == 0) {
          // Psums start as 0 above row 0, one per column of the fold's block.
          if (in.valid && j < plan(in.fold).cols_used) psum = Psum{true, in.fold, in.s, 0};
        } else {
          psum = pe_in(old, cols_, i - 1, j).psum;
        }
        if (psum.valid) {
          require(in.valid && in.fold == psum.fold && in.s == psum.s,
                  "a psum meets the input element of its own stream position", cycle_, i, j);
        }
        if (in.valid && in_rectangle(in.fold, i, j)) {
          require(psum.valid, "a PE of the fold's block receives a psum with every input", cycle_, i, j);
          const bool switches = shadow() && in.first;
          if (switches) pe(i, j).active = before.shadow;
          const WeightRegister& weight = switches ? before.shadow : before.active;
          require(weight.fold == in.fold && weight.block_row == i,
                  "a MAC uses its own fold's stationary value (loaded, and switched with overlap)", cycle_, i,
                  j);
          psum.value += in.value * weight.value;
        }
        pe(i, j).input = in;
        if (i == rows_ - 1) {
          if (psum.valid) write_ws_is_result(psum, j);
          pe(i, j).psum = Psum{};
        } else {
          pe(i, j).psum = psum;
        }
      }
    }
  }

  // The output buffer at the bottom edge adds the psum into O: consecutive folds sharing outputs accumulate
  // there, not in the array.
  void write_ws_is_result(const Psum& psum, int64_t j) {
    const FoldPlan& p = plan(psum.fold);
    const PeModelInstruction& in = instruction_of(psum.fold);
    require(j < p.cols_used, "only columns of the fold's block produce results", cycle_, rows_ - 1, j);
    const int64_t row = dataflow_ == Dataflow::ws ? psum.s : p.col_offset + j;  // IS: column s of O^T
    const int64_t col = dataflow_ == Dataflow::ws ? p.col_offset + j : psum.s;
    outputs_[p.instruction][row * in.n + col] += psum.value;
    count_result(psum.fold, p.stream * p.cols_used);
  }

  void count_result(int fold, int64_t results_of_fold) {
    FoldProgress& progress = progress_[fold];
    require(progress.complete < 0, "a fold writes no result after its last", cycle_, -1, -1);
    if (++progress.results_written == results_of_fold) progress.complete = cycle_ + 1;
  }

  // ---- OS ----

  void step_os(const std::vector<Pe>& old) {
    std::vector<Operand> left(rows_), top(cols_);
    push_stream(left, top);
    std::vector<Operand> entering_left(rows_), entering_top(cols_);
    for (int i = 0; i < rows_; ++i) entering_left[i] = advance_skew(left_skew_[i], left[i]);
    for (int j = 0; j < cols_; ++j) entering_top[j] = advance_skew(top_skew_[j], top[j]);

    std::vector<Result> sent_up(pes_.size());
    for (int64_t i = 0; i < rows_; ++i) {
      for (int64_t j = 0; j < cols_; ++j) {
        const Pe& before = pe_in(old, cols_, i, j);
        Pe& now = pe(i, j);
        const Operand a = j == 0 ? entering_left[i] : pe_in(old, cols_, i, j - 1).input;
        const Operand w = i == 0 ? entering_top[j] : pe_in(old, cols_, i - 1, j).top_input;
        now.input = a;
        now.top_input = w;

        // Drain: the own result goes up the cycle after the last MAC; a result received from below goes up
        // the cycle after it arrived. One link, one result per cycle.
        Result& send = sent_up[i * cols_ + j];
        for (int bank = 0; bank < 2; ++bank) {
          const Accumulator& acc_before = before.accumulators[bank];
          Accumulator& acc = now.accumulators[bank];
          if (acc_before.state == AccumulatorState::sending) {
            require(!send.valid, "one result per cycle leaves a PE upward", cycle_, i, j);
            send = Result{true, acc_before.fold, i, acc_before.value};
            acc.rows_below = plan(acc_before.fold).rows_used - 1 - i;
            acc.state = acc.rows_below > 0 ? AccumulatorState::forwarding : AccumulatorState::free;
          } else if (acc_before.state == AccumulatorState::forwarding && acc_before.holding) {
            require(!send.valid, "one result per cycle leaves a PE upward", cycle_, i, j);
            send = Result{true, acc_before.fold, acc_before.held_row, acc_before.held_value};
            acc.holding = false;
            if (--acc.rows_below == 0) acc.state = AccumulatorState::free;
          }
        }

        // Outside a fold's block operands only pass through.
        const bool a_here = a.valid && in_rectangle(a.fold, i, j);
        const bool w_here = w.valid && in_rectangle(w.fold, i, j);
        if (!a_here && !w_here) continue;
        const int fold = a_here ? a.fold : w.fold;
        require(a.valid && w.valid && a.fold == w.fold && a.s == w.s,
                "A and W of the same stream position meet in every PE of the fold's block", cycle_, i, j);
        const int bank = bank_of(fold);
        const Accumulator& acc_before = before.accumulators[bank];
        Accumulator& acc = now.accumulators[bank];
        if (a.first) {
          require(acc_before.state == AccumulatorState::free,
                  "a fold starts accumulating only into a free accumulator", cycle_, i, j);
          acc = Accumulator{AccumulatorState::accumulating, fold, 0};
        } else {
          require(acc_before.state == AccumulatorState::accumulating && acc_before.fold == fold,
                  "a fold's MACs all go to its own accumulator", cycle_, i, j);
        }
        acc.value += a.value * w.value;
        if (a.last) acc.state = AccumulatorState::sending;
      }
    }

    for (int64_t i = 0; i < rows_; ++i) {
      for (int64_t j = 0; j < cols_; ++j) {
        const Result& result = sent_up[i * cols_ + j];
        if (!result.valid) continue;
        if (i == 0) {
          write_os_result(result, j);
          continue;
        }
        Accumulator& above = pe(i - 1, j).accumulators[bank_of(result.fold)];
        require(above.state == AccumulatorState::forwarding && above.fold == result.fold && !above.holding,
                "a result from below enters an accumulator that forwards its own fold's results", cycle_,
                i - 1, j);
        above.holding = true;
        above.held_row = result.row;
        above.held_value = result.value;
      }
    }
  }

  // The output buffer at the top edge of column j.
  void write_os_result(const Result& result, int64_t j) {
    const FoldPlan& p = plan(result.fold);
    const PeModelInstruction& in = instruction_of(result.fold);
    outputs_[p.instruction][(p.row_offset + result.row) * in.n + p.col_offset + j] += result.value;
    last_top_write_[j] = cycle_;
    if (first_top_write_[j] < 0) first_top_write_[j] = cycle_;
    count_result(result.fold, p.rows_used * p.cols_used);
  }

  int rows_;
  int cols_;
  Dataflow dataflow_;
  arch::FoldOverlap overlap_;
  const std::vector<PeModelInstruction>* instructions_;
  std::shared_ptr<const std::vector<FoldPlan>> plans_;

  int64_t cycle_ = 0;
  std::vector<Pe> pes_;                          // row-major
  std::vector<std::vector<Operand>> left_skew_;  // row i: i registers
  std::vector<std::vector<Operand>> top_skew_;   // OS, column j: j registers
  int loader_fold_ = -1;                         // WS/IS: fold being shifted in, -1 when idle
  int64_t loader_step_ = 0;
  int pusher_fold_ = -1;  // fold whose stream is entering, -1 when the port is free
  int64_t pusher_next_ = 0;
  int next_load_ = 0;
  int next_stream_ = 0;
  std::vector<FoldProgress> progress_;
  std::vector<std::vector<int64_t>> outputs_;
  std::vector<int64_t> last_top_write_;   // OS: per column, the cycle of the latest result written
  std::vector<int64_t> first_top_write_;  // OS: per column, the cycle of the first result written
  int first_leave_fold_ = -1;             // OS: the fold first_leave_offset_ was measured for
  int free_from_fold_ = -1;               // OS, drain: the fold free_from_ was computed for
  std::vector<int64_t> free_from_;        // per PE, the cycle from which its accumulator stays free
  std::vector<int64_t> first_leave_offset_;
};

}  // namespace

PeModelRun run_pe_cycle_model(int rows, int cols, arch::Dataflow dataflow, arch::FoldOverlap overlap_folds,
                              const std::vector<PeModelInstruction>& instructions) {
  if (rows < 1 || cols < 1) throw std::invalid_argument("PE cycle model: the array needs rows, cols >= 1");
  int64_t previous_ready = 0;
  int64_t bound_cycles = 1000;
  for (const PeModelInstruction& in : instructions) {
    if (in.m < 1 || in.n < 1 || in.k < 1) throw std::invalid_argument("PE cycle model: m, n, k must be >= 1");
    if (static_cast<int64_t>(in.a.size()) != in.m * in.k || static_cast<int64_t>(in.w.size()) != in.k * in.n)
      throw std::invalid_argument("PE cycle model: A must be m x k and W k x n");
    if (in.ready_cycle < previous_ready)
      throw std::invalid_argument("PE cycle model: ready cycles must not decrease");
    previous_ready = in.ready_cycle;
    // Generous: every fold of every instruction run alone, start to finish, after the last ready cycle.
    bound_cycles += (in.m + rows) * (in.n + cols) * (in.k + rows + cols) * 4;
  }
  bound_cycles += previous_ready;

  auto plans = std::make_shared<const std::vector<FoldPlan>>(plan_folds(rows, cols, dataflow, instructions));
  PeArrayModel model(rows, cols, dataflow, overlap_folds, &instructions, plans);
  while (!model.done()) {
    if (model.cycle() > bound_cycles)
      throw std::logic_error("PE cycle model: the controller made no progress (deadlock)");
    model.step(true);
  }

  PeModelRun run;
  for (size_t f = 0; f < plans->size(); ++f) {
    const FoldPlan& p = (*plans)[f];
    const FoldProgress& progress = model.progress()[f];
    run.folds.push_back(PeModelFold{p.instruction, p.rows_used, p.cols_used, p.stream, progress.load_start,
                                    progress.stream_start, progress.complete});
  }
  run.outputs = model.outputs();
  return run;
}

}  // namespace tessera::testmodels
