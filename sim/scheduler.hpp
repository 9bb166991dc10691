// Timed completions: "at tick T, commit this result and post these signals". Units compute when their work
// ends and schedule its effects here instead of sleeping through it, so a unit can go on to its next
// instruction (the PE array pipelines folds, a DMA engine keeps bursts in flight). One SC_METHOD serves the
// whole machine.
#pragma once

#include <cstdint>
#include <functional>
#include <queue>
#include <systemc>
#include <utility>
#include <vector>

#include "sim/semaphore.hpp"
#include "sim/time.hpp"

namespace tessera::sim {

// What happens when an instruction's work ends: its results land (functional runs) and its signals are
// posted.
struct Completion {
  std::function<void()> commit;                           // empty in timing-only runs
  std::vector<std::pair<Semaphore*, arch::Cause>> posts;  // in order
};

class Scheduler : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Scheduler);
  explicit Scheduler(sc_core::sc_module_name name);

  // A completion to fill, run at absolute time `at` (>= now); completions due at the same tick run in the
  // order scheduled. The reference is good until the next call. Completions are kept and reused (their post
  // lists keep their memory), so scheduling one allocates nothing once a run is under way.
  Completion& at(Tick at);
  bool idle() const { return pending_.empty(); }
  // Forgets every pending completion (a stopped run's).
  void drop_pending();

 private:
  struct Pending {
    Tick at;
    uint64_t sequence;
    uint32_t slot;  // into slots_
  };
  struct Later {
    bool operator()(const Pending& a, const Pending& b) const {
      return a.at != b.at ? a.at > b.at : a.sequence > b.sequence;
    }
  };
  void fire();

  std::priority_queue<Pending, std::vector<Pending>, Later> pending_;
  std::vector<Completion> slots_;
  std::vector<uint32_t> free_slots_;
  uint64_t sequence_ = 0;
  sc_core::sc_event wake_;
};

Tick now_ticks();

}  // namespace tessera::sim
