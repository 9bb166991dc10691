// The PE array's time for one instruction of a tile shape, for the cost model: from the simulator's own
// closed forms (arch/timing), on pairs of representative folds (RS: its rounds, cached per shape, since a
// search meets each tile shape many times across splits, orders and buffering).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "arch/spec.hpp"
#include "arch/timing/pe_timing.hpp"
#include "arch/timing/rs_timing.hpp"

namespace tessera::mapper {

// Fold timing of one instruction shape (the interval between two folds' stream starts depends only on the
// two folds when operands are ready).
struct InstructionProfile {
  int64_t lead_in = 0;   // first fold: load start to stream start
  int64_t interval = 0;  // stream start of this instruction to the next identical one's, in steady state
  int64_t cross = 0;     // ... of which the hop from its last fold to the next instruction's first
  int64_t tail = 0;      // last fold: stream start to completion
  int64_t folds = 0;
  int64_t stream_cycles = 0;
};

class InstructionTimer {
 public:
  explicit InstructionTimer(const arch::ArchSpec& spec);

  // An m x n x k matmul on WS, OS or IS.
  InstructionProfile matmul(arch::Dataflow dataflow, int64_t m, int64_t n, int64_t k) const;

  // A row-stationary conv instruction, and the share of PE slots its rounds leave idle.
  struct RsProfile {
    InstructionProfile profile;
    double edge_waste = 0;
  };
  std::shared_ptr<const RsProfile> row_stationary(const arch::ConvTileShape& shape, DType dtype) const;

  int rows() const { return timing_.rows(); }
  int cols() const { return timing_.cols(); }

 private:
  arch::PeArrayTiming timing_;
  arch::RsTiming rs_timing_;
  double pes_ = 0;
  uint64_t id_;  // which timer a thread's last answer came from (an address may be reused)
  mutable std::mutex rs_cache_mutex_;
  // (e, m, c, q, r, s, ih, dtype): what the rounds depend on.
  mutable std::map<std::array<int64_t, 8>, std::shared_ptr<const RsProfile>> rs_cache_;
};

}  // namespace tessera::mapper
