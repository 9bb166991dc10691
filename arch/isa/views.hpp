// Views: tensors of a program with no DRAM of their own, whose elements a DMA load gathers from a source
// tensor (docs/tile-program.md, "Views"). Shared by the checker, the simulator's DMA engines and the
// lowering.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace tessera::arch {

// The im2col view of an NHWC input tensor (docs/tile-program.md, "Views"): a virtual matrix with a row per
// output pixel (image, p, q) and a column per (group, filter row, filter column, channel of the group), the
// GEMM operand A of a convolution. It occupies no DRAM: a DMA load of a view region gathers the elements from
// the source tensor, row by row in contiguous runs, and writes zeros where a tap falls in the padding.
struct Im2colView {
  int source = 0;  // index into Program::tensors: an input tensor [n*h*w, c]
  int64_t n = 1, h = 0, w = 0, c = 0, r = 0, s = 0;
  int64_t stride = 1, pad = 0, dilation = 1, groups = 1;

  int64_t p() const { return (h + 2 * pad - dilation * (r - 1) - 1) / stride + 1; }
  int64_t q() const { return (w + 2 * pad - dilation * (s - 1) - 1) / stride + 1; }
  int64_t group_c() const { return c / groups; }
  int64_t taps() const { return r * s * group_c(); }  // columns per group
  int64_t rows() const { return n * p() * q(); }
  int64_t cols() const { return groups * taps(); }
  bool operator==(const Im2colView& other) const {
    return source == other.source && n == other.n && h == other.h && w == other.w && c == other.c &&
           r == other.r && s == other.s && stride == other.stride && pad == other.pad &&
           dilation == other.dilation && groups == other.groups;
  }
};

// Calls run(offset, source_element, count) for the pieces of view row `row`, columns [col, col + cols):
// `count` elements that land at element `offset` of the row piece and come from consecutive elements of the
// source tensor starting at `source_element`, or are padding zeros when source_element < 0. Adjacent pieces
// that are contiguous in the source are merged (with one group and no dilation, a filter row's taps over all
// channels are one run).
template <class Run>
void for_each_im2col_run(const Im2colView& view, int64_t row, int64_t col, int64_t cols, Run&& run) {
  const int64_t pq = view.p() * view.q();
  const int64_t image = row / pq, op = (row % pq) / view.q(), oq = row % view.q();
  const int64_t group_c = view.group_c(), taps = view.taps();
  int64_t pending_offset = 0, pending_source = 0, pending_count = 0;
  for (int64_t offset = 0; offset < cols;) {
    const int64_t column = col + offset;
    const int64_t group = column / taps, tap = column % taps;
    const int64_t fr = tap / (view.s * group_c), fs = (tap / group_c) % view.s, channel = tap % group_c;
    const int64_t count = std::min(group_c - channel, cols - offset);
    const int64_t ih = op * view.stride - view.pad + fr * view.dilation;
    const int64_t iw = oq * view.stride - view.pad + fs * view.dilation;
    const int64_t source = ih < 0 || ih >= view.h || iw < 0 || iw >= view.w
                               ? -1
                               : ((image * view.h + ih) * view.w + iw) * view.c + group * group_c + channel;
    const bool joins = pending_count > 0 && ((source < 0 && pending_source < 0) ||
                                             (source >= 0 && source == pending_source + pending_count));
    if (joins) {
      pending_count += count;
    } else {
      if (pending_count > 0) run(pending_offset, pending_source, pending_count);
      pending_offset = offset, pending_source = source, pending_count = count;
    }
    offset += count;
  }
  if (pending_count > 0) run(pending_offset, pending_source, pending_count);
}

// The weights of `packed` groups of a grouped convolution side by side as one block-diagonal GEMM operand
// (docs/tile-program.md, "Views"), so that one PE instruction computes several groups: a virtual
// [groups*window*group_c, packed*group_k] matrix over the weights W [groups*window*group_c, group_k] (rows in
// (group, filter position, channel) order; window = r*s). Super-group `sg` (packed groups) takes view rows
// [sg*window*packed*group_c, ...) in (filter position, group j of the pack, channel) order, matching an
// im2col view with groups/packed groups; the row of pack member j holds its filters at columns [j*group_k,
// (j+1)*group_k) and zeros elsewhere. Zeros cost no DRAM traffic.
struct BlockDiagonalView {
  int source = 0;  // index into Program::tensors: the input W
  int64_t groups = 1, packed = 1, window = 1, group_c = 1, group_k = 1;

  int64_t rows() const { return groups * window * group_c; }
  int64_t cols() const { return packed * group_k; }
  bool operator==(const BlockDiagonalView& other) const {
    return source == other.source && groups == other.groups && packed == other.packed &&
           window == other.window && group_c == other.group_c && group_k == other.group_k;
  }
};

