// Convolutions end to end through the libraries: the mapper's best mapping of a conv2d, lowered to a tile
// program whose A operand is an im2col view of the input, gathered by the DMA engines and run functionally,
// reproduces the float64 reference (ops/reference.hpp) for every kind of conv the networks use. Each
// parameter is its own process (one elaboration each).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "arch/isa/program_check.hpp"
#include "arch/isa/program_text.hpp"
#include "e2e/pipeline_fixture.hpp"
#include "mapper/contraction/conv2d_forms.hpp"
#include "mapper/contraction/cost_model.hpp"
#include "mapper/contraction/search.hpp"
#include "mapper/lowering.hpp"
#include "sim/machine.hpp"

namespace tessera {
namespace {

struct ConvCase {
  const char* name;
  ops::ConvShape shape;
  DType dtype;
  arch::Dataflow dataflow;
  const char* machine;
  int packed = 0;  // groups per block-diagonal GEMM; 0: the mapper's choice
};

// n, c, h, w, k, r, s, stride, pad, dilation, groups
// clang-format off
const ConvCase kCases[] = {
    {"Resnet3x3Padded", {2, 32, 14, 14, 64, 3, 3, 1, 1, 1, 1}, DType::bf16, arch::Dataflow::ws, "mesh4x4"},
    {"Stem7x7Stride2", {1, 3, 32, 32, 16, 7, 7, 2, 3, 1, 1}, DType::bf16, arch::Dataflow::os, "default"},
    {"AlexnetGrouped5x5", {2, 16, 13, 13, 32, 5, 5, 1, 2, 1, 2}, DType::fp16, arch::Dataflow::is, "mesh4x4"},
    {"DepthwiseStride2", {1, 32, 16, 16, 32, 3, 3, 2, 1, 1, 32}, DType::bf16, arch::Dataflow::ws, "mesh4x4"},
    {"Dilated3x3", {1, 8, 20, 20, 24, 3, 3, 1, 2, 2, 1}, DType::fp32, arch::Dataflow::os, "default"},
    {"Pointwise1x1Stride2Int8", {2, 64, 14, 14, 48, 1, 1, 2, 0, 1, 1}, DType::int8, arch::Dataflow::ws, "tpu-v1"},
    {"RaggedStride3NoPad", {1, 5, 23, 17, 7, 4, 2, 3, 0, 1, 1}, DType::bf16, arch::Dataflow::is, "default"},
    // Packed groups: block-diagonal weights, several groups per PE instruction.
    {"DepthwisePacked8", {1, 32, 15, 15, 32, 3, 3, 2, 1, 1, 32}, DType::bf16, arch::Dataflow::ws, "mesh4x4", 8},
    {"DepthwisePackedAll", {2, 24, 9, 9, 24, 3, 3, 1, 1, 1, 24}, DType::fp32, arch::Dataflow::os, "default", 24},
    {"GroupedPacked2Int8", {1, 12, 10, 10, 18, 3, 3, 1, 1, 1, 6}, DType::int8, arch::Dataflow::ws, "tpu-v1", 2},
    {"GroupedPacked3Dilated", {1, 9, 12, 12, 6, 3, 3, 1, 2, 2, 3}, DType::bf16, arch::Dataflow::is, "mesh4x4", 3},
};
// clang-format on

void PrintTo(const ConvCase& test, std::ostream* out) {
  *out << test.name;
}

class LoweredConv : public testing::TestWithParam<ConvCase> {};

TEST_P(LoweredConv, MatchesTheReferenceAndMovesOnlyTheNonPaddingBytes) {
  const ConvCase& test = GetParam();
  const arch::ArchSpec spec = load_arch(test.machine);
  if (!spec.core.pe_array.supports(test.dataflow) || !spec.core.pe_array.supports(test.dtype))
    GTEST_SKIP() << test.machine << " does not run this case";
  const ops::Op op = conv_op(test.shape, test.dtype);
  mapper::Mapping mapping = best_mapping(op, spec, test.dataflow);
  if (test.packed > 0) {
    const auto packed =
        std::make_shared<mapper::GemmStage>(mapper::conv_implicit_gemm(test.shape, test.dtype, test.packed));
    mapping = best_stage_mapping(packed, spec, test.dataflow);
  }
  const arch::Program program = mapper::lower(op, 5, mapping, spec, "conv");
  arch::check_program(program, spec);
  // The text form reads back as the same program (the view included).
  EXPECT_EQ(arch::read_program(arch::write_program(program), "conv.tprog"), program);

  sim::Machine machine(spec);
  const sim::RunResult result = machine.run(program, sim::RunOptions{});
  std::string detail;
  EXPECT_TRUE(output_matches_reference(op, 5, result, &detail)) << mapping.describe() << " " << detail;

  // DRAM traffic: the cost model counts A's bytes over the whole view, less its padding share; W and O are
  // exact. Padding is spread unevenly over the tiles, so allow 2% on the total.
  const mapper::Cost cost = mapper::CostModel(spec).evaluate(mapping);
  const double simulated =
      static_cast<double>(result.counters.dram_read_bytes + result.counters.dram_write_bytes);
  EXPECT_NEAR(simulated, static_cast<double>(cost.dram_bytes), 0.02 * cost.dram_bytes) << mapping.describe();
  // The PE arrays also multiply the block-diagonal zeros of packed groups.
  EXPECT_EQ(result.counters.pe_macs, mapper::stage_of(mapping).macs());
  EXPECT_EQ(result.counters.pe_macs * mapper::stage_of(mapping).useful_macs(),
            op.macs() * mapper::stage_of(mapping).macs());
}

INSTANTIATE_TEST_SUITE_P(Shapes, LoweredConv, testing::ValuesIn(kCases),
                         [](const testing::TestParamInfo<ConvCase>& info) { return info.param.name; });

}  // namespace
}  // namespace tessera

