// arch::PeArrayTiming (the closed form) against hand-worked schedules and against the per-cycle reference
// model of docs/pe-array-timing.md (tests/models/pe_cycle_model), which steps every register of the array.
#include "arch/timing/pe_timing.hpp"

#include <gtest/gtest.h>

#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "models/pe_cycle_model.hpp"

namespace tessera::arch {
namespace {

using testmodels::PeModelInstruction;
using testmodels::PeModelRun;

struct ArrayCase {
  int rows = 1;
  int cols = 1;
  Dataflow dataflow = Dataflow::ws;
  FoldOverlap overlap_folds = FoldOverlap::none;
  std::vector<PeModelInstruction> instructions;
};

std::string describe(const ArrayCase& c) {
  std::ostringstream out;
  static const char* const overlap_names[] = {"none", "drain", "full"};
  out << "array " << c.rows << "x" << c.cols << ", dataflow " << name_of(c.dataflow) << ", overlap_folds "
      << overlap_names[static_cast<int>(c.overlap_folds)] << ", instructions (m,n,k,ready):";
  for (const PeModelInstruction& in : c.instructions)
    out << " (" << in.m << "," << in.n << "," << in.k << "," << in.ready_cycle << ")";
  return out.str();
}

// Operands with small, varied values so that a misplaced operand changes the product.
PeModelInstruction make_instruction(int64_t m, int64_t n, int64_t k, int64_t ready_cycle) {
  PeModelInstruction in{m, n, k, ready_cycle, {}, {}};
  for (int64_t e = 0; e < m * k; ++e) in.a.push_back(e % 7 - 3);
  for (int64_t e = 0; e < k * n; ++e) in.w.push_back((e * 3) % 5 - 2);
  return in;
}

std::vector<int64_t> exact_product(const PeModelInstruction& in) {
  std::vector<int64_t> o(in.m * in.n, 0);
  for (int64_t r = 0; r < in.m; ++r)
    for (int64_t c = 0; c < in.n; ++c)
      for (int64_t e = 0; e < in.k; ++e) o[r * in.n + c] += in.a[r * in.k + e] * in.w[e * in.n + c];
  return o;
}

struct ScheduledFold {
  int instruction = 0;
  Fold fold;
  FoldTiming timing;
};

// How the simulator drives the closed form: every fold of an instruction with that instruction's ready
// cycle, in for_each_fold order, one PePipeline carried across instructions.
std::vector<ScheduledFold> closed_form_schedule(const ArrayCase& c) {
  const PeArrayTiming timing(c.rows, c.cols, c.overlap_folds);
  PePipeline pipeline;
  std::vector<ScheduledFold> folds;
  for (size_t index = 0; index < c.instructions.size(); ++index) {
    const PeModelInstruction& in = c.instructions[index];
    timing.for_each_fold(c.dataflow, in.m, in.n, in.k, [&](const Fold& fold) {
      folds.push_back(ScheduledFold{static_cast<int>(index), fold,
                                    timing.schedule(c.dataflow, fold, in.ready_cycle, pipeline)});
    });
  }
  return folds;
}

::testing::AssertionResult run_model(const ArrayCase& c, PeModelRun& run) {
  try {
    run = testmodels::run_pe_cycle_model(c.rows, c.cols, c.dataflow, c.overlap_folds, c.instructions);
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << describe(c) << "\n  the cycle model threw: " << e.what();
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult closed_form_equals_cycle_model(const ArrayCase& c) {
  PeModelRun run;
  if (auto ran = run_model(c, run); !ran) return ran;
  const std::vector<ScheduledFold> closed = closed_form_schedule(c);
  if (closed.size() != run.folds.size()) {
    return ::testing::AssertionFailure() << describe(c) << "\n  closed form has " << closed.size()
                                         << " folds, the cycle model " << run.folds.size();
  }
  for (size_t f = 0; f < closed.size(); ++f) {
    const ScheduledFold& expected = closed[f];
    const testmodels::PeModelFold& modelled = run.folds[f];
    if (expected.instruction != modelled.instruction || expected.fold.rows_used != modelled.rows_used ||
        expected.fold.cols_used != modelled.cols_used || expected.fold.stream != modelled.stream ||
        expected.timing.load_start != modelled.load_start ||
        expected.timing.stream_start != modelled.stream_start ||
        expected.timing.complete != modelled.complete) {
      return ::testing::AssertionFailure()
             << describe(c) << "\n  fold " << f << " (instruction " << expected.instruction << ", sr "
             << expected.fold.rows_used << ", sc " << expected.fold.cols_used << ", L "
             << expected.fold.stream << "): closed form load/stream/complete " << expected.timing.load_start
             << "/" << expected.timing.stream_start << "/" << expected.timing.complete
             << ", cycle model (instruction " << modelled.instruction << ", sr " << modelled.rows_used
             << ", sc " << modelled.cols_used << ", L " << modelled.stream << ") " << modelled.load_start
             << "/" << modelled.stream_start << "/" << modelled.complete;
    }
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult cycle_model_computes_the_product(const ArrayCase& c) {
  PeModelRun run;
  if (auto ran = run_model(c, run); !ran) return ran;
  for (size_t index = 0; index < c.instructions.size(); ++index) {
    const std::vector<int64_t> expected = exact_product(c.instructions[index]);
    if (run.outputs[index] != expected) {
      for (size_t e = 0; e < expected.size(); ++e) {
        if (run.outputs[index][e] != expected[e]) {
          const int64_t n = c.instructions[index].n;
          return ::testing::AssertionFailure()
                 << describe(c) << "\n  instruction " << index << ": O[" << e / n << "," << e % n << "] is "
                 << run.outputs[index][e] << ", A*W gives " << expected[e];
        }
      }
    }
  }
  return ::testing::AssertionSuccess();
}

struct ExpectedFold {
  int64_t load_start;
  int64_t stream_start;
  int64_t complete;
};

// Hand-worked schedules: the closed form and the cycle model must both give exactly these numbers.
void expect_schedule(const ArrayCase& c, const std::vector<ExpectedFold>& expected) {
  SCOPED_TRACE(describe(c));
  const std::vector<ScheduledFold> closed = closed_form_schedule(c);
  PeModelRun run;
  ASSERT_TRUE(run_model(c, run));
  ASSERT_EQ(closed.size(), expected.size());
  ASSERT_EQ(run.folds.size(), expected.size());
  for (size_t f = 0; f < expected.size(); ++f) {
    SCOPED_TRACE("fold " + std::to_string(f));
    EXPECT_EQ(closed[f].timing.load_start, expected[f].load_start);
    EXPECT_EQ(closed[f].timing.stream_start, expected[f].stream_start);
    EXPECT_EQ(closed[f].timing.complete, expected[f].complete);
    EXPECT_EQ(run.folds[f].load_start, expected[f].load_start);
    EXPECT_EQ(run.folds[f].stream_start, expected[f].stream_start);
    EXPECT_EQ(run.folds[f].complete, expected[f].complete);
  }
  EXPECT_TRUE(cycle_model_computes_the_product(c));
}

TEST(PeArrayTimingHandWorked, WsFoldLoadsForSrCyclesThenPsumsDrainThroughAllRows) {
  // 2x2 array, m=3 n=2 k=2: one fold, sr = sc = 2, L = 3. Rows of W shift in at cycles 0 and 1, in place
  // at 2 = stream_start. The last element (s=2) enters row 1 at 2+2+1 = 5 and is in PE(1,1) at 6, where
  // psum (2,1) leaves the bottom row: written at the end of cycle 6, complete = 7 = 2+3+2+2-2.
  ArrayCase c{2,
              2,
              Dataflow::ws,
              FoldOverlap::none,
              {PeModelInstruction{3, 2, 2, 0, {1, 2, 3, 4, 5, 6}, {1, 0, 2, 1}}}};
  expect_schedule(c, {{0, 2, 7}});
  PeModelRun run;
  ASSERT_TRUE(run_model(c, run));
  // [1 2; 3 4; 5 6] * [1 0; 2 1], worked by hand.
  EXPECT_EQ(run.outputs[0], (std::vector<int64_t>{5, 2, 11, 4, 17, 6}));
}

TEST(PeArrayTimingHandWorked, WsWithoutOverlapLoadsTheNextFoldWhenThePreviousCompletes) {
  // 2x2 array, m=3 n=2 k=4: two k-blocks, each sr = sc = 2, L = 3, as above: 0/2/7. The single weight
  // register is reloaded only after fold 0 completes: load 7..8, stream 9, complete 9+3+2+2-2 = 14.
  expect_schedule(ArrayCase{2, 2, Dataflow::ws, FoldOverlap::none, {make_instruction(3, 2, 4, 0)}},
                  {{0, 2, 7}, {7, 9, 14}});
}

TEST(PeArrayTimingHandWorked, WsWithOverlapPreloadsOnceEveryPeOfThePreviousFoldHasSwitched) {
  // As above with shadow registers. Fold 0: 0/2/7; its last PE, PE(1,1), switches at 2+1+1 = 4, so fold 1
  // shifts into the shadows at 5..6 and is in place at 7; fold 0's stream left the left edge free from
  // 2+3 = 5, so fold 1 streams at max(7, 5) = 7 and completes at 7+3+2+2-2 = 12.
  expect_schedule(ArrayCase{2, 2, Dataflow::ws, FoldOverlap::full, {make_instruction(3, 2, 4, 0)}},
                  {{0, 2, 7}, {5, 7, 12}});
}

TEST(PeArrayTimingHandWorked, WsRaggedFoldsStillDrainThroughAllRows) {
  // 3x2 array, m=2 n=3 k=4, overlap: folds (sr,sc) = (3,2) (1,2) (3,1) (1,1), n-blocks outer, L = 2, R = 3.
  // f0: load 0..2, stream 3, complete 3+2+3+2-2 = 8; last switch PE(2,1) at 3+2+1 = 6.
  // f1: load 7, in place 8, edge free since 3+2 = 5: stream 8; its psums still pass all 3 rows:
  //     complete 8+2+3+2-2 = 13; last switch PE(0,1) at 8+0+1 = 9.
  // f2: load 10..12, stream 13 (edge free since 10), complete 13+2+3+1-2 = 17; last switch PE(2,0) at 15.
  // f3: load 16, in place 17, edge free since 15: stream 17, complete 17+2+3+1-2 = 21.
  expect_schedule(ArrayCase{3, 2, Dataflow::ws, FoldOverlap::full, {make_instruction(2, 3, 4, 0)}},
                  {{0, 3, 8}, {7, 8, 13}, {10, 13, 17}, {16, 17, 21}});
}

TEST(PeArrayTimingHandWorked, WsDrainPreloadsUnderTheDrainNotUnderTheStream) {
  // 2x2 array, m=6 n=2 k=4: two k-blocks, sr = sc = 2, L = 6. Fold 0: load 0..1, stream 2, complete
  // 2+6+2+2-2 = 10. Its last PE switches at 2+1+1 = 4, its stream has all entered at 2+6 = 8.
  // full:  fold 1 shifts into the shadows at 5..6, streams when the edge frees at 8, completes 16;
  // drain: fold 1 shifts in once fold 0's stream has entered, 8..9, streams at 10, completes 18 (fold 0's
  //        psums drain through the rows meanwhile);
  // none:  fold 1 loads when fold 0 completes, 10..11, streams at 12, completes 20.
  expect_schedule(ArrayCase{2, 2, Dataflow::ws, FoldOverlap::full, {make_instruction(6, 2, 4, 0)}},
                  {{0, 2, 10}, {5, 8, 16}});
  expect_schedule(ArrayCase{2, 2, Dataflow::ws, FoldOverlap::drain, {make_instruction(6, 2, 4, 0)}},
                  {{0, 2, 10}, {8, 10, 18}});
  expect_schedule(ArrayCase{2, 2, Dataflow::ws, FoldOverlap::none, {make_instruction(6, 2, 4, 0)}},
                  {{0, 2, 10}, {10, 12, 20}});
}

TEST(PeArrayTimingHandWorked, OsDrainStartsTheNextFoldWhenItsAccumulatorsAreFree) {
  // 2x3 array, m=4 n=3 k=2: two m-blocks, sr = 2, sc = 3, L = 2. Fold 0 streams at 0 and completes at
  // 0+2+2*2+3-2 = 7. PE(0,0) does its last MAC at 1, sends its result up at 2 and forwards row 1's (sent
  // by PE(1,0) at 3) at 4: its one accumulator is free from 5 = 0+2+2*2-1, and fold 1's first MAC reaches
  // it at its stream start. drain: fold 1 streams at 5, completes 12; none: at 7, completes 14; full (a
  // second accumulator): at 3, when its first result leaves the top after fold 0's last, completes 10.
  expect_schedule(ArrayCase{2, 3, Dataflow::os, FoldOverlap::drain, {make_instruction(4, 3, 2, 0)}},
                  {{0, 0, 7}, {5, 5, 12}});
  expect_schedule(ArrayCase{2, 3, Dataflow::os, FoldOverlap::none, {make_instruction(4, 3, 2, 0)}},
                  {{0, 0, 7}, {7, 7, 14}});
  expect_schedule(ArrayCase{2, 3, Dataflow::os, FoldOverlap::full, {make_instruction(4, 3, 2, 0)}},
                  {{0, 0, 7}, {3, 3, 10}});
}

// The published per-fold conventions (docs/pe-array-timing.md, "Overlap levels and SCALE-Sim"): SCALE-Sim
// v2 (scalesim/compute/systolic_compute_{ws,os}.py) runs each fold of an R x C array in 2R + C + T - 2
// cycles for WS and IS and T + R + C - 2 for OS, T the stream length, edge folds padded to the full array.
// On folds that fill the array tessera's none equals its WS and IS exactly, and drain its OS to one cycle a
// fold; 256^3 on 32x32 (64 folds).
TEST(PeArrayTiming, OverlapLevelsAgainstScaleSimsPerFoldFormulas) {
  auto total = [](Dataflow dataflow, FoldOverlap overlap) {
    const PeArrayTiming timing(32, 32, overlap);
    PePipeline pipeline;
    int64_t end = 0;
    timing.for_each_fold(dataflow, 256, 256, 256, [&](const Fold& fold) {
      end = std::max(end, timing.schedule(dataflow, fold, 0, pipeline).complete);
    });
    return end;
  };
  const int64_t folds = 64, T = 256, R = 32, C = 32;
  EXPECT_EQ(total(Dataflow::ws, FoldOverlap::none), folds * (2 * R + C + T - 2));
  EXPECT_EQ(total(Dataflow::is, FoldOverlap::none), folds * (2 * R + C + T - 2));
  // OS, SCALE-Sim 64 x 318 = 20,352: none 64 x 350 = 22,400 (each fold's drain of 2R + C - 2 exposed);
  // drain 63 x 319 + 350 = 20,447 (+0.5%: a result climbs one row per cycle and the accumulator it leaves
  // is reused when the last one has passed, 2R - 1 after the stream, against SCALE-Sim's R + C - 2); full
  // 63 x 256 + 350 = 16,478 (-19%: the next fold streams right behind this one).
  EXPECT_EQ(folds * (T + R + C - 2), 20352);
  EXPECT_EQ(total(Dataflow::os, FoldOverlap::none), folds * (T + 2 * R + C - 2));
  EXPECT_EQ(total(Dataflow::os, FoldOverlap::drain), (folds - 1) * (T + 2 * R - 1) + (T + 2 * R + C - 2));
  EXPECT_EQ(total(Dataflow::os, FoldOverlap::full), (folds - 1) * T + (T + 2 * R + C - 2));
  // WS and IS, drain: a fold every T + R cycles (the preload after the stream, under the drain); full:
  // every T (the preload under the stream, T > R).
  EXPECT_EQ(total(Dataflow::ws, FoldOverlap::drain), (folds - 1) * (T + R) + (2 * R + C + T - 2));
  EXPECT_EQ(total(Dataflow::ws, FoldOverlap::full), (folds - 1) * T + (2 * R + C + T - 2));
}

TEST(PeArrayTimingHandWorked, IsStreamsTheColumnsOfWPastStationaryInputs) {
  // 2x3 array, m=3 n=4 k=2: one fold of A^T, sr = k = 2, sc = m = 3, L = n = 4. Load 0..1, stream 2; the
  // last psum (s=3, column 2) leaves the bottom at 2+3+1+2 = 8: complete 9 = 2+4+2+3-2.
  expect_schedule(ArrayCase{2, 3, Dataflow::is, FoldOverlap::none, {make_instruction(3, 4, 2, 0)}},
                  {{0, 2, 9}});
}

TEST(PeArrayTimingHandWorked, OsResultsLeaveTheTopTwoCyclesPerRow) {
  // 2x2 array, m=2 n=2 k=3: one fold, sr = sc = 2, L = 3, stream 0 (no load). PE(1,1)'s last MAC is at
  // 0+2+1+1 = 4; it sends its result up at 5, PE(0,1) forwards it at 6 through the top edge: complete 7
  // = 0+3+2*2+2-2.
  expect_schedule(ArrayCase{2, 2, Dataflow::os, FoldOverlap::none, {make_instruction(2, 2, 3, 0)}},
                  {{0, 0, 7}});
}

TEST(PeArrayTimingHandWorked, OsWithOverlapWaitsForThePreviousFoldsLastResultAtTheTop) {
  // 4x1 array, m=8 n=1 k=2: two m-blocks, sr = 4, sc = 1, L = 2. Fold 0 streams at 0; its last result (row
  // 3) leaves the top at 0+2+0+2*3 = 8: complete 9. Fold 1's first result (row 0) leaves at its
  // stream_start + 2, which must be after 8, so it streams at 7 (not at 2, when the operand edges free up)
  // and completes at 7+2+8+1-2 = 16.
  expect_schedule(ArrayCase{4, 1, Dataflow::os, FoldOverlap::full, {make_instruction(8, 1, 2, 0)}},
                  {{0, 0, 9}, {7, 7, 16}});
  // With one accumulator fold 1 waits for fold 0 to complete: 9, complete 18.
  expect_schedule(ArrayCase{4, 1, Dataflow::os, FoldOverlap::none, {make_instruction(8, 1, 2, 0)}},
                  {{0, 0, 9}, {9, 9, 18}});
}

TEST(PeArrayTimingHandWorked, ReadyCycleHoldsBackTheNextInstructionsLoad) {
  // Two one-fold WS instructions on 2x2 (m=3 n=2 k=2, the first test's shape: 0/2/7).
  // Overlap, second ready at 3: shadows free from 5 (as in the overlap test), so load 5, stream 7, 12.
  expect_schedule(ArrayCase{2,
                            2,
                            Dataflow::ws,
                            FoldOverlap::full,
                            {make_instruction(3, 2, 2, 0), make_instruction(3, 2, 2, 3)}},
                  {{0, 2, 7}, {5, 7, 12}});
  // Overlap, second ready at 20: the array idles until then: load 20, stream 22, complete 27.
  expect_schedule(ArrayCase{2,
                            2,
                            Dataflow::ws,
                            FoldOverlap::full,
                            {make_instruction(3, 2, 2, 0), make_instruction(3, 2, 2, 20)}},
                  {{0, 2, 7}, {20, 22, 27}});
  // No overlap, second ready at 3: it waits for the first to complete: load 7, stream 9, complete 14.
  expect_schedule(ArrayCase{2,
                            2,
                            Dataflow::ws,
                            FoldOverlap::none,
                            {make_instruction(3, 2, 2, 0), make_instruction(3, 2, 2, 3)}},
                  {{0, 2, 7}, {7, 9, 14}});
}

// Random instruction streams: array 1..6 x 1..6, m, n, k in 1..17 (ragged against the array on purpose),
// 1..4 instructions with non-decreasing ready cycles, sometimes equal, sometimes close, sometimes far apart.
// The seed picks dataflow and overlap level round-robin so every combination gets the same share of seeds.
ArrayCase random_case(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](int64_t low, int64_t high) {
    return std::uniform_int_distribution<int64_t>(low, high)(rng);
  };
  static const Dataflow dataflows[] = {Dataflow::ws, Dataflow::is, Dataflow::os};
  ArrayCase c;
  c.rows = static_cast<int>(uniform(1, 6));
  c.cols = static_cast<int>(uniform(1, 6));
  c.dataflow = dataflows[seed % 3];
  static const FoldOverlap levels[] = {FoldOverlap::none, FoldOverlap::drain, FoldOverlap::full};
  c.overlap_folds = levels[(seed / 3) % 3];
  int64_t ready = uniform(0, 1) == 0 ? 0 : uniform(0, 40);
  const int64_t count = uniform(1, 4);
  for (int64_t index = 0; index < count; ++index) {
    if (index > 0) {
      switch (uniform(0, 3)) {
        case 0:
          break;  // ready together with the previous one
        case 1:
          ready += uniform(1, 4);
          break;  // while the previous one still runs
        case 2:
          ready += uniform(5, 60);
          break;  // around its end
        default:
          ready += uniform(100, 600);
          break;  // after the array has gone idle
      }
    }
    PeModelInstruction in{uniform(1, 17), uniform(1, 17), uniform(1, 17), ready, {}, {}};
    for (int64_t e = 0; e < in.m * in.k; ++e) in.a.push_back(uniform(-4, 4));
    for (int64_t e = 0; e < in.k * in.n; ++e) in.w.push_back(uniform(-4, 4));
    c.instructions.push_back(std::move(in));
  }
  return c;
}

constexpr uint64_t kRandomSeeds = 1350;  // 150 per dataflow and overlap level
constexpr int kFailuresShown = 5;

TEST(PeArrayTimingVsCycleModel, EveryFoldsLoadStreamAndCompleteEqualTheCycleModelOnRandomStreams) {
  int failures = 0;
  for (uint64_t seed = 0; seed < kRandomSeeds && failures < kFailuresShown; ++seed) {
    const ArrayCase c = random_case(seed);
    const auto matches = closed_form_equals_cycle_model(c);
    EXPECT_TRUE(matches) << "seed " << seed;
    if (!matches) ++failures;
  }
}

TEST(PeArrayTimingVsCycleModel, CycleModelOutputEqualsTheExactProductOnRandomStreams) {
  int failures = 0;
  for (uint64_t seed = 0; seed < kRandomSeeds && failures < kFailuresShown; ++seed) {
    const ArrayCase c = random_case(seed);
    const auto computes = cycle_model_computes_the_product(c);
    EXPECT_TRUE(computes) << "seed " << seed;
    if (!computes) ++failures;
  }
}

TEST(PeArrayTiming, FoldsCountsTheFoldsForEachFoldVisits) {
  for (int rows = 1; rows <= 6; ++rows) {
    for (int cols = 1; cols <= 6; ++cols) {
      const PeArrayTiming timing(rows, cols, FoldOverlap::none);
      for (const Dataflow dataflow : {Dataflow::ws, Dataflow::is, Dataflow::os}) {
        for (int64_t m = 1; m <= 17; m += 2) {
          for (int64_t n = 1; n <= 17; n += 3) {
            for (int64_t k = 1; k <= 17; k += 4) {
              int64_t visited = 0;
              timing.for_each_fold(dataflow, m, n, k, [&](const Fold&) { ++visited; });
              ASSERT_EQ(timing.folds(dataflow, m, n, k), visited)
                  << rows << "x" << cols << " " << name_of(dataflow) << " m=" << m << " n=" << n
                  << " k=" << k;
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace tessera::arch
