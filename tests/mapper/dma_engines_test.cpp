// How a core's DMA engines are shared out (mapper/kit/dma_engines.hpp): the groups, the row blocks, their
// sizes.
#include "mapper/kit/dma_engines.hpp"

#include <gtest/gtest.h>

namespace tessera::mapper {
namespace {

arch::DmaSpec dma(int engines) {
  arch::DmaSpec spec;
  spec.engines = engines;
  spec.bytes_per_cycle = 32;
  spec.setup_cycles = 16;
  return spec;
}

}  // namespace

TEST(DmaEngineGroups, OneEngineCarriesEverything) {
  const TransferEngines engines = transfer_engines(dma(1), 100, 10);
  EXPECT_EQ(engines.loads[0], (EngineGroup{0, 1}));
  EXPECT_EQ(engines.loads[1], (EngineGroup{0, 1}));
  EXPECT_EQ(engines.store_group(100, 10), (EngineGroup{0, 1}));
}

TEST(DmaEngineGroups, TwoEnginesOneOperandEachAndTheStoresWithTheLighterLoads) {
  const TransferEngines engines = transfer_engines(dma(2), 100, 10);
  EXPECT_EQ(engines.loads[0], (EngineGroup{0, 1}));
  EXPECT_EQ(engines.loads[1], (EngineGroup{1, 1}));
  EXPECT_EQ(engines.store_group(100, 10), (EngineGroup{1, 1}));
  EXPECT_EQ(engines.store_group(10, 100), (EngineGroup{0, 1}));
}

TEST(DmaEngineGroups, ManyEnginesAreSplitByTheBytesOfEachLoadStreamAndTheStoresGoOnAll) {
  // A loads twice W's bytes. Of 16: 11 and 5, the busiest engine 1/5 of W's bytes (2/11 of A's); rounding
  // the proportional 10.7 : 5.3 to 11 : 5 gives the same here.
  const TransferEngines engines = transfer_engines(dma(16), 2.0, 1.0);
  EXPECT_EQ(engines.loads[0], (EngineGroup{0, 11}));
  EXPECT_EQ(engines.loads[1], (EngineGroup{11, 5}));
  EXPECT_EQ(engines.store_group(2.0, 1.0), (EngineGroup{0, 16}));
  // Of 7 for 10 : 1 : 1: every stream keeps one engine, the rest to the heaviest.
  const std::vector<EngineGroup> three = split_engines(7, {10, 1, 1});
  EXPECT_EQ(three[0], (EngineGroup{0, 5}));
  EXPECT_EQ(three[1], (EngineGroup{5, 1}));
  EXPECT_EQ(three[2], (EngineGroup{6, 1}));
  // Where a proportional split rounds wrong: 9.8 : 4.9 : 1.2 of 16 rounds to 10 : 5 : 1, leaving the third
  // engine a quarter; 9 : 5 : 2 leaves the busiest 2/9.
  const std::vector<EngineGroup> uneven = split_engines(16, {2.0, 1.0, 0.25});
  EXPECT_EQ(uneven[0].count, 9);
  EXPECT_EQ(uneven[1].count, 5);
  EXPECT_EQ(uneven[2].count, 2);
}

TEST(DmaEngineGroups, ATransferIsCutIntoRowBlocksNoneShorterThanFourSetups) {
  const arch::DmaSpec spec = dma(8);  // a block of at least 4 x 16 cycles x 32 B/cycle = 2048 B
  const EngineGroup group{0, 8};
  EXPECT_EQ(blocks_of(512, 512, group, spec), 8);    // one per engine
  EXPECT_EQ(blocks_of(3, 4096, group, spec), 3);     // one per row
  EXPECT_EQ(blocks_of(64, 96, group, spec), 3);      // 6144 B: three blocks of 2048
  EXPECT_EQ(blocks_of(2, 512, group, spec), 1);      // 1024 B: one
  EXPECT_EQ(blocks_of(1, 1 << 20, group, spec), 1);  // one row stays whole
  EXPECT_EQ(blocks_of(512, 512, EngineGroup{3, 1}, spec), 1);
  // 10 rows in 4 blocks: 3, 3, 2, 2.
  const int64_t firsts[] = {0, 3, 6, 8}, counts[] = {3, 3, 2, 2};
  for (int b = 0; b < 4; ++b) {
    EXPECT_EQ(row_block(10, 4, b).first, firsts[b]);
    EXPECT_EQ(row_block(10, 4, b).rows, counts[b]);
  }
  EXPECT_EQ((EngineGroup{4, 3}).engine(7), 5);
}

TEST(EngineDealer, SuccessiveTransfersContinueRoundTheGroupFromTheEngineAfterTheLastBlock) {
  // Rows of 1 KiB, blocks of at least 2 KiB (four setups of 16 cycles at 32 B/cycle): 6 rows make 3 blocks.
  EngineDealer dealer(EngineGroup{2, 4}, dma(8));
  const std::vector<DealtBlock> first = dealer.deal(6, 1024), second = dealer.deal(6, 1024);
  ASSERT_EQ(first.size(), 3u);
  ASSERT_EQ(second.size(), 3u);
  EXPECT_EQ(first[0].engine, 2);
  EXPECT_EQ(first[2].engine, 4);
  EXPECT_EQ(second[0].engine, 5);
  EXPECT_EQ(second[1].engine, 2);
  EXPECT_EQ(second[2].engine, 3);
  EXPECT_EQ(second[2].rows.first, 4);
  EXPECT_EQ(second[2].rows.rows, 2);
  EXPECT_EQ(engines_of(second), (std::vector<int>{5, 2, 3}));
}

TEST(EngineDealer, OneEngineTakesEveryTransferWhole) {
  EngineDealer dealer(EngineGroup{1, 1}, dma(2));
  for (int i = 0; i < 3; ++i) {
    const std::vector<DealtBlock> blocks = dealer.deal(64, 4096);
    ASSERT_EQ(blocks.size(), 1u);
    EXPECT_EQ(blocks[0].engine, 1);
    EXPECT_EQ(blocks[0].rows.rows, 64);
  }
}

TEST(SpreadCycles, OneEngineCountsEverySetupAndByteAndManySplitThemOverTheEnginesThatCarry) {
  // One engine: the closed form of a transfer of 3 descriptors (3 setups, 1000 B at 32 B/cycle).
  EXPECT_EQ(spread_cycles(dma(1), EngineGroup{0, 1}, 1000, 3), 3 * 16 + 32);
  // 8 blocks on 4 engines: two setups on each, a quarter of the bytes.
  EXPECT_EQ(spread_cycles(dma(4), EngineGroup{0, 4}, 4096, 8), 2 * 16 + 32);
  // 2 blocks on 4 engines: one setup, half the bytes each (two engines idle).
  EXPECT_EQ(spread_cycles(dma(4), EngineGroup{0, 4}, 4096, 2), 16 + 64);
}

TEST(EngineSemaphore, TheGroupsFirstEngineKeepsThePlainNameTheOthersTheirSlot) {
  EXPECT_EQ(engine_semaphore("k_free", "[1]", EngineGroup{3, 4}, 3), "k_free[1]");
  EXPECT_EQ(engine_semaphore("k_free", "[1]", EngineGroup{3, 4}, 5), "k_free_e2[1]");
  EXPECT_EQ(engine_semaphore("out_full", "", EngineGroup{0, 2}, 1), "out_full_e1");
}

}  // namespace tessera::mapper
