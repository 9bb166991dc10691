#include "arch/pe_traffic.hpp"

#include "common/error.hpp"

namespace tessera::arch {

namespace {
int64_t blocks(int64_t extent, int64_t block) {
  return (extent + block - 1) / block;
}
}  // namespace

PeSramTraffic pe_sram_traffic(Dataflow dataflow, DType dtype, int64_t m, int64_t n, int64_t k,
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
  const int64_t accumulator = size_bytes(accumulator_of(dtype));
  traffic.read_bytes = m * k * element * traffic.a_passes + k * n * element * traffic.w_passes +
                       m * n * accumulator * traffic.o_reads;
  traffic.write_bytes = m * n * accumulator * traffic.o_writes;
  return traffic;
}

}  // namespace tessera::arch
