#include "arch/isa/text_writer.hpp"

#include <cstdint>
#include <vector>

namespace tessera::arch {

void LineWriter::write_pitch(std::string_view key, int64_t pitch_bytes) {
  if (pitch_bytes != 0) put(" {}={}", key, pitch_bytes);
}

void LineWriter::write_region(const TensorRegion& region) {
  TESSERA_ASSERT(region.tensor >= 0 && static_cast<size_t>(region.tensor) < program_.tensors.size(),
                 "a region names a declared tensor");
  put("{}[{}:{}, {}:{}]", program_.tensors[static_cast<size_t>(region.tensor)].name, region.row,
      region.row + region.rows, region.col, region.col + region.cols);
}

void LineWriter::write_core(int core) {
  TESSERA_ASSERT(core >= 0 && core < program_.mesh.cores(), "a core index lies inside the mesh");
  const Coord coord = core_coord(core, program_.mesh);
  put("{},{}", coord.row, coord.col);
}

void LineWriter::write_integer_list(const std::vector<int64_t>& values) {
  TESSERA_ASSERT(!values.empty(), "a list in the program text has at least one value");
  // Three or more consecutive ascending non-negative values are a range, three or more equal ones a repeat.
  constexpr size_t kShortest = 3;
  for (size_t first = 0; first < values.size();) {
    if (first > 0) put(",");
    const int64_t value = values[first];
    size_t ascending = first + 1;
    while (value >= 0 && ascending < values.size() && values[ascending - 1] < INT64_MAX &&
           values[ascending] == values[ascending - 1] + 1)
      ++ascending;
    if (ascending - first >= kShortest) {
      put("{}-{}", value, values[ascending - 1]);
      first = ascending;
      continue;
    }
    size_t equal = first + 1;
    while (equal < values.size() && values[equal] == value) ++equal;
    if (equal - first >= kShortest) {
      put("{}*{}", value, equal - first);
      first = equal;
      continue;
    }
    put("{}", value);
    ++first;
  }
}

}  // namespace tessera::arch
