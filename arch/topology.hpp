// Geometry of the mesh: core coordinates, XY routes over directed links, where DRAM channels attach. Shared
// by the simulator (which books the links) and the mapper (which estimates their load).
#pragma once

#include <cstdint>
#include <vector>

#include "arch/spec.hpp"

namespace tessera::arch {

struct Coord {
  int row = 0;
  int col = 0;
  bool operator==(const Coord& other) const { return row == other.row && col == other.col; }
  bool operator!=(const Coord& other) const { return !(*this == other); }
  bool operator<(const Coord& other) const { return row != other.row ? row < other.row : col < other.col; }
};

enum class Direction : uint8_t { north = 0, south = 1, east = 2, west = 3 };
constexpr int kDirections = 4;

inline int core_index(const Coord& coord, const MeshSpec& mesh) {
  return coord.row * mesh.cols + coord.col;
}
inline Coord core_coord(int index, const MeshSpec& mesh) {
  return Coord{index / mesh.cols, index % mesh.cols};
}
inline int hops(const Coord& a, const Coord& b) {
  return (a.row > b.row ? a.row - b.row : b.row - a.row) + (a.col > b.col ? a.col - b.col : b.col - a.col);
}

// A directed link leaving router `router` in `direction`; links are numbered router * 4 + direction.
inline int link_index(int router, Direction direction) {
  return router * kDirections + static_cast<int>(direction);
}

// Appends the links of the XY route from `from` to `to`: along the row to the destination column first, then
// along the column (deadlock-free dimension-order routing).
void append_xy_route(const Coord& from, const Coord& to, const MeshSpec& mesh, std::vector<int>& links);

// The routers on the mesh's edge, clockwise from (0,0) along the top row (a mesh of one row or one column:
// every router, in order). perimeter_router(mesh, i) is the i-th of them in O(1), for
// 0 <= i < perimeter_size(mesh).
std::vector<Coord> perimeter_routers(const MeshSpec& mesh);
int64_t perimeter_size(const MeshSpec& mesh);
Coord perimeter_router(const MeshSpec& mesh, int64_t index);

// The router DRAM channel `channel` is attached to: channels are spread evenly along the perimeter
// (placement: perimeter) or down the west edge (placement: west).
Coord dram_channel_router(int channel, const ArchSpec& spec);

// The mean XY distance in hops from a DRAM channel's router to a core, over every channel and core: what the
// cost model's estimates of a load's round trip count (the mesh's answer to NocModel::average_dram_hops,
// which arch/noc.hpp's dram_round_trip_hops remembers per thread).
double average_dram_hops(const ArchSpec& spec);

// The channel serving `address`: its interleave block, XOR-folded (channel_hash: xor) in slices of
// ceil(log2(channels)) bits, modulo the channel count.
int dram_channel_of(uint64_t address, const DramSpec& dram);

// dram_channel_of at the cost of a few table lookups, for the simulator's per-burst use: XOR-folding is
// linear in the address's bit slices, so the fold of a block is the fold of the XOR of its 12-bit (a whole
// number of slices) chunks, which a table gives.
class DramChannelMap {
 public:
  explicit DramChannelMap(const DramSpec& dram);
  int of(uint64_t address) const {
    // Shifts and masks where the interleave and the channel count are powers of two (the interleave always
    // is on a machine read from YAML): two 64-bit divisions a burst otherwise.
    uint64_t block = interleave_shift_ >= 0 ? address >> interleave_shift_ : address / interleave_;
    if (fold_.empty())
      return static_cast<int>(channel_mask_ != 0 ? block & channel_mask_ : block % channels_);
    uint64_t chunks = 0;
    for (; block != 0; block >>= chunk_bits_) chunks ^= block & chunk_mask_;
    return static_cast<int>(fold_[chunks]);
  }

 private:
  uint64_t interleave_ = 1;
  int interleave_shift_ = 0;  // log2(interleave_), or -1 when it is not a power of two
  uint64_t channels_ = 1;
  uint64_t channel_mask_ = 0;  // channels_ - 1 when a power of two above 1, else 0
  int chunk_bits_ = 0;
  uint64_t chunk_mask_ = 0;
  // Per chunk value: its slices XOR-folded, modulo channels_ (empty: no hashing).
  std::vector<uint64_t> fold_;
};

}  // namespace tessera::arch
