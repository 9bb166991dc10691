#include "sim/timeline.hpp"

#include <algorithm>

namespace tessera::sim {

const char* name_of(Cause cause) {
  switch (cause) {
    case Cause::busy:
      return "busy";
    case Cause::input_starvation:
      return "input_starvation";
    case Cause::output_backpressure:
      return "output_backpressure";
    case Cause::noc:
      return "noc";
    case Cause::bank_conflict:
      return "bank_conflict";
    case Cause::sync:
      return "sync";
    case Cause::fill_drain:
      return "fill_drain";
  }
  return "?";
}

const std::array<Cause, kCauses>& all_causes() {
  static const std::array<Cause, kCauses> causes = {
      Cause::busy, Cause::input_starvation, Cause::output_backpressure, Cause::noc, Cause::bank_conflict,
      Cause::sync, Cause::fill_drain};
  return causes;
}

void UnitTimeline::reset(bool trace) {
  cursor_ = 0;
  tracing_ = trace;
  cycles_.fill(0);
  trace_.clear();
}

void UnitTimeline::advance(Tick until, Cause cause, int32_t instruction) {
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
    advance(std::min(wait.start, until), Cause::sync, instruction);
    advance(std::min(wait.end, until), wait.cause, instruction);
  }
  advance(until, Cause::sync, instruction);
}

}  // namespace tessera::sim
