// Views: tensors of a program with no DRAM of their own, whose elements a DMA load gathers from a source
// tensor (docs/tile-program.md, "Views"). Each kind is a file of views/ (its struct and field list, its
// shape, its runs, its checks against the source); the table below is the one list of them, which the text
// reader and writer, comparison, the binary form, the checker and the simulator's DMA engines walk
// (docs/extending.md, "A tensor view").
#pragma once

#include <variant>

#include "arch/isa/views/block_diagonal.hpp"
#include "arch/isa/views/im2col.hpp"
#include "arch/isa/views/row_gather.hpp"

namespace tessera::arch {

using View = std::variant<  // the views table
    Im2colView,             //
    BlockDiagonalView,      //
    RowGatherView>;

// The tensor a view reads.
inline int source_of(const View& view) {
  return std::visit([](const auto& kind) { return kind.source; }, view);
}

// The runs of a region [row, row + rows) x [col, col + cols) of a view over `view_cols` columns, each view's
// own: run(row of the region, offset in the row, source element or -1 for zeros, element count).
template <class Run>
void for_each_view_run(const View& view, int64_t view_cols, int64_t row, int64_t rows, int64_t col,
                       int64_t cols, Run&& run) {
  std::visit([&](const auto& kind) { for_each_region_run(kind, view_cols, row, rows, col, cols, run); },
             view);
}

}  // namespace tessera::arch
