// Host seconds for the benchmarks (tests/bench): a steady clock and the time since a point of it.
#pragma once

#include <chrono>

namespace tessera::bench {

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace tessera::bench
