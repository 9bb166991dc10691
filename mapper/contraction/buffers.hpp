// Where a mapping keeps its tiles in a core's SRAM: A, W and O buffers (each doubled when double-buffered), a
// fused epilogue's E buffers (one per O buffer: the residual tile, overwritten by the result the store
// drains) and bias rows,
// every buffer aligned to a bank row so tiles start on bank 0. Shared by the capacity check and the lowering,
// so what the mapper admits is exactly what the program uses.
#pragma once

#include <cstdint>

#include "arch/spec.hpp"
#include "common/dtype.hpp"
#include "mapper/mapping.hpp"

namespace tessera::mapper {

struct BufferPlan {
  int64_t a_row_bytes = 0, w_row_bytes = 0, o_row_bytes = 0;  // row pitch of each tile in SRAM
  int64_t a_bytes = 0, w_bytes = 0, o_bytes = 0;              // one buffer of each
  int a_count = 1, w_count = 1, o_count = 1;
  uint64_t a_base = 0, w_base = 0, o_base = 0;  // first buffer of each; buffer i is base + i * aligned bytes
  int64_t a_stride = 0, w_stride = 0, o_stride = 0;
  // A fused epilogue's: o_count E buffers and o_count bias rows (tile_n accumulators), else none. An E buffer
  // holds the result in the output's type (rows of e_row_bytes), or, when the epilogue reads a residual or up
  // projection tile into it, rows as O's (the result overwrites the tile in place).
  uint64_t e_base = 0, bias_base = 0;
  int64_t e_row_bytes = 0, e_stride = 0, bias_stride = 0;
  int64_t total_bytes = 0;

  uint64_t a_address(int buffer) const { return a_base + static_cast<uint64_t>(buffer * a_stride); }
  uint64_t w_address(int buffer) const { return w_base + static_cast<uint64_t>(buffer * w_stride); }
  uint64_t o_address(int buffer) const { return o_base + static_cast<uint64_t>(buffer * o_stride); }
  uint64_t e_address(int buffer) const { return e_base + static_cast<uint64_t>(buffer * e_stride); }
  uint64_t bias_address(int buffer) const { return bias_base + static_cast<uint64_t>(buffer * bias_stride); }
};

// The buffers of a mapping of its stage (what a tile holds is the stage's to say).
BufferPlan plan_buffers(const Mapping& mapping, const arch::ArchSpec& spec);

// PE register bytes a dataflow needs per PE (stationary operand, double-buffered with overlap_folds, plus the
// moving operands and the partial sum).
int64_t pe_register_bytes_needed(arch::Dataflow dataflow, DType dtype, arch::FoldOverlap overlap_folds);

}  // namespace tessera::mapper
