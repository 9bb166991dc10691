// The vector pass's plan (mapper/kit/vector_plan.hpp).
#include "mapper/kit/vector_plan.hpp"

#include <algorithm>

#include "common/integer_math.hpp"

namespace tessera::mapper {

namespace {

// Buffers of SRAM are bank-row aligned, so that blocks start on bank 0 the way the PE lowering's do.
int64_t aligned(int64_t bytes, int64_t alignment) {
  return ceil_div(bytes, alignment) * alignment;
}

}  // namespace

VectorBuffers buffers_of(const VectorStage& stage, int64_t block_units, bool double_buffer,
                         const arch::ArchSpec& spec) {
  const int64_t alignment = spec.core.sram.bank_row_bytes;
  const int64_t element = size_bytes(stage.dtype()), out_element = size_bytes(stage.out_dtype());
  VectorBuffers buffers;
  buffers.count = double_buffer ? 2 : 1;
  // The largest block's X: a pool block that starts at an image's first row reads the fewest halo rows, so
  // take the largest over the first blocks of an image and of the middle.
  int64_t x_elements = 0;
  for (int64_t first : {int64_t{0}, int64_t{1}})
    x_elements = std::max(x_elements, stage.x_elements(std::min(first, stage.units() - 1),
                                                       std::min(block_units, stage.units())));
  buffers.x_bytes = aligned(x_elements * element, alignment);
  buffers.y_bytes = aligned(stage.y_elements(block_units) * size_bytes(stage.y_dtype()), alignment);
  buffers.o_bytes = aligned(stage.o_elements(block_units) * out_element, alignment);
  buffers.parameter_bytes = aligned(stage.row_parameter_elements() * element, alignment);
  return buffers;
}

// Cores used by a split of `units` units into shares of `per_core`.
int cores_used(int64_t units, int64_t per_core) {
  return static_cast<int>(ceil_div(units, per_core));
}

// One block's bytes in (X, Y) and out (O): how the cost model and the lowering both count them.
std::pair<int64_t, int64_t> block_bytes(const VectorStage& stage, int64_t block) {
  const int64_t load =
      stage.x_elements(std::min<int64_t>(1, stage.units() - 1), block) * size_bytes(stage.dtype()) +
      stage.y_elements(block) * size_bytes(stage.y_dtype());
  return {load, stage.o_elements(block) * size_bytes(stage.out_dtype())};
}

// The pass's DMA engines, split between its loads and its stores by a block's bytes
// (mapper/kit/dma_engines.hpp).
PassEngines pass_engines_of(const VectorStage& stage, int64_t block, const arch::ArchSpec& spec) {
  const auto [load, store] = block_bytes(stage, block);
  return pass_engines(spec.core.dma, static_cast<double>(load), static_cast<double>(store));
}

}  // namespace tessera::mapper
