// Closed-form timing of a convolution instruction (arch::PeConv) on the PE array (docs/pe-array-timing.md,
// "Convolution instructions"): WS, OS and IS run it as the matrix product of its output pixels by its r*s*c
// taps, through the same folds as a matmul (PeArrayTiming): the array's operand address generator reads each
// pixel's taps from the input tile, so nothing is duplicated in SRAM. RS runs it as rs_timing.hpp says.
// The simulator and the cost model both use these, so they agree by construction.
#pragma once

#include <cstdint>

namespace tessera::arch {

// The shape of a convolution instruction that timing depends on.
struct ConvTileShape {
  int64_t e = 0, q = 0, m = 0, c = 0, r = 1, s = 1;
  int64_t ih = 0, iw = 0;  // the input tile
  int64_t macs() const { return e * q * m * c * r * s; }
};

// WS/OS/IS: the matmul the array runs (m = output pixels, n = filters, k = taps x channels).
struct ConvMatmul {
  int64_t m = 0, n = 0, k = 0;
};
ConvMatmul matmul_of(const ConvTileShape& shape);

}  // namespace tessera::arch
