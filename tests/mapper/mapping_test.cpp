#include "mapper/mapping.hpp"
#include "mapper/contraction/gemm_stage.hpp"
#include "mapper/kit/tiling.hpp"

#include <gtest/gtest.h>

namespace tessera::mapper {

TEST(Mapping, DescribesItselfCompactly) {
  Mapping mapping;
  GemmProblem problem;
  problem.m = 1024, problem.n = 256, problem.k = 64;
  mapping.form = std::make_shared<const GemmStage>(problem);
  mapping.dataflow = arch::Dataflow::os;
  mapping.split_m = 4;
  mapping.split_n = 2;
  mapping.tile_m = 256;
  mapping.tile_n = 128;
  mapping.tile_k = 64;
  mapping.order = {Dim::n, Dim::m, Dim::k};
  mapping.double_buffer_output = false;
  EXPECT_EQ(mapping.describe(), "os cores 4x2x1 tile 256x128x64 nmk db=i");
}

namespace {

// classes_of by walking every part: what its closed form must equal.
Classes classes_by_walk(const DimPartition& partition) {
  Classes classes;
  for (int part = 0; part < partition.parts; ++part) {
    const int64_t count = partition.tile_count(part);
    int slot = 0;
    while (slot < classes.size && classes.entries[slot].count != count) ++slot;
    if (slot == classes.size) classes.entries[classes.size++] = CountClass{count, 0, 0};
    classes.entries[slot].parts += 1;
    classes.entries[slot].extent_sum += partition.part_extent(part);
  }
  return classes;
}

}  // namespace

TEST(Tiling, CountClassesInClosedFormAreTheWalksOverEveryPart) {
  for (int64_t extent = 1; extent <= 130; ++extent)
    for (int64_t tile = 1; tile <= 40; ++tile)
      for (int parts = 1; parts <= 17; ++parts) {
        const DimPartition partition(extent, tile, parts);
        const Classes closed = classes_of(partition), walked = classes_by_walk(partition);
        ASSERT_EQ(closed.size, walked.size) << extent << " " << tile << " " << parts;
        for (int i = 0; i < closed.size; ++i) {
          EXPECT_EQ(closed.entries[i].count, walked.entries[i].count)
              << extent << " " << tile << " " << parts;
          EXPECT_EQ(closed.entries[i].parts, walked.entries[i].parts)
              << extent << " " << tile << " " << parts;
          EXPECT_EQ(closed.entries[i].extent_sum, walked.entries[i].extent_sum)
              << extent << " " << tile << " " << parts;
        }
      }
}

}  // namespace tessera::mapper
