// What a vector pass's estimate, search and lowering must agree on, decided once and read by all three: the
// SRAM its buffers take and where they lie, a block's bytes in and out, how many cores a split uses, and
// which DMA engines take its loads and its stores.
#pragma once

#include <cstdint>
#include <utility>

#include "arch/spec.hpp"
#include "mapper/kit/dma_engines.hpp"
#include "mapper/kit/vector_stage.hpp"

namespace tessera::mapper {

// The SRAM a mapping's buffers take, laid out one after another: X blocks, Y blocks, O blocks, row
// parameters. Each is bank-row aligned, so that blocks start on bank 0 the way the PE lowering's do.
struct VectorBuffers {
  int count = 2;  // per operand: 2 with double buffering
  int64_t x_bytes = 0, y_bytes = 0, o_bytes = 0, parameter_bytes = 0;
  uint64_t x(int buffer) const { return static_cast<uint64_t>(buffer * x_bytes); }
  uint64_t y(int buffer) const { return static_cast<uint64_t>(count * x_bytes + buffer * y_bytes); }
  uint64_t o(int buffer) const {
    return static_cast<uint64_t>(count * (x_bytes + y_bytes) + buffer * o_bytes);
  }
  uint64_t parameters() const { return static_cast<uint64_t>(count * (x_bytes + y_bytes + o_bytes)); }
  int64_t total() const { return count * (x_bytes + y_bytes + o_bytes) + parameter_bytes; }
};

// The buffers of blocks of `block_units` units, one or two of each.
VectorBuffers buffers_of(const VectorStage& stage, int64_t block_units, bool double_buffer,
                         const arch::ArchSpec& spec);

// Cores used by a split of `units` units into shares of `per_core`.
int cores_used(int64_t units, int64_t per_core);

// One block's bytes in (X, Y) and out (O): how the cost model and the lowering both count them.
std::pair<int64_t, int64_t> block_bytes(const VectorStage& stage, int64_t block);

// The pass's DMA engines, split between its loads and its stores by a block's bytes
// (mapper/kit/dma_engines.hpp).
PassEngines pass_engines_of(const VectorStage& stage, int64_t block, const arch::ArchSpec& spec);

}  // namespace tessera::mapper
