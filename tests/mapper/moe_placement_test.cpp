// The MoE stage's placement of the experts' rows on cores (mapper/moe/stage.hpp): every kept row of every
// expert, and every token of the shared experts, in exactly one share; whole experts a core (the heaviest to
// the least loaded core), or split in row blocks so that no core holds much more than an even share; and the
// per-expert counts the estimate assumes.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>

#include "mapper/moe/stage.hpp"
#include "ops/op.hpp"

namespace tessera {

namespace {

ops::Op moe(int64_t tokens, int64_t experts, int64_t top_k, int64_t shared,
            ops::MoeRoutingOptions routing = {}, double capacity_factor = 0) {
  ops::MoeShape shape;
  shape.tokens = tokens;
  shape.hidden = 64;
  shape.ffn = 64;
  shape.experts = experts;
  shape.top_k = top_k;
  shape.shared_experts = shared;
  shape.capacity_factor = capacity_factor;
  shape.routing = std::move(routing);
  return ops::make_op("moe", DType::bf16, shape);
}

// Rows of each expert (kShared: the shared experts) covered by the shares, each exactly once.
void expect_covered(const std::vector<std::vector<mapper::MoeStage::Share>>& shares,
                    const std::vector<int64_t>& counts, int64_t tokens, int64_t shared) {
  std::map<int64_t, std::vector<int>> seen;
  for (size_t e = 0; e < counts.size(); ++e)
    seen[static_cast<int64_t>(e)].assign(static_cast<size_t>(counts[e]), 0);
  if (shared > 0) seen[mapper::MoeStage::kShared].assign(static_cast<size_t>(tokens), 0);
  for (const auto& core : shares)
    for (const mapper::MoeStage::Share& share : core) {
      ASSERT_TRUE(seen.count(share.expert)) << share.expert;
      std::vector<int>& rows = seen[share.expert];
      ASSERT_LE(share.first + share.rows, static_cast<int64_t>(rows.size()));
      for (int64_t r = share.first; r < share.first + share.rows; ++r) ++rows[static_cast<size_t>(r)];
    }
  for (const auto& [expert, rows] : seen)
    EXPECT_TRUE(std::all_of(rows.begin(), rows.end(), [](int times) { return times == 1; })) << expert;
}

}  // namespace

TEST(MoePlacement, WholeExpertsGoHeaviestFirstToTheLeastLoadedCore) {
  const auto stage = mapper::MoeStage::of(moe(100, 6, 2, 0));
  const std::vector<int64_t> counts = {70, 10, 40, 0, 30, 50};
  const auto shares = stage->place(counts, mapper::MoeStage::whole, 32, 3);
  expect_covered(shares, counts, 100, 0);
  // In rows rounded up to whole blocks of 32: 70 (96) -> core 0, 50 (64) -> 1, 40 (64) -> 2, 30 (32) -> 1,
  // 10 (32) -> 2. Expert 3 has no tokens and no share.
  ASSERT_EQ(shares.size(), 3u);
  ASSERT_EQ(shares[0].size(), 1u);
  EXPECT_EQ(shares[0][0].expert, 0);
  ASSERT_EQ(shares[1].size(), 2u);
  EXPECT_EQ(shares[1][0].expert, 5);
  EXPECT_EQ(shares[1][1].expert, 4);
  ASSERT_EQ(shares[2].size(), 2u);
  EXPECT_EQ(shares[2][0].expert, 2);
  EXPECT_EQ(shares[2][1].expert, 1);
  for (const auto& core : shares)
    for (const auto& share : core) EXPECT_EQ(share.first, 0);
}

TEST(MoePlacement, SplitExpertsHoldNoMoreThanAnEvenShareInWholeBlocks) {
  const auto stage = mapper::MoeStage::of(moe(256, 8, 2, 1));
  const std::vector<int64_t> counts = {300, 100, 40, 20, 20, 20, 10, 2};  // 512 routed, 256 shared rows
  for (int cores : {1, 4, 16}) {
    const auto shares = stage->place(counts, mapper::MoeStage::split, 32, cores);
    expect_covered(shares, counts, 256, 1);
    const int64_t total = 512 + 256;
    const int64_t even = (total + cores - 1) / cores;
    for (const auto& core : shares) {
      int64_t rows = 0;
      for (const auto& share : core) {
        rows += share.rows;
        // Parts start on a block boundary and are whole blocks but for the expert's last.
        EXPECT_EQ(share.first % 32, 0);
      }
      EXPECT_LE(rows, std::max<int64_t>(even, 32) + 32 * 8) << cores;  // an even share, up to a block an item
    }
  }
}

TEST(MoePlacement, TheEstimatesCountsAreTheForcedOnesOrABalancedRoutersCappedByCapacity) {
  ops::MoeRoutingOptions forced;
  forced.counts = {50, 30, 20, 0};
  const std::vector<int64_t> given = mapper::MoeStage::of(moe(50, 4, 2, 0, forced))->expected_counts();
  EXPECT_EQ(given, (std::vector<int64_t>{50, 30, 20, 0}));
  // capacity ceil(0.5 * 50 * 2 / 4) = 13
  const std::vector<int64_t> capped = mapper::MoeStage::of(moe(50, 4, 2, 0, forced, 0.5))->expected_counts();
  // Element by element: GCC 12.2 at -O2 -march=native (AVX-512) built a std::vector<int64_t> of {13, 13, 13,
  // 0} here as four 13s (one vpbroadcastq stored over the new buffer; docs/design-notes.md).
  ASSERT_EQ(capped.size(), 4u);
  for (size_t e = 0; e < 3; ++e) EXPECT_EQ(capped[e], 13) << e;
  EXPECT_EQ(capped[3], 0);
  // 100 assignments over 8 experts: 13 for the first four, 12 for the others.
  const std::vector<int64_t> balanced = mapper::MoeStage::of(moe(50, 8, 2, 0))->expected_counts();
  EXPECT_EQ(balanced, (std::vector<int64_t>{13, 13, 13, 13, 12, 12, 12, 12}));
  ops::MoeRoutingOptions zipf;
  zipf.skew = ops::MoeSkew::zipf;
  const std::vector<int64_t> skewed = mapper::MoeStage::of(moe(64, 8, 2, 0, zipf))->expected_counts();
  EXPECT_EQ(std::accumulate(skewed.begin(), skewed.end(), int64_t{0}), 128);
  EXPECT_TRUE(std::is_sorted(skewed.rbegin(), skewed.rend()));
}

}  // namespace tessera
