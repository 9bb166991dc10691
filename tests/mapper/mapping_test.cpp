#include "mapper/mapping.hpp"

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

}  // namespace tessera::mapper