namespace tessera {

// A depthwise conv run one group at a time is 96 one-column GEMMs whose A rows are gathered two bytes at a
// time; packing groups into block-diagonal GEMMs multiplies zeros but moves A in runs of a whole pack's
// channels. The mapper must find that, and the simulator must agree that it is faster.
TEST(PackedGroups, TheMapperPacksADepthwiseConvAndTheSimulatorConfirmsIt) {
  const arch::ArchSpec spec = load_arch("mesh4x4");
  const ops::Op op = conv_op({1, 96, 56, 56, 96, 3, 3, 2, 1, 1, 96}, DType::bf16);
  mapper::SearchOptions options;
  options.dataflows = {arch::Dataflow::ws};
  options.keep_per_dataflow = 1;
  const mapper::Candidate packed = mapper::search_op(op, spec, options).per_dataflow.front().best.front();
  const auto unpacked_stage =
      std::make_shared<mapper::GemmStage>(mapper::conv_implicit_gemm(*op.as<ops::ConvShape>(), op.dtype));
  const mapper::Candidate unpacked =
      mapper::search_stage(unpacked_stage, spec, options).per_dataflow.front().best.front();
  const auto* gemm = packed.mapping.form_if<mapper::GemmStage>();
  ASSERT_NE(gemm, nullptr) << packed.mapping.describe();
  EXPECT_GT(gemm->problem().packed, 1) << packed.mapping.describe();
  EXPECT_LT(packed.cost.cycles * 4, unpacked.cost.cycles);

  sim::Machine machine(spec);
  const int64_t packed_cycles =
      machine.run(mapper::lower(op, 1, packed.mapping, spec, "packed"), sim::RunOptions{false, false})
          .counters.cycles;
  const int64_t unpacked_cycles =
      machine.run(mapper::lower(op, 1, unpacked.mapping, spec, "unpacked"), sim::RunOptions{false, false})
          .counters.cycles;
  EXPECT_LT(packed_cycles * 4, unpacked_cycles) << packed_cycles << " vs " << unpacked_cycles;
}

}  // namespace tessera
