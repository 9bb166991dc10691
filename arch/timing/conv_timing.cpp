#include "arch/timing/conv_timing.hpp"

namespace tessera::arch {

ConvMatmul matmul_of(const ConvTileShape& shape) {
  return ConvMatmul{shape.e * shape.q, shape.m, shape.r * shape.s * shape.c};
}

}  // namespace tessera::arch
