#include "arch/timing/pe_timing.hpp"

#include <algorithm>

namespace tessera::arch {

PeArrayTiming::PeArrayTiming(int rows, int cols, FoldOverlap overlap_folds)
    : rows_(rows), cols_(cols), overlap_(overlap_folds) {}

FoldTiming PeArrayTiming::schedule(Dataflow dataflow, const Fold& fold, int64_t ready,
                                   PePipeline& state) const {
  const int64_t R = rows_;
  const int64_t sr = fold.rows_used;
  const int64_t sc = fold.cols_used;
  const int64_t L = fold.stream;
  FoldTiming t;
  if (dataflow == Dataflow::os) {
    // Operands stream in skewed: PE(i,j) does MAC number s at stream_start + s + i + j. Results leave upward
    // through the top edge; row i's result of column j leaves at stream_start + L + j + 2i.
    switch (overlap_) {
      case FoldOverlap::full:  // two accumulators: results leave a column in fold order
        t.stream_start = std::max({ready, state.input_free, state.drain_free - L});
        break;
      case FoldOverlap::drain:  // one accumulator: a PE's next MAC after it has forwarded the last result
        t.stream_start = std::max({ready, state.input_free, state.drain_free});
        break;
      case FoldOverlap::none:
        t.stream_start = std::max(ready, state.array_free);
        break;
    }
    t.load_start = t.stream_start;
    t.complete = t.stream_start + L + 2 * sr + sc - 2;
    state.input_free = t.stream_start + L;
    state.drain_free = t.stream_start + L + 2 * sr - 1;
    state.array_free = t.complete;
    return t;
  }
  // WS / IS: the stationary tile is shifted in from the top, one row per cycle (sr cycles). Stream element s
  // enters array row i at stream_start + s + i and reaches PE(i,j) one cycle per column later; partial sums
  // move down through all R rows and leave the bottom of column j at stream_start + s + R - 1 + j.
  switch (overlap_) {
    case FoldOverlap::full:  // the preload into the shadow registers under the previous stream
      t.load_start = std::max(ready, state.stationary_free);
      t.stream_start = std::max(t.load_start + sr, state.input_free);
      break;
    case FoldOverlap::drain:  // the preload once the previous stream has entered, under its drain
      t.load_start = std::max({ready, state.stationary_free, state.input_free});
      t.stream_start = t.load_start + sr;
      break;
    case FoldOverlap::none:
      t.load_start = std::max(ready, state.array_free);
      t.stream_start = t.load_start + sr;
      break;
  }
  t.complete = t.stream_start + L + R + sc - 2;
  state.input_free = t.stream_start + L;
  // The shadow registers are free once every PE of this fold has switched to them: PE(i,j) switches when
  // stream element 0 reaches it, at stream_start + i + j.
  state.stationary_free = t.stream_start + sr + sc - 1;
  state.array_free = t.complete;
  return t;
}

int64_t PeArrayTiming::folds(Dataflow dataflow, int64_t m, int64_t n, int64_t k) const {
  auto blocks = [](int64_t extent, int64_t block) { return (extent + block - 1) / block; };
  switch (dataflow) {
    case Dataflow::ws:
      return blocks(n, cols_) * blocks(k, rows_);
    case Dataflow::is:
      return blocks(m, cols_) * blocks(k, rows_);
    case Dataflow::os:
      return blocks(m, rows_) * blocks(n, cols_);
    case Dataflow::rs:
      break;
  }
  return 0;
}

}  // namespace tessera::arch
