// How a contraction's three loops (m, n, k) are cut into tiles and dealt to cores, and how often a core
// reloads a tile: the arithmetic the mapspace, the plan, the cost model and the lowering share.
#pragma once

#include <array>
#include <cstdint>

namespace tessera::mapper {

enum class Dim : uint8_t { m = 0, n = 1, k = 2 };
const char* name_of(Dim dim);

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

// The parts of a DimPartition grouped by how many tiles they hold (at most two counts: q and q + 1).
struct CountClass {
  int64_t count = 0;
  int parts = 0;
  int64_t extent_sum = 0;  // elements, summed over the parts of this class
};
struct Classes {
  CountClass entries[2];
  int size = 0;
};

// Inline, as reload_factor: the cost model calls them for every candidate of the mapspace. In closed form:
// with T tiles over P parts, part p's run starts at floor(T p / P), so part 0 holds q = floor(T / P) tiles,
// the T mod P parts that hold q + 1 follow, and the last part always holds ceil(T / P) tiles, the last
// (ragged) one among them.
inline Classes classes_of(const DimPartition& partition) {
  Classes classes;
  const int64_t tiles = partition.tiles(), parts = partition.parts;
  const int64_t q = tiles / parts, r = tiles % parts;
  // Elements short of whole tiles: the last tile's.
  const int64_t short_by = tiles * partition.tile - partition.extent;
  classes.entries[0] = CountClass{q, static_cast<int>(parts - r), q * partition.tile * (parts - r)};
  classes.size = 1;
  if (r > 0) {
    classes.entries[1] = CountClass{q + 1, static_cast<int>(r), (q + 1) * partition.tile * r};
    classes.size = 2;
  }
  classes.entries[classes.size - 1].extent_sum -= short_by;
  return classes;
}

// How often a tile that depends on `dims` is (re)loaded per distinct tile, for a core whose tile loops run
// `trips` times along m, n, k in `order`: the product of the trip counts of the loops it does not depend on
// that sit outside its innermost loop (loops of one trip do not count).
inline int64_t reload_factor(const std::array<int64_t, 3>& trips, const std::array<Dim, 3>& order,
                             bool depends_m, bool depends_n, bool depends_k) {
  auto depends = [&](Dim dim) { return dim == Dim::m ? depends_m : dim == Dim::n ? depends_n : depends_k; };
  int innermost = -1;
  for (int level = 0; level < 3; ++level)
    if (trips[static_cast<int>(order[level])] > 1 && depends(order[level])) innermost = level;
  int64_t factor = 1;
  for (int level = 0; level < innermost; ++level) {
    const Dim dim = order[level];
    if (!depends(dim)) factor *= trips[static_cast<int>(dim)];
  }
  return factor;
}

// Which loop nest `order` makes of tile loops running `trips` times along m, n, k: the order of the loops of
// more than one trip, as a number (loops of one trip may sit anywhere: reload_factor skips them). Two orders
// of the same key visit the same tiles in the same sequence.
inline int loop_nest_key(const std::array<int64_t, 3>& trips, const std::array<Dim, 3>& order) {
  int key = 0;
  for (const Dim dim : order)
    if (trips[static_cast<int>(dim)] > 1) key = key * 4 + static_cast<int>(dim) + 1;
  return key;
}

}  // namespace tessera::mapper
