// The closed form of the vector unit's mixture-of-experts instructions (docs/vector-unit.md, "route",
// "weighted_sum"): their pass lists, their rules, a hand-worked route, the shipped routers against the
// per-cycle model for softmax and sigmoid, groups 1 and 8, and their SRAM bytes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "arch/timing/vector_timing.hpp"
#include "arch/vector_timing_checks.hpp"

namespace tessera::arch {
namespace {

using namespace vector_checks;

TEST(VectorPasses, WeightedSumAndRouteHaveThePassesOfTheDocument) {
  struct Expected {
    int64_t simple, special;
    bool reduces, depends, scalar_special;
  };
  auto expect_passes = [](const VectorWork& work, const std::vector<Expected>& expected) {
    SCOPED_TRACE(describe(make_spec(8, 8, 0), work));
    const VectorPasses passes = vector_passes(work);
    ASSERT_EQ(passes.count, static_cast<int>(expected.size()));
    for (int p = 0; p < passes.count; ++p) {
      SCOPED_TRACE("pass " + std::to_string(p + 1));
      EXPECT_EQ(passes.pass[p].simple_ops, expected[p].simple);
      EXPECT_EQ(passes.pass[p].special_ops, expected[p].special);
      EXPECT_EQ(passes.pass[p].reduces, expected[p].reduces);
      EXPECT_EQ(passes.pass[p].depends, expected[p].depends);
      EXPECT_EQ(passes.pass[p].scalar_special, expected[p].scalar_special);
    }
  };
  // weighted sum of 4 parts: mul, 3 fma [, add y]
  expect_passes(weighted_sum_work(1, 1, 4, false), {{4, 0, false, false, false}});
  expect_passes(weighted_sum_work(1, 1, 4, true), {{5, 0, false, false, false}});
  // route, softmax: max; sub, exp, add; mul by 1/sum with the first arg-max (compare, select); the second
  // arg-max; gather + add; mul by scaling/sum
  expect_passes(route_work(1, 8, 2, false), {{1, 0, true, false, false},
                                             {2, 1, true, true, false},
                                             {3, 0, true, true, true},
                                             {2, 0, true, true, false},
                                             {1, 0, true, true, false},
                                             {1, 0, false, true, true}});
  // top-1: no arg-max pass after the scores'
  expect_passes(route_work(1, 8, 1, true),
                {{2, 1, true, false, false}, {1, 0, true, true, false}, {1, 0, false, true, true}});
  // route, sigmoid, 8 groups of 32, 4 kept, top-8 (DeepSeek-V3): sigmoid with the group top-2 (2 compares);
  // 4 x the group arg-max; 8 x the arg-max over the 4 kept groups' 128 experts; gather; weights
  expect_passes(route_work(1, 256, 8, true, 8, 4), {{2, 1, true, false, false},
                                                    {2, 0, true, true, false},
                                                    {2, 0, true, true, false},
                                                    {1, 0, true, true, false},
                                                    {1, 0, false, true, true}});
  const VectorPasses deepseek = vector_passes(route_work(1, 256, 8, true, 8, 4));
  EXPECT_EQ(deepseek.pass[0].cols, 0);
  EXPECT_EQ(deepseek.pass[1].cols, 8);
  EXPECT_EQ(deepseek.pass[1].repeats, 4);
  EXPECT_EQ(deepseek.pass[2].cols, 128);
  EXPECT_EQ(deepseek.pass[2].repeats, 8);
  EXPECT_EQ(deepseek.pass[3].cols, 8);
  EXPECT_EQ(deepseek.pass[4].cols, 8);
  EXPECT_EQ(vector_passes(route_work(1, 8, 6, false)).pass[3].repeats, 5);
  EXPECT_EQ(vector_passes(route_work(1, 8, 2, false)).pass[3].cols, 8);
}

TEST(VectorTimingRules, ARoutesExpertsGroupsAndChoicesOutOfRangeAreInputErrors) {
  const VectorSpec spec = make_spec(8, 2, 3);
  EXPECT_EQ(input_error_of([&] { vector_timing(spec, route_work(4, 65537, 2, false)); }),
            "vector route: a route scores at most 65536 experts (cols), got 65537");
  EXPECT_EQ(vector_work_problem(spec, route_work(4, 65536, 2, false)), "");
  EXPECT_EQ(vector_work_problem(spec, route_work(4, 8, 2, false, 3, 1)),
            "route_groups must divide the 8 experts (cols), got 3");
  EXPECT_EQ(vector_work_problem(spec, route_work(4, 8, 2, false, 0, 1)),
            "route_groups must divide the 8 experts (cols), got 0");
  EXPECT_EQ(vector_work_problem(spec, route_work(4, 8, 2, false, 4, 5)),
            "route_topk_groups must be in [1, route_groups] = [1, 4], got 5");
  EXPECT_EQ(vector_work_problem(spec, route_work(4, 8, 2, false, 4, 0)),
            "route_topk_groups must be in [1, route_groups] = [1, 4], got 0");
  // 2 of 4 groups of 2 experts kept: 4 experts to choose from
  EXPECT_EQ(vector_work_problem(spec, route_work(4, 8, 5, true, 4, 2)),
            "route_top_k must be in [1, the experts of the kept groups] = [1, 4], got 5");
  EXPECT_EQ(vector_work_problem(spec, route_work(4, 8, 0, true)),
            "route_top_k must be in [1, the experts of the kept groups] = [1, 8], got 0");
  EXPECT_EQ(vector_work_problem(spec, route_work(4, 8, 4, true, 4, 2)), "");
  EXPECT_EQ(vector_work_problem(spec, route_work(4, 8, 8, false)), "");
}

// A route of 2 rows x 8 experts, softmax, top-2, on 8 lanes, special 2 (4 issue cycles), latency 2 (tree 3):
// every pass is one vector a row. max: W 1, rows end 1, 2. exp (sub, exp, add): c = 6, D = 5: rows start 6
// and 12 (each waits for its max), end 12, 18: 4 stalled. scores (mul 1/sum) with the first arg-max
// (compare, select): W 3, D = 2 + 3 + 2 = 7: starts 19 and 25, ends 28 (stall 4). The second arg-max (W 2,
// D 5): starts 28 and 33 (row 1's winner is usable at 25 + 3 + 5), ends 35 (stall 3). gather and sum of the
// 2 chosen (W 1, D 5): starts 35 and 40, ends 41 (stall 4). weights (W 1, D 7 through the reciprocal): starts
// 43, 48, issue ends 49 (stall 6); the last weight written at 49 + 2 = 51. Busy 2 + 12 + 6 + 4 + 2 + 2 = 28,
// stall 21, drain 2: a decode's router is latency-bound.
TEST(VectorTimingHandWorked, ARouteOfTwoRowsWaitsForEachRowsStatisticsInEveryPass) {
  const VectorSpec spec = make_spec(8, 2, 2);
  const VectorWork work = route_work(2, 8, 2, false);
  const VectorTiming timing = vector_timing(spec, work);
  ASSERT_EQ(timing.passes, 6);
  const int64_t expected[6][5] = {
      // first row start, last row start, issue end, busy, stall
      {0, 1, 2, 2, 0},    {6, 12, 18, 12, 4}, {19, 25, 28, 6, 4},
      {28, 33, 35, 4, 3}, {35, 40, 41, 2, 4}, {43, 48, 49, 2, 6},
  };
  for (int p = 0; p < 6; ++p) {
    SCOPED_TRACE("pass " + std::to_string(p + 1));
    EXPECT_EQ(timing.pass[p].first_row_start, expected[p][0]);
    EXPECT_EQ(timing.pass[p].last_row_start, expected[p][1]);
    EXPECT_EQ(timing.pass[p].issue_end, expected[p][2]);
    EXPECT_EQ(timing.pass[p].busy_cycles, expected[p][3]);
    EXPECT_EQ(timing.pass[p].stall_cycles, expected[p][4]);
  }
  EXPECT_EQ(timing.busy_cycles, 28);
  EXPECT_EQ(timing.stall_cycles, 21);
  EXPECT_EQ(timing.drain_cycles, 2);
  EXPECT_EQ(timing.cycles, 51);
  EXPECT_TRUE(closed_form_equals_cycle_model(spec, work));
}

// A weighted sum of 3 parts and y on 16 lanes, latency 4: 4 rows of 32 columns (V = 2), c = 3 + 1 = 4, W = 8:
// 32 issue cycles back to back, the last result 4 later.
TEST(VectorTimingHandWorked, AWeightedSumIsOnePassOfOneMultiplyAddAPart) {
  const VectorSpec spec = make_spec(16, 4, 4);
  const VectorTiming timing = vector_timing(spec, weighted_sum_work(4, 32, 3, true));
  ASSERT_EQ(timing.passes, 1);
  EXPECT_EQ(timing.pass[0].row_issue_cycles, 8);
  EXPECT_EQ(timing.cycles, 36);
  EXPECT_EQ(timing.stall_cycles, 0);
  EXPECT_EQ(vector_timing(spec, weighted_sum_work(4, 32, 3, false)).cycles, 24 + 4);
  EXPECT_TRUE(closed_form_equals_cycle_model(spec, weighted_sum_work(4, 32, 3, true)));
}

// A merge of P parts is one pass of 2P simple ops per vector reading no statistic of its own: 4 rows x 128
// columns on 32 lanes (V = 4), 16 parts: c = 32, W = 128, rows back to back: issue ends at 512, the last
// result written latency 8 later: 520 cycles, all of them busy but the drain.
// route over the shipped models' routers (Mixtral: 8 experts top-2 softmax; Qwen3: 128 top-8 softmax;
// DeepSeek-V3: 256 top-8 sigmoid, 8 groups, 4 kept) and small odd ones, on machines with 1 to 64 lanes.
TEST(VectorTimingVsCycleModel, ARouteEqualsTheCycleModelSoftmaxAndSigmoidGroupsOneAndEight) {
  struct Shape {
    int64_t experts, top_k, groups, topk_groups;
  };
  const std::vector<Shape> shapes = {{8, 2, 1, 1}, {128, 8, 1, 1}, {256, 8, 8, 4}, {64, 6, 8, 3},
                                     {8, 8, 1, 1}, {1, 1, 1, 1},   {16, 1, 8, 1},  {24, 5, 8, 8}};
  int checked = 0, failures = 0;
  for (const Shape& shape : shapes)
    for (const bool sigmoid : {false, true})
      for (const int lanes : {1, 3, 8, 64})
        for (const int special : {1, lanes})
          for (const int latency : {0, 2, 9})
            for (const int64_t rows : {1, 2, 7, 33}) {
              const VectorSpec spec = make_spec(lanes, special, latency);
              const VectorWork work =
                  route_work(rows, shape.experts, shape.top_k, sigmoid, shape.groups, shape.topk_groups);
              ++checked;
              const auto matches = closed_form_equals_cycle_model(spec, work);
              EXPECT_TRUE(matches);
              if (!matches && ++failures == 5) return;
            }
  EXPECT_EQ(checked, 8 * 2 * 4 * 2 * 3 * 4);
}

TEST(VectorSramTraffic, ARouteReadsItsScoresBackForEveryArgMaxAndGathersTheChosen) {
  // 2 rows x 8 experts fp32 (a tile is 64 B), top-2: max reads x; exp reads x, writes the exp values over it;
  // normalise reads them back and writes the scores; 2 arg-max passes read the scores; the gather reads the
  // 2 x 2 chosen scores (16 B) and the int32 table i (16 B), writes them into o (16 B); the weights pass
  // reads o back and writes it.
  const VectorElementBytes bytes{4, 4, 4};
  VectorSramTraffic traffic = vector_sram_traffic(route_work(2, 8, 2, false), bytes);
  const std::vector<std::pair<int64_t, int64_t>> softmax = {{64, 0}, {64, 64}, {64, 64},
                                                            {64, 0}, {32, 16}, {16, 16}};
  ASSERT_EQ(traffic.passes, 6);
  for (int p = 0; p < 6; ++p) {
    EXPECT_EQ(traffic.pass[p].read_bytes, softmax[p].first) << "pass " << p + 1;
    EXPECT_EQ(traffic.pass[p].write_bytes, softmax[p].second) << "pass " << p + 1;
  }
  EXPECT_EQ(traffic.read_bytes, 64 * 4 + 32 + 16);
  EXPECT_EQ(traffic.write_bytes, 64 * 2 + 16 + 16);
  // sigmoid, 4 groups of 2, 2 kept: sigmoid (and the group scores) over x; the kept groups' arg-max passes
  // read nothing (the group scores stay in the unit); 2 arg-max passes over the 4 kept experts (2 rows x 4 x
  // 4 B each).
  traffic = vector_sram_traffic(route_work(2, 8, 2, true, 4, 2), bytes);
  const std::vector<std::pair<int64_t, int64_t>> grouped = {{64, 64}, {0, 0}, {64, 0}, {32, 16}, {16, 16}};
  ASSERT_EQ(traffic.passes, 5);
  for (int p = 0; p < 5; ++p) {
    EXPECT_EQ(traffic.pass[p].read_bytes, grouped[p].first) << "pass " << p + 1;
    EXPECT_EQ(traffic.pass[p].write_bytes, grouped[p].second) << "pass " << p + 1;
  }
}

}  // namespace
}  // namespace tessera::arch
