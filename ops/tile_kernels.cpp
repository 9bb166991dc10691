#include "ops/tile_kernels.hpp"

#include <Eigen/Dense>
#include <cstring>

#include "common/error.hpp"
#include "ops/encodings.hpp"
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
                  uint8_t* o, int64_t o_pitch, int64_t m, int64_t n, int64_t k, bool accumulate,
                  bool w_transposed) {
  // Scratch survives calls: PE instructions of one run have a handful of tile shapes.
  thread_local RowMajor<Scalar> a_tile, w_tile, product;
  widen_rows(operand, a, a_pitch, m, k, a_tile);
  widen_rows(operand, w, w_pitch, w_transposed ? n : k, w_transposed ? k : n, w_tile);
  product.resize(m, n);
  if (w_transposed) {
    product.noalias() = a_tile * w_tile.transpose();
  } else {
    product.noalias() = a_tile * w_tile;
  }
  accumulate_rows(product, o, o_pitch, accumulate);
}

template <class Scalar>
void conv_tile_in(DType operand, const uint8_t* input, int64_t input_pitch, const uint8_t* w, int64_t w_pitch,
                  uint8_t* o, int64_t o_pitch, const ConvTileGeometry& g, bool accumulate) {
  thread_local RowMajor<Scalar> input_tile, w_tile, window, product;
  widen_rows(operand, input, input_pitch, g.ih * g.iw, g.c, input_tile);
  widen_rows(operand, w, w_pitch, g.r * g.s * g.c, g.m, w_tile);
  product.setZero(g.e * g.q, g.m);
  window.resize(g.e * g.q, g.c);
  for (int64_t fr = 0; fr < g.r; ++fr)
    for (int64_t fs = 0; fs < g.s; ++fs) {
      // The tap's shifted window of the input tile: one row per output pixel, zero where it falls outside.
      for (int64_t y = 0; y < g.e; ++y)
        for (int64_t x = 0; x < g.q; ++x) {
          const int64_t iy = y * g.stride + fr * g.dilation - g.pad_top;
          const int64_t ix = x * g.stride + fs * g.dilation - g.pad_left;
          if (iy >= 0 && iy < g.ih && ix >= 0 && ix < g.iw)
            window.row(y * g.q + x) = input_tile.row(iy * g.iw + ix);
          else
            window.row(y * g.q + x).setZero();
        }
      product.noalias() += window * w_tile.middleRows((fr * g.s + fs) * g.c, g.c);
    }
  accumulate_rows(product, o, o_pitch, accumulate);
}
}  // namespace

void conv_tile(DType operand, const uint8_t* input, int64_t input_pitch, const uint8_t* w, int64_t w_pitch,
               uint8_t* o, int64_t o_pitch, const ConvTileGeometry& geometry, bool accumulate) {
  TESSERA_ASSERT(operand != DType::int32, "PE operands are never int32");
  if (operand == DType::int8) {
    conv_tile_in<int32_t>(operand, input, input_pitch, w, w_pitch, o, o_pitch, geometry, accumulate);
  } else {
    conv_tile_in<float>(operand, input, input_pitch, w, w_pitch, o, o_pitch, geometry, accumulate);
  }
}

void gemm_tile(DType operand, const uint8_t* a, int64_t a_pitch, const uint8_t* w, int64_t w_pitch,
               uint8_t* o, int64_t o_pitch, int64_t m, int64_t n, int64_t k, bool accumulate,
               bool w_transposed) {
  TESSERA_ASSERT(operand != DType::int32, "PE operands are never int32");
  if (operand == DType::int8) {
    gemm_tile_in<int32_t>(operand, a, a_pitch, w, w_pitch, o, o_pitch, m, n, k, accumulate, w_transposed);
  } else {
    gemm_tile_in<float>(operand, a, a_pitch, w, w_pitch, o, o_pitch, m, n, k, accumulate, w_transposed);
  }
}

