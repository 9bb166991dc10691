// A core's walk through a contraction stage's tiles, as the lowering (lowering.cpp) follows it: the core's
// place in the logical (m, n, k) grid of cores, its iterations in the mapping's loop order, the runs of them
// over which it keeps one tile of an operand, and its instructions put in the order of the iterations they
// belong to.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "arch/isa/program.hpp"
#include "mapper/contraction/stage.hpp"
#include "mapper/kit/tiling.hpp"
#include "mapper/mapping.hpp"

namespace tessera::mapper {

// A core's place in the logical (m, n, k) grid of cores and its tile ranges.
struct CorePlace {
  int im = 0, in = 0, ik = 0;
  int index = 0;  // core index in the mesh
  std::vector<TileIteration> iterations;
};

// The mesh index of the core at (im, in, ik) of the grid.
int logical_to_core(int im, int in, int ik, const Mapping& mapping);

// A core's iterations: each group in turn (the outermost loop), its tiles in the mapping's loop order.
std::vector<TileIteration> iterations_of(const Mapping& mapping, const DimPartition (&parts)[3],
                                         const int (&place)[3], int64_t groups);

// One run of consecutive iterations over which a core keeps the same tile of an operand.
struct Residency {
  int64_t key_a = 0, key_b = 0;  // the tile (rows tile, cols tile)
  int64_t group = 0;
  size_t first = 0, last = 0;  // iterations
};

// The runs of `iterations` over which the tile of `tensor` (kA, kW or kO) stays the same.
std::vector<Residency> residencies(const std::vector<TileIteration>& iterations, int tensor);

// An instruction with the key that orders it among its core's instructions (the iteration it belongs to).
struct Keyed {
  double key;  // ties: creation order
  arch::Instruction instruction;
};

// The instructions of `keyed` sorted by key, ties in creation order (the list's); `keyed` is left empty.
std::vector<arch::Instruction> in_key_order(std::vector<Keyed>& keyed);

}  // namespace tessera::mapper
