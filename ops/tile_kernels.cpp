#include "ops/tile_kernels.hpp"

#include <Eigen/Dense>
#include <cstring>

#include "common/error.hpp"
#include "ops/tensor.hpp"

namespace tessera::ops {

namespace {
template <class Scalar>
using RowMajor = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

template <class Scalar>
void widen_rows(DType type, const uint8_t* source, int64_t pitch, int64_t rows, int64_t cols,
                RowMajor<Scalar>& out) {
  out.resize(rows, cols);
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* row = source + r * pitch;
    Scalar* target = out.data() + r * cols;
    if constexpr (std::is_same_v<Scalar, float>) {
      widen_to_float(type, row, cols, target);
    } else {
      for (int64_t c = 0; c < cols; ++c) target[c] = static_cast<int8_t>(row[c]);
    }
  }
}

template <class Scalar>
void accumulate_rows(const RowMajor<Scalar>& product, uint8_t* o, int64_t o_pitch, bool accumulate) {
  const int64_t rows = product.rows();
  const int64_t cols = product.cols();
  for (int64_t r = 0; r < rows; ++r) {
    auto* target = reinterpret_cast<Scalar*>(o + r * o_pitch);
    const Scalar* source = product.data() + r * cols;
    if (accumulate) {
      for (int64_t c = 0; c < cols; ++c) {
        Scalar value;
        std::memcpy(&value, target + c, sizeof value);
        value += source[c];
        std::memcpy(target + c, &value, sizeof value);
      }
    } else {
      std::memcpy(target, source, static_cast<size_t>(cols) * sizeof(Scalar));
    }
  }
}

template <class Scalar>
void gemm_tile_in(DType operand, const uint8_t* a, int64_t a_pitch, const uint8_t* w, int64_t w_pitch,
                  uint8_t* o, int64_t o_pitch, int64_t m, int64_t n, int64_t k, bool accumulate) {
  // Scratch survives calls: PE instructions of one run have a handful of tile shapes.
  thread_local RowMajor<Scalar> a_tile, w_tile, product;
  widen_rows(operand, a, a_pitch, m, k, a_tile);
  widen_rows(operand, w, w_pitch, k, n, w_tile);
  product.resize(m, n);
  product.noalias() = a_tile * w_tile;
  accumulate_rows(product, o, o_pitch, accumulate);
}
}  // namespace

void gemm_tile(DType operand, const uint8_t* a, int64_t a_pitch, const uint8_t* w, int64_t w_pitch,
               uint8_t* o, int64_t o_pitch, int64_t m, int64_t n, int64_t k, bool accumulate) {
  TESSERA_ASSERT(operand != DType::int32, "PE operands are never int32");
  if (operand == DType::int8) {
    gemm_tile_in<int32_t>(operand, a, a_pitch, w, w_pitch, o, o_pitch, m, n, k, accumulate);
  } else {
    gemm_tile_in<float>(operand, a, a_pitch, w, w_pitch, o, o_pitch, m, n, k, accumulate);
  }
}

void add_tile(DType type, uint8_t* destination, int64_t destination_pitch, const uint8_t* source,
              int64_t source_pitch, int64_t rows, int64_t cols) {
  TESSERA_ASSERT(type == DType::fp32 || type == DType::int32, "reductions add fp32 or int32 partial sums");
  for (int64_t r = 0; r < rows; ++r) {
    uint8_t* target = destination + r * destination_pitch;
    const uint8_t* from = source + r * source_pitch;
    for (int64_t c = 0; c < cols; ++c) {
      if (type == DType::fp32) {
        float x, y;
        std::memcpy(&x, target + 4 * c, 4);
        std::memcpy(&y, from + 4 * c, 4);
        x += y;
        std::memcpy(target + 4 * c, &x, 4);
      } else {
        int32_t x, y;
        std::memcpy(&x, target + 4 * c, 4);
        std::memcpy(&y, from + 4 * c, 4);
        x += y;
        std::memcpy(target + 4 * c, &x, 4);
      }
    }
  }
}

}  // namespace tessera::ops
