// layernorm: O = (X - mean) / sqrt(var + eps) * gamma + beta per row (var the population variance);
// rmsnorm: O = X / sqrt(mean(X^2) + eps) * gamma per row. X and O are rows x cols, gamma and beta 1 x cols.
// With `residual: true` the norm is of X + R (R rows x cols, generator slot 3): BERT's "add & norm", one
// vector-unit instruction reading both tiles.
#pragma once

#include <cstdint>
#include <memory>

#include "ops/op_kind.hpp"

namespace tessera::ops {

enum class NormInput : uint8_t { x, x_plus_residual };  // in the order of their names: false, true

struct NormShape {
  int64_t rows = 0, cols = 0;
  double eps = 0;
  NormInput input = NormInput::x;
  bool adds_residual() const { return input == NormInput::x_plus_residual; }
};

std::unique_ptr<OpKind> make_layernorm_kind();
std::unique_ptr<OpKind> make_rmsnorm_kind();

}  // namespace tessera::ops
