// A per-cycle reference model of the systolic PE array of docs/pe-array-timing.md, written from the
// document's register-level rules and independent of the closed form in arch/pe_timing.cpp, which the tests
// check against it (tests/arch/pe_timing_test.cpp).
//
// Every cycle it steps every register of the array: the stationary (and, with drain or full overlap, shadow)
// weight registers and the shift chain that loads them from the top edge, the moving input and psum
// registers, the skewed feeders at the left (and, for OS, top) edge, OS's two accumulators and the upward
// drain path that runs through them, and the output buffer at the edge. A controller starts a fold's load or
// stream only when the document's condition holds, read from the state of those registers (a PE has switched
// when its active register holds the fold's weights, a fold is complete when the output buffer has all its
// results, ...), never from a timing formula. Two values meeting where the document says they cannot (a psum
// meeting the wrong input, a MAC with another fold's weight, two results on one link in one cycle, a shadow
// register overwritten before its fold switched, ...) is a broken invariant: the model throws
// std::logic_error naming it. Simple rather than fast: meant for arrays up to ~8x8, shapes up to ~20 and a
// few instructions.
#pragma once

#include <cstdint>
#include <vector>

#include "arch/spec.hpp"

namespace tessera::testmodels {

// One PE instruction: O[m x n] = A[m x k] * W[k x n], whose operands are in SRAM from ready_cycle on.
struct PeModelInstruction {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  int64_t ready_cycle = 0;
  std::vector<int64_t> a;  // m x k, row-major
  std::vector<int64_t> w;  // k x n, row-major
};

// One fold as the model ran it, in the array's order.
struct PeModelFold {
  int instruction = 0;
  int64_t rows_used = 0;     // sr
  int64_t cols_used = 0;     // sc
  int64_t stream = 0;        // L
  int64_t load_start = 0;    // WS/IS: first cycle of the stationary shift; OS: equals stream_start
  int64_t stream_start = 0;  // stream element 0 enters array row 0
  int64_t complete = 0;      // the cycle after the fold's last result was written
};

struct PeModelRun {
  std::vector<PeModelFold> folds;
  std::vector<std::vector<int64_t>> outputs;  // per instruction, m x n row-major, each starting at zero
};

// Runs the instructions in order on a rows x cols array until every fold has completed. Throws
// std::invalid_argument for malformed input and std::logic_error for a broken register-level invariant.
PeModelRun run_pe_cycle_model(int rows, int cols, arch::Dataflow dataflow, arch::FoldOverlap overlap_folds,
                              const std::vector<PeModelInstruction>& instructions);

}  // namespace tessera::testmodels
