// CPU reference implementations (float64 accumulation over the exact operand values), the first of the three
// references numerics are checked against (DESIGN.md); each op kind computes its own (ops/kinds/).
#pragma once

#include <cstdint>
#include <vector>

#include "ops/op.hpp"
#include "ops/tensor.hpp"

namespace tessera::ops {

// The op's inputs as the generator defines them, in tensors_of() order (outputs excluded).
std::vector<HostTensor> generate_inputs(const Op& op, uint64_t seed);

// The op's output, row-major, in float64. `threads` splits rows across threads; the result does not depend on
// it.
std::vector<double> reference_output(const Op& op, const std::vector<HostTensor>& inputs, int threads);

// The reference at chosen row-major output positions only, computed from the generator element by element
// (float64 sums of the exact operand values): cheap where the whole output is not needed, e.g. to check a
// recorded GPU output's samples of an 8192^3 GEMM. For kinds with OpKind::has_sampled_reference().
std::vector<double> reference_at(const Op& op, uint64_t seed, const std::vector<int64_t>& positions);

}  // namespace tessera::ops
