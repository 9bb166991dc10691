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

Completion& Scheduler::at(Tick at) {
  const Tick now = now_ticks();
  TESSERA_ASSERT(at >= now, "timed actions are never scheduled in the past");
  const bool earliest = pending_.empty() || at < pending_.top().at;
  uint32_t slot = 0;
  if (free_slots_.empty()) {
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
  }
  pending_.push(Pending{at, sequence_++, slot});
  // sc_event keeps only its earliest notification, so re-arming for an earlier time is enough.
  if (earliest) wake_.notify(sc_core::sc_time::from_value(at - now));
  return slots_[slot];
}

void Scheduler::drop_pending() {
  pending_ = {};
  free_slots_.clear();
  for (uint32_t slot = 0; slot < slots_.size(); ++slot) {
    slots_[slot].commit = nullptr;
    slots_[slot].posts.clear();
    free_slots_.push_back(slot);
  }
  wake_.cancel();
}

void Scheduler::fire() {
  const Tick now = now_ticks();
  while (!pending_.empty() && pending_.top().at <= now) {
    const uint32_t slot = pending_.top().slot;
    pending_.pop();
    // By index, not by reference: a commit may schedule more (slots_ may grow).
    if (slots_[slot].commit) {
      const std::function<void()> commit = std::move(slots_[slot].commit);
      slots_[slot].commit = nullptr;
      commit();
    }
    for (const auto& [semaphore, cause] : slots_[slot].posts) semaphore->post(cause);
    slots_[slot].posts.clear();
    free_slots_.push_back(slot);
  }
  if (!pending_.empty()) wake_.notify(sc_core::sc_time::from_value(pending_.top().at - now));
}

}  // namespace tessera::sim
