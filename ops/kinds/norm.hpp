// layernorm: O = (X - mean) / sqrt(var + eps) * gamma + beta per row (var the population variance);
// rmsnorm: O = X / sqrt(mean(X^2) + eps) * gamma per row. X and O are rows x cols, gamma and beta 1 x cols.
#pragma once

#include <cstdint>
#include <memory>

#include "ops/op_kind.hpp"

namespace tessera::ops {

struct NormShape {
  int64_t rows = 0, cols = 0;
  double eps = 0;
};

std::unique_ptr<OpKind> make_layernorm_kind();
std::unique_ptr<OpKind> make_rmsnorm_kind();

}  // namespace tessera::ops
