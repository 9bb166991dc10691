#include "mapper/contraction/buffers.hpp"

#include "mapper/contraction/stage.hpp"

namespace tessera::mapper {

namespace {
int64_t align_up(int64_t value, int64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}
}  // namespace

BufferPlan plan_buffers(const Mapping& mapping, const arch::ArchSpec& spec) {
  const ContractionStage& stage = stage_of(mapping);
  const int64_t element = size_bytes(stage.shape().dtype);
  // O's partial sums, and the bias row (the steps' operands are in the partial sums' type).
  const int64_t accumulator = size_bytes(stage.shape().o_dtype());
  const int64_t alignment = spec.core.sram.bank_row_bytes;
  BufferPlan plan;
  plan.a_row_bytes = mapping.tile_k * element;
  plan.w_row_bytes = mapping.tile_n * element;
  plan.o_row_bytes = mapping.tile_n * accumulator;
  // What a tile holds is the stage's: a direct conv's A buffer holds the input tile (its rows with the halo,
  // every pixel of them), its W buffer the tile's channels for every filter tap, its O buffer q pixels per
  // output row.
  plan.a_bytes = stage.a_tile_rows(mapping.tile_m) * plan.a_row_bytes;
  plan.w_bytes = mapping.tile_k * stage.taps_per_k() * plan.w_row_bytes;
  plan.o_bytes = mapping.tile_m * stage.pixels_per_m() * plan.o_row_bytes;
  plan.a_count = mapping.double_buffer_inputs ? 2 : 1;
  plan.w_count = mapping.double_buffer_inputs ? 2 : 1;
  plan.o_count = mapping.double_buffer_output ? 2 : 1;
  plan.a_stride = align_up(plan.a_bytes, alignment);
  plan.w_stride = align_up(plan.w_bytes, alignment);
  plan.o_stride = align_up(plan.o_bytes, alignment);
  plan.a_base = 0;
  plan.w_base = plan.a_base + static_cast<uint64_t>(plan.a_count * plan.a_stride);
  plan.o_base = plan.w_base + static_cast<uint64_t>(plan.w_count * plan.w_stride);
  plan.total_bytes = static_cast<int64_t>(plan.o_base) + plan.o_count * plan.o_stride;
  if (mapping.epilogue && mapping.fusion == Fusion::fused) {
    plan.e_row_bytes = mapping.epilogue->tile() ? plan.o_row_bytes
                                                : mapping.tile_n * size_bytes(mapping.epilogue->out_dtype());
    plan.e_stride = align_up(mapping.tile_m * stage.pixels_per_m() * plan.e_row_bytes, alignment);
    plan.e_base = static_cast<uint64_t>(plan.total_bytes);
    plan.total_bytes += plan.o_count * plan.e_stride;
    if (mapping.epilogue->bias()) {
      plan.bias_stride = align_up(mapping.tile_n * accumulator, alignment);
      plan.bias_base = static_cast<uint64_t>(plan.total_bytes);
      plan.total_bytes += plan.o_count * plan.bias_stride;
    }
  } else if (mapping.epilogue && mapping.fusion == Fusion::array && mapping.epilogue->bias()) {
    // The output path reads each output tile's slice of the bias row from SRAM.
    plan.bias_stride = align_up(mapping.tile_n * accumulator, alignment);
    plan.bias_base = static_cast<uint64_t>(plan.total_bytes);
    plan.total_bytes += plan.o_count * plan.bias_stride;
  }
  return plan;
}

int64_t pe_register_bytes_needed(arch::Dataflow dataflow, DType dtype, arch::FoldOverlap overlap_folds) {
  const int64_t element = size_bytes(dtype);
  const int64_t accumulator = size_bytes(accumulator_of(dtype));
  // Full overlap keeps two of the stationary operand (WS/IS) or accumulator (OS); drain two stationary
  // operands (the next preload under this fold's drain) but one accumulator.
  const bool os = dataflow == arch::Dataflow::os;
  const int64_t copies =
      overlap_folds == arch::FoldOverlap::full || (overlap_folds == arch::FoldOverlap::drain && !os) ? 2 : 1;
  switch (dataflow) {
    case arch::Dataflow::ws:
    case arch::Dataflow::is:
      return copies * element + element + accumulator;  // stationary, moving, psum
    case arch::Dataflow::os:
      return copies * accumulator + 2 * element;  // accumulators, A and W in flight
    case arch::Dataflow::rs:
      return 0;  // the scratchpads decide (arch::rs_infeasibility)
  }
  return 0;
}

}  // namespace tessera::mapper
