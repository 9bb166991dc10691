// The mapspace of a contraction stage on a machine (DESIGN.md, "Dataflows"): per dataflow, every split of the
// work over the mesh, every SRAM tile from a ladder of array-aligned sizes (plus the whole per-core extent,
// so ragged shapes are tiled natively), every loop order, and the deepest buffering that fits.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "arch/spec.hpp"
#include "mapper/contraction/stage.hpp"
#include "mapper/mapping.hpp"

namespace tessera::mapper {

struct Split {
  int m = 1, n = 1, k = 1;
};

// Ordered (m, n, k) core counts whose product divides the core count (using all cores, half of them, ...).
std::vector<Split> splits_of(int cores);

// Tile sizes to try for a dimension of `extent` dealt to `parts` cores, aligned to `granule`: granule * 2^i
// below the per-core extent, and the per-core extent itself.
std::vector<int64_t> tile_ladder(int64_t extent, int parts, int64_t granule);

// The epilogue a search's mappings carry: `work` fused on each output tile, or unfused as `pass` (a mapping
// of its vector stage) after the barrier; none without work.
struct EpilogueSearch {
  std::shared_ptr<const EpilogueWork> work;
  Fusion fusion = Fusion::none;
  std::shared_ptr<const Mapping> pass;
};

// Calls visit(mapping) for every legal mapping of `dataflow`, in a fixed order; `split_filter(index)` selects
// which splits this caller enumerates (threads take every Nth). Returns the number of legal mappings. With a
// fused `epilogue`, the mappings run it on each output tile: their SRAM holds its buffers, each output tile
// is finished once (no loop order that revisits one), and the vector unit can take a tile; with an unfused
// one they carry it and its pass.
int64_t enumerate_mappings(const std::shared_ptr<const ContractionStage>& stage, const arch::ArchSpec& spec,
                           arch::Dataflow dataflow,
                           const std::function<bool(size_t split_index)>& split_filter,
                           const std::function<void(const Mapping&, size_t split_index)>& visit,
                           const EpilogueSearch& epilogue = {});

// Why no mapping of `dataflow` is legal: the stage's obstacle, or the constraint that kills the smallest
// tile.
Infeasibility why_infeasible(const std::shared_ptr<const ContractionStage>& stage, const arch::ArchSpec& spec,
                             arch::Dataflow dataflow);

}  // namespace tessera::mapper
