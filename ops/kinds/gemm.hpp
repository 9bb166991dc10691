// gemm: O[m,n] = sum_k A[m,k] * W[k,n]. Kinds that are a GEMM under another spelling (fc) share its tensors
// and references.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "ops/density.hpp"
#include "ops/epilogue.hpp"
#include "ops/op_kind.hpp"

namespace tessera::ops {

struct GemmShape {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  Epilogue epilogue;          // applied to O (ops/epilogue.hpp)
  ActivationDensity density;  // of A and O (ops/density.hpp)
};

std::unique_ptr<OpKind> make_gemm_kind();

// A (m x k) and W (k x n) of the op's dtype, the epilogue's operands, O (m x n) of its accumulator type.
std::vector<TensorDesc> gemm_tensors(const Op& op, const GemmShape& gemm);
std::vector<double> gemm_reference(const GemmShape& gemm, const std::vector<HostTensor>& inputs, int threads);
std::vector<double> gemm_reference_at(const Op& op, const GemmShape& gemm, uint64_t seed,
                                      const std::vector<int64_t>& positions);

}  // namespace tessera::ops
