#include "arch/topology.hpp"

#include "arch/noc.hpp"

#include <gtest/gtest.h>

namespace tessera::arch {

TEST(XyRoute, GoesAlongTheRowFirstThenTheColumn) {
  const MeshSpec mesh{4, 4};
  std::vector<int> links;
  append_xy_route(Coord{0, 0}, Coord{2, 3}, mesh, links);
  const std::vector<int> expected = {link_index(core_index({0, 0}, mesh), Direction::east),
                                     link_index(core_index({0, 1}, mesh), Direction::east),
                                     link_index(core_index({0, 2}, mesh), Direction::east),
                                     link_index(core_index({0, 3}, mesh), Direction::south),
                                     link_index(core_index({1, 3}, mesh), Direction::south)};
  EXPECT_EQ(links, expected);
  EXPECT_EQ(static_cast<int>(links.size()), hops(Coord{0, 0}, Coord{2, 3}));
}

TEST(XyRoute, ToItselfIsEmpty) {
  std::vector<int> links;
  append_xy_route(Coord{1, 1}, Coord{1, 1}, MeshSpec{3, 3}, links);
  EXPECT_TRUE(links.empty());
}

TEST(Perimeter, ListsEveryEdgeRouterOnceClockwise) {
  const auto routers = perimeter_routers(MeshSpec{3, 4});
  ASSERT_EQ(routers.size(), 10u);  // 2*(3+4) - 4
  EXPECT_EQ(routers.front(), (Coord{0, 0}));
  EXPECT_EQ(routers[3], (Coord{0, 3}));
  EXPECT_EQ(routers[5], (Coord{2, 3}));
  EXPECT_EQ(routers.back(), (Coord{1, 0}));
}

TEST(Perimeter, EachRouterInClosedFormIsTheWalksAroundTheEdge) {
  for (const MeshSpec mesh : {MeshSpec{1, 1}, MeshSpec{1, 5}, MeshSpec{4, 1}, MeshSpec{2, 2}, MeshSpec{3, 4},
                              MeshSpec{5, 3}, MeshSpec{8, 8}}) {
    // The walk: along the top row, down the east column, back along the bottom row, up the west column.
    std::vector<Coord> walk;
    if (mesh.rows == 1 || mesh.cols == 1) {
      for (int r = 0; r < mesh.rows; ++r)
        for (int c = 0; c < mesh.cols; ++c) walk.push_back(Coord{r, c});
    } else {
      for (int c = 0; c < mesh.cols; ++c) walk.push_back(Coord{0, c});
      for (int r = 1; r < mesh.rows; ++r) walk.push_back(Coord{r, mesh.cols - 1});
      for (int c = mesh.cols - 2; c >= 0; --c) walk.push_back(Coord{mesh.rows - 1, c});
      for (int r = mesh.rows - 2; r >= 1; --r) walk.push_back(Coord{r, 0});
    }
    ASSERT_EQ(perimeter_size(mesh), static_cast<int64_t>(walk.size())) << mesh.rows << "x" << mesh.cols;
    EXPECT_EQ(perimeter_routers(mesh), walk) << mesh.rows << "x" << mesh.cols;
  }
}

TEST(DramChannels, AverageHopsFollowTheMachineAskedAbout) {
  // Asking about another machine must not return the first one's (dram_round_trip_hops remembers the last).
  ArchSpec spec;
  spec.mesh = MeshSpec{4, 4};
  spec.dram.channels = 4;
  const double four = average_dram_hops(spec);
  spec.dram.channels = 1;  // one channel at (0, 0): the mean of r + c over a 4x4 mesh is 3
  EXPECT_DOUBLE_EQ(average_dram_hops(spec), 3.0);
  spec.dram.channels = 4;
  EXPECT_DOUBLE_EQ(average_dram_hops(spec), four);
  spec.mesh = MeshSpec{2, 2};
  spec.dram.channels = 1;  // the mean of r + c over a 2x2 mesh
  EXPECT_DOUBLE_EQ(average_dram_hops(spec), 1.0);
}

TEST(DramChannels, RoundTripHopsAreTheNetworksAndFollowTheMachineAskedAbout) {
  // Remembered per thread for the last network and geometry: asking about another must not return the
  // first's.
  ArchSpec spec;
  spec.mesh = MeshSpec{4, 4};
  spec.dram.channels = 4;
  const double four = dram_round_trip_hops(spec);
  EXPECT_DOUBLE_EQ(four, average_dram_hops(spec));  // the mesh's own answer
  spec.dram.channels = 1;
  EXPECT_DOUBLE_EQ(dram_round_trip_hops(spec), 3.0);
  spec.dram.channels = 4;
  EXPECT_DOUBLE_EQ(dram_round_trip_hops(spec), four);
  spec.mesh = MeshSpec{2, 2};
  spec.dram.channels = 1;
  EXPECT_DOUBLE_EQ(dram_round_trip_hops(spec), 1.0);
}

TEST(DramChannels, SpreadEvenlyAroundThePerimeter) {
  ArchSpec spec;
  spec.mesh = MeshSpec{4, 4};
  spec.dram.channels = 4;
  // 12 perimeter routers, 4 channels: every third router, starting at the top-left corner.
  EXPECT_EQ(dram_channel_router(0, spec), (Coord{0, 0}));
  EXPECT_EQ(dram_channel_router(1, spec), (Coord{0, 3}));
  EXPECT_EQ(dram_channel_router(2, spec), (Coord{3, 3}));
  EXPECT_EQ(dram_channel_router(3, spec), (Coord{3, 0}));
  spec.dram.placement = DramPlacement::west;
  EXPECT_EQ(dram_channel_router(3, spec), (Coord{3, 0}));
  EXPECT_EQ(dram_channel_router(1, spec), (Coord{1, 0}));
}

TEST(DramChannels, WithoutHashingInterleaveConsecutiveBlocks) {
  DramSpec dram;
  dram.channels = 8;
  dram.interleave_bytes = 256;
  dram.channel_hash = ChannelHash::none;
  EXPECT_EQ(dram_channel_of(0, dram), 0);
  EXPECT_EQ(dram_channel_of(255, dram), 0);
  EXPECT_EQ(dram_channel_of(256, dram), 1);
  EXPECT_EQ(dram_channel_of(256 * 8, dram), 0);
  // A power-of-two row stride camps on one channel: the pathology hashing exists for.
  for (int row = 0; row < 8; ++row) EXPECT_EQ(dram_channel_of(row * 8192, dram), 0);
}

TEST(DramChannels, XorHashingSpreadsPowerOfTwoStridesOverEveryChannel) {
  DramSpec dram;
  dram.channels = 8;
  dram.interleave_bytes = 256;
  // Within an aligned group of 8 blocks, still one block per channel.
  std::vector<int> first_group, strided;
  for (int block = 0; block < 8; ++block) first_group.push_back(dram_channel_of(block * 256, dram));
  EXPECT_EQ(first_group, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(dram_channel_of(256 * 8, dram), 1);  // block 8 = 0b001'000 folds to 1
  // Eight rows 8 KiB apart (a bf16 tile of a 4096-wide matrix) land on eight different channels.
  for (int row = 0; row < 8; ++row) strided.push_back(dram_channel_of(row * 8192, dram));
  EXPECT_EQ(strided, (std::vector<int>{0, 4, 1, 5, 2, 6, 3, 7}));
}

TEST(DramChannels, TheSimulatorsTableGivesTheSameChannelAsTheDefinition) {
  // Every channel count from 1 to 40 (powers of two and not, slices of 1 to 6 bits), with and without
  // hashing, over addresses small and large (pseudo-random, high bits included).
  uint64_t state = 0x9e3779b97f4a7c15ull;
  for (int channels = 1; channels <= 40; ++channels) {
    for (ChannelHash hash : {ChannelHash::xor_fold, ChannelHash::none}) {
      DramSpec dram;
      dram.channels = channels;
      // Powers of two (shifted) and, as a DramSpec built in memory may hold, not (divided).
      dram.interleave_bytes = channels % 3 == 0 ? 64 : channels % 5 == 0 ? 96 : 256;
      dram.channel_hash = hash;
      const DramChannelMap map(dram);
      for (int i = 0; i < 2000; ++i) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        const uint64_t address = i < 1000 ? static_cast<uint64_t>(i) * 256 : state >> (i % 64);
        ASSERT_EQ(map.of(address), dram_channel_of(address, dram)) << channels << " channels, " << address;
      }
    }
  }
}

}  // namespace tessera::arch
