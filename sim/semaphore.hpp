// A counting semaphore of one core (set_flag/wait_flag on real NPUs). Each signal remembers what kind of work
// posted it, so the time a unit spends waiting for it is attributed to the right bubble cause.
#pragma once

#include <deque>
#include <systemc>

#include "sim/run_result.hpp"

namespace tessera::sim {

class Semaphore {
 public:
  void reset() { causes_.clear(); }
  void post(arch::Cause cause) {
    causes_.push_back(cause);
    posted_.notify(sc_core::SC_ZERO_TIME);
  }
  bool available() const { return !causes_.empty(); }
  int count() const { return static_cast<int>(causes_.size()); }
  arch::Cause take() {
    const arch::Cause cause = causes_.front();
    causes_.pop_front();
    return cause;
  }
  const sc_core::sc_event& posted() const { return posted_; }
  // Wakes whoever waits without posting a signal (a stopped run's units, to leave).
  void wake() { posted_.notify(sc_core::SC_ZERO_TIME); }

 private:
  std::deque<arch::Cause> causes_;
  sc_core::sc_event posted_;
};

}  // namespace tessera::sim
