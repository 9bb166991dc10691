#include "sim/scheduler.hpp"

#include "common/error.hpp"

namespace tessera::sim {

Tick now_ticks() {
  return static_cast<Tick>(sc_core::sc_time_stamp().value());
}

Scheduler::Scheduler(sc_core::sc_module_name name) : sc_core::sc_module(name) {
  SC_METHOD(fire);
  sensitive << wake_;
  dont_initialize();
}

void Scheduler::at(Tick at, std::function<void()> action) {
  const Tick now = now_ticks();
  TESSERA_ASSERT(at >= now, "timed actions are never scheduled in the past");
  const bool earliest = pending_.empty() || at < pending_.top().at;
  pending_.push(Pending{at, sequence_++, std::move(action)});
  // sc_event keeps only its earliest notification, so re-arming for an earlier time is enough.
  if (earliest) wake_.notify(sc_core::sc_time::from_value(at - now));
}

void Scheduler::drop_pending() {
  pending_ = {};
  wake_.cancel();
}

void Scheduler::fire() {
  const Tick now = now_ticks();
  while (!pending_.empty() && pending_.top().at <= now) {
    // Move the action out before running it: it may schedule more.
    auto action = std::move(const_cast<Pending&>(pending_.top()).action);
    pending_.pop();
    action();
  }
  if (!pending_.empty()) wake_.notify(sc_core::sc_time::from_value(pending_.top().at - now));
}

}  // namespace tessera::sim
