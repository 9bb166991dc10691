// The cost model against what the lowering really moves, and the mapspace's rules.
#include "mapper/contraction/cost_model.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <tuple>

#include "arch/isa/program_check.hpp"
#include "arch/isa/program_text.hpp"
#include "common/config.hpp"
#include "mapper/contraction/conv2d_forms.hpp"
#include "mapper/contraction/gemm_stage.hpp"
#include "mapper/contraction/mapspace.hpp"
#include "mapper/contraction/search.hpp"
#include "mapper/kit/tiling.hpp"
#include "mapper/lowering.hpp"
#include "ops/kinds/gemm.hpp"
#include "ops/workload.hpp"

namespace tessera::mapper {

namespace {

arch::ArchSpec shipped(const std::string& name) {
  return arch::arch_from_yaml(
      config::load_file(std::string(TESSERA_SOURCE_DIR) + "/configs/arch/" + name + ".yaml"));
}

// DRAM bytes a tile program moves: each load reads its region once (a multicast too), each store writes its
// region, and an accumulating store reads it as well.
int64_t program_dram_bytes(const arch::Program& program) {
  int64_t bytes = 0;
  for (const arch::CoreProgram& core : program.cores)
    for (const arch::Instruction& instruction : core.instructions) {
      if (const auto* load = std::get_if<arch::DmaLoad>(&instruction.operation)) {
        bytes +=
            load->source.rows * load->source.cols * size_bytes(program.tensors[load->source.tensor].dtype);
      } else if (const auto* store = std::get_if<arch::DmaStore>(&instruction.operation)) {
        const int64_t region = store->destination.rows * store->destination.cols *
                               size_bytes(program.tensors[store->destination.tensor].dtype);
        bytes += region * (store->accumulate ? 2 : 1);
      }
    }
  return bytes;
}

ops::Op gemm(int64_t m, int64_t n, int64_t k, DType dtype) {
  return ops::make_op("g", dtype, ops::GemmShape{m, n, k});
}

}  // namespace

TEST(CostModel, DramBytesEqualWhatTheLoweredProgramMovesForEveryMapping) {
  std::mt19937 random(7);
  for (const char* machine : {"default", "mesh4x4"}) {
    const arch::ArchSpec spec = shipped(machine);
    const CostModel model(spec);
    for (const ops::Op& op : {gemm(200, 130, 170, DType::bf16), gemm(37, 300, 41, DType::int8),
                              gemm(512, 64, 700, DType::fp32)}) {
      const auto& shape = *op.as<ops::GemmShape>();
      const auto stage = std::make_shared<GemmStage>(GemmProblem{shape.m, shape.n, shape.k, op.dtype});
      std::vector<Mapping> mappings;
      for (arch::Dataflow dataflow : spec.core.pe_array.dataflows)
        enumerate_mappings(
            stage, spec, dataflow, [](size_t) { return true; },
            [&](const Mapping& mapping, size_t) { mappings.push_back(mapping); });
      std::shuffle(mappings.begin(), mappings.end(), random);
      for (size_t i = 0; i < 60 && i < mappings.size(); ++i) {
        const Cost cost = model.evaluate(mappings[i]);
        const arch::Program program = lower(op, 1, mappings[i], spec, "g");
        EXPECT_EQ(cost.dram_bytes, program_dram_bytes(program)) << machine << " " << mappings[i].describe();
      }
    }
  }
}

TEST(CostModel, ReloadFactorCountsTheLoopsOutsideATilesInnermostLoop) {
  const std::array<Dim, 3> mnk = {Dim::m, Dim::n, Dim::k};
  // Order m, n, k with 4 x 3 x 2 tiles: A (m, k) is reloaded for every n tile; W (k, n) for every m tile; O
  // (m, n) stays for the k loop.
  EXPECT_EQ(reload_factor({4, 3, 2}, mnk, true, false, true), 3);
  EXPECT_EQ(reload_factor({4, 3, 2}, mnk, false, true, true), 4);
  EXPECT_EQ(reload_factor({4, 3, 2}, mnk, true, true, false), 1);
  // With one k tile, A (m, k) no longer changes inside the n loop: loaded once per m tile.
  EXPECT_EQ(reload_factor({4, 3, 1}, mnk, true, false, true), 1);
  // Order k, m, n: O is revisited for every k tile.
  EXPECT_EQ(reload_factor({4, 3, 2}, {Dim::k, Dim::m, Dim::n}, true, true, false), 2);
}

TEST(Mapspace, SplitsUseAllCoresThenFewerAndMultiplyToADivisor) {
  const std::vector<Split> splits = splits_of(4);
  // 4 cores: (1,1,4) ... 6 orderings of 4 as three factors, 3 of 2, 1 of 1.
  EXPECT_EQ(splits.size(), 6u + 3u + 1u);
  for (const Split& split : splits) EXPECT_EQ(4 % (split.m * split.n * split.k), 0);
  EXPECT_EQ(splits.front().m * splits.front().n * splits.front().k, 4);
}

TEST(Mapspace, TileLadderEndsWithTheWholePerCoreExtentSoRaggedShapesTileNatively) {
  EXPECT_EQ(tile_ladder(1000, 2, 32), (std::vector<int64_t>{32, 64, 128, 256, 500}));
  EXPECT_EQ(tile_ladder(20, 1, 32), (std::vector<int64_t>{20}));
}

TEST(Search, TheRankingDoesNotDependOnTheThreadCount) {
  const arch::ArchSpec spec = shipped("mesh4x4");
  const auto stage = std::make_shared<GemmStage>(GemmProblem{1000, 999, 777, DType::fp32});
  SearchOptions options;
  options.dataflows = spec.core.pe_array.dataflows;
  options.keep_per_dataflow = 8;
  options.threads = 1;
  const std::vector<Candidate> one = search_stage(stage, spec, options).ranked();
  options.threads = 2;
  const std::vector<Candidate> two = search_stage(stage, spec, options).ranked();
  options.threads = 5;
  const std::vector<Candidate> five = search_stage(stage, spec, options).ranked();
  ASSERT_EQ(one.size(), two.size());
  ASSERT_EQ(one.size(), five.size());
  for (size_t i = 0; i < one.size(); ++i) {
    EXPECT_TRUE(one[i].mapping == two[i].mapping) << i;
    EXPECT_TRUE(one[i].mapping == five[i].mapping) << i;
  }
}

TEST(Search, NoLegalMappingNamesTheFieldAndWhatTheSmallestTileNeeds) {
  arch::ArchSpec spec = shipped("systolic-32x32");
  spec.core.sram.kib = 4;
  spec.derive();
  SearchOptions options;
  options.dataflows = {arch::Dataflow::ws};
  options.op_description = "g (gemm 64x64x64 bf16)";
  try {
    search_stage(std::make_shared<GemmStage>(GemmProblem{64, 64, 64, DType::bf16}), spec, options);
    FAIL() << "expected no legal mapping";
  } catch (const InputError& error) {
    EXPECT_EQ(error.field(), "core.sram.kib");
    // 32x32x32 bf16: A 2 KiB, W 2 KiB, O 4 KiB, each on whole 4 KiB bank rows (64 banks x 64 B): 12 KiB.
    EXPECT_EQ(error.message(),
              "no legal mapping for g (gemm 64x64x64 bf16):\n  ws: the smallest tile (m=32 n=32 k=32, "
              "single-buffered) needs 12 KiB of SRAM, the core has 4 KiB");
  }
}

TEST(LowerGemm, TheProgramRoundTripsThroughItsTextForm) {
  const arch::ArchSpec spec = shipped("mesh4x4");
  const ops::Op op = gemm(300, 260, 512, DType::fp16);
  SearchOptions options;
  options.dataflows = {arch::Dataflow::os};
  options.keep_per_dataflow = 1;
  const auto& shape = *op.as<ops::GemmShape>();
  const Mapping mapping =
      search_stage(std::make_shared<GemmStage>(GemmProblem{shape.m, shape.n, shape.k, op.dtype}), spec,
                   options)
          .per_dataflow[0]
          .best[0]
          .mapping;
  const arch::Program program = lower(op, 1, mapping, spec, "g.os");
  arch::check_program(program, spec);
  EXPECT_TRUE(arch::read_program(arch::write_program(program), "g.tprog") == program);
}

}  // namespace tessera::mapper

