// The mapper's view of one GEMM and how a dimension is cut into tiles and dealt to cores.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "common/dtype.hpp"
#include "ops/kinds/gemm.hpp"
#include "ops/op.hpp"

namespace tessera::mapper {

// One GEMM, or `groups` independent GEMMs of the same shape run one after another (a grouped convolution;
// the lowering walks the groups as an outer loop). A may be an im2col view: then its rows are gathered from
// runs of at most `a_run` contiguous elements, and only `a_dram_fraction` of its elements come from DRAM
// (the rest are padding zeros).
// A convolution mapped directly, as its 7-D loop nest (docs/design-notes.md, "Direct convolution"): the
// problem's m counts output rows of q pixels, n filters and k channels (each channel with r*s taps), and
// `groups` = images x conv groups run one after another. A tile of tm output rows reads an input tile of
// input_rows(tm) rows of w pixels (the halo included) straight from X: nothing is gathered or duplicated.
struct DirectConv {
  int64_t images = 1, conv_groups = 1;
  int64_t h = 0, w = 0, c = 0;  // the input (c: all channels, the row length of X)
  int64_t p = 0, q = 0;         // the output
  int64_t r = 1, s = 1, stride = 1, pad = 0, dilation = 1;
  int64_t taps() const { return r * s; }
  // Input rows a tile of `rows` output rows reads at most (the whole input height at most).
  int64_t input_rows(int64_t rows) const { return std::min(h, (rows - 1) * stride + (r - 1) * dilation + 1); }
  // Input rows the tiles of `tile` output rows read from DRAM, summed over one image (padding rows are not
  // read).
  int64_t input_rows_read(int64_t tile) const;
};

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
  std::optional<DirectConv> direct;  // set: a direct convolution (m, n, k as DirectConv says)
  int64_t m_pixels() const { return direct ? direct->q : 1; }   // O rows per unit of m
  int64_t taps() const { return direct ? direct->taps() : 1; }  // W rows per unit of k
  // Elements of one A tile of tm x tk (direct: the input tile, halo included), at most.
  int64_t a_tile_elements(int64_t tm, int64_t tk) const {
    return direct ? direct->input_rows(tm) * direct->w * tk : tm * tk;
  }
  int64_t macs() const { return m * n * k * groups * m_pixels() * taps(); }  // what the PE arrays perform
  int64_t useful_macs() const { return macs() / packed; }                    // the op's own
};

// The GEMM of one group of an op that is a contraction (gemm, fc: one group; conv2d: `groups`); none for the
// other kinds.
struct OpGemm {
  ops::GemmShape gemm;
  int64_t groups = 1;
};
std::optional<OpGemm> gemm_of(const ops::Op& op);

// The GEMM problem of a gemm, fc or conv2d op (a pool has none); for a grouped conv, with `packed` groups per
// block-diagonal GEMM (a divisor of groups).
GemmProblem problem_of(const ops::Op& op, int64_t packed = 1);

// The packings worth searching for an op: 1, and for a grouped conv the divisors of groups that are powers of
// two, or groups itself, whose packed GEMM is at most twice as wide as the PE array's larger side.
struct GemmMapping;

// The direct problem of a conv2d, fc or gemm op (an fc or gemm is a 1x1 convolution over one row of m
// pixels).
GemmProblem direct_problem_of(const ops::Op& op);
// The problem a mapping of `op` maps: direct, or implicit GEMM with its packed groups.
GemmProblem problem_for(const ops::Op& op, const GemmMapping& mapping);

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
