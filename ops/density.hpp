// The density of a contraction's activations (issue "Fidelity", section 3): the fraction of non-zero values
// in its input (A of a gemm or fc, X of a conv2d) and in its output O — `density: {input: 0.45, output:
// 0.35}` (absent: 1, dense). ReLU leaves many zeros in a network's activations, which a machine that
// run-length codes its DRAM traffic (`dram.rlc`, arch/timing/compression.hpp) moves in fewer bytes. The
// densities are a statistical description of the data, as a sparsity-aware model takes them: the timing uses
// them, the functional run's generated values are the op's as always.
#pragma once

#include <string>

#include "ops/op_kind.hpp"

namespace tessera::ops {

struct ActivationDensity {
  double input = 1.0;
  double output = 1.0;
  bool dense() const { return input == 1.0 && output == 1.0; }
  std::string text() const;  // " density=0.45/0.35" (empty when dense), after an op's shape
};

// The `density` group of a contraction kind: `input` and `output`, each in (0, 1].
void visit_density(FieldVisitor& visitor, ActivationDensity& density);
void check_density(const ActivationDensity& density, const FieldChecks& checks);

}  // namespace tessera::ops
