// Comparison of a computed output with a reference, against per-dtype tolerances (DESIGN.md): int8 x int8 ->
// int32 exact; fp32 relative L2 <= 1e-5; bf16/fp16 operands with fp32 accumulation relative L2 <= 1e-2.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/dtype.hpp"
#include "ops/tensor.hpp"

namespace tessera::ops {

struct Tolerance {
  double rel_l2 = 0;   // pass if rel_l2_err <= rel_l2 ...
  bool exact = false;  // ... or, for integer results, if every element is equal
};

Tolerance tolerance_for(DType operand);

struct NumericsResult {
  std::string reference;  // "cpu", "gpu-recorded", "gpu-live"
  double max_abs_err = 0;
  double rel_l2_err = 0;
  int64_t mismatched_elements = 0;  // elements not equal (exact tolerance) or not finite
  int64_t worst_index = -1;  // row-major index of the largest error (first non-finite one), -1 if exact
  bool pass = false;
};

// `got` holds the output tensor read back from the run; `expected` the reference values (row-major).
NumericsResult compare_output(const HostTensor& got, const std::vector<double>& expected, DType operand,
                              const std::string& reference);

// The same at chosen positions only: got.value(positions[i]) against expected[i] (a recorded GPU output's
// samples, or the reference at sampled positions).
NumericsResult compare_at(const HostTensor& got, const std::vector<int64_t>& positions,
                          const std::vector<double>& expected, DType operand, const std::string& reference);

}  // namespace tessera::ops
