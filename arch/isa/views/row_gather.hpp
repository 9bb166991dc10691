// The row-gather view (docs/tile-program.md, "Views"): `view gather <source> rows=<list>`.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <vector>

#include "arch/isa/fields.hpp"
#include "arch/isa/integer_list.hpp"
#include "arch/isa/views/fit.hpp"

namespace tessera::arch {

// Rows of a source tensor picked by a list that the program states: view row r is source row rows[r], or a
// row of zeros where rows[r] == kZeroRow. The view has the source's columns. An MoE layer's permutation
// gathers the rows of X routed to an expert, and its combine gathers, per token, the expert-output rows of
// its routes (a dropped route: a zero row); the routing is decided when the program is written, so the lists
// are static. The source may be an output written earlier in the program (ordering is then the program's
// semaphores' business, as for any DRAM read after write). Zeros cost no DRAM traffic.
struct RowGatherView {
  static constexpr const char* kKeyword = "gather";
  static constexpr const char* kNoun = "a gather view";
  static constexpr const char* kSummary = "rows of a tensor picked by a list";
  static constexpr bool kReadsOutputs = true;  // an output written earlier in the program, or an input
  static constexpr int64_t kZeroRow = -1;

  int source = 0;             // index into Program::tensors: an input or an output declared earlier
  std::vector<int64_t> rows;  // per view row: a row of the source, or kZeroRow

  template <class Visit>
  static void fields(Visit&& visit) {
    visit("source", &RowGatherView::source), visit("rows", &RowGatherView::rows);
  }

  bool operator==(const RowGatherView& other) const { return equal_fields(*this, other); }

  // Before the list is read: the view's columns are its source's, and its rows are few enough to list.
  static ViewCheck check_shape(const ViewFit& fit) {
    if (fit.source_cols != fit.cols)
      return ViewMismatch{ViewPart::source,
                          fmt::format("the gather view has {} columns, but its source {} has {}", fit.cols,
                                      fit.source_name, fit.source_cols),
                          "a gather view's rows are whole rows of its source"};
    if (fit.rows > kMaxListedElements)
      return ViewMismatch{
          ViewPart::shape,
          fmt::format("a gather view lists at most {} rows, not {}", kMaxListedElements, fit.rows),
          "split the gather into several views"};
    return std::nullopt;
  }
  // What the text reader's list rule (list_rule) guarantees, for a view built in memory.
  ViewCheck check_fit(const ViewFit& fit) const {
    if (static_cast<int64_t>(rows.size()) != fit.rows)
      return ViewMismatch{
          ViewPart::options,
          fmt::format("the gather view ({} rows listed) does not fit its source {} or its {}x{} "
                      "shape (at most {} rows)",
                      rows.size(), fit.source_name, fit.rows, fit.cols, kMaxListedElements),
          ""};
    for (size_t row = 0; row < rows.size(); ++row)
      if (rows[row] < kZeroRow || rows[row] >= fit.source_rows)
        return ViewMismatch{ViewPart::options,
                            fmt::format("view row {} is source row {}, outside -1..{} (source {})", row,
                                        rows[row], fit.source_rows - 1, fit.source_name),
                            ""};
    return std::nullopt;
  }
  // What `rows=` lists: one source row, or -1 for zeros, per view row.
  static IntegerListRule list_rule(const ViewFit& fit) {
    IntegerListRule rule;
    rule.key = "rows";
    rule.item = "row";
    rule.noun = "rows";
    rule.count = fit.rows;
    rule.minimum = kZeroRow;
    rule.maximum = fit.source_rows - 1;
    rule.range_hint =
        fmt::format("rows of {} are 0..{}; -1 is a row of zeros", fit.source_name, fit.source_rows - 1);
    rule.count_hint = "one source row (or -1) per row of the view";
    return rule;
  }
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

// The runs of a region of the view over `view_cols` columns (its source's): run(row of the region, offset in
// the row, source element or -1 for zeros, element count) as for_each_region_run of an im2col view, where a
// run of consecutive whole source rows spans them all (for_each_row_gather_region_run).
template <class Run>
void for_each_region_run(const RowGatherView& view, int64_t view_cols, int64_t row, int64_t rows, int64_t col,
                         int64_t cols, Run&& run) {
  for_each_row_gather_region_run(
      view, view_cols, row, rows, col, cols,
      [&](int64_t first, int64_t, int64_t source, int64_t count) { run(first, int64_t{0}, source, count); });
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
