#include "sim/timeline.hpp"

#include <algorithm>

namespace tessera::sim {

void UnitTimeline::reset(bool trace) {
  cursor_ = 0;
  tracing_ = trace;
  cycles_.fill(0);
  trace_.clear();
}

void UnitTimeline::advance(Tick until, arch::Cause cause, int32_t instruction) {
  if (until <= cursor_) return;
  cycles_[static_cast<int>(cause)] += ticks_to_cycles_ceil(until) - ticks_to_cycles_ceil(cursor_);
  if (tracing_) {
    if (!trace_.empty() && trace_.back().end == cursor_ && trace_.back().cause == cause &&
        trace_.back().instruction == instruction) {
      trace_.back().end = until;
    } else {
      trace_.push_back(TraceSegment{cursor_, until, cause, instruction});
    }
  }
  cursor_ = until;
}

void UnitTimeline::advance_waits(Tick until, const std::vector<WaitSegment>& waits, int32_t instruction) {
  for (const WaitSegment& wait : waits) {
    if (wait.end <= cursor_) continue;
    if (cursor_ >= until) return;
    advance(std::min(wait.start, until), arch::Cause::sync, instruction);
    advance(std::min(wait.end, until), wait.cause, instruction);
  }
  advance(until, arch::Cause::sync, instruction);
}

}  // namespace tessera::sim
