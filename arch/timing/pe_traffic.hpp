// The SRAM traffic of one PE-array instruction, given its fold order (docs/pe-array-timing.md): how many
// times each operand tile is read and the result tile written. The simulator books it on the banks; the
// mapper's cost model charges it; both take it from here.
#pragma once

#include <cstdint>

#include "arch/spec.hpp"
#include "arch/timing/conv_timing.hpp"
#include "common/dtype.hpp"

namespace tessera::arch {

struct PeSramTraffic {
  int64_t a_passes = 1;  // reads of the whole A tile
  int64_t w_passes = 1;  // reads of the whole W tile
  int64_t o_writes = 1;  // writes of the whole O tile
  int64_t o_reads = 0;   // reads of the whole O tile (read-modify-write of partial sums)
  int64_t read_bytes = 0;
  int64_t write_bytes = 0;
  int64_t o_bytes = 0;  // one read or write of the whole O tile: what accumulating adds to read_bytes
};

// WS re-reads A once per n-block and IS re-reads W once per m-block; OS re-reads A per n-block and W per
// m-block. WS and IS add each k-block's partial sums into O, so O is written once per k-block and read back
// for every write but the first (and the first too when the instruction accumulates).
// Operands are `dtype`, the O tile's partial sums `o_dtype` (the accumulator's, or 16-bit: PeMatmul::psum).
PeSramTraffic pe_sram_traffic(Dataflow dataflow, DType dtype, DType o_dtype, int64_t m, int64_t n, int64_t k,
                              bool accumulate, int array_rows, int array_cols);

// The SRAM traffic of a convolution instruction, its passes counted over the input tile [ih*iw, c], the
// filter tile [r*s*c, m] and the output tile [e*q, m]. WS/OS/IS: the matmul's (pe_sram_traffic), its A
// passes served from the input tile's pixels. RS: each unit's filter rows are read once and multicast along
// its PE rows (the filters once per strip), its input rows once and multicast diagonally (the input tile once
// per filter group), and each channel group's partial sums are added into the output tile.
PeSramTraffic conv_sram_traffic(Dataflow dataflow, DType dtype, DType o_dtype, const ConvTileShape& shape,
                                bool accumulate, const ArchSpec& spec);

}  // namespace tessera::arch
