#include "arch/isa/text_writer.hpp"

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

}  // namespace tessera::arch
