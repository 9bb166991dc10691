// The block-diagonal view (docs/tile-program.md, "Views"): `view blockdiag <W> groups= packed= window=
// group_c= group_k=`.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "arch/isa/fields.hpp"
#include "arch/isa/views/fit.hpp"

namespace tessera::arch {

// The weights of `packed` groups of a grouped convolution side by side as one block-diagonal GEMM operand, so
// that one PE instruction computes several groups: a virtual [groups*window*group_c, packed*group_k] matrix
// over the weights W [groups*window*group_c, group_k] (rows in (group, filter position, channel) order;
// window = r*s). Super-group `sg` (packed groups) takes view rows [sg*window*packed*group_c, ...) in (filter
// position, group j of the pack, channel) order, matching an im2col view with groups/packed groups; the row
// of pack member j holds its filters at columns [j*group_k, (j+1)*group_k) and zeros elsewhere. Zeros cost no
// DRAM traffic.
struct BlockDiagonalView {
  static constexpr const char* kKeyword = "blockdiag";
  static constexpr const char* kNoun = "a blockdiag view";
  static constexpr const char* kSummary = "the weights of packed groups as one block-diagonal operand";
  static constexpr bool kReadsOutputs = false;  // its source is a generated input

  int source = 0;  // index into Program::tensors: the input W
  int64_t groups = 1, packed = 1, window = 1, group_c = 1, group_k = 1;

  template <class Visit>
  static void fields(Visit&& visit) {
    visit("source", &BlockDiagonalView::source);
    visit("groups", &BlockDiagonalView::groups), visit("packed", &BlockDiagonalView::packed);
    visit("window", &BlockDiagonalView::window), visit("group_c", &BlockDiagonalView::group_c);
    visit("group_k", &BlockDiagonalView::group_k);
  }

  int64_t rows() const { return groups * window * group_c; }
  int64_t cols() const { return packed * group_k; }
  bool operator==(const BlockDiagonalView& other) const { return equal_fields(*this, other); }

  static ViewCheck check_shape(const ViewFit&) { return std::nullopt; }
  // Its fields positive, as the field list says.
  ViewCheck check_fit(const ViewFit& fit) const {
    if (groups % packed != 0)
      return ViewMismatch{ViewPart::options,
                          fmt::format("packed={} does not divide groups={}", packed, groups), ""};
    if (fit.source_rows != rows() || fit.source_cols != group_k)
      return ViewMismatch{
          ViewPart::source,
          fmt::format("source {} is {}x{}, but groups*window*group_c x group_k is {}x{}", fit.source_name,
                      fit.source_rows, fit.source_cols, rows(), group_k),
          "the source of a blockdiag view is a grouped conv's weights, one row per (group, tap)"};
    if (fit.rows != rows() || fit.cols != cols())
      return ViewMismatch{
          ViewPart::shape,
          fmt::format("the blockdiag view is {}x{} (groups*window*group_c x packed*group_k), not {}x{}",
                      rows(), cols(), fit.rows, fit.cols),
          ""};
    return std::nullopt;
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

// The runs of a region of the view, row by row: run(row of the region, offset in the row, source element,
// element count) as for_each_region_run of an im2col view.
template <class Run>
void for_each_region_run(const BlockDiagonalView& view, int64_t, int64_t row, int64_t rows, int64_t col,
                         int64_t cols, Run&& run) {
  for (int64_t r = 0; r < rows; ++r)
    for_each_block_diagonal_run(view, row + r, col, cols, [&](int64_t offset, int64_t source, int64_t count) {
      run(r, offset, source, count);
    });
}

}  // namespace tessera::arch
