// pool: max or average pooling over NHWC (PyTorch's conventions: max pads with -inf, avg divides by the whole
// window). X [n*h*w, c], O [n*p*q, c].
#pragma once

#include <cstdint>
#include <memory>

#include "ops/op_kind.hpp"

namespace tessera::ops {

enum class PoolMode : uint8_t { max, avg };  // in the order of their names in the workload

struct PoolShape {
  int64_t n = 1, c = 0, h = 0, w = 0, r = 0, s = 0, stride = 1, pad = 0;
  PoolMode mode = PoolMode::max;
  int64_t p() const { return (h + 2 * pad - r) / stride + 1; }
  int64_t q() const { return (w + 2 * pad - s) / stride + 1; }
};

std::unique_ptr<OpKind> make_pool_kind();

}  // namespace tessera::ops
