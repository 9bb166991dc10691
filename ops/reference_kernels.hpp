// What the op kinds' CPU references share (ops/kinds/): float64 matrices of exact operand values, a float64
// matrix product whose summation order does not depend on the thread count, and single operand values from
// the generator for references at sampled positions.
#pragma once

#include <Eigen/Dense>
#include <cstdint>
#include <functional>
#include <vector>

#include "common/dtype.hpp"
#include "ops/tensor.hpp"

namespace tessera::ops {

using RowMajorMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

RowMajorMatrix to_matrix(const HostTensor& tensor);

// O[m x n] = A[m x k] * W[k x n] in float64 into `out` (rows `out_pitch` apart), rows in fixed blocks dealt
// to threads: Eigen's blocking (and so the summation order) depends on the product's shape, so the blocks
// must not depend on the thread count for the result not to.
void gemm_rows(const RowMajorMatrix& a, const RowMajorMatrix& w, double* out, int64_t out_pitch, int threads);

// fn(row, scratch) for rows 0 .. rows - 1, rows dealt to up to `threads` threads in turn, each thread with
// its own scratch vector: for references computed row by row (each row alone, so the result does not depend
// on the thread count).
void for_each_row(int64_t rows, int threads, const std::function<void(int64_t, std::vector<double>&)>& fn);

// Element `element` of generated input `tensor` of type `dtype`, exactly.
double generated_value(DType dtype, uint64_t seed, uint32_t tensor, int64_t element);

}  // namespace tessera::ops
