// Tile-level math on raw bytes, shared by the simulator's functional units: a PE-array instruction reads its
// operand tiles from simulated SRAM addresses and writes its result tile back through these kernels.
// Pitches are in bytes between consecutive rows.
#pragma once

#include <cstdint>

#include "common/dtype.hpp"

namespace tessera::ops {

// O[m x n] (accumulator type of `operand`) = (accumulate ? O : 0) + A[m x k] * W[k x n] (both `operand`),
// accumulating in fp32 for floating operands and int32 for int8. With `w_transposed`, W is stored as its
// transpose (n rows of k).
void gemm_tile(DType operand, const uint8_t* a, int64_t a_pitch, const uint8_t* w, int64_t w_pitch,
               uint8_t* o, int64_t o_pitch, int64_t m, int64_t n, int64_t k, bool accumulate,
               bool w_transposed = false);

// A direct convolution tile (arch::PeConv's semantics, docs/tile-program.md "conv"): the input tile is
// ih*iw pixels of c channels, the filter tile r*s*c rows of m filters in (filter row, filter column, channel)
// order, the output e*q pixels of m accumulators; input taps outside the tile's rows and columns are zero.
struct ConvTileGeometry {
  int64_t e = 0, q = 0, m = 0, c = 0, ih = 0, iw = 0;
  int64_t r = 1, s = 1, stride = 1, dilation = 1, pad_top = 0, pad_left = 0;
};
void conv_tile(DType operand, const uint8_t* input, int64_t input_pitch, const uint8_t* w, int64_t w_pitch,
               uint8_t* o, int64_t o_pitch, const ConvTileGeometry& geometry, bool accumulate);

// destination[rows x cols] += source[rows x cols], elementwise in `type` (partial sums: fp32 or int32, or
// bf16 or fp16, added in fp32 and rounded to nearest even). The two do not overlap.
void add_tile(DType type, uint8_t* destination, int64_t destination_pitch, const uint8_t* source,
              int64_t source_pitch, int64_t rows, int64_t cols);

// Writes a PE instruction's result, `product` [rows x cols] in the accumulator type of `operand` (fp32 or
// int32), into partial sums of `psum` type at `destination`: (accumulate ? destination : 0) + product,
// summed in the accumulator type and rounded to `psum` (to nearest even) when it is 16-bit.
void write_partial_sums(DType operand, DType psum, uint8_t* destination, int64_t destination_pitch,
                        const uint8_t* product, int64_t product_pitch, int64_t rows, int64_t cols,
                        bool accumulate);

}  // namespace tessera::ops
