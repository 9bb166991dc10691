// A per-cycle reference model of the vector unit of docs/vector-unit.md, written from the document's
// description of the machine and independent of the closed form in arch/timing/vector_timing.cpp, which the
// tests check against it (tests/arch/vector_timing_test.cpp). It shares no code with the closed form: not
// its pass table (each instruction kind is written out here as the micro-ops of its passes, from the
// document), not its derived values (the lane tree and the special pipe's lane groups are stepped, not
// computed).
//
// Every cycle: the in-order issue port issues the next micro-op of the current vector, a special op one lane
// group of special_per_cycle lanes per cycle, if the row statistic it reads has been published (else it
// stalls); issued micro-ops travel a pipeline of latency_cycles registers; a vector's last micro-op leaving
// it writes the vector's elements or adds them, lane by lane, into its row's accumulator; a row's
// accumulator, once its last vector is in, goes down the lane tree one level per cycle; a statistic that a
// later pass reads through a scalar special function (reciprocal, rsqrt) passes a scalar pipe of
// latency_cycles registers; then it is published, usable from the next cycle. Partial last vectors carry
// masked lanes through the same slots. A broken invariant (a statistic covering the wrong number of
// elements, a pass reading an element the previous pass has not written, ...) throws std::logic_error.
// Simple rather than fast: meant for tiles of up to ~10^6 issue cycles.
#pragma once

#include <cstdint>
#include <vector>

#include "arch/timing/vector_timing.hpp"

namespace tessera::testmodels {

// The unit's given parameters only (the model derives nothing from arch::VectorSpec's derived fields).
struct VectorModelUnit {
  int lanes = 1;
  int special_per_cycle = 1;
  int latency_cycles = 0;
};

// One pass as the model ran it; cycles from the instruction's first issue at 0, "end" exclusive.
struct VectorModelPass {
  int64_t first_row_start = 0;  // row 0's first micro-op issued
  int64_t last_row_start = 0;   // the last row's first micro-op issued
  int64_t issue_end = 0;        // the cycle after the pass's last micro-op (lane group) issued
  int64_t busy_cycles = 0;      // cycles the port issued one of the pass's micro-ops
  int64_t stall_cycles = 0;     // cycles the port's next micro-op was the pass's, waiting for a row statistic
};

struct VectorModelRun {
  int64_t complete = 0;      // the cycle after the last result (an output element or a row statistic) written
  int64_t busy_cycles = 0;   // issuing
  int64_t stall_cycles = 0;  // stalled on a row statistic
  int64_t drain_cycles = 0;  // nothing left to issue, results still in flight
  std::vector<VectorModelPass> passes;
};

// Runs one instruction from cycle 0 until its last result is written. Throws std::invalid_argument for
// malformed input and std::logic_error for a broken invariant or a run that makes no progress.
VectorModelRun run_vector_cycle_model(const VectorModelUnit& unit, const arch::VectorWork& work);

}  // namespace tessera::testmodels
