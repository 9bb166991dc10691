// Timed actions: "at tick T, commit this result and post these signals". Units compute when their work ends
// and schedule its effects here instead of sleeping through it, so a unit can go on to its next instruction
// (the PE array pipelines folds, a DMA engine keeps bursts in flight). One SC_METHOD serves the whole
// machine.
#pragma once

#include <cstdint>
#include <functional>
#include <queue>
#include <systemc>
#include <vector>

#include "sim/time.hpp"

namespace tessera::sim {

class Scheduler : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Scheduler);
  explicit Scheduler(sc_core::sc_module_name name);

  // Runs `action` at absolute time `at` (>= now). Actions due at the same tick run in the order scheduled.
  void at(Tick at, std::function<void()> action);
  bool idle() const { return pending_.empty(); }
  // Forgets every pending action (a stopped run's).
  void drop_pending();

 private:
  struct Pending {
    Tick at;
    uint64_t sequence;
    std::function<void()> action;
  };
  struct Later {
    bool operator()(const Pending& a, const Pending& b) const {
      return a.at != b.at ? a.at > b.at : a.sequence > b.sequence;
    }
  };
  void fire();

  std::priority_queue<Pending, std::vector<Pending>, Later> pending_;
  uint64_t sequence_ = 0;
  sc_core::sc_event wake_;
};

Tick now_ticks();

}  // namespace tessera::sim
