// CPU reference implementations (Eigen, float64 accumulation over the exact operand values), the first of the
// three references numerics are checked against (DESIGN.md).
#pragma once

#include <cstdint>
#include <vector>

#include "ops/tensor.hpp"
#include "ops/workload.hpp"

namespace tessera::ops {

// The op's inputs as the generator defines them, in tensors_of() order (outputs excluded).
std::vector<HostTensor> generate_inputs(const Op& op, uint64_t seed);

// The op's output, row-major, in float64. `threads` splits rows across threads; the result does not depend on
// it.
std::vector<double> reference_output(const Op& op, const std::vector<HostTensor>& inputs, int threads);

}  // namespace tessera::ops
