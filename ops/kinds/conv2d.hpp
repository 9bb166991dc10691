// conv2d over NHWC tensors (docs/design-notes.md, "Convolution"): X [n*h*w, c], W [groups*r*s*c/groups,
// k/groups] (taps in r, s, c order), O [n*p*q, k]. groups == c is depthwise.
#pragma once

#include <cstdint>
#include <memory>

#include "ops/epilogue.hpp"
#include "ops/kinds/gemm.hpp"
#include "ops/op_kind.hpp"

namespace tessera::ops {

struct ConvShape {
  int64_t n = 1, c = 0, h = 0, w = 0;  // batch, input channels, input height and width
  int64_t k = 0, r = 0, s = 0;         // output channels, filter height and width
  int64_t stride = 1, pad = 0, dilation = 1, groups = 1;
  Epilogue epilogue;          // applied to O (ops/epilogue.hpp): a layer's bias, ReLU, residual add
  ActivationDensity density;  // of X and O (ops/density.hpp)

  int64_t p() const { return (h + 2 * pad - dilation * (r - 1) - 1) / stride + 1; }  // output height
  int64_t q() const { return (w + 2 * pad - dilation * (s - 1) - 1) / stride + 1; }  // output width
  int64_t group_c() const { return c / groups; }
  int64_t group_k() const { return k / groups; }
  // Per group, the implicit GEMM: m = n*p*q output pixels, n = k/groups filters, k = r*s*c/groups taps
  // (without the conv's epilogue, which applies to the whole output).
  GemmShape group_gemm() const {
    return GemmShape{n * p() * q(), group_k(), r * s * group_c(), Epilogue{}, ActivationDensity{}};
  }
};

std::unique_ptr<OpKind> make_conv2d_kind();

}  // namespace tessera::ops
