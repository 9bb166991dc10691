// Convolutions end to end through the libraries: the mapper's best mapping of a conv2d, lowered to a tile
// program whose A operand is an im2col view of the input, gathered by the DMA engines and run functionally,
// reproduces the float64 reference (ops/reference.hpp) for every kind of conv the networks use. Each
// parameter is its own process (one elaboration each).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "e2e/pipeline_fixture.hpp"
#include "mapper/cost_model.hpp"
#include "mapper/lower_gemm.hpp"
#include "mapper/problem.hpp"
#include "sim/machine.hpp"

namespace tessera {
namespace {

struct ConvCase {
  const char* name;
  ops::ConvShape shape;
  DType dtype;
  arch::Dataflow dataflow;
  const char* machine;
};

// n, c, h, w, k, r, s, stride, pad, dilation, groups
const ConvCase kCases[] = {
    {"Resnet3x3Padded", {2, 32, 14, 14, 64, 3, 3, 1, 1, 1, 1}, DType::bf16, arch::Dataflow::ws, "mesh4x4"},
    {"Stem7x7Stride2", {1, 3, 32, 32, 16, 7, 7, 2, 3, 1, 1}, DType::bf16, arch::Dataflow::os, "default"},
    {"AlexnetGrouped5x5", {2, 16, 13, 13, 32, 5, 5, 1, 2, 1, 2}, DType::fp16, arch::Dataflow::is, "mesh4x4"},
    {"DepthwiseStride2", {1, 32, 16, 16, 32, 3, 3, 2, 1, 1, 32}, DType::bf16, arch::Dataflow::ws, "mesh4x4"},
    {"Dilated3x3", {1, 8, 20, 20, 24, 3, 3, 1, 2, 2, 1}, DType::fp32, arch::Dataflow::os, "default"},
    {"Pointwise1x1Stride2Int8",
     {2, 64, 14, 14, 48, 1, 1, 2, 0, 1, 1},
     DType::int8,
     arch::Dataflow::ws,
     "tpu-v1"},
    {"RaggedStride3NoPad", {1, 5, 23, 17, 7, 4, 2, 3, 0, 1, 1}, DType::bf16, arch::Dataflow::is, "default"},
};

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
  const mapper::GemmMapping mapping = best_mapping(op, spec, test.dataflow);
  const arch::Program program = mapper::lower_gemm(op, 5, mapping, spec, "conv");
  arch::check_program(program, spec);
  // The text form reads back as the same program (the view included).
  EXPECT_EQ(arch::read_program(arch::write_program(program), "conv.tprog"), program);

  sim::Machine machine(spec);
  const sim::RunResult result = machine.run(program, sim::RunOptions{});
  std::string detail;
  EXPECT_TRUE(output_matches_reference(op, 5, result, &detail)) << mapping.describe() << " " << detail;

  // DRAM traffic: the cost model counts A's bytes over the whole view, less its padding share; W and O are
  // exact. Padding is spread unevenly over the tiles, so allow 2% on the total.
  const mapper::GemmCost cost = mapper::CostModel(spec).evaluate(mapper::problem_of(op), mapping);
  const double simulated =
      static_cast<double>(result.traffic.dram_read_bytes + result.traffic.dram_write_bytes);
  EXPECT_NEAR(simulated, static_cast<double>(cost.dram_bytes), 0.02 * cost.dram_bytes) << mapping.describe();
  EXPECT_EQ(result.macs, op.macs());
}

INSTANTIATE_TEST_SUITE_P(Shapes, LoweredConv, testing::ValuesIn(kCases),
                         [](const testing::TestParamInfo<ConvCase>& info) { return info.param.name; });

}  // namespace
}  // namespace tessera