// The one run of view row `row` inside columns [col, col + cols) that holds weights: run(offset, source
// element, count) as for_each_im2col_run; nothing when the row's block lies outside the columns.
template <class Run>
void for_each_block_diagonal_run(const BlockDiagonalView& view, int64_t row, int64_t col, int64_t cols,
                                 Run&& run) {
  const int64_t per_super = view.window * view.packed * view.group_c;
  const int64_t super = row / per_super, within = row % per_super;
  const int64_t position = within / (view.packed * view.group_c);
  const int64_t member = (within % (view.packed * view.group_c)) / view.group_c,
                channel = within % view.group_c;
  const int64_t source_row =
      ((super * view.packed + member) * view.window + position) * view.group_c + channel;
  const int64_t first = std::max(col, member * view.group_k),
                last = std::min(col + cols, (member + 1) * view.group_k);
  if (first < last)
    run(first - col, source_row * view.group_k + (first - member * view.group_k), last - first);
}

// Rows of a source tensor picked by a list that the program states (docs/tile-program.md, "Views"): view row
// r is source row rows[r], or a row of zeros where rows[r] == kZeroRow. The view has the source's columns. An
// MoE layer's permutation gathers the rows of X routed to an expert, and its combine gathers, per token, the
// expert-output rows of its routes (a dropped route: a zero row); the routing is decided when the program is
// written, so the lists are static. The source may be an output written earlier in the program (ordering is
// then the program's semaphores' business, as for any DRAM read after write). Zeros cost no DRAM traffic.
struct RowGatherView {
  static constexpr int64_t kZeroRow = -1;
  int source = 0;             // index into Program::tensors: an input or an output declared earlier
  std::vector<int64_t> rows;  // per view row: a row of the source, or kZeroRow

  bool operator==(const RowGatherView& other) const { return source == other.source && rows == other.rows; }
};

// The one run of view row `row` inside columns [col, col + cols) of a view over a source with `source_cols`
// columns: run(offset, source element, count) as for_each_im2col_run (source element -1: zeros).
template <class Run>
void for_each_row_gather_run(const RowGatherView& view, int64_t source_cols, int64_t row, int64_t col,
                             int64_t cols, Run&& run) {
  const int64_t source_row = view.rows[static_cast<size_t>(row)];
  run(int64_t{0}, source_row == RowGatherView::kZeroRow ? int64_t{-1} : source_row * source_cols + col, cols);
}

// The maximal runs of the region [row, row + rows) x [col, col + cols) of a row-gather view: run(first row
// of the region, row count, source element or -1 for zeros, element count). A region that spans whole source
// rows merges consecutive view rows whose source rows are consecutive (or all zeros) into one contiguous run:
// a tile of consecutive tokens is one run, as a plain tensor's whole-row tile is. Otherwise each row is its
// own run.
template <class Run>
void for_each_row_gather_region_run(const RowGatherView& view, int64_t source_cols, int64_t row, int64_t rows,
                                    int64_t col, int64_t cols, Run&& run) {
  if (col != 0 || cols != source_cols) {
    for (int64_t r = 0; r < rows; ++r)
      for_each_row_gather_run(
          view, source_cols, row + r, col, cols,
          [&](int64_t, int64_t source, int64_t count) { run(r, int64_t{1}, source, count); });
    return;
  }
  for (int64_t first = 0; first < rows;) {
    const int64_t source_row = view.rows[static_cast<size_t>(row + first)];
    int64_t last = first + 1;
    if (source_row == RowGatherView::kZeroRow) {
      while (last < rows && view.rows[static_cast<size_t>(row + last)] == RowGatherView::kZeroRow) ++last;
      run(first, last - first, int64_t{-1}, (last - first) * cols);
    } else {
      while (last < rows && view.rows[static_cast<size_t>(row + last)] == source_row + (last - first)) ++last;
      run(first, last - first, source_row * source_cols, (last - first) * cols);
    }
    first = last;
  }
}

// What a DMA load of that region reads from DRAM: its runs that read the source (zero runs excluded) and the
// elements they read — the runs the simulator's engine walks (each cut into bursts), for a cost model to
// count.
struct RowGatherTraffic {
  int64_t runs = 0;
  int64_t elements = 0;
};
inline RowGatherTraffic row_gather_traffic(const RowGatherView& view, int64_t source_cols, int64_t row,
                                           int64_t rows, int64_t col, int64_t cols) {
  RowGatherTraffic traffic;
  for_each_row_gather_region_run(view, source_cols, row, rows, col, cols,
                                 [&](int64_t, int64_t, int64_t source, int64_t count) {
                                   if (source < 0) return;
                                   ++traffic.runs;
                                   traffic.elements += count;
                                 });
  return traffic;
}

}  // namespace tessera::arch
