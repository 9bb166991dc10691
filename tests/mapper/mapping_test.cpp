#include "mapper/mapping.hpp"
#include "mapper/tiling.hpp"

#include <gtest/gtest.h>

namespace tessera::mapper {

TEST(Mapping, DescribesItselfCompactly) {
  Mapping mapping;
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
