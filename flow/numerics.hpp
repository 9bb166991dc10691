// A functional run's output against the op's CPU reference, as the report records it (value, tolerance,
// verdict).
#pragma once

#include <vector>

#include "ops/numerics.hpp"
#include "ops/op.hpp"
#include "sim/run_result.hpp"
#include "traces/report.hpp"

namespace tessera::flow {

// The report's form of a comparison made against `operand`'s tolerance.
traces::Numerics numerics_record(const ops::NumericsResult& numerics, DType operand);

// Numerics of a functional run's output tensor against the op's CPU reference.
traces::Numerics check_against_cpu(const ops::Op& op, const std::vector<double>& reference,
                                   const sim::RunResult& result, int output_tensor);

}  // namespace tessera::flow
