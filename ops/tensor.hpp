// A dense row-major 2-D tensor held as raw bytes, the form tensors have in simulated DRAM.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "common/dtype.hpp"

namespace tessera::ops {

struct HostTensor {
  DType dtype = DType::fp32;
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<uint8_t> bytes;

  HostTensor() = default;
  HostTensor(DType type, int64_t row_count, int64_t col_count);

  int64_t elements() const { return rows * cols; }
  int64_t size_in_bytes() const { return elements() * size_bytes(dtype); }
  // Element i (row-major) widened to double; exact for every dtype here.
  double value(int64_t index) const;
};

// An input that holds a rope op's cos/sin table (input_generator.hpp, rope_table_fp32; fp32, rotary_dim
// columns) instead of the generator's pseudorandom values.
struct RopeTableFill {
  int64_t position = 0;  // of the table's first row
  double base = 10000;
  bool operator==(const RopeTableFill& other) const {
    return position == other.position && base == other.base;
  }
};

// Fills a tensor with the counter-based generator's values for (seed, tensor id), or, given `table`, with
// the rope table (fp32 only). An int32 tensor is an index table: its elements the first of a permutation of
// 0 .. index_range - 1 (0: of its own element count), distinct indices into a pool at least that large.
HostTensor generate_input(DType type, int64_t rows, int64_t cols, uint64_t seed, uint32_t tensor,
                          const std::optional<RopeTableFill>& table = std::nullopt, int64_t index_range = 0);

// A tensor holding `values` row-major (rows*cols of them, each fitting `type`: int8 or int32), as a program's
// fill=values input states them.
HostTensor tensor_of_values(DType type, int64_t rows, int64_t cols, const std::vector<int64_t>& values);

// Widens `count` elements of raw `type` bytes into floats (int8 -> exact small integers).
void widen_to_float(DType type, const uint8_t* source, int64_t count, float* destination);

}  // namespace tessera::ops
