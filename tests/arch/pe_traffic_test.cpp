// A PE instruction's SRAM traffic (arch/timing/pe_traffic.hpp), which the simulator books and the cost model
// charges: an instruction that adds to partial sums already in its output tile reads that tile exactly once
// more (o_bytes), whatever the dataflow and shape; the cost model charges the difference per accumulating
// instruction from o_bytes alone.
#include <gtest/gtest.h>

#include "arch/spec.hpp"
#include "arch/timing/pe_traffic.hpp"
#include "common/config.hpp"

namespace tessera::arch {
namespace {

TEST(PeTraffic, AccumulatingReadsTheOutputTileOnceMoreAndNothingElse) {
  for (const Dataflow dataflow : {Dataflow::ws, Dataflow::os, Dataflow::is})
    for (const auto& [m, n, k] : {std::tuple{40, 24, 300}, {128, 128, 128}, {7, 300, 33}}) {
      const PeSramTraffic fresh = pe_sram_traffic(dataflow, DType::bf16, DType::fp32, m, n, k, false, 32, 16);
      const PeSramTraffic adding = pe_sram_traffic(dataflow, DType::bf16, DType::fp32, m, n, k, true, 32, 16);
      EXPECT_EQ(fresh.o_bytes, m * n * 4);
      EXPECT_EQ(adding.read_bytes, fresh.read_bytes + fresh.o_bytes) << name_of(dataflow) << " " << m;
      EXPECT_EQ(adding.write_bytes, fresh.write_bytes);
      EXPECT_EQ(adding.o_reads, fresh.o_reads + 1);
    }
  const ArchSpec eyeriss =
      arch_from_yaml(config::load_file(std::string(TESSERA_SOURCE_DIR) + "/configs/arch/eyeriss.yaml"));
  for (const Dataflow dataflow : {Dataflow::rs, Dataflow::ws}) {
    // e rows of q pixels, m filters, c channels, r x s taps, the ih x iw input tile.
    const ConvTileShape shape{13, 13, 36, 8, 3, 3, 15, 15};
    const PeSramTraffic fresh = conv_sram_traffic(dataflow, DType::bf16, DType::fp32, shape, false, eyeriss);
    const PeSramTraffic adding = conv_sram_traffic(dataflow, DType::bf16, DType::fp32, shape, true, eyeriss);
    EXPECT_EQ(fresh.o_bytes, 13 * 13 * 36 * 4) << name_of(dataflow);
    EXPECT_EQ(adding.read_bytes, fresh.read_bytes + fresh.o_bytes) << name_of(dataflow);
    EXPECT_EQ(adding.write_bytes, fresh.write_bytes) << name_of(dataflow);
  }
}

// 16-bit partial sums (psum=fp16) move half the output tile's bytes in every write and read-back, and the
// operands' traffic is the same.
TEST(PeTraffic, SixteenBitPartialSumsMoveHalfTheOutputTilesBytes) {
  for (const Dataflow dataflow : {Dataflow::ws, Dataflow::os, Dataflow::is}) {
    const PeSramTraffic wide = pe_sram_traffic(dataflow, DType::bf16, DType::fp32, 96, 80, 200, true, 32, 16);
    const PeSramTraffic narrow =
        pe_sram_traffic(dataflow, DType::bf16, DType::fp16, 96, 80, 200, true, 32, 16);
    EXPECT_EQ(narrow.o_bytes * 2, wide.o_bytes);
    EXPECT_EQ(narrow.write_bytes * 2, wide.write_bytes) << name_of(dataflow);
    EXPECT_EQ(wide.read_bytes - narrow.read_bytes, narrow.o_bytes * narrow.o_reads) << name_of(dataflow);
  }
}

}  // namespace
}  // namespace tessera::arch
