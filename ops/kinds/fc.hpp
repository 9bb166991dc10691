// fc: a fully connected layer, the GEMM m = batch, k = inputs, n = outputs.
#pragma once

#include <cstdint>
#include <memory>

#include "ops/kinds/gemm.hpp"
#include "ops/op_kind.hpp"

namespace tessera::ops {

struct FcShape {
  int64_t batch = 1, inputs = 0, outputs = 0;
  Epilogue epilogue;
  ActivationDensity density;  // of the input and the output (ops/density.hpp)
  GemmShape gemm() const { return GemmShape{batch, outputs, inputs, epilogue, density}; }
};

std::unique_ptr<OpKind> make_fc_kind();

}  // namespace tessera::ops
