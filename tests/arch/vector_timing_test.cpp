// The vector unit's closed form (arch/timing/vector_timing.hpp, docs/vector-unit.md) against hand-worked
// timings and against the per-cycle reference model (tests/models/vector_cycle_model), which steps the issue
// port, the latency pipeline, the lane tree and the scalar special pipe every cycle; the spec's limits and
// derived values; the SRAM bytes of every pass.
#include "arch/timing/vector_timing.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "arch/vector_timing_checks.hpp"

namespace tessera::arch {
namespace {

using namespace vector_checks;

VectorWork map_work(int64_t rows, int64_t cols, int64_t simple_ops, int64_t special_ops) {
  VectorWork work = make_work(VectorKind::map, rows, cols);
  work.map_simple_ops = simple_ops;
  work.map_special_ops = special_ops;
  return work;
}

VectorWork softmax_work(int64_t rows, int64_t cols, int64_t extra_simple_ops) {
  VectorWork work = make_work(VectorKind::softmax, rows, cols);
  work.softmax_extra_simple_ops = extra_simple_ops;
  return work;
}

VectorWork online_softmax_work(int64_t rows, int64_t cols, int64_t extra_simple_ops) {
  VectorWork work = make_work(VectorKind::online_softmax, rows, cols);
  work.softmax_extra_simple_ops = extra_simple_ops;
  return work;
}

VectorWork rope_work(int64_t rows, int64_t cols, int64_t rotated_cols) {
  VectorWork work = make_work(VectorKind::rope, rows, cols);
  work.rope_rotated_cols = rotated_cols;
  return work;
}

VectorWork pool_work(int64_t rows, int64_t cols, int64_t window, bool average) {
  VectorWork work = make_work(VectorKind::pool, rows, cols);
  work.pool_window = window;
  work.pool_average = average;
  return work;
}

VectorWork merge_work(int64_t rows, int64_t cols, int64_t parts) {
  VectorWork work = make_work(VectorKind::merge_partials, rows, cols);
  work.merge_parts = parts;
  return work;
}

// A norm of X + Y (a residual added first).
VectorWork norm_plus_tile_work(VectorKind kind) {
  VectorWork work = make_work(kind, 1, 1);
  work.norm_adds_tile = true;
  return work;
}

// ---- the spec ----

TEST(VectorSpec, ValidateDerivesTheTreeDepthAndTheSpecialIssueCycles) {
  // tree_depth = ceil(log2(lanes)): 1 lane needs no tree, 3 lanes two levels (3 -> 2 -> 1).
  const std::vector<std::pair<int, int>> depths = {{1, 0}, {2, 1},  {3, 2},  {4, 2},
                                                   {5, 3}, {64, 6}, {65, 7}, {65536, 16}};
  for (const auto& [lanes, depth] : depths)
    EXPECT_EQ(make_spec(lanes, 1, 0).tree_depth, depth) << "lanes " << lanes;
  // special_issue_cycles = ceil(lanes / special_per_cycle).
  EXPECT_EQ(make_spec(64, 16, 0).special_issue_cycles, 4);
  EXPECT_EQ(make_spec(10, 3, 0).special_issue_cycles, 4);
  EXPECT_EQ(make_spec(8, 8, 0).special_issue_cycles, 1);
  EXPECT_EQ(make_spec(1, 1, 0).special_issue_cycles, 1);
  EXPECT_EQ(make_spec(65536, 1, 4096).special_issue_cycles, 65536);
}

std::string spec_error(int lanes, int special_per_cycle, int latency_cycles) {
  VectorSpec spec;
  spec.lanes = lanes;
  spec.special_per_cycle = special_per_cycle;
  spec.latency_cycles = latency_cycles;
  return input_error_of([&] { spec.validate(); });
}

TEST(VectorSpec, EachLimitIsAnInputErrorNamingTheFieldAndTheRange) {
  EXPECT_EQ(spec_error(0, 1, 0), "core.vector.lanes: must be in [1, 65536], got 0");
  EXPECT_EQ(spec_error(65537, 1, 0), "core.vector.lanes: must be in [1, 65536], got 65537");
  EXPECT_EQ(spec_error(8, 9, 0), "core.vector.special_per_cycle: must be in [1, lanes] = [1, 8], got 9");
  EXPECT_EQ(spec_error(8, 0, 0), "core.vector.special_per_cycle: must be in [1, lanes] = [1, 8], got 0");
  EXPECT_EQ(spec_error(8, 8, -1), "core.vector.latency_cycles: must be in [0, 4096], got -1");
  EXPECT_EQ(spec_error(8, 8, 4097), "core.vector.latency_cycles: must be in [0, 4096], got 4097");
  // The bounds themselves are valid.
  EXPECT_NO_THROW(make_spec(65536, 65536, 4096));
  EXPECT_NO_THROW(make_spec(1, 1, 0));
}

TEST(VectorSpec, AProblemNamesTheKeyForAReaderAndValidateReportsItAtTheGivenPlace) {
  VectorSpec spec;
  spec.lanes = 4;
  spec.special_per_cycle = 8;
  const auto problem = vector_spec_problem(spec);
  ASSERT_TRUE(problem.has_value());
  EXPECT_EQ(problem->field, "special_per_cycle");
  EXPECT_EQ(problem->message, "must be in [1, lanes] = [1, 4], got 8");
  EXPECT_EQ(input_error_of([&] {
              spec.validate(SourceLocation{"m.yaml", 7, 3}, "core.vector");
            }),
            "m.yaml:7:3: core.vector.special_per_cycle: must be in [1, lanes] = [1, 4], got 8");
  spec.special_per_cycle = 2;
  EXPECT_FALSE(vector_spec_problem(spec).has_value());
}

// ---- instruction rules ----

TEST(VectorTimingRules, SizesAndParametersOutOfRangeAreInputErrors) {
  const VectorSpec spec = make_spec(8, 2, 3);
  EXPECT_EQ(input_error_of([&] { vector_timing(spec, softmax_work(0, 8, 0)); }),
            "vector softmax: rows must be >= 1, got 0");
  EXPECT_EQ(input_error_of([&] { vector_timing(spec, make_work(VectorKind::layernorm, 4, -2)); }),
            "vector layernorm: cols must be >= 1, got -2");
  EXPECT_EQ(input_error_of([&] { vector_timing(spec, map_work(4, 8, 0, 0)); }),
            "vector map: a map needs at least one op per element (map_simple_ops + map_special_ops >= 1)");
  EXPECT_EQ(input_error_of([&] { vector_timing(spec, map_work(4, 8, -1, 1)); }),
            "vector map: map_simple_ops must be >= 0, got -1");
  EXPECT_EQ(input_error_of([&] { vector_timing(spec, map_work(4, 8, 1, -1)); }),
            "vector map: map_special_ops must be >= 0, got -1");
  EXPECT_EQ(input_error_of([&] { vector_timing(spec, softmax_work(4, 8, -1)); }),
            "vector softmax: softmax_extra_simple_ops must be >= 0, got -1");
  EXPECT_EQ(input_error_of([&] { vector_timing(spec, pool_work(4, 8, 0, true)); }),
            "vector pool: pool_window must be >= 1, got 0");
  EXPECT_EQ(vector_work_problem(spec, pool_work(4, 8, 0, true)), "pool_window must be >= 1, got 0");
  EXPECT_EQ(vector_work_problem(spec, pool_work(4, 8, 9, true)), "");
  EXPECT_EQ(vector_work_problem(spec, merge_work(4, 8, 0)), "merge_parts must be in [1, 4096], got 0");
  EXPECT_EQ(vector_work_problem(spec, merge_work(4, 8, 4097)), "merge_parts must be in [1, 4096], got 4097");
  EXPECT_EQ(vector_work_problem(spec, merge_work(4, 8, 16)), "");
  EXPECT_EQ(vector_work_problem(spec, weighted_sum_work(4, 8, 0, false)),
            "merge_parts must be in [1, 4096], got 0");
  EXPECT_EQ(vector_work_problem(spec, weighted_sum_work(4, 8, 4097, true)),
            "merge_parts must be in [1, 4096], got 4097");
  EXPECT_EQ(vector_work_problem(spec, weighted_sum_work(4, 8, 4096, true)), "");
}

TEST(VectorTimingHandWorked, AMergeOfSixteenPartsIsOnePassOfTwoOpsAPart) {
  const VectorTiming timing = vector_timing(make_spec(32, 8, 8), merge_work(4, 128, 16));
  EXPECT_EQ(timing.passes, 1);
  EXPECT_EQ(timing.pass[0].row_issue_cycles, 128);
  EXPECT_EQ(timing.issue_cycles, 512);
  EXPECT_EQ(timing.cycles, 520);
  EXPECT_EQ(timing.busy_cycles, 512);
  EXPECT_EQ(timing.stall_cycles, 0);
}

TEST(VectorTimingRules, ACycleCountPastInt64IsAnInputErrorAndTheLargestThatFitsIsExact) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  // reduce_sum on 1 lane, 1 column: one issue cycle per row, no tree: cycles = rows + latency.
  const VectorWork longest = make_work(VectorKind::reduce_sum, kMax, 1);
  EXPECT_EQ(vector_timing(make_spec(1, 1, 0), longest).cycles, kMax);
  EXPECT_EQ(
      input_error_of([&] { vector_timing(make_spec(1, 1, 1), longest); }),
      "vector reduce_sum: 9223372036854775807 x 1 elements on 1 lanes: the cycle count overflows int64");
  // 2^62 rows of 16 vectors: the issue cycles alone are 2^66.
  EXPECT_EQ(
      input_error_of([&] { vector_timing(make_spec(64, 16, 6), softmax_work(int64_t{1} << 62, 1000, 0)); }),
      "vector softmax: 4611686018427387904 x 1000 elements on 64 lanes: the cycle count overflows int64");
  // A chain whose per-vector issue cycles overflow before any row is counted: 2^62 special ops x 4 cycles.
  EXPECT_EQ(vector_work_problem(make_spec(64, 16, 6), map_work(1, 1, 0, int64_t{1} << 62)),
            "1 x 1 elements on 64 lanes: the cycle count overflows int64");
}

// ---- the pass table ----

TEST(VectorPasses, EachKindHasThePassesOfTheDocument) {
  struct Expected {
    int64_t simple, special;
    bool reduces, depends, scalar_special;
  };
  auto expect_passes = [](const VectorWork& work, const std::vector<Expected>& expected) {
    SCOPED_TRACE(name_of(work.kind));
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
  expect_passes(map_work(1, 1, 5, 1), {{5, 1, false, false, false}});  // bias + GELU(erf)
  expect_passes(make_work(VectorKind::reduce_sum, 1, 1), {{1, 0, true, false, false}});
  expect_passes(make_work(VectorKind::reduce_max, 1, 1), {{1, 0, true, false, false}});
  // max; sub, exp, add; mul by 1/sum
  expect_passes(softmax_work(1, 1, 0),
                {{1, 0, true, false, false}, {2, 1, true, true, false}, {1, 0, false, true, true}});
  // with scale and causal mask: sub, mul, select, exp, add
  expect_passes(softmax_work(1, 1, 2),
                {{1, 0, true, false, false}, {4, 1, true, true, false}, {1, 0, false, true, true}});
  // sum; sub, mul, add; sub, mul, mul, add after rsqrt
  expect_passes(make_work(VectorKind::layernorm, 1, 1),
                {{1, 0, true, false, false}, {3, 0, true, true, false}, {4, 0, false, true, true}});
  // mul, add; mul, mul after rsqrt
  expect_passes(make_work(VectorKind::rmsnorm, 1, 1),
                {{2, 0, true, false, false}, {2, 0, false, true, true}});
  // of x + y: the add before the first pass's ops
  expect_passes(norm_plus_tile_work(VectorKind::layernorm),
                {{2, 0, true, false, false}, {3, 0, true, true, false}, {4, 0, false, true, true}});
  expect_passes(norm_plus_tile_work(VectorKind::rmsnorm),
                {{3, 0, true, false, false}, {2, 0, false, true, true}});
  // online softmax, scaled and masked: mul, select, max; sub, mul, select, exp, add
  expect_passes(online_softmax_work(1, 1, 2), {{3, 0, true, false, false}, {4, 1, true, true, false}});
  expect_passes(online_softmax_work(1, 1, 0), {{1, 0, true, false, false}, {2, 1, true, true, false}});
  expect_passes(make_work(VectorKind::scale_rows, 1, 1), {{1, 0, false, false, false}});
  // merge of 3 parts: mul; mul, add; mul, add; mul by 1/L
  expect_passes(merge_work(1, 1, 3), {{6, 0, false, false, false}});
  expect_passes(merge_work(1, 1, 1), {{2, 0, false, false, false}});
  expect_passes(pool_work(1, 1, 9, false), {{9, 0, false, false, false}});  // 3x3 max
  expect_passes(pool_work(1, 1, 4, true), {{5, 0, false, false, false}});   // 2x2 average: 4 adds, 1 mul
  // rope: 2 mul + 2 fma per pair of rotated columns; a copy of the rest, over those columns alone
  expect_passes(rope_work(1, 128, 128), {{2, 0, false, false, false}});
  expect_passes(rope_work(1, 128, 32), {{2, 0, false, false, false}, {1, 0, false, false, false}});
  EXPECT_EQ(vector_passes(rope_work(1, 128, 32)).pass[0].cols, 32);
  EXPECT_EQ(vector_passes(rope_work(1, 128, 32)).pass[1].cols, 96);
}

// A rope of 4 rows of 2 heads of 64 (128 cols), rotary_dim 16 (32 rotated cols), on 16 lanes, latency 6:
// rotate: 2 vectors a row x 2 ops = 4 cycles a row, 16 for the tile; copy: 6 vectors x 1 op = 6 a row, 24;
// no statistic, no stall: 40 issue cycles + 6 of latency.
TEST(VectorTimingHandWorked, ARopeRotatesItsRotaryColumnsThenCopiesTheRest) {
  const VectorTiming timing = vector_timing(make_spec(16, 4, 6), rope_work(4, 128, 32));
  ASSERT_EQ(timing.passes, 2);
  EXPECT_EQ(timing.pass[0].row_issue_cycles, 4);
  EXPECT_EQ(timing.pass[0].issue_end, 16);
  EXPECT_EQ(timing.pass[1].row_issue_cycles, 6);
  EXPECT_EQ(timing.pass[1].issue_end, 40);
  EXPECT_EQ(timing.busy_cycles, 40);
  EXPECT_EQ(timing.stall_cycles, 0);
  EXPECT_EQ(timing.cycles, 46);
  EXPECT_TRUE(closed_form_equals_cycle_model(make_spec(16, 4, 6), rope_work(4, 128, 32)));
}

// ---- hand-worked timings ----

TEST(VectorTimingHandWorked, SoftmaxOf4x256OnLanes64Special16Latency6) {
  // lanes 64, special 16, latency 6: tree_depth = log2(64) = 6, special_issue_cycles = 64/16 = 4.
  // 256 columns = V = 4 vectors per row.
  // Pass 1 (max): c = 1, W = 4. Rows back to back from 0: row r issues [4r, 4r+4); ends 4 (row 0), 16.
  //   Row r's max is usable at 4(r+1) + latency 6 + tree 6 = 16 + 4r.
  // Pass 2 (sub, exp, add): c = 1 + 4 + 1 = 6, W = 24. Row 0 may start at max(16 (port), 16 (max of row 0))
  //   = 16; row r at 16 + 24r >= 16 + 4r: no stall. Rows end at 40 + 24r: 40 (row 0), 112 (row 3).
  //   Row r's sum goes through the tree (6) and the reciprocal (latency 6): usable at 40 + 24r + 6 + 6 + 6 =
  //   58 + 24r: 58, 82, 106, 130.
  // Pass 3 (mul by 1/sum): c = 1, W = 4. Row 0 at 112 (the port is free; 58 passed), row 1 at 116, row 2 at
  //   120, row 3 wants 124 but its 1/sum is usable only at 130: 6 stall cycles; it issues [130, 134).
  // The last result leaves the pipeline at 134 + 6 = 140. Busy 16 + 96 + 16 = 128, stall 6, drain 6.
  const VectorSpec spec = make_spec(64, 16, 6);
  const VectorWork work = softmax_work(4, 256, 0);
  const VectorTiming timing = vector_timing(spec, work);
  EXPECT_EQ(timing.vectors_per_row, 4);
  EXPECT_EQ(timing.cycles, 140);
  EXPECT_EQ(timing.issue_cycles, 134);
  EXPECT_EQ(timing.busy_cycles, 128);
  EXPECT_EQ(timing.stall_cycles, 6);
  EXPECT_EQ(timing.drain_cycles, 6);
  const int64_t expected[3][7] = {
      // c, W, first row start, last row start, issue end, busy, stall
      {1, 4, 0, 12, 16, 16, 0},
      {6, 24, 16, 88, 112, 96, 0},
      {1, 4, 112, 130, 134, 16, 6},
  };
  ASSERT_EQ(timing.passes, 3);
  for (int p = 0; p < 3; ++p) {
    SCOPED_TRACE("pass " + std::to_string(p + 1));
    const VectorPassTiming& t = timing.pass[p];
    EXPECT_EQ(t.vector_issue_cycles, expected[p][0]);
    EXPECT_EQ(t.row_issue_cycles, expected[p][1]);
    EXPECT_EQ(t.first_row_start, expected[p][2]);
    EXPECT_EQ(t.last_row_start, expected[p][3]);
    EXPECT_EQ(t.issue_end, expected[p][4]);
    EXPECT_EQ(t.busy_cycles, expected[p][5]);
    EXPECT_EQ(t.stall_cycles, expected[p][6]);
  }
  EXPECT_TRUE(closed_form_equals_cycle_model(spec, work));
}

TEST(VectorTimingHandWorked, APartialLastVectorCostsAFullOneAndAMapDrainsOnlyTheLatency) {
  // bias + GELU(erf) on lanes 8, special 2, latency 5: 9 columns are V = 2 vectors (the second has 1 lane
  // active). c = 5 simple + 1 special * ceil(8/2) = 9; 3 rows issue 3 * 2 * 9 = 54 cycles back to back; the
  // last result leaves the pipeline 5 cycles later: 59. No tree: the map does not reduce.
  const VectorSpec spec = make_spec(8, 2, 5);
  const VectorWork work = map_work(3, 9, 5, 1);
  const VectorTiming timing = vector_timing(spec, work);
  EXPECT_EQ(timing.vectors_per_row, 2);
  EXPECT_EQ(timing.pass[0].vector_issue_cycles, 9);
  EXPECT_EQ(timing.issue_cycles, 54);
  EXPECT_EQ(timing.cycles, 59);
  EXPECT_EQ(timing.stall_cycles, 0);
  EXPECT_EQ(vector_timing(spec, map_work(3, 16, 5, 1)).cycles, 59);  // 16 columns: the same two vectors
  EXPECT_EQ(vector_timing(spec, map_work(3, 8, 5, 1)).cycles, 27 + 5);
  EXPECT_TRUE(closed_form_equals_cycle_model(spec, work));
}

TEST(VectorTimingHandWorked, AReductionsLastStatisticLeavesThroughLatencyAndTree) {
  // reduce_max of 2 x 20 on lanes 4, latency 3: V = 5, W = 5; rows issue [0, 10); the last row's max leaves
  // the pipeline at 10 + 3 and the tree (ceil(log2 4) = 2) at 15.
  const VectorSpec spec = make_spec(4, 1, 3);
  const VectorWork work = make_work(VectorKind::reduce_max, 2, 20);
  EXPECT_EQ(vector_timing(spec, work).cycles, 15);
  EXPECT_EQ(vector_timing(spec, work).drain_cycles, 5);
  EXPECT_TRUE(closed_form_equals_cycle_model(spec, work));
}

// rmsnorm on lanes 8, latency 6, one vector per row: both passes have W = 2 (mul, add / mul, mul), and pass
// 2's row r waits for row r's sum of squares: latency 6 + tree 3 + rsqrt 6 = D = 15 cycles after row r's
// pass-1 issue ends. Row r of pass 1 ends at 2(r+1); pass 2 can start at 2R (the port) or 2 + 15 (row 0's
// statistic); later rows follow 2 cycles apart, each as late as its own statistic allows. Pass 2 stalls
// max(0, D - (R-1) * W) = max(0, 15 - 2(R-1)) cycles.
TEST(VectorTimingHandWorked, OneRowWaitsTheWholeLatencyAndTreeForItsStatistic) {
  const VectorSpec spec = make_spec(8, 8, 6);
  const VectorWork work = make_work(VectorKind::rmsnorm, 1, 8);
  const VectorTiming timing = vector_timing(spec, work);
  // Pass 1 issues [0, 2); the statistic is usable at 2 + 15 = 17; pass 2 issues [17, 19); done at 25.
  EXPECT_EQ(timing.pass[1].first_row_start, 17);
  EXPECT_EQ(timing.stall_cycles, 15);
  EXPECT_EQ(timing.cycles, 25);
  EXPECT_TRUE(closed_form_equals_cycle_model(spec, work));
}

TEST(VectorTimingHandWorked, TheStallShowsUpExactlyWhenARowsStreamIsShorterThanTheWait) {
  // Two rows: pass 2's row 0 starts at max(2W, W + D), row 1 right after: a stall of max(0, D - W) with
  // D = 15. With V vectors per row W = 2V: V = 7 (W = 14) stalls 1 cycle, V = 8 (W = 16) none.
  const VectorSpec spec = make_spec(8, 8, 6);
  for (int64_t vectors = 1; vectors <= 10; ++vectors) {
    const VectorWork work = make_work(VectorKind::rmsnorm, 2, 8 * vectors);
    const int64_t row_stream = 2 * vectors;
    SCOPED_TRACE(describe(spec, work));
    EXPECT_EQ(vector_timing(spec, work).stall_cycles, std::max<int64_t>(0, 15 - row_stream));
    EXPECT_EQ(vector_timing(spec, work).stall_cycles > 0, row_stream < 15);
    EXPECT_TRUE(closed_form_equals_cycle_model(spec, work));
  }
}

TEST(VectorTimingHandWorked, TheStallDisappearsWhenRowsAreMany) {
  // One vector per row (W = 2): the stall is max(0, 15 - 2(R-1)): 15, 13, 1 at R = 1, 2, 8; none from
  // R = 9 on, where the other rows' pass 1 covers row 0's wait.
  const VectorSpec spec = make_spec(8, 8, 6);
  const std::vector<std::pair<int64_t, int64_t>> rows_and_stall = {{1, 15}, {2, 13}, {8, 1}, {9, 0}, {64, 0}};
  for (const auto& [rows, stall] : rows_and_stall) {
    const VectorWork work = make_work(VectorKind::rmsnorm, rows, 8);
    SCOPED_TRACE(describe(spec, work));
    EXPECT_EQ(vector_timing(spec, work).stall_cycles, stall);
    EXPECT_EQ(vector_timing(spec, work).cycles, 4 * rows + stall + 6);  // busy 2R + 2R, drain latency 6
    EXPECT_TRUE(closed_form_equals_cycle_model(spec, work));
  }
}

// ---- against the cycle model ----

struct KindCase {
  const char* name;
  VectorWork work;               // rows and cols are set by the sweep
  int rope_rotated_percent = 0;  // rope: of the cols the sweep sets, the share rotated (at least 1)
};

const std::vector<KindCase>& kind_cases() {
  static const std::vector<KindCase> cases = {
      {"map_add", map_work(1, 1, 1, 0)},
      {"map_bias_gelu", map_work(1, 1, 5, 1)},
      {"map_exp", map_work(1, 1, 0, 1)},
      {"reduce_sum", make_work(VectorKind::reduce_sum, 1, 1)},
      {"reduce_max", make_work(VectorKind::reduce_max, 1, 1)},
      {"softmax", softmax_work(1, 1, 0)},
      {"softmax_scaled_masked", softmax_work(1, 1, 2)},
      {"layernorm", make_work(VectorKind::layernorm, 1, 1)},
      {"rmsnorm", make_work(VectorKind::rmsnorm, 1, 1)},
      {"layernorm_of_x_plus_y", norm_plus_tile_work(VectorKind::layernorm)},
      {"rmsnorm_of_x_plus_y", norm_plus_tile_work(VectorKind::rmsnorm)},
      {"pool_max_3x3", pool_work(1, 1, 9, false)},
      {"pool_avg_2x2", pool_work(1, 1, 4, true)},
      {"online_softmax", online_softmax_work(1, 1, 0)},
      {"online_softmax_scaled_masked", online_softmax_work(1, 1, 2)},
      {"scale_rows", make_work(VectorKind::scale_rows, 1, 1)},
      {"merge_partials_2", merge_work(1, 1, 2)},
      {"merge_partials_7", merge_work(1, 1, 7)},
      {"weighted_sum_1", weighted_sum_work(1, 1, 1, false)},
      {"weighted_sum_8_plus_y", weighted_sum_work(1, 1, 8, true)},
      {"rope", make_work(VectorKind::rope, 1, 1), 100},
      {"rope_partial_rotary", make_work(VectorKind::rope, 1, 1), 25},
  };
  return cases;
}

// gtest names a failing case's parameter by this.
void PrintTo(const KindCase& c, std::ostream* out) {
  *out << c.name;
}

class VectorTimingSweep : public ::testing::TestWithParam<KindCase> {};

// lanes x special_per_cycle x latency x rows x cols, invalid and repeated values skipped.
TEST_P(VectorTimingSweep, ClosedFormEqualsTheCycleModelOverTheSweep) {
  int checked = 0;
  int failures = 0;
  for (const int lanes : {1, 2, 3, 8, 16, 64, 128}) {
    std::vector<int> specials;
    for (const int special : {1, 2, lanes / 4, lanes})
      if (special >= 1 && special <= lanes &&
          std::find(specials.begin(), specials.end(), special) == specials.end())
        specials.push_back(special);
    std::vector<int64_t> widths;
    for (const int64_t cols : {int64_t{1}, int64_t{lanes} - 1, int64_t{lanes}, int64_t{lanes} + 1,
                               3 * int64_t{lanes}, int64_t{1000}})
      if (cols >= 1 && std::find(widths.begin(), widths.end(), cols) == widths.end()) widths.push_back(cols);
    for (const int special : specials) {
      for (const int latency : {0, 1, 6, 30}) {
        const VectorSpec spec = make_spec(lanes, special, latency);
        for (const int64_t rows : {1, 2, 7, 64}) {
          for (const int64_t cols : widths) {
            VectorWork work = GetParam().work;
            work.rows = rows;
            work.cols = cols;
            work.rope_rotated_cols = std::max<int64_t>(1, cols * GetParam().rope_rotated_percent / 100);
            ++checked;
            const auto matches = closed_form_equals_cycle_model(spec, work);
            EXPECT_TRUE(matches);
            if (!matches && ++failures == 5) return;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 1900);
}

INSTANTIATE_TEST_SUITE_P(EveryKind, VectorTimingSweep, ::testing::ValuesIn(kind_cases()),
                         [](const ::testing::TestParamInfo<KindCase>& info) {
                           return std::string(info.param.name);
                         });

// Random machines and instructions: lanes 1..40, any valid special rate, latency 0..40, rows 1..12, cols
// 1..300, every kind with random parameters; the seed picks the kind round-robin.
std::pair<VectorSpec, VectorWork> random_case(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](int64_t low, int64_t high) {
    return std::uniform_int_distribution<int64_t>(low, high)(rng);
  };
  const int lanes = static_cast<int>(uniform(1, 40));
  const VectorSpec spec = make_spec(lanes, static_cast<int>(uniform(1, lanes)),
                                    static_cast<int>(uniform(0, 1) == 0 ? uniform(0, 4) : uniform(5, 40)));
  static const VectorKind kinds[] = {
      VectorKind::map,        VectorKind::reduce_sum,     VectorKind::reduce_max, VectorKind::softmax,
      VectorKind::layernorm,  VectorKind::rmsnorm,        VectorKind::pool,       VectorKind::online_softmax,
      VectorKind::scale_rows, VectorKind::merge_partials, VectorKind::rope,       VectorKind::weighted_sum,
      VectorKind::route};
  VectorWork work = make_work(kinds[seed % std::size(kinds)], uniform(1, 12), uniform(1, 300));
  work.map_simple_ops = uniform(0, 6);
  work.map_special_ops = work.map_simple_ops == 0 ? uniform(1, 3) : uniform(0, 3);
  work.softmax_extra_simple_ops = uniform(0, 3);
  work.pool_window = uniform(1, 12);
  work.pool_average = uniform(0, 1) == 1;
  work.norm_adds_tile = uniform(0, 1) == 1;
  work.merge_parts = uniform(1, 9);
  work.rope_rotated_cols = uniform(1, work.cols);
  work.weighted_adds_tile = uniform(0, 1) == 1;
  if (work.kind == VectorKind::route) {  // groups of 1..8 experts, some kept, top_k of the kept experts
    work.route_groups = uniform(1, 8);
    work.cols = work.route_groups * uniform(1, 8);
    work.route_topk_groups = uniform(1, work.route_groups);
    work.route_top_k =
        uniform(1, std::min<int64_t>(6, work.route_topk_groups * (work.cols / work.route_groups)));
    work.route_sigmoid = uniform(0, 1) == 1;
  }
  return {spec, work};
}

constexpr uint64_t kRandomSeeds = 4000;

TEST(VectorTimingVsCycleModel, ClosedFormEqualsTheCycleModelOnRandomInstructions) {
  int failures = 0;
  for (uint64_t seed = 0; seed < kRandomSeeds && failures < 5; ++seed) {
    const auto [spec, work] = random_case(seed);
    const auto matches = closed_form_equals_cycle_model(spec, work);
    EXPECT_TRUE(matches) << "seed " << seed;
    if (!matches) ++failures;
  }
}

// ---- SRAM traffic ----

TEST(VectorSramTraffic, EachPassReadsAndWritesItsTilesHandComputed) {
  // 4 x 10 tile, bf16 input and output (2 B), fp32 gamma/beta (4 B): a tile is 40 elements = 80 B.
  const VectorElementBytes bytes{2, 2, 4};
  struct Expected {
    VectorWork work;
    std::vector<std::pair<int64_t, int64_t>> read_write;  // per pass
  };
  const std::vector<Expected> cases = {
      {map_work(4, 10, 5, 1), {{80, 80}}},
      // one sum per row: 4 x 2 B written
      {make_work(VectorKind::reduce_sum, 4, 10), {{80, 8}}},
      {make_work(VectorKind::reduce_max, 4, 10), {{80, 8}}},
      // max: reads x; exp: reads x, writes the exp values into the output; normalise: reads them back, writes
      {softmax_work(4, 10, 2), {{80, 0}, {80, 80}, {80, 80}}},
      // sum, deviations: read x; last pass reads x and the gamma and beta rows again for each of the 4 rows:
      // 80 + 2 x 40 x 4 B = 400
      {make_work(VectorKind::layernorm, 4, 10), {{80, 0}, {80, 0}, {400, 80}}},
      // last pass: x and gamma: 80 + 40 x 4 = 240
      {make_work(VectorKind::rmsnorm, 4, 10), {{80, 0}, {240, 80}}},
      // of x + y: the first pass reads x and y and writes their sum into the output tile; the later passes
      // read the sum back instead of x (same sizes: bf16 storage)
      {[] {
         VectorWork work = make_work(VectorKind::layernorm, 4, 10);
         work.norm_adds_tile = true;
         return work;
       }(),
       {{160, 80}, {80, 0}, {400, 80}}},
      {[] {
         VectorWork work = make_work(VectorKind::rmsnorm, 4, 10);
         work.norm_adds_tile = true;
         return work;
       }(),
       {{160, 80}, {240, 80}}},
      // each of the 40 outputs reads its 3x3 window: 40 x 9 x 2 B = 720
      {pool_work(4, 10, 9, false), {{720, 80}}},
      // online softmax (fp32 statistics, 3 words a row): max reads x; exp reads x and the old max and sum
      // (4 rows x 2 x 4 B), writes p and the new max, sum and correction (4 rows x 3 x 4 B); a first tile
      // reads no statistics
      {online_softmax_work(4, 10, 0), {{80, 0}, {80 + 32, 80 + 48}}},
      {[] {
         VectorWork work = online_softmax_work(4, 10, 0);
         work.online_first = true;
         return work;
       }(),
       {{80, 0}, {80, 80 + 48}}},
      // scale_rows: x and each row's factor (4 x 4 B), the scaled tile written
      {make_work(VectorKind::scale_rows, 4, 10), {{80 + 16, 80}}},
      // merge of 3 parts: each part's tile and its max and sum (4 rows x 3 parts x 2 x 4 B), the merged tile
      // written
      {merge_work(4, 10, 3), {{3 * 80 + 96, 80}}},
      {pool_work(4, 10, 4, true), {{320, 80}}},
      // rope, 6 of the 10 columns rotated: x's 24 rotated elements and a table word each (4 B), written;
      // then the 16 others read and written
      {rope_work(4, 10, 6), {{48 + 96, 48}, {32, 32}}},
      // weighted sum of 3 parts (3 input tiles) and their fp32 weights (4 rows x 3 x 4 B), [+ the tile at y]
      {weighted_sum_work(4, 10, 3, false), {{3 * 80 + 48, 80}}},
      {weighted_sum_work(4, 10, 3, true), {{4 * 80 + 48, 80}}},
  };
  for (const Expected& c : cases) {
    SCOPED_TRACE(name_of(c.work.kind));
    const VectorSramTraffic traffic = vector_sram_traffic(c.work, bytes);
    ASSERT_EQ(traffic.passes, static_cast<int>(c.read_write.size()));
    int64_t reads = 0, writes = 0;
    for (int p = 0; p < traffic.passes; ++p) {
      EXPECT_EQ(traffic.pass[p].read_bytes, c.read_write[p].first) << "pass " << p + 1;
      EXPECT_EQ(traffic.pass[p].write_bytes, c.read_write[p].second) << "pass " << p + 1;
      reads += c.read_write[p].first;
      writes += c.read_write[p].second;
    }
    EXPECT_EQ(traffic.read_bytes, reads);
    EXPECT_EQ(traffic.write_bytes, writes);
  }
}

TEST(VectorSramTraffic, AnInvalidTileOrBytesPastInt64AreInputErrors) {
  EXPECT_EQ(
      input_error_of([] { vector_sram_traffic(make_work(VectorKind::rmsnorm, 0, 8), VectorElementBytes{}); }),
      "vector rmsnorm: rows must be >= 1, got 0");
  EXPECT_EQ(input_error_of([] {
              vector_sram_traffic(make_work(VectorKind::layernorm, int64_t{1} << 40, int64_t{1} << 21),
                                  VectorElementBytes{});
            }),
            "vector layernorm: the SRAM bytes of 1099511627776 x 2097152 elements overflow int64");
}

}  // namespace
}  // namespace tessera::arch
