#include "arch/timing/pe_traffic.hpp"

#include "arch/timing/rs_timing.hpp"
#include "common/error.hpp"

namespace tessera::arch {

namespace {
int64_t blocks(int64_t extent, int64_t block) {
  return (extent + block - 1) / block;
}
}  // namespace

PeSramTraffic pe_sram_traffic(Dataflow dataflow, DType dtype, DType o_dtype, int64_t m, int64_t n, int64_t k,
                              bool accumulate, int array_rows, int array_cols) {
  PeSramTraffic traffic;
  switch (dataflow) {
    case Dataflow::ws:
      traffic.a_passes = blocks(n, array_cols);
      traffic.o_writes = blocks(k, array_rows);
      break;
    case Dataflow::is:
      traffic.w_passes = blocks(m, array_cols);
      traffic.o_writes = blocks(k, array_rows);
      break;
    case Dataflow::os:
      traffic.a_passes = blocks(n, array_cols);
      traffic.w_passes = blocks(m, array_rows);
      break;
    case Dataflow::rs:
      TESSERA_ASSERT(false, "row stationary runs conv instructions (arch::conv_sram_traffic)");
  }
  traffic.o_reads = traffic.o_writes - 1 + (accumulate ? 1 : 0);
  const int64_t element = size_bytes(dtype);
  const int64_t accumulator = size_bytes(o_dtype);
  traffic.read_bytes = m * k * element * traffic.a_passes + k * n * element * traffic.w_passes +
                       m * n * accumulator * traffic.o_reads;
  traffic.write_bytes = m * n * accumulator * traffic.o_writes;
  traffic.o_bytes = m * n * accumulator;
  return traffic;
}

PeSramTraffic conv_sram_traffic(Dataflow dataflow, DType dtype, DType o_dtype, const ConvTileShape& shape,
                                bool accumulate, const ArchSpec& spec) {
  const int64_t element = size_bytes(dtype);
  const int64_t accumulator = size_bytes(o_dtype);
  const int64_t input_bytes = shape.ih * shape.iw * shape.c * element;
  const int64_t filter_bytes = shape.r * shape.s * shape.c * shape.m * element;
  const int64_t output_bytes = shape.e * shape.q * shape.m * accumulator;
  PeSramTraffic traffic;
  if (dataflow != Dataflow::rs) {
    const ConvMatmul mm = matmul_of(shape);
    traffic = pe_sram_traffic(dataflow, dtype, o_dtype, mm.m, mm.n, mm.k, accumulate, spec.core.pe_array.rows,
                              spec.core.pe_array.cols);
    // The matmul's A passes read mm.m * mm.k elements each, from the input tile's ih*iw*c.
    traffic.a_passes = blocks(traffic.a_passes * mm.m * mm.k, shape.ih * shape.iw * shape.c);
    return traffic;
  }
  const RsPlan plan = RsTiming(spec).plan(shape, dtype);
  traffic.a_passes = plan.filter_groups;
  traffic.w_passes = plan.strips;
  traffic.o_writes = plan.channel_groups * plan.row_chunks;
  traffic.o_reads = traffic.o_writes - 1 + (accumulate ? 1 : 0);
  traffic.read_bytes =
      input_bytes * traffic.a_passes + filter_bytes * traffic.w_passes + output_bytes * traffic.o_reads;
  traffic.write_bytes = output_bytes * traffic.o_writes;
  traffic.o_bytes = output_bytes;
  return traffic;
}

}  // namespace tessera::arch
