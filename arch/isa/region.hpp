// A rectangle of a 2-D row-major tensor of the program, the DRAM operand of a DMA instruction.
#pragma once

#include <cstdint>

#include "arch/isa/fields.hpp"

namespace tessera::arch {

// In elements: rows [row, row + rows), columns [col, col + cols).
struct TensorRegion {
  int tensor = 0;  // index into Program::tensors
  int64_t row = 0;
  int64_t rows = 0;
  int64_t col = 0;
  int64_t cols = 0;
  // Its fields, in the order the binary form sends them (arch/isa/fields.hpp).
  template <class Visit>
  static void fields(Visit&& visit) {
    visit("tensor", &TensorRegion::tensor), visit("row", &TensorRegion::row);
    visit("rows", &TensorRegion::rows), visit("col", &TensorRegion::col), visit("cols", &TensorRegion::cols);
  }
  bool operator==(const TensorRegion& other) const { return equal_fields(*this, other); }
};

}  // namespace tessera::arch
