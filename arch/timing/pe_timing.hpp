// Closed-form timing of the PE array, fold by fold (docs/pe-array-timing.md defines the micro-architecture
// and derives every formula). The simulator times each PE instruction with it and the mapper's cost model
// uses it, so both agree by construction; tests/models/pe_cycle_model checks it cycle by cycle.
#pragma once

#include <cstdint>

#include "arch/spec.hpp"
#include "common/error.hpp"

namespace tessera::arch {

// One fold: what the array holds still for one pass (the unit it runs start to finish).
//   WS: rows_used = k-block (weights), cols_used = n-block, stream = m rows of A
//   IS: rows_used = k-block (inputs),  cols_used = m-block, stream = n columns of W
//   OS: rows_used = m-block (outputs), cols_used = n-block, stream = k
struct Fold {
  int64_t rows_used = 0;
  int64_t cols_used = 0;
  int64_t stream = 0;
};

struct FoldTiming {
  int64_t load_start = 0;    // WS/IS: stationary preload begins; OS: equals stream_start
  int64_t stream_start = 0;  // first operand enters the array
  int64_t complete = 0;      // last result written (exclusive end cycle)
};

// The array's state between folds, in cycles since the run started.
struct PePipeline {
  int64_t input_free = 0;       // left/top operand ports free for the next fold's first element
  int64_t stationary_free = 0;  // WS/IS, drain or full: shadow registers may be reloaded
  int64_t drain_free = 0;       // OS: every accumulator has sent its result and forwarded those from below
  int64_t array_free = 0;       // without overlap: the previous fold has completed
};

class PeArrayTiming {
 public:
  PeArrayTiming(int rows, int cols, FoldOverlap overlap_folds);
  explicit PeArrayTiming(const PeArraySpec& spec) : PeArrayTiming(spec.rows, spec.cols, spec.overlap_folds) {}

  // Schedules one fold that may not start before `ready`; advances `state`.
  FoldTiming schedule(Dataflow dataflow, const Fold& fold, int64_t ready, PePipeline& state) const;

  // Calls visit(const Fold&) for each fold of an m x n x k instruction, in the order the array runs them:
  // WS: n-blocks outer, k-blocks inner; IS: m-blocks outer, k-blocks inner; OS: m-blocks outer, n-blocks
  // inner.
  template <class Visit>
  void for_each_fold(Dataflow dataflow, int64_t m, int64_t n, int64_t k, Visit&& visit) const;

  int64_t folds(Dataflow dataflow, int64_t m, int64_t n, int64_t k) const;

  int rows() const { return rows_; }
  int cols() const { return cols_; }
  FoldOverlap overlap_folds() const { return overlap_; }

 private:
  int rows_;
  int cols_;
  FoldOverlap overlap_;
};

template <class Visit>
void PeArrayTiming::for_each_fold(Dataflow dataflow, int64_t m, int64_t n, int64_t k, Visit&& visit) const {
  // (outer extent, outer block), (inner extent, inner block), stream length
  int64_t outer = 0, outer_block = 0, inner = 0, inner_block = 0, stream = 0;
  bool outer_is_rows = false;  // does the outer loop walk array rows (OS) or columns (WS/IS)?
  switch (dataflow) {
    case Dataflow::ws:
      outer = n, outer_block = cols_, inner = k, inner_block = rows_, stream = m;
      break;
    case Dataflow::is:
      outer = m, outer_block = cols_, inner = k, inner_block = rows_, stream = n;
      break;
    case Dataflow::os:
      outer = m, outer_block = rows_, inner = n, inner_block = cols_, stream = k, outer_is_rows = true;
      break;
    case Dataflow::rs:
      TESSERA_ASSERT(false, "row stationary has no matmul folds (arch::RsTiming times it)");
  }
  for (int64_t o = 0; o < outer; o += outer_block) {
    const int64_t outer_used = outer - o < outer_block ? outer - o : outer_block;
    for (int64_t i = 0; i < inner; i += inner_block) {
      const int64_t inner_used = inner - i < inner_block ? inner - i : inner_block;
      Fold fold;
      fold.rows_used = outer_is_rows ? outer_used : inner_used;
      fold.cols_used = outer_is_rows ? inner_used : outer_used;
      fold.stream = stream;
      visit(fold);
    }
  }
}

}  // namespace tessera::arch
