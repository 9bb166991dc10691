// The mapper's view of one GEMM and how a dimension is cut into tiles and dealt to cores.
#pragma once

#include <cstdint>
#include <vector>

#include "common/dtype.hpp"
#include "ops/workload.hpp"

namespace tessera::mapper {

// One GEMM, or `groups` independent GEMMs of the same shape run one after another (a grouped convolution;
// the lowering walks the groups as an outer loop). A may be an im2col view: then its rows are gathered from
// runs of at most `a_run` contiguous elements, and only `a_dram_fraction` of its elements come from DRAM
// (the rest are padding zeros).
struct GemmProblem {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  DType dtype = DType::bf16;
  int64_t groups = 1;
  int64_t a_run = 0;             // 0: A's tile rows are contiguous
  double a_dram_fraction = 1.0;  // of A's elements, those read from DRAM
  // Packed groups: W is block-diagonal, so only 1/packed of its elements (and of the MACs) are real.
  int64_t packed = 1;
  int64_t w_run = 0;  // packed: a W row's weights are one run of k/groups elements (0: the tile row)
  int64_t macs() const { return m * n * k * groups; }      // what the PE arrays perform
  int64_t useful_macs() const { return macs() / packed; }  // the op's own
};

// The GEMM problem of a gemm, fc or conv2d op (a pool has none); for a grouped conv, with `packed` groups per
// block-diagonal GEMM (a divisor of groups).
GemmProblem problem_of(const ops::Op& op, int64_t packed = 1);

// The packings worth searching for an op: 1, and for a grouped conv the divisors of groups that are powers of
// two, or groups itself, whose packed GEMM is at most twice as wide as the PE array's larger side.
std::vector<int64_t> packings_of(const ops::Op& op, int64_t array_side);

// A dimension of `extent` cut into tiles of `tile` (the last one shorter when ragged: nothing is padded) and
// dealt to `parts` cores in contiguous runs of whole tiles that differ in length by at most one.
struct DimPartition {
  int64_t extent = 0;
  int64_t tile = 0;
  int parts = 1;

  DimPartition() = default;
  DimPartition(int64_t extent_, int64_t tile_, int parts_) : extent(extent_), tile(tile_), parts(parts_) {}

  int64_t tiles() const { return (extent + tile - 1) / tile; }
  int64_t first_tile(int part) const { return tiles() * part / parts; }
  int64_t tile_count(int part) const { return first_tile(part + 1) - first_tile(part); }
  int64_t max_tile_count() const { return (tiles() + parts - 1) / parts; }
  int64_t tile_begin(int64_t tile_index) const { return tile_index * tile; }
  int64_t tile_size(int64_t tile_index) const {
    const int64_t begin = tile_begin(tile_index);
    return extent - begin < tile ? extent - begin : tile;
  }
  // Elements of the part's run of tiles.
  int64_t part_extent(int part) const {
    const int64_t first = first_tile(part), count = tile_count(part);
    if (count == 0) return 0;
    return tile_begin(first + count - 1) + tile_size(first + count - 1) - tile_begin(first);
  }
};

}  // namespace tessera::mapper
