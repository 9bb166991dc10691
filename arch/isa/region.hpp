// A rectangle of a 2-D row-major tensor of the program, the DRAM operand of a DMA instruction.
#pragma once

#include <cstdint>

namespace tessera::arch {

// In elements: rows [row, row + rows), columns [col, col + cols).
struct TensorRegion {
  int tensor = 0;  // index into Program::tensors
  int64_t row = 0;
  int64_t rows = 0;
  int64_t col = 0;
  int64_t cols = 0;
  bool operator==(const TensorRegion& other) const {
    return tensor == other.tensor && row == other.row && rows == other.rows && col == other.col &&
           cols == other.cols;
  }
};

}  // namespace tessera::arch
