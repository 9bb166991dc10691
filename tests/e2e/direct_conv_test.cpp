// Direct convolutions end to end: the mapper's best direct mapping (the 7-D loop nest: input tiles with their
// halo rows, filter tiles per tap, conv PE instructions) of every kind of conv the networks use, for WS, OS,
// IS and RS, lowered, checked, run functionally and compared with the float64 reference; the bytes moved
// match the cost model's count. A mapping that drops a halo row between input tiles fails numerics. Each
// parameter is its own process (one elaboration each). Tiles of several images (a batch's filter tiles loaded
// once for all of them) likewise, and they move exactly the filter bytes they save.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <array>

#include "arch/isa/program_check.hpp"
#include "arch/isa/program_text.hpp"
#include "e2e/pipeline_fixture.hpp"
#include "mapper/contraction/conv2d_forms.hpp"
#include "mapper/contraction/cost_model.hpp"
#include "mapper/contraction/stage.hpp"
#include "mapper/lowering.hpp"
#include "sim/machine.hpp"

namespace tessera {
namespace {

struct DirectCase {
  const char* name;
  ops::ConvShape shape;
  DType dtype;
  arch::Dataflow dataflow;
  const char* machine;
  int64_t images = 1;  // per tile
};

// n, c, h, w, k, r, s, stride, pad, dilation, groups
// clang-format off
const DirectCase kCases[] = {
    {"Resnet3x3PaddedWs", {2, 32, 14, 14, 64, 3, 3, 1, 1, 1, 1}, DType::bf16, arch::Dataflow::ws, "mesh4x4"},
    {"Resnet3x3PaddedRs", {2, 32, 14, 14, 64, 3, 3, 1, 1, 1, 1}, DType::bf16, arch::Dataflow::rs, "mesh4x4"},
    {"Stem7x7Stride2PrimeOs", {1, 3, 31, 29, 13, 7, 7, 2, 3, 1, 1}, DType::bf16, arch::Dataflow::os, "default"},
    {"Stem7x7Stride2PrimeRs", {1, 3, 31, 29, 13, 7, 7, 2, 3, 1, 1}, DType::bf16, arch::Dataflow::rs, "default"},
    {"AlexnetGrouped5x5Is", {2, 16, 13, 13, 32, 5, 5, 1, 2, 1, 2}, DType::fp16, arch::Dataflow::is, "mesh4x4"},
    {"AlexnetConv1Rs", {1, 3, 51, 51, 16, 11, 11, 4, 0, 1, 1}, DType::bf16, arch::Dataflow::rs, "eyeriss"},
    {"AlexnetConv2GroupedRs", {1, 16, 27, 27, 32, 5, 5, 1, 2, 1, 2}, DType::bf16, arch::Dataflow::rs, "eyeriss"},
    {"DepthwiseStride2Ws", {1, 16, 16, 16, 16, 3, 3, 2, 1, 1, 16}, DType::bf16, arch::Dataflow::ws, "mesh4x4"},
    {"DepthwiseStride2Rs", {1, 16, 16, 16, 16, 3, 3, 2, 1, 1, 16}, DType::bf16, arch::Dataflow::rs, "mesh4x4"},
    {"Dilated3x3Os", {1, 8, 20, 20, 24, 3, 3, 1, 2, 2, 1}, DType::fp32, arch::Dataflow::os, "default"},
    {"Dilated3x3Rs", {1, 8, 20, 20, 24, 3, 3, 1, 2, 2, 1}, DType::fp32, arch::Dataflow::rs, "default"},
    {"Pointwise1x1Stride2Int8Ws", {2, 64, 14, 14, 48, 1, 1, 2, 0, 1, 1}, DType::int8, arch::Dataflow::ws, "tpu-v1"},
    {"RaggedStride3NoPadRs", {1, 5, 23, 17, 7, 4, 2, 3, 0, 1, 1}, DType::bf16, arch::Dataflow::rs, "default"},
    {"TallFilterRowChunksRs", {1, 4, 40, 12, 6, 13, 3, 1, 6, 1, 1}, DType::bf16, arch::Dataflow::rs, "eyeriss"},
    {"BatchOf4GroupedRs", {4, 16, 13, 13, 32, 3, 3, 1, 1, 1, 2}, DType::bf16, arch::Dataflow::rs, "eyeriss", 4},
    {"BatchOf2Of4Ws", {4, 8, 9, 9, 16, 3, 3, 1, 1, 1, 1}, DType::bf16, arch::Dataflow::ws, "mesh4x4", 2},
    {"BatchOf3Stride2Os", {3, 8, 11, 11, 12, 3, 3, 2, 1, 1, 1}, DType::fp32, arch::Dataflow::os, "default", 3},
    {"BatchOf2Stride4Is", {2, 3, 27, 27, 8, 11, 11, 4, 0, 1, 1}, DType::fp16, arch::Dataflow::is, "mesh4x4", 2},
    {"BatchOf2LastRowUnreadRs", {2, 4, 12, 12, 8, 3, 3, 2, 0, 1, 1}, DType::bf16, arch::Dataflow::rs, "eyeriss", 2},
    {"BatchOf4LastRowUnreadWs", {4, 6, 12, 10, 8, 3, 3, 2, 0, 1, 1}, DType::bf16, arch::Dataflow::ws, "default", 4},
};
// clang-format on

void PrintTo(const DirectCase& test, std::ostream* out) {
  *out << test.name;
}

class DirectConv : public testing::TestWithParam<DirectCase> {};

TEST_P(DirectConv, MatchesTheReferenceAndMovesTheBytesTheCostModelCounts) {
  const DirectCase& test = GetParam();
  const arch::ArchSpec spec = load_arch(test.machine);
  ASSERT_TRUE(spec.core.pe_array.supports(test.dataflow) && spec.core.pe_array.supports(test.dtype));
  const ops::Op op = conv_op(test.shape, test.dtype);
  const mapper::Mapping mapping = best_direct_mapping(op, spec, test.dataflow, test.images);
  if (test.images > 1) {
    EXPECT_NE(mapping.describe().find(fmt::format(" images={}", test.images)), std::string::npos);
  }
  const arch::Program program = mapper::lower(op, 5, mapping, spec, "direct");
  arch::check_program(program, spec);
  EXPECT_EQ(arch::read_program(arch::write_program(program), "direct.tprog"), program);

  sim::Machine machine(spec);
  const sim::RunResult result = machine.run(program, sim::RunOptions{});
  std::string detail;
  EXPECT_TRUE(output_matches_reference(op, 5, result, &detail)) << mapping.describe() << " " << detail;
  EXPECT_EQ(result.counters.pe_macs, op.macs());
  EXPECT_GT(result.counters.active_pes, 0);
  EXPECT_LE(result.counters.active_pes, spec.core.pe_array.pes());

  // Input tiles overlap by their halo and skip padding rows; the cost model shares them out by extent, so
  // allow 3% on the total.
  const mapper::Cost cost = mapper::CostModel(spec).evaluate(mapping);
  const double simulated =
      static_cast<double>(result.counters.dram_read_bytes + result.counters.dram_write_bytes);
  EXPECT_NEAR(simulated, static_cast<double>(cost.dram_bytes), 0.03 * cost.dram_bytes) << mapping.describe();
}

INSTANTIATE_TEST_SUITE_P(Shapes, DirectConv, testing::ValuesIn(kCases),
                         [](const testing::TestParamInfo<DirectCase>& info) { return info.param.name; });

// A mapping whose input tiles leave out the halo row they share with the next tile (its last input row) reads
// zeros there: the output no longer matches the reference.
TEST(DirectConvHalo, DroppingAHaloRowBetweenInputTilesFailsNumerics) {
  const arch::ArchSpec spec = load_arch("mesh4x4");
  const ops::Op op = conv_op({1, 8, 24, 24, 16, 3, 3, 1, 1, 1, 1}, DType::bf16);
  mapper::Mapping mapping = best_direct_mapping(op, spec, arch::Dataflow::ws);
  mapping.split_m = 1, mapping.split_n = 1, mapping.split_k = 1;
  mapping.tile_m = 6;  // four tiles of six output rows: each reads eight input rows, two shared with the next
  mapping.tile_n = 16, mapping.tile_k = 8;
  arch::Program program = mapper::lower(op, 3, mapping, spec, "halo");
  sim::Machine machine(spec);  // one elaboration per process: both runs use it
  std::string detail;
  ASSERT_TRUE(output_matches_reference(op, 3, machine.run(program, sim::RunOptions{}), &detail)) << detail;
  // The first tile: rows 0..6 of the input (one padding row above); drop its last row from the load and the
  // instruction.
  int dropped = 0;
  for (arch::CoreProgram& core : program.cores)
    for (arch::Instruction& instruction : core.instructions) {
      if (auto* load = std::get_if<arch::DmaLoad>(&instruction.operation);
          load && load->source.tensor == 0 && load->source.row == 0 && dropped == 0) {
        load->source.rows -= 24;  // one input row of 24 pixels
        ++dropped;
      } else if (auto* conv = arch::operation_if<arch::PeConv>(instruction.operation); conv && dropped == 1) {
        conv->ih -= 1;
        ++dropped;
      }
    }
  ASSERT_EQ(dropped, 2);
  arch::check_program(program, spec);
  EXPECT_FALSE(output_matches_reference(op, 3, machine.run(program, sim::RunOptions{}), &detail)) << detail;
}

// A tile of four images loads each filter tile once for the four: the same tiles one image at a time move the
// filters four times, and nothing else differs; both compute the reference.
TEST(DirectConvBatch, ATileOfFourImagesReadsEachFilterTileOnceForThemAll) {
  const arch::ArchSpec spec = load_arch("eyeriss");
  const ops::Op op = conv_op({4, 16, 13, 13, 48, 3, 3, 1, 1, 1, 2}, DType::bf16);
  const mapper::Mapping batched = best_direct_mapping(op, spec, arch::Dataflow::rs, 4);
  mapper::Mapping single = batched;
  single.form = mapper::conv_direct_stage(*op.as<ops::ConvShape>(), op.dtype, 1);
  sim::Machine machine(spec);  // one elaboration per process: both runs use it
  int64_t dram[2] = {0, 0};
  int64_t filter_bytes = 0;
  for (const mapper::Mapping* mapping : std::array<const mapper::Mapping*, 2>{&batched, &single}) {
    const arch::Program program = mapper::lower(op, 6, *mapping, spec, "batch");
    arch::check_program(program, spec);
    const sim::RunResult result = machine.run(program, sim::RunOptions{});
    std::string detail;
    EXPECT_TRUE(output_matches_reference(op, 6, result, &detail)) << mapping->describe() << " " << detail;
    const mapper::Cost cost = mapper::CostModel(spec).evaluate(*mapping);
    dram[mapping == &single] = result.counters.dram_read_bytes + result.counters.dram_write_bytes;
    EXPECT_EQ(dram[mapping == &single], cost.dram_bytes) << mapping->describe();
    if (mapping == &batched) filter_bytes = cost.dram_bytes_by_tensor[mapper::kW];
  }
  ASSERT_GT(filter_bytes, 0);
  EXPECT_EQ(dram[1] - dram[0], 3 * filter_bytes);
}

// The cost model's SRAM bytes are the simulator's on a one-core machine: an output tile's first instruction
// writes its partial sums, each later one (a channel tile) reads them back too. Counting every instruction as
// a first made many thin channel tiles look cheaper than few thick ones.
TEST(DirectConvSram, EstimatedSramBytesAreTheSimulatedOnesWhateverTheChannelTiles) {
  const arch::ArchSpec spec = load_arch("eyeriss");
  const ops::Op op = conv_op({2, 64, 13, 13, 96, 3, 3, 1, 1, 1, 1}, DType::bf16);
  sim::Machine machine(spec);  // one elaboration per process
  for (const int64_t channels : {4, 8, 32}) {
    mapper::Mapping mapping = best_direct_mapping(op, spec, arch::Dataflow::rs);
    mapping.tile_m = 13, mapping.tile_n = 24, mapping.tile_k = channels;
    mapping.order = {mapper::Dim::m, mapper::Dim::n, mapper::Dim::k};
    mapping.double_buffer_inputs = mapping.double_buffer_output = false;
    const sim::RunResult result = machine.run(mapper::lower(op, 2, mapping, spec, "sram"), sim::RunOptions{});
    const double simulated =
        static_cast<double>(result.counters.sram_read_bytes + result.counters.sram_write_bytes);
    const mapper::Cost cost = mapper::CostModel(spec).evaluate(mapping);
    EXPECT_NEAR(static_cast<double>(cost.sram_bytes), simulated, 0.01 * simulated) << mapping.describe();
  }
}

// Channel tiles: each k tile's filter rows start at its first channel, for every filter size (a 1x1 filter's
// tile is one load, a 3x3's one per tap), and their partial sums add up in the output tile.
TEST(DirectConvChannelTiles, EveryChannelTileLoadsItsOwnFilterRows) {
  const arch::ArchSpec spec = load_arch("mesh4x4");
  sim::Machine machine(spec);
  for (const ops::ConvShape& shape : {ops::ConvShape{1, 64, 14, 14, 32, 1, 1, 1, 0, 1, 1},
                                      ops::ConvShape{1, 24, 10, 10, 16, 3, 3, 1, 1, 1, 1}}) {
    const ops::Op op = conv_op(shape, DType::bf16);
    for (const arch::Dataflow dataflow : {arch::Dataflow::ws, arch::Dataflow::rs}) {
      mapper::Mapping mapping = best_direct_mapping(op, spec, dataflow);
      mapping.split_m = 2, mapping.split_n = 1, mapping.split_k = 2;
      mapping.order = {mapper::Dim::m, mapper::Dim::n, mapper::Dim::k};
      mapping.tile_m = 4, mapping.tile_n = 16, mapping.tile_k = 4;  // several channel tiles per core
      const arch::Program program = mapper::lower(op, 4, mapping, spec, "channels");
      arch::check_program(program, spec);
      std::string detail;
      EXPECT_TRUE(output_matches_reference(op, 4, machine.run(program, sim::RunOptions{}), &detail))
          << mapping.describe() << " r=" << shape.r << " " << detail;
    }
  }
}

}  // namespace
}  // namespace tessera