namespace {
float load_float(DType type, const uint8_t* at) {
  if (type == DType::fp32) {
    float x;
    std::memcpy(&x, at, 4);
    return x;
  }
  uint16_t half;
  std::memcpy(&half, at, 2);
  return type == DType::bf16 ? bf16_to_float(half) : fp16_to_float(half);
}
void store_float(DType type, uint8_t* at, float value) {
  if (type == DType::fp32) {
    std::memcpy(at, &value, 4);
    return;
  }
  const uint16_t half = type == DType::bf16 ? float_to_bf16(value) : float_to_fp16(value);
  std::memcpy(at, &half, 2);
}
}  // namespace

namespace {
// target[c] += from[c] for a row of 4-byte values. No overlap (restrict), 16 at a time (a loop of a fixed
// count is what -O2's vectoriser takes), then the rest one by one.
template <class Word>
void add_row(uint8_t* __restrict target, const uint8_t* __restrict from, int64_t cols) {
  constexpr int64_t kBlock = 16;
  int64_t c = 0;
  for (; c + kBlock <= cols; c += kBlock) {
    Word x[kBlock], y[kBlock];
    std::memcpy(x, target + 4 * c, sizeof x);
    std::memcpy(y, from + 4 * c, sizeof y);
    for (int64_t j = 0; j < kBlock; ++j) x[j] += y[j];
    std::memcpy(target + 4 * c, x, sizeof x);
  }
  for (; c < cols; ++c) {
    Word x, y;
    std::memcpy(&x, target + 4 * c, 4);
    std::memcpy(&y, from + 4 * c, 4);
    x += y;
    std::memcpy(target + 4 * c, &x, 4);
  }
}
}  // namespace

void add_tile(DType type, uint8_t* destination, int64_t destination_pitch, const uint8_t* source,
              int64_t source_pitch, int64_t rows, int64_t cols) {
  TESSERA_ASSERT(type != DType::int8, "reductions add fp32, int32, bf16 or fp16 partial sums");
  const int64_t element = size_bytes(type);
  for (int64_t r = 0; r < rows; ++r) {
    uint8_t* target = destination + r * destination_pitch;
    const uint8_t* from = source + r * source_pitch;
    if (type == DType::int32) {
      add_row<int32_t>(target, from, cols);
    } else if (type == DType::fp32) {
      add_row<float>(target, from, cols);
    } else {
      for (int64_t c = 0; c < cols; ++c)
        store_float(type, target + element * c,
                    load_float(type, target + element * c) + load_float(type, from + element * c));
    }
  }
}

void write_partial_sums(DType operand, DType psum, uint8_t* destination, int64_t destination_pitch,
                        const uint8_t* product, int64_t product_pitch, int64_t rows, int64_t cols,
                        bool accumulate) {
  const DType accumulator = accumulator_of(operand);
  if (psum == accumulator) {
    if (accumulate) {
      add_tile(accumulator, destination, destination_pitch, product, product_pitch, rows, cols);
    } else {
      for (int64_t row = 0; row < rows; ++row)
        std::memcpy(destination + row * destination_pitch, product + row * product_pitch,
                    static_cast<size_t>(cols * size_bytes(accumulator)));
    }
    return;
  }
  TESSERA_ASSERT(accumulator == DType::fp32 && (psum == DType::bf16 || psum == DType::fp16),
                 "16-bit partial sums are kept for floating-point operands");
  for (int64_t r = 0; r < rows; ++r) {
    uint8_t* target = destination + r * destination_pitch;
    const uint8_t* from = product + r * product_pitch;
    for (int64_t c = 0; c < cols; ++c) {
      float sum;
      std::memcpy(&sum, from + 4 * c, 4);
      if (accumulate) sum += load_float(psum, target + 2 * c);
      store_float(psum, target + 2 * c, sum);
    }
  }
}

}  // namespace tessera::ops
