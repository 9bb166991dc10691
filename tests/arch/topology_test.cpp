#include "arch/topology.hpp"

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

TEST(DramChannels, InterleaveConsecutiveBlocks) {
  DramSpec dram;
  dram.channels = 8;
  dram.interleave_bytes = 256;
  EXPECT_EQ(dram_channel_of(0, dram), 0);
  EXPECT_EQ(dram_channel_of(255, dram), 0);
  EXPECT_EQ(dram_channel_of(256, dram), 1);
  EXPECT_EQ(dram_channel_of(256 * 8, dram), 0);
}

}  // namespace tessera::arch
