// The im2col view (docs/tile-program.md, "Views"): `view im2col <source> n= h= w= c= r= s= stride= pad=
// dilation= groups=`.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "arch/isa/fields.hpp"
#include "arch/isa/views/fit.hpp"

namespace tessera::arch {

// The im2col view of an NHWC input tensor: a virtual matrix with a row per output pixel (image, p, q) and a
// column per (group, filter row, filter column, channel of the group), the GEMM operand A of a convolution.
// It occupies no DRAM: a DMA load of a view region gathers the elements from the source tensor, row by row in
// contiguous runs, and writes zeros where a tap falls in the padding.
struct Im2colView {
  static constexpr const char* kKeyword = "im2col";
  static constexpr const char* kNoun = "an im2col view";
  static constexpr const char* kSummary = "the patches of an NHWC input as GEMM rows";
  static constexpr bool kReadsOutputs = false;  // its source is a generated input

  int source = 0;  // index into Program::tensors: an input tensor [n*h*w, c]
  int64_t n = 1, h = 0, w = 0, c = 0, r = 0, s = 0;
  int64_t stride = 1, pad = 0, dilation = 1, groups = 1;

  template <class Visit>
  static void fields(Visit&& visit) {
    visit("source", &Im2colView::source);
    visit("n", &Im2colView::n), visit("h", &Im2colView::h), visit("w", &Im2colView::w);
    visit("c", &Im2colView::c), visit("r", &Im2colView::r), visit("s", &Im2colView::s);
    visit("stride", &Im2colView::stride), visit("pad", &Im2colView::pad, FieldText::non_negative);
    visit("dilation", &Im2colView::dilation), visit("groups", &Im2colView::groups);
  }

  int64_t p() const { return (h + 2 * pad - dilation * (r - 1) - 1) / stride + 1; }
  int64_t q() const { return (w + 2 * pad - dilation * (s - 1) - 1) / stride + 1; }
  int64_t group_c() const { return c / groups; }
  int64_t taps() const { return r * s * group_c(); }  // columns per group
  int64_t rows() const { return n * p() * q(); }
  int64_t cols() const { return groups * taps(); }
  bool operator==(const Im2colView& other) const { return equal_fields(*this, other); }

  static ViewCheck check_shape(const ViewFit&) { return std::nullopt; }
  // Its fields positive (pad non-negative), as the field list says.
  ViewCheck check_fit(const ViewFit& fit) const {
    if (fit.source_rows != n * h * w || fit.source_cols != c)
      return ViewMismatch{ViewPart::source,
                          fmt::format("source {} is {}x{}, but n*h*w x c is {}x{}", fit.source_name,
                                      fit.source_rows, fit.source_cols, n * h * w, c),
                          "the source of an im2col view is the NHWC input, one row per pixel"};
    if (c % groups != 0)
      return ViewMismatch{ViewPart::options, fmt::format("c={} is not a multiple of groups={}", c, groups),
                          ""};
    if (dilation * (r - 1) + 1 > h + 2 * pad || dilation * (s - 1) + 1 > w + 2 * pad)
      return ViewMismatch{ViewPart::options, "the filter is larger than the padded input", ""};
    if (fit.rows != rows() || fit.cols != cols())
      return ViewMismatch{ViewPart::shape,
                          fmt::format("the im2col view is {}x{} (n*p*q x groups*r*s*c/groups), not {}x{}",
                                      rows(), cols(), fit.rows, fit.cols),
                          ""};
    return std::nullopt;
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

// The runs of a region of the view, [row, row + rows) x [col, col + cols): run(row of the region, offset in
// the row, source element or -1 for zeros, element count), row by row. `view_cols` is unused (a row
// gather's).
template <class Run>
void for_each_region_run(const Im2colView& view, int64_t, int64_t row, int64_t rows, int64_t col,
                         int64_t cols, Run&& run) {
  for (int64_t r = 0; r < rows; ++r)
    for_each_im2col_run(view, row + r, col, cols, [&](int64_t offset, int64_t source, int64_t count) {
      run(r, offset, source, count);
    });
}

}  // namespace tessera::arch
