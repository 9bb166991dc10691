// A unit's timeline: consecutive intervals, each attributed to busy or one bubble cause. Cycles accumulate as
// differences of whole-cycle boundaries, so for every unit they add up exactly to the run's cycles.
#pragma once

#include <vector>

#include "sim/run_result.hpp"

namespace tessera::sim {

// A stretch of waiting for one semaphore signal, and what posted it.
struct WaitSegment {
  Tick start = 0;
  Tick end = 0;
  arch::Cause cause = arch::Cause::sync;
};

class UnitTimeline {
 public:
  void reset(bool trace);

  // Attributes [cursor, until) to `cause` and moves the cursor there; nothing if until <= cursor.
  void advance(Tick until, arch::Cause cause, int32_t instruction = -1);
  // Attributes [cursor, until) to the waits that covered it (time before the first wait counts as sync).
  void advance_waits(Tick until, const std::vector<WaitSegment>& waits, int32_t instruction);

  Tick cursor() const { return cursor_; }
  const CauseCycles& cycles() const { return cycles_; }
  std::vector<TraceSegment>& trace() { return trace_; }

 private:
  Tick cursor_ = 0;
  bool tracing_ = false;
  CauseCycles cycles_{};
  std::vector<TraceSegment> trace_;
};

}  // namespace tessera::sim
