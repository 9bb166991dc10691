#include "arch/topology.hpp"

#include <algorithm>

namespace tessera::arch {

void append_xy_route(const Coord& from, const Coord& to, const MeshSpec& mesh, std::vector<int>& links) {
  Coord at = from;
  while (at.col != to.col) {
    const Direction direction = to.col > at.col ? Direction::east : Direction::west;
    links.push_back(link_index(core_index(at, mesh), direction));
    at.col += direction == Direction::east ? 1 : -1;
  }
  while (at.row != to.row) {
    const Direction direction = to.row > at.row ? Direction::south : Direction::north;
    links.push_back(link_index(core_index(at, mesh), direction));
    at.row += direction == Direction::south ? 1 : -1;
  }
}

int64_t perimeter_size(const MeshSpec& mesh) {
  if (mesh.rows == 1 || mesh.cols == 1) return int64_t{mesh.rows} * mesh.cols;
  return 2 * int64_t{mesh.rows} + 2 * int64_t{mesh.cols} - 4;
}

Coord perimeter_router(const MeshSpec& mesh, int64_t index) {
  if (mesh.rows == 1 || mesh.cols == 1)
    return Coord{static_cast<int>(index / mesh.cols), static_cast<int>(index % mesh.cols)};
  const int64_t rows = mesh.rows, cols = mesh.cols;
  if (index < cols) return Coord{0, static_cast<int>(index)};  // the top row, west to east
  index -= cols;
  if (index < rows - 1) return Coord{static_cast<int>(1 + index), mesh.cols - 1};  // east column, down
  index -= rows - 1;
  if (index < cols - 1) return Coord{mesh.rows - 1, static_cast<int>(cols - 2 - index)};  // bottom, west
  index -= cols - 1;
  return Coord{static_cast<int>(rows - 2 - index), 0};  // the west column, up
}

std::vector<Coord> perimeter_routers(const MeshSpec& mesh) {
  std::vector<Coord> routers;
  const int64_t size = perimeter_size(mesh);
  routers.reserve(static_cast<size_t>(size));
  for (int64_t i = 0; i < size; ++i) routers.push_back(perimeter_router(mesh, i));
  return routers;
}

int dram_channel_of(uint64_t address, const DramSpec& dram) {
  uint64_t block = address / static_cast<uint64_t>(dram.interleave_bytes);
  const auto channels = static_cast<uint64_t>(dram.channels);
  if (dram.channel_hash == ChannelHash::xor_fold && channels > 1) {
    int bits = 0;
    while ((uint64_t{1} << bits) < channels) ++bits;
    uint64_t folded = 0;
    for (; block != 0; block >>= bits) folded ^= block & ((uint64_t{1} << bits) - 1);
    block = folded;
  }
  return static_cast<int>(block % channels);
}

DramChannelMap::DramChannelMap(const DramSpec& dram)
    : interleave_(static_cast<uint64_t>(dram.interleave_bytes)),
      channels_(static_cast<uint64_t>(dram.channels)) {
  if ((interleave_ & (interleave_ - 1)) == 0)
    while ((uint64_t{1} << interleave_shift_) < interleave_) ++interleave_shift_;
  else
    interleave_shift_ = -1;
  if ((channels_ & (channels_ - 1)) == 0) channel_mask_ = channels_ - 1;
  if (dram.channel_hash != ChannelHash::xor_fold || channels_ <= 1) return;
  int bits = 0;
  while ((uint64_t{1} << bits) < channels_) ++bits;
  chunk_bits_ = bits * std::max(1, 12 / bits);
  chunk_mask_ = (uint64_t{1} << chunk_bits_) - 1;
  fold_.resize(static_cast<size_t>(chunk_mask_) + 1);
  for (uint64_t chunk = 0; chunk <= chunk_mask_; ++chunk) {
    uint64_t folded = 0;
    for (uint64_t rest = chunk; rest != 0; rest >>= bits) folded ^= rest & ((uint64_t{1} << bits) - 1);
    fold_[chunk] = folded % channels_;
  }
}

Coord dram_channel_router(int channel, const ArchSpec& spec) {
  if (spec.dram.placement == DramPlacement::west) {
    return Coord{static_cast<int>(static_cast<int64_t>(channel) * spec.mesh.rows / spec.dram.channels), 0};
  }
  return perimeter_router(spec.mesh,
                          static_cast<int64_t>(channel) * perimeter_size(spec.mesh) / spec.dram.channels);
}

double average_dram_hops(const ArchSpec& spec) {
  double hops_sum = 0;
  for (int channel = 0; channel < spec.dram.channels; ++channel) {
    const Coord router = dram_channel_router(channel, spec);
    for (int core = 0; core < spec.mesh.cores(); ++core)
      hops_sum += hops(router, core_coord(core, spec.mesh));
  }
  return hops_sum / (static_cast<double>(spec.dram.channels) * spec.mesh.cores());
}

}  // namespace tessera::arch