namespace tessera::mapper {

// Each tile gets the deepest buffering its SRAM holds: both inputs and the output doubled, else the inputs,
// else the output alone (a finished tile drains while the next computes), else none. On a 64 KiB SRAM a
// 64x256 fp32 A tile fits once beside a doubled output but not twice: such a tile is offered with db=o.
TEST(Mapspace, EachTileTakesTheDeepestBufferingThatFitsTheOutputAloneIncluded) {
  arch::ArchSpec spec = shipped("default");
  spec.core.sram.kib = 64;
  spec.derive();
  const auto stage = std::make_shared<GemmStage>(GemmProblem{256, 256, 1024, DType::fp32});
  auto fits = [&](Mapping mapping, bool inputs, bool output) {
    mapping.double_buffer_inputs = inputs;
    mapping.double_buffer_output = output;
    return plan_buffers(mapping, spec).total_bytes <= spec.core.sram.bytes;
  };
  int output_only = 0, mappings = 0;
  enumerate_mappings(
      stage, spec, arch::Dataflow::ws, [](size_t) { return true; },
      [&](const Mapping& mapping, size_t) {
        ++mappings;
        const bool in = mapping.double_buffer_inputs, out = mapping.double_buffer_output;
        EXPECT_TRUE(fits(mapping, in, out)) << mapping.describe();
        if (!(in && out)) {
          EXPECT_FALSE(fits(mapping, true, true)) << mapping.describe();
        }
        if (!in) {
          EXPECT_FALSE(fits(mapping, true, false)) << mapping.describe();
        }
        if (!in && !out) {
          EXPECT_FALSE(fits(mapping, false, true)) << mapping.describe();
        }
        if (!in && out) {
          ++output_only;
          EXPECT_NE(mapping.describe().find(" db=o"), std::string::npos) << mapping.describe();
        }
      });
  EXPECT_GT(mappings, 0);
  EXPECT_GT(output_only, 0) << "no tile fits its output doubled but not its inputs";
}

// RS tiles its filters by even splits of a core's share too, not only by multiples of the filters a PE
// holds: AlexNet CONV4 on Eyeriss has 192 filters a group, a PE holds 18 (granule 18: 18, 36, 72, 144), and
// 64 (a third) keeps four images' partial sums in the 108 KB buffer with both inputs double-buffered, where
// 72 does not fit. Its tiles of 64 filters and four images are enumerated (each runs as 4 groups of 16).
TEST(Mapspace, RowStationaryTilesItsFiltersByEvenSplitsOfTheCoresShare) {
  const arch::ArchSpec spec = shipped("eyeriss");
  const ops::Workload workload = ops::workload_from_yaml(config::load_text(
      "name: c4\nseed: 1\nops:\n  - {name: conv4, kind: conv2d, n: 4, c: 384, h: 13, w: 13, k: 384, r: 3, s: "
      "3, pad: 1, groups: 2, dtype: bf16, psum: fp16}\n",
      "c4.yaml"));
  const auto stage = conv_direct_stage(*workload.ops.front().as<ops::ConvShape>(), DType::bf16, 4);
  std::set<int64_t> filter_tiles;
  bool sixty_four_doubled = false;
  enumerate_mappings(
      stage, spec, arch::Dataflow::rs, [](size_t) { return true; },
      [&](const Mapping& mapping, size_t) {
        filter_tiles.insert(mapping.tile_n);
        if (mapping.tile_n == 64 && mapping.tile_k == 4 && mapping.double_buffer_inputs)
          sixty_four_doubled = true;
      });
  for (int64_t tile : {18, 36, 72, 64, 48, 32})
    EXPECT_EQ(filter_tiles.count(tile), 1u) << tile << " of " << ::testing::PrintToString(filter_tiles);
  EXPECT_TRUE(sixty_four_doubled);
  EXPECT_EQ(filter_tiles.count(96), 0u);  // four images' partial sums of 96 filters: 130 KB
}

// The search scores a tile's loop orders once per loop nest (mapper/search.cpp): orders whose loops of more
// than one trip run in the same order must cost exactly the same, every figure of the estimate, on every
// machine's tiles, splits and bufferings.
TEST(Mapspace, OrdersOfOneLoopNestCostExactlyTheSame) {
  const ops::Workload conv =
      ops::workload_from_yaml(config::load_text("name: c\nseed: 1\nops:\n  - {name: c, kind: conv2d, n: 4, "
                                                "c: 96, h: 27, w: 27, k: 256, r: 5, s: 5, pad: "
                                                "2, groups: 2, dtype: bf16}\n",
                                                "c.yaml"));
  struct Case {
    const char* machine;
    std::shared_ptr<const ContractionStage> stage;
    arch::Dataflow dataflow;
  };
  const std::shared_ptr<const ContractionStage> gemm =
      std::make_shared<GemmStage>(GemmProblem{200, 300, 1000, DType::bf16});
  const Case cases[] = {
      {"mesh4x4", gemm, arch::Dataflow::ws},
      {"mesh4x4", gemm, arch::Dataflow::os},
      {"default", gemm, arch::Dataflow::is},
      {"eyeriss", conv_direct_stage(*conv.ops.front().as<ops::ConvShape>(), DType::bf16, 1),
       arch::Dataflow::rs},
      {"mesh4x4", conv_direct_stage(*conv.ops.front().as<ops::ConvShape>(), DType::bf16, 2),
       arch::Dataflow::rs},
  };
  for (const Case& c : cases) {
    const arch::ArchSpec spec = shipped(c.machine);
    const CostModel model(spec);
    const ContractionShape& shape = c.stage->shape();
    std::map<std::tuple<size_t, int64_t, int64_t, int64_t, bool, bool, int>, Cost> first;
    int64_t shared = 0, mappings = 0;
    enumerate_mappings(
        c.stage, spec, c.dataflow, [](size_t) { return true; },
        [&](const Mapping& mapping, size_t split) {
          ++mappings;
          const int nest =
              loop_nest_key({DimPartition(shape.m, mapping.tile_m, mapping.split_m).max_tile_count(),
                             DimPartition(shape.n, mapping.tile_n, mapping.split_n).max_tile_count(),
                             DimPartition(shape.k, mapping.tile_k, mapping.split_k).max_tile_count()},
                            mapping.order);
          const Cost cost = model.evaluate(mapping);
          const auto [at, inserted] =
              first.try_emplace({split, mapping.tile_m, mapping.tile_n, mapping.tile_k,
                                 mapping.double_buffer_inputs, mapping.double_buffer_output, nest},
                                cost);
          if (inserted) return;
          ++shared;
          const Cost& other = at->second;
          EXPECT_EQ(cost.cycles, other.cycles) << c.machine << ": " << mapping.describe();
          EXPECT_EQ(cost.energy_pj, other.energy_pj) << c.machine << ": " << mapping.describe();
          EXPECT_EQ(cost.dram_bytes, other.dram_bytes) << c.machine << ": " << mapping.describe();
          EXPECT_EQ(cost.sram_bytes, other.sram_bytes) << c.machine << ": " << mapping.describe();
          EXPECT_EQ(cost.load_stall_cycles, other.load_stall_cycles)
              << c.machine << ": " << mapping.describe();
          EXPECT_EQ(cost.dma_cycles, other.dma_cycles) << c.machine << ": " << mapping.describe();
          EXPECT_EQ(cost.bound, other.bound) << c.machine << ": " << mapping.describe();
        });
    EXPECT_GT(shared, 0) << c.machine;
    EXPECT_LT(shared, mappings) << c.machine;
  }
}

}  // namespace tessera::mapper
