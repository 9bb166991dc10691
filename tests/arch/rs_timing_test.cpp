// arch::RsTiming (the closed form of docs/pe-array-timing.md, "RS: row stationary") against hand-worked
// schedules and against the per-cycle reference model of the RS array (tests/models/rs_cycle_model), which
// steps the filter buses, the MAC units and their scratchpads, the diagonal input buses and the vertical psum
// chain every cycle, and computes the convolution.
#include <gtest/gtest.h>

#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "arch/timing/rs_timing.hpp"
#include "models/rs_cycle_model.hpp"

namespace tessera::arch {
namespace {

using testmodels::RsModelArray;
using testmodels::RsModelInstruction;
using testmodels::RsModelRun;

struct ConvShape {
  int64_t e = 1, q = 1, m = 1, c = 1, r = 1, s = 1;
  int64_t stride = 1, dilation = 1, pad_top = 0, pad_left = 0;
};

struct ConvCase {
  RsModelArray array;
  DType dtype = DType::bf16;
  std::vector<RsModelInstruction> instructions;
};

std::string describe(const ConvCase& c) {
  std::ostringstream out;
  out << "array " << c.array.rows << "x" << c.array.cols << ", overlap_folds "
      << (c.array.overlap_folds == FoldOverlap::full    ? "full"
          : c.array.overlap_folds == FoldOverlap::drain ? "drain"
                                                        : "none")
      << ", F/I/P " << c.array.filter_words << "/" << c.array.ifmap_words << "/" << c.array.psum_words
      << " words (" << name_of(c.dtype)
      << "), instructions (e,q,m,c,r,s stride dilation pad_top pad_left, ih x iw, ready):";
  for (const RsModelInstruction& in : c.instructions) {
    out << " (" << in.e << "," << in.q << "," << in.m << "," << in.c << "," << in.r << "," << in.s << " "
        << in.stride << " " << in.dilation << " " << in.pad_top << " " << in.pad_left << ", " << in.ih << "x"
        << in.iw << ", " << in.ready_cycle << ")";
  }
  return out.str();
}

// An instruction with varied small operands. The input tile covers every pixel the outputs read below and
// right of the top-left padding, less `trim` rows and columns at the bottom and right (padding there too).
RsModelInstruction make_instruction(const ConvShape& shape, int64_t ready_cycle, uint64_t seed,
                                    int64_t trim = 0) {
  RsModelInstruction in;
  in.e = shape.e, in.q = shape.q, in.m = shape.m, in.c = shape.c, in.r = shape.r, in.s = shape.s;
  in.stride = shape.stride, in.dilation = shape.dilation, in.pad_top = shape.pad_top;
  in.pad_left = shape.pad_left;
  in.ih = std::max<int64_t>(
      1, (shape.e - 1) * shape.stride + (shape.r - 1) * shape.dilation + 1 - shape.pad_top - trim);
  in.iw = std::max<int64_t>(
      1, (shape.q - 1) * shape.stride + (shape.s - 1) * shape.dilation + 1 - shape.pad_left - trim);
  in.ready_cycle = ready_cycle;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> value(-4, 4);
  in.input.resize(in.ih * in.iw * in.c);
  for (int64_t& v : in.input) v = value(rng);
  in.filters.resize(in.r * in.s * in.c * in.m);
  for (int64_t& v : in.filters) v = value(rng);
  return in;
}

// docs/pe-array-timing.md, "Convolution instructions": the direct convolution, I zero outside the tile.
std::vector<int64_t> direct_convolution(const RsModelInstruction& in) {
  std::vector<int64_t> o(in.e * in.q * in.m, 0);
  for (int64_t y = 0; y < in.e; ++y)
    for (int64_t x = 0; x < in.q; ++x)
      for (int64_t f = 0; f < in.m; ++f)
        for (int64_t fr = 0; fr < in.r; ++fr)
          for (int64_t fs = 0; fs < in.s; ++fs)
            for (int64_t ch = 0; ch < in.c; ++ch) {
              const int64_t row = y * in.stride + fr * in.dilation - in.pad_top;
              const int64_t col = x * in.stride + fs * in.dilation - in.pad_left;
              if (row < 0 || row >= in.ih || col < 0 || col >= in.iw) continue;
              o[(y * in.q + x) * in.m + f] += in.input[(row * in.iw + col) * in.c + ch] *
                                              in.filters[((fr * in.s + fs) * in.c + ch) * in.m + f];
            }
  return o;
}

// The spec RsTiming reads: the array and the PE scratchpads, in bytes of the operand (filter, input) and
// accumulator (partial sums) types.
ArchSpec spec_of(const ConvCase& c) {
  ArchSpec spec;
  spec.core.pe_array.rows = c.array.rows;
  spec.core.pe_array.cols = c.array.cols;
  spec.core.pe_array.overlap_folds = c.array.overlap_folds;
  spec.core.pe_array.dataflows = {Dataflow::rs};
  spec.core.pe_array.dtypes = {c.dtype};
  spec.core.pe_spad =
      PeSpadSpec{c.array.filter_words * size_bytes(c.dtype), c.array.ifmap_words * size_bytes(c.dtype),
                 c.array.psum_words * size_bytes(accumulator_of(c.dtype))};
  spec.derive();
  return spec;
}

ConvTileShape tile_shape(const RsModelInstruction& in) {
  return ConvTileShape{in.e, in.q, in.m, in.c, in.r, in.s, in.ih, in.iw};
}

struct ScheduledRound {
  int instruction = 0;
  RsRound round;
  RsRoundTiming timing;
};

// How the simulator drives the closed form (sim/pe_unit): every round of an instruction with that
// instruction's ready cycle, in for_each_round order, one RsPipeline carried across instructions.
std::vector<ScheduledRound> closed_form_schedule(const ConvCase& c) {
  const RsTiming timing(spec_of(c));
  RsPipeline pipeline;
  std::vector<ScheduledRound> rounds;
  for (size_t index = 0; index < c.instructions.size(); ++index) {
    const RsModelInstruction& in = c.instructions[index];
    timing.for_each_round(tile_shape(in), c.dtype, [&](const RsRound& round) {
      rounds.push_back(
          ScheduledRound{static_cast<int>(index), round, timing.schedule(round, in.ready_cycle, pipeline)});
    });
  }
  return rounds;
}

::testing::AssertionResult run_model(const ConvCase& c, RsModelRun& run) {
  try {
    run = testmodels::run_rs_cycle_model(c.array, c.instructions);
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << describe(c) << "\n  the cycle model threw: " << e.what();
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult folding_equals_plan(const ConvCase& c, const RsModelRun& run) {
  const RsTiming timing(spec_of(c));
  for (size_t index = 0; index < c.instructions.size(); ++index) {
    const RsPlan p = timing.plan(tile_shape(c.instructions[index]), c.dtype);
    const testmodels::RsModelFolding& f = run.foldings[index];
    const int64_t closed[] = {p.set_rows,       p.row_chunks,      p.strip_cols,     p.strips,
                              p.bands,          p.channels_per_pe, p.filters_per_pe, p.filter_groups,
                              p.channel_groups, p.units,           p.rounds};
    const int64_t modelled[] = {f.set_rows,       f.row_chunks,      f.strip_cols,     f.strips,
                                f.bands,          f.channels_per_pe, f.filters_per_pe, f.filter_groups,
                                f.channel_groups, f.units,           f.rounds};
    static const char* names[] = {"set_rows",       "row_chunks",      "strip_cols",     "strips",
                                  "bands",          "channels_per_pe", "filters_per_pe", "filter_groups",
                                  "channel_groups", "units",           "rounds"};
    for (size_t field = 0; field < std::size(closed); ++field) {
      if (closed[field] != modelled[field]) {
        return ::testing::AssertionFailure()
               << describe(c) << "\n  instruction " << index << ": plan()." << names[field] << " is "
               << closed[field] << ", the cycle model's folding " << modelled[field];
      }
    }
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult closed_form_equals_cycle_model(const ConvCase& c) {
  RsModelRun run;
  if (auto ran = run_model(c, run); !ran) return ran;
  if (auto folded = folding_equals_plan(c, run); !folded) return folded;
  const std::vector<ScheduledRound> closed = closed_form_schedule(c);
  if (closed.size() != run.rounds.size()) {
    return ::testing::AssertionFailure() << describe(c) << "\n  closed form has " << closed.size()
                                         << " rounds, the cycle model " << run.rounds.size();
  }
  for (size_t g = 0; g < closed.size(); ++g) {
    const ScheduledRound& expected = closed[g];
    const testmodels::RsModelRound& modelled = run.rounds[g];
    const RsRoundTiming& t = expected.timing;
    if (expected.instruction != modelled.instruction || expected.round.pes != modelled.pes ||
        t.load_start != modelled.load_start || t.load_start + expected.round.load != modelled.loaded ||
        t.compute_start != modelled.compute_start ||
        t.compute_start + expected.round.compute != modelled.computed || t.complete != modelled.complete) {
      return ::testing::AssertionFailure()
             << describe(c) << "\n  round " << g << " (instruction " << expected.instruction << ", load "
             << expected.round.load << ", compute " << expected.round.compute << ", drain "
             << expected.round.drain << "): closed form PEs " << expected.round.pes
             << ", load_start/loaded/compute_start/computed/complete " << t.load_start << "/"
             << t.load_start + expected.round.load << "/" << t.compute_start << "/"
             << t.compute_start + expected.round.compute << "/" << t.complete << "; cycle model (instruction "
             << modelled.instruction << ", " << modelled.units << " units) PEs " << modelled.pes << ", "
             << modelled.load_start << "/" << modelled.loaded << "/" << modelled.compute_start << "/"
             << modelled.computed << "/" << modelled.complete << " (psum path waits " << run.psum_path_waits
             << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult cycle_model_computes_the_convolution(const ConvCase& c) {
  RsModelRun run;
  if (auto ran = run_model(c, run); !ran) return ran;
  int64_t macs = 0;
  for (size_t index = 0; index < c.instructions.size(); ++index) {
    const RsModelInstruction& in = c.instructions[index];
    macs += in.e * in.q * in.m * in.c * in.r * in.s;
    const std::vector<int64_t> expected = direct_convolution(in);
    for (size_t o = 0; o < expected.size(); ++o) {
      if (run.outputs[index][o] != expected[o]) {
        return ::testing::AssertionFailure()
               << describe(c) << "\n  instruction " << index << ": O[" << o / in.m / in.q << "]["
               << o / in.m % in.q << "][" << o % in.m << "] is " << run.outputs[index][o]
               << ", the direct convolution gives " << expected[o];
      }
    }
  }
  if (run.macs != macs) {
    return ::testing::AssertionFailure()
           << describe(c) << "\n  the cycle model performed " << run.macs << " MACs, e*q*m*c*r*s = " << macs;
  }
  return ::testing::AssertionSuccess();
}

ConvCase one_instruction(int rows, int cols, int64_t filter_words, int64_t ifmap_words, int64_t psum_words,
                         const ConvShape& shape, int64_t trim = 0) {
  return ConvCase{RsModelArray{rows, cols, FoldOverlap::none, filter_words, ifmap_words, psum_words},
                  DType::bf16,
                  {make_instruction(shape, 0, 17, trim)}};
}

ConvCase with_overlap(ConvCase c, FoldOverlap overlap_folds) {
  c.array.overlap_folds = overlap_folds;
  return c;
}

// Eyeriss (Chen et al., ISSCC 2016 / JSSC 2017): 12 x 14 PEs, 224 filter, 12 input and 24 partial-sum words
// per PE for 16-bit operands.
ConvCase eyeriss(const std::vector<ConvShape>& shapes, const std::vector<int64_t>& ready_cycles) {
  ConvCase c{RsModelArray{12, 14, FoldOverlap::none, 224, 12, 24}, DType::bf16, {}};
  for (size_t index = 0; index < shapes.size(); ++index)
    c.instructions.push_back(make_instruction(shapes[index], ready_cycles[index], 100 + index));
  return c;
}

// AlexNet's convolutions as Eyeriss runs them, with q, m, c reduced where noted to keep the model quick.
const ConvShape kAlexNetConv1{55, 3, 24, 3, 11, 11, 4, 1, 0, 0};  // q = 3 of 55, m = 24 of 96
const ConvShape kAlexNetConv2{27, 6, 24, 5, 5, 5, 1, 1, 2, 2};    // q = 6 of 27, m = 24 of 256, c = 5 of 48
const ConvShape kAlexNetConv3{13, 13, 20, 10, 3, 3, 1, 1, 1, 1};  // m = 20 of 384, c = 10 of 256

// The sweep: every folding feature of the document at least once, each at every overlap level. Its
// scratchpads and group sizes keep every round's completion clear of the previous round's drain (where they
// meet, the closed form is early: NextRoundsSumsWait... below).
std::vector<ConvCase> sweep_cases() {
  std::vector<ConvCase> cases;
  // r > R: h = 4, row chunks of 4 and 2 rows, one band; pf = 2 of m = 3 (groups 2, 1).
  cases.push_back(one_instruction(4, 5, 12, 6, 4, ConvShape{4, 5, 3, 2, 6, 3}));
  // r > R with one channel per PE (I = s) and three chunks (4, 4, 1 rows).
  cases.push_back(one_instruction(4, 3, 6, 3, 2, ConvShape{3, 4, 2, 1, 9, 3}));
  // e > C: strips 5, 5, 2; two bands, so a round holds the last strip of one filter group and the first of
  // the next.
  cases.push_back(one_instruction(4, 5, 8, 4, 2, ConvShape{12, 6, 3, 2, 2, 2}));
  // e == C: one strip of the full width; qc = 2 of c = 3 (groups 2, 1) in the two bands of one round.
  cases.push_back(one_instruction(4, 5, 8, 4, 2, ConvShape{5, 4, 2, 3, 2, 2}));
  // bands = 3, four units: the last round runs one unit in band 0 only.
  cases.push_back(one_instruction(6, 4, 9, 3, 3, ConvShape{4, 5, 5, 2, 2, 3}));
  // Ragged filter (3, 3, 1) and channel (2, 2, 1) groups, two bands, nine units.
  cases.push_back(one_instruction(4, 6, 12, 4, 3, ConvShape{6, 5, 7, 5, 2, 2}));
  // pf limited by the filter scratchpad rather than the partial-sum one (F / (qc s) = 1 < P).
  cases.push_back(one_instruction(5, 4, 6, 6, 5, ConvShape{4, 4, 3, 4, 2, 3}));
  // Stride 2.
  cases.push_back(one_instruction(4, 5, 12, 6, 2, ConvShape{5, 4, 2, 2, 3, 3, 2, 1, 0, 0}));
  // Stride 3 with taps that skip input columns (stride > s).
  cases.push_back(one_instruction(4, 5, 8, 4, 2, ConvShape{4, 4, 2, 3, 2, 2, 3, 1, 0, 0}));
  // Dilation 2 (with padding on the top and left, and the bottom and right cut off the tile).
  cases.push_back(one_instruction(4, 5, 12, 6, 3, ConvShape{4, 4, 3, 2, 2, 3, 1, 2, 2, 2}, 1));
  // Dilation 2 and stride 2.
  cases.push_back(one_instruction(6, 5, 9, 3, 2, ConvShape{5, 3, 2, 2, 3, 3, 2, 2, 1, 1}));
  // pad_top = 1, pad_left = 2 on a 3x3, tile cut by one row and column on the other sides.
  cases.push_back(one_instruction(6, 6, 12, 6, 3, ConvShape{6, 5, 4, 3, 3, 3, 1, 1, 1, 2}, 1));
  // 1x1 (r = s = 1): h = 1, three bands, two strips.
  cases.push_back(one_instruction(3, 4, 4, 2, 2, ConvShape{6, 5, 4, 6, 1, 1}));
  // 1x1 with stride 2.
  cases.push_back(one_instruction(3, 4, 4, 2, 2, ConvShape{5, 4, 4, 4, 1, 1, 2, 1, 0, 0}));
  // r x 1 (s = 1): taller than wide, two row chunks.
  cases.push_back(one_instruction(3, 4, 4, 2, 2, ConvShape{4, 6, 3, 2, 5, 1}));
  // One PE row and column.
  cases.push_back(one_instruction(1, 1, 4, 2, 2, ConvShape{3, 3, 3, 3, 2, 2}));
  // AlexNet on Eyeriss.
  cases.push_back(eyeriss({kAlexNetConv1}, {0}));
  cases.push_back(eyeriss({kAlexNetConv2}, {0}));
  cases.push_back(eyeriss({kAlexNetConv3}, {0}));
  // Back to back: ready together, ready while the previous one computes, ready after the array went idle.
  {
    ConvCase c = one_instruction(4, 5, 12, 6, 3, ConvShape{4, 5, 3, 2, 2, 3});
    c.instructions.push_back(make_instruction(ConvShape{6, 3, 4, 3, 3, 2, 1, 1, 1, 0}, 0, 18));
    c.instructions.push_back(make_instruction(ConvShape{3, 4, 2, 2, 5, 3}, 40, 19));
    cases.push_back(c);
  }
  {
    ConvCase c = one_instruction(4, 5, 8, 4, 2, ConvShape{7, 4, 3, 2, 2, 2});
    c.instructions.push_back(make_instruction(ConvShape{5, 5, 2, 3, 3, 3, 2, 1, 1, 1}, 3000, 20));
    cases.push_back(c);
  }
  cases.push_back(
      eyeriss({kAlexNetConv3, kAlexNetConv2, ConvShape{13, 5, 6, 4, 3, 3, 1, 1, 1, 1}}, {0, 150, 150}));

  std::vector<ConvCase> both;
  for (const ConvCase& c : cases) {
    for (FoldOverlap overlap : {FoldOverlap::none, FoldOverlap::drain, FoldOverlap::full})
      both.push_back(with_overlap(c, overlap));
  }
  return both;
}

struct ExpectedRound {
  int64_t pes, load_start, loaded, compute_start, computed, complete;
};

std::string describe(const ExpectedRound& r) {
  return "PEs " + std::to_string(r.pes) + ", load_start/loaded/compute_start/computed/complete " +
         std::to_string(r.load_start) + "/" + std::to_string(r.loaded) + "/" +
         std::to_string(r.compute_start) + "/" + std::to_string(r.computed) + "/" +
         std::to_string(r.complete);
}

// Hand-worked schedules: the cycle model and the closed form must both give exactly these numbers.
void expect_schedule(const ConvCase& c, const std::vector<ExpectedRound>& expected) {
  SCOPED_TRACE(describe(c));
  RsModelRun run;
  ASSERT_TRUE(run_model(c, run));
  ASSERT_EQ(run.rounds.size(), expected.size());
  const std::vector<ScheduledRound> closed = closed_form_schedule(c);
  ASSERT_EQ(closed.size(), expected.size());
  for (size_t g = 0; g < expected.size(); ++g) {
    const testmodels::RsModelRound& m = run.rounds[g];
    const ScheduledRound& f = closed[g];
    const ExpectedRound modelled{m.pes, m.load_start, m.loaded, m.compute_start, m.computed, m.complete};
    const ExpectedRound closed_form{f.round.pes,
                                    f.timing.load_start,
                                    f.timing.load_start + f.round.load,
                                    f.timing.compute_start,
                                    f.timing.compute_start + f.round.compute,
                                    f.timing.complete};
    EXPECT_EQ(describe(modelled), describe(expected[g])) << "round " << g << ", the cycle model";
    EXPECT_EQ(describe(closed_form), describe(expected[g])) << "round " << g << ", the closed form";
  }
  EXPECT_TRUE(cycle_model_computes_the_convolution(c));
}

ConvCase with_ready(ConvCase c, const ConvShape& shape, int64_t ready_cycle) {
  c.instructions.push_back(make_instruction(shape, ready_cycle, 23));
  return c;
}

// 2x2 PEs, F/I/P = 4/2/2, a 2x2 filter (r = s = 2) over e = q = 2 outputs of one channel: h = 2, one strip
// of 2 columns, one band; qc = clamp(2/2, 1, 1) = 1, pf = clamp(min(2, 4/2), 1, m) = 2.
const ConvShape kTwoByTwo{2, 2, 2, 1, 2, 2};

TEST(RsTimingHandWorked, OneUnitLoadsItsFilterRowThenComputesThenDrainsUpTheSet) {
  // load pf*qc*s = 4 words over each row's bus: 0..3, in at 4 = compute_start; q*s*pf*qc = 8 MACs: 4..11.
  // Output column 1's sums leave the scratchpads after the MAC at 11; row 1 sends them up at 12, row 0 adds
  // its own at 12 and writes the two sums at 13 and 14: complete 15 = 4 + 8 + (h - 1 + pf).
  const ConvCase c = one_instruction(2, 2, 4, 2, 2, kTwoByTwo);
  expect_schedule(c, {{4, 0, 4, 4, 12, 15}});
}

TEST(RsTimingHandWorked, WithoutOverlapTheNextRoundLoadsWhenThePreviousHasCompleted) {
  // m = 4: two filter groups of pf = 2, one unit each. Round 1's weights replace round 0's only after its
  // last sum is out: load 15..18, compute 19..26, complete 19 + 8 + 3 = 30.
  const ConvCase c = one_instruction(2, 2, 4, 2, 2, ConvShape{2, 2, 4, 1, 2, 2});
  expect_schedule(c, {{4, 0, 4, 4, 12, 15}, {4, 15, 19, 19, 27, 30}});
}

TEST(RsTimingHandWorked, WithOverlapTheNextRoundLoadsIntoTheShadowWhileThePreviousComputes) {
  // As above with shadow filter scratchpads: round 0 switches to its weights at 4, so round 1 loads 4..7;
  // its MACs start when round 0 has drained (15) and take 15..22. Complete 15 + 8 + 3 = 26.
  const ConvCase c =
      with_overlap(one_instruction(2, 2, 4, 2, 2, ConvShape{2, 2, 4, 1, 2, 2}), FoldOverlap::full);
  expect_schedule(c, {{4, 0, 4, 4, 12, 15}, {4, 4, 8, 15, 23, 26}});
}

TEST(RsTimingHandWorked, TwoBandsRunTheStripsOfOneSetSideBySide) {
  // 4x2 PEs, r = 2, s = 1, e = 3: strips of 2 and 1 columns, bands = 4/2 = 2, so both strips run in one
  // round: 2*2 + 2*1 = 6 PEs. Load 1 word, 3 MACs (1..3), sums up at 4, out at 5: complete 6.
  const ConvCase c = one_instruction(4, 2, 1, 1, 1, ConvShape{3, 3, 1, 1, 2, 1});
  expect_schedule(c, {{6, 0, 1, 1, 4, 6}});
}

TEST(RsTimingHandWorked, ReadyCycleHoldsBackTheNextInstructionsLoad) {
  // Two one-round instructions of the first test's shape (0/4/4/12/15), overlap on.
  // Ready at 2: the bus is free at 4 and round 0 has switched at 4: load 4..7, compute 15..22 (after round
  // 0's drain), complete 26.
  const ConvCase overlap = with_overlap(one_instruction(2, 2, 4, 2, 2, kTwoByTwo), FoldOverlap::full);
  expect_schedule(with_ready(overlap, kTwoByTwo, 2), {{4, 0, 4, 4, 12, 15}, {4, 4, 8, 15, 23, 26}});
  // Ready at 40: the array idles until then: load 40..43, compute 44..51, complete 55.
  expect_schedule(with_ready(overlap, kTwoByTwo, 40), {{4, 0, 4, 4, 12, 15}, {4, 40, 44, 44, 52, 55}});
  // No overlap, ready at 2: it waits for the first to complete: load 15, compute 19, complete 30.
  expect_schedule(with_ready(one_instruction(2, 2, 4, 2, 2, kTwoByTwo), kTwoByTwo, 2),
                  {{4, 0, 4, 4, 12, 15}, {4, 15, 19, 19, 27, 30}});
}

TEST(RsTimingVsCycleModel, EveryRoundsLoadComputeCompleteAndPesEqualTheCycleModelOnTheSweep) {
  for (const ConvCase& c : sweep_cases()) EXPECT_TRUE(closed_form_equals_cycle_model(c));
}

TEST(RsTimingVsCycleModel, CycleModelOutputEqualsTheDirectConvolutionOnTheSweep) {
  for (const ConvCase& c : sweep_cases()) EXPECT_TRUE(cycle_model_computes_the_convolution(c));
}

// Random instruction streams: arrays 1..6 x 1..6, shapes ragged against them, scratchpads from barely
// feasible to roomy (the filter scratchpad smaller or larger than the input one), operand types of 1, 2 and
// 4 bytes, 1..3 instructions with non-decreasing ready cycles. The seed takes the overlap levels in turn.
ConvCase random_case(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](int64_t low, int64_t high) {
    return std::uniform_int_distribution<int64_t>(low, high)(rng);
  };
  static const DType dtypes[] = {DType::bf16, DType::int8, DType::fp32};
  ConvCase c;
  c.array.rows = static_cast<int>(uniform(1, 6));
  c.array.cols = static_cast<int>(uniform(1, 6));
  static const FoldOverlap levels[] = {FoldOverlap::none, FoldOverlap::drain, FoldOverlap::full};
  c.array.overlap_folds = levels[seed % 3];
  c.dtype = dtypes[(seed / 3) % 3];
  const int64_t s_max = uniform(1, 4);
  c.array.ifmap_words = uniform(s_max, 3 * s_max + 2);
  c.array.filter_words = uniform(s_max, 3 * c.array.ifmap_words);
  c.array.psum_words = uniform(1, 5);
  int64_t ready = uniform(0, 1) == 0 ? 0 : uniform(0, 40);
  const int64_t count = uniform(1, 3);
  for (int64_t index = 0; index < count; ++index) {
    if (index > 0) {
      switch (uniform(0, 3)) {
        case 0:
          break;  // ready together with the previous one
        case 1:
          ready += uniform(1, 10);
          break;  // while the previous one loads
        case 2:
          ready += uniform(10, 200);
          break;  // while it computes or drains
        default:
          ready += uniform(500, 3000);
          break;  // after the array has gone idle
      }
    }
    const ConvShape shape{uniform(1, 12),    uniform(1, 7), uniform(1, 8), uniform(1, 6), uniform(1, 7),
                          uniform(1, s_max), uniform(1, 3), uniform(1, 2), uniform(0, 2), uniform(0, 2)};
    c.instructions.push_back(make_instruction(shape, ready, seed * 7 + index, uniform(0, 1)));
  }
  return c;
}

constexpr uint64_t kRandomSeeds = 1500;
constexpr int kFailuresShown = 5;

// Exact on every round: load start, weights in, compute start, MACs done, complete, PEs.
TEST(RsTimingVsCycleModel, EveryRoundsLoadComputeCompleteAndPesEqualTheCycleModelOnRandomStreams) {
  int failures = 0;
  for (uint64_t seed = 0; seed < kRandomSeeds && failures < kFailuresShown; ++seed) {
    const auto matches = closed_form_equals_cycle_model(random_case(seed));
    EXPECT_TRUE(matches) << "seed " << seed;
    if (!matches) ++failures;
  }
}

TEST(RsTimingVsCycleModel, CycleModelOutputEqualsTheDirectConvolutionOnRandomStreams) {
  int failures = 0;
  for (uint64_t seed = 0; seed < kRandomSeeds && failures < kFailuresShown; ++seed) {
    const auto computes = cycle_model_computes_the_convolution(random_case(seed));
    EXPECT_TRUE(computes) << "seed " << seed;
    if (!computes) ++failures;
  }
}

// ---- Cases that once separated the closed form from the machine (the document now covers them) ----

TEST(RsTimingVsCycleModel, NextRoundsMacsWaitForThePreviousRoundsDrainSoItsSumsFindTheOutputPortFree) {
  // 1x1 PE, 1x1 filter, e = 1, q = 2, m = 3, c = 1, F/I/P = 2/1/2, overlap on: pf = 2, filter groups 2 and 1.
  // Round 0: load 0..1, MACs 2..5, column 1's two sums leave the (top) row at 6 and 7: complete 8.
  // Round 1: load 2 (shadow); had its MACs started at 6, its first sum would have met round 0's second at
  // the PE's port at 7. It starts when round 0 has drained: MACs 8..9, its sums out at 9 and 10: complete 11.
  const ConvCase c =
      with_overlap(one_instruction(1, 1, 2, 1, 2, ConvShape{1, 2, 3, 1, 1, 1}), FoldOverlap::full);
  expect_schedule(c, {{1, 0, 2, 2, 6, 8}, {1, 2, 3, 8, 10, 11}});
}

TEST(RsTimingVsCycleModel, NextRoundsMacsWaitForThePreviousRoundsDrainSoAShorterSetFindsItsLinksFree) {
  // 3x1 PEs, r = 5 (row chunks of 3 and 2 rows), s = 1, e = 1, q = 2, m = c = 1, F/I/P = 1/1/1, overlap on.
  // Round 0 (rows 0..2): load 0, MACs 1..2; column 1 goes up from row 2 at 3, from row 1 at 4, out at 5:
  // complete 6. Round 1 (rows 0..1): load 1; had its MACs run at 3..4, its column 0 would have needed the
  // link from row 1 at 4, when round 0's column 1 uses it. It starts at 6: MACs 6..7, complete 6 + 2 + 2
  // = 10.
  const ConvCase c =
      with_overlap(one_instruction(3, 1, 1, 1, 1, ConvShape{1, 2, 1, 1, 5, 1}), FoldOverlap::full);
  expect_schedule(c, {{3, 0, 1, 1, 3, 6}, {2, 1, 2, 6, 8, 10}});
}

TEST(RsTimingVsCycleModel, RoundCompletesWhenItsLastUnitHasDrainedNotAtTheLongestComputePlusTheLongestDrain) {
  // 4x3 PEs, r = s = 2, e = 3, q = 1, m = 7, c = 10, F/I/P = 32/8/4, no overlap: h = 2, bands 2, one strip;
  // at most 4 channels a PE, so 3 channel groups evened out to qc = 4 (4, 4, 2); at most min(4, 32/8) = 4
  // filters, so 2 filter groups of pf = 4 (4, 3). Units (pf, qc): (4,4) (4,4) | (4,2) (3,4) | (3,4) (3,2).
  // Round 0: load 32, compute 32, drain 1 + 4: 0/32/32/64/69.
  // Round 1: unit (4,2) loads 16 and computes 16 (last MAC 108), unit (3,4) loads 24 and computes 24 (last
  // MAC 116). (4,2) is out at 108 + 2 + 4 = 114, (3,4) at 116 + 2 + 3 = 121: the round completes at 121. The
  // longest compute (24, of (3,4)) plus the longest drain (5, of (4,2)) would say 122.
  // Round 2 (3,4) (3,2): loads when round 1 has completed: 121/145/145/169/173.
  const ConvCase c = one_instruction(4, 3, 32, 8, 4, ConvShape{3, 1, 7, 10, 2, 2});
  expect_schedule(c, {{12, 0, 32, 32, 64, 69}, {12, 69, 93, 93, 117, 121}, {12, 121, 145, 145, 169, 173}});
}

TEST(RsTimingVsCycleModel, FilterScratchpadHoldsTheWeightsOfOneUnitWhenTheInputScratchpadIsLarger) {
  // F/I/P = 4/12/4 words, s = 2, c = 6: the document's qc = clamp(12/2, 1, 6) = 6 fills the input
  // scratchpad, pf = clamp(min(4, 4/12 = 0), 1, m) = 1, so a PE needs pf*qc*s = 12 filter words; it has 4.
  const ConvCase c = one_instruction(2, 2, 4, 12, 4, ConvShape{2, 2, 2, 6, 2, 2});
  const RsPlan plan = RsTiming(spec_of(c)).plan(tile_shape(c.instructions[0]), c.dtype);
  EXPECT_LE(plan.filters_per_pe * plan.channels_per_pe * c.instructions[0].s, c.array.filter_words)
      << "qc " << plan.channels_per_pe << ", pf " << plan.filters_per_pe;
  RsModelRun run;
  EXPECT_TRUE(run_model(c, run));
}

TEST(RsTiming, FiltersAndChannelsRunInTheFewestGroupsEvenedOut) {
  // Eyeriss's scratchpads (224 filter, 12 input, 24 partial-sum words) hold at most 4 channels of a 3-wide
  // filter row (12 / 3), and then at most 18 filters (min(24, 224 / (4 * 3))). 64 filters run as four groups
  // of 16, not 18, 18, 18 and 10: every round of four bands then takes a 16-filter unit's time,
  // q * s * 16 * 4 = 2496 cycles, where a round holding an 18-filter unit would take 2808.
  const ConvCase c = eyeriss({ConvShape{13, 13, 64, 8, 3, 3, 1, 1, 1, 1}}, {0});
  const RsTiming timing(spec_of(c));
  const RsPlan plan = timing.plan(tile_shape(c.instructions[0]), c.dtype);
  EXPECT_EQ(plan.channels_per_pe, 4);
  EXPECT_EQ(plan.channel_groups, 2);
  EXPECT_EQ(plan.filters_per_pe, 16);
  EXPECT_EQ(plan.filter_groups, 4);
  std::vector<int64_t> computes;
  timing.for_each_round(tile_shape(c.instructions[0]), c.dtype,
                        [&](const RsRound& round) { computes.push_back(round.compute); });
  EXPECT_EQ(computes, (std::vector<int64_t>{2496, 2496}));
  EXPECT_TRUE(closed_form_equals_cycle_model(c));
  // 6 channels where a PE holds 4: two groups of 3 (then 224 / (3 * 3) leaves room for 24 filters).
  const ConvCase six = eyeriss({ConvShape{13, 13, 64, 6, 3, 3, 1, 1, 1, 1}}, {0});
  const RsPlan six_plan = timing.plan(tile_shape(six.instructions[0]), six.dtype);
  EXPECT_EQ(six_plan.channels_per_pe, 3);
  EXPECT_EQ(six_plan.channel_groups, 2);
  EXPECT_EQ(six_plan.filter_groups, 3);
  EXPECT_EQ(six_plan.filters_per_pe, 22);
}

// ---- active_pes ----

TEST(RsTiming, ActivePesOfEyerissAlexNetLayersAreTheDocumentsAndTheCycleModels) {
  // docs/pe-array-timing.md: on 12x14 PEs CONV1 (r = 11, e = 55) runs one band, strips 14, 14, 14, 13: 154;
  // CONV2 (r = 5, e = 27) two bands holding strips 14 and 13: 135; CONV3-5 (r = 3, e = 13) four bands of
  // 3 x 13: 156 when a round has four units (here 64 or 48 channel groups of qc = 4). Full e, r, s, stride
  // and c; q = 1 and one filter group (m = pf) keep the cycle model short.
  struct Layer {
    const char* name;
    ConvShape shape;
    int64_t filters;  // the layer's m
    int64_t active_pes;
  };
  const Layer layers[] = {
      {"CONV1", ConvShape{55, 1, 20, 3, 11, 11, 4, 1, 0, 0}, 96, 154},
      {"CONV2", ConvShape{27, 1, 22, 48, 5, 5, 1, 1, 2, 2}, 256, 135},
      {"CONV3", ConvShape{13, 1, 18, 256, 3, 3, 1, 1, 1, 1}, 384, 156},
      {"CONV4", ConvShape{13, 1, 18, 192, 3, 3, 1, 1, 1, 1}, 384, 156},
      {"CONV5", ConvShape{13, 1, 18, 192, 3, 3, 1, 1, 1, 1}, 256, 156},
  };
  for (const Layer& layer : layers) {
    SCOPED_TRACE(layer.name);
    const ConvCase c = eyeriss({layer.shape}, {0});
    const RsTiming timing(spec_of(c));
    EXPECT_EQ(timing.active_pes(tile_shape(c.instructions[0]), c.dtype), layer.active_pes);
    // The full layer (all filters and output columns) folds the same way.
    ConvShape full = layer.shape;
    full.q = full.e;
    full.m = layer.filters;
    EXPECT_EQ(timing.active_pes(tile_shape(make_instruction(full, 0, 1)), c.dtype), layer.active_pes);
    RsModelRun run;
    ASSERT_TRUE(run_model(c, run));
    int64_t most = 0;
    for (const testmodels::RsModelRound& round : run.rounds) most = std::max(most, round.pes);
    EXPECT_EQ(most, layer.active_pes);
    EXPECT_TRUE(closed_form_equals_cycle_model(c));
    EXPECT_TRUE(cycle_model_computes_the_convolution(c));
  }
}

}  // namespace
}  // namespace tessera::arch
