// Helpers of the vector unit's timing tests (vector_timing_test.cpp, moe_vector_timing_test.cpp): machines
// and instructions to time, and the comparison of the closed form with the per-cycle model
// (tests/models/vector_cycle_model).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "arch/timing/vector_timing.hpp"
#include "common/error.hpp"

namespace tessera::arch::vector_checks {

VectorSpec make_spec(int lanes, int special_per_cycle, int latency_cycles);
VectorWork make_work(VectorKind kind, int64_t rows, int64_t cols);
VectorWork weighted_sum_work(int64_t rows, int64_t cols, int64_t parts, bool adds_y);
VectorWork route_work(int64_t rows, int64_t experts, int64_t top_k, bool sigmoid, int64_t groups = 1,
                      int64_t topk_groups = 1);
std::string describe(const VectorSpec& spec, const VectorWork& work);
// Every figure the closed form gives equals the cycle model's (a repeated pass against its repetitions), and
// both account for every cycle.
::testing::AssertionResult closed_form_equals_cycle_model(const VectorSpec& spec, const VectorWork& work);

// The InputError that `body` throws; fails the test if it throws none.
template <class Body>
std::string input_error_of(Body body) {
  try {
    body();
  } catch (const InputError& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected an InputError";
  return "";
}

}  // namespace tessera::arch::vector_checks
