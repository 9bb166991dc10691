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

std::vector<Coord> perimeter_routers(const MeshSpec& mesh) {
  std::vector<Coord> routers;
  if (mesh.rows == 1 || mesh.cols == 1) {
    for (int r = 0; r < mesh.rows; ++r)
      for (int c = 0; c < mesh.cols; ++c) routers.push_back(Coord{r, c});
    return routers;
  }
  for (int c = 0; c < mesh.cols; ++c) routers.push_back(Coord{0, c});
  for (int r = 1; r < mesh.rows; ++r) routers.push_back(Coord{r, mesh.cols - 1});
  for (int c = mesh.cols - 2; c >= 0; --c) routers.push_back(Coord{mesh.rows - 1, c});
  for (int r = mesh.rows - 2; r >= 1; --r) routers.push_back(Coord{r, 0});
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
  if (dram.channel_hash != ChannelHash::xor_fold || channels_ <= 1) return;
  int bits = 0;
  while ((uint64_t{1} << bits) < channels_) ++bits;
  chunk_bits_ = bits * std::max(1, 12 / bits);
  chunk_mask_ = (uint64_t{1} << chunk_bits_) - 1;
  fold_.resize(static_cast<size_t>(chunk_mask_) + 1);
  for (uint64_t chunk = 0; chunk <= chunk_mask_; ++chunk) {
    uint64_t folded = 0;
    for (uint64_t rest = chunk; rest != 0; rest >>= bits) folded ^= rest & ((uint64_t{1} << bits) - 1);
    fold_[chunk] = folded;
  }
}

Coord dram_channel_router(int channel, const ArchSpec& spec) {
  if (spec.dram.placement == DramPlacement::west) {
    return Coord{static_cast<int>(static_cast<int64_t>(channel) * spec.mesh.rows / spec.dram.channels), 0};
  }
  const std::vector<Coord> perimeter = perimeter_routers(spec.mesh);
  const auto slot = static_cast<size_t>(static_cast<int64_t>(channel) *
                                        static_cast<int64_t>(perimeter.size()) / spec.dram.channels);
  return perimeter[slot];
}

double average_dram_hops(const ArchSpec& spec) {
  double hops_sum = 0;
  for (int channel = 0; channel < spec.dram.channels; ++channel)
    for (int core = 0; core < spec.mesh.cores(); ++core)
      hops_sum += hops(dram_channel_router(channel, spec), core_coord(core, spec.mesh));
  return hops_sum / (spec.dram.channels * spec.mesh.cores());
}

}  // namespace tessera::arch
