// Sparse activations on a machine that run-length codes its DRAM traffic (ops/density.hpp, dram.rlc): the
// simulated loads of a conv's input and the stores of its output move the coded bytes the closed form says,
// the weights move raw, and the cost model counts what the simulation moves.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "arch/timing/compression.hpp"
#include "common/config.hpp"
#include "e2e/cli_helpers.hpp"
#include "e2e/pipeline_fixture.hpp"
#include "e2e/run_tessera.hpp"
#include "mapper/contraction/conv2d_forms.hpp"
#include "mapper/contraction/cost_model.hpp"
#include "mapper/lowering.hpp"
#include "ops/workload.hpp"
#include "sim/machine.hpp"

namespace tessera {
namespace {

ops::Op conv(const std::string& density) {
  const std::string text =
      "name: c\nseed: 4\nops:\n  - {name: c, kind: conv2d, n: 2, c: 64, h: 13, w: 13, k: 96, r: 3, s: 3, "
      "pad: 1, "
      "dtype: bf16, psum: fp16" +
      density + "}\n";
  return std::move(ops::workload_from_yaml(config::load_text(text, "c.yaml")).ops.front());
}

// The raw bytes a program's loads read from each tensor.
std::map<int, int64_t> loaded_bytes(const arch::Program& program) {
  std::map<int, int64_t> bytes;
  for (const arch::CoreProgram& core : program.cores)
    for (const arch::Instruction& instruction : core.instructions)
      if (const auto* load = std::get_if<arch::DmaLoad>(&instruction.operation))
        bytes[load->source.tensor] += load->source.rows * load->source.cols * 2;
  return bytes;
}

TEST(Compression, ASparseConvMovesItsActivationsCodedAndTheCostModelCountsIt) {
  const arch::ArchSpec spec = load_arch("eyeriss");
  ASSERT_TRUE(spec.dram.rlc.has_value());
  const ops::Op dense = conv(""), sparse = conv(", density: {input: 0.4, output: 0.55}");
  const mapper::Mapping mapping = best_direct_mapping(sparse, spec, arch::Dataflow::rs);
  mapper::Mapping dense_mapping = mapping;
  dense_mapping.form = mapper::conv_direct_stage(*dense.as<ops::ConvShape>(), dense.dtype, 1);
  const arch::Program sparse_program = mapper::lower(sparse, 4, mapping, spec, "sparse");
  const arch::Program dense_program = mapper::lower(dense, 4, dense_mapping, spec, "dense");
  sim::Machine machine(spec);
  const sim::RunOptions timing(/*functional_run=*/false);
  const sim::RunResult coded = machine.run(sparse_program, timing);
  const sim::RunResult raw = machine.run(dense_program, timing);

  const double input = arch::coded_fraction(spec.dram.rlc, 0.4, DType::bf16),
               output = arch::coded_fraction(spec.dram.rlc, 0.55, DType::fp16);
  EXPECT_NEAR(input, 0.4 * 4 / 3, 1e-6);
  const std::map<int, int64_t> loads = loaded_bytes(dense_program);
  ASSERT_EQ(loads.size(), 2U);  // X and W
  const int64_t x = loads.at(0), w = loads.at(1);
  EXPECT_EQ(raw.counters.dram_read_bytes, x + w);
  // The weights move raw, the input coded (each burst rounded up to a whole byte).
  const double expected_read = static_cast<double>(w) + input * static_cast<double>(x);
  EXPECT_NEAR(static_cast<double>(coded.counters.dram_read_bytes), expected_read, 0.01 * expected_read);
  EXPECT_GE(static_cast<double>(coded.counters.dram_read_bytes), expected_read);
  // The output coded too, each store burst rounded up to a whole byte: at most one byte more a burst (a
  // burst ends at a row of the store's region and at burst_bytes).
  const double expected_write = output * static_cast<double>(raw.counters.dram_write_bytes);
  int64_t store_bursts = 0;
  for (const arch::CoreProgram& core : dense_program.cores)
    for (const arch::Instruction& instruction : core.instructions)
      if (const auto* store = std::get_if<arch::DmaStore>(&instruction.operation))
        store_bursts +=
            store->destination.rows *
            ((store->destination.cols * 2 + spec.core.dma.burst_bytes - 1) / spec.core.dma.burst_bytes);
  EXPECT_GE(static_cast<double>(coded.counters.dram_write_bytes), expected_write);
  EXPECT_LE(static_cast<double>(coded.counters.dram_write_bytes),
            expected_write + static_cast<double>(store_bursts));
  // SRAM sees the values, not the code: the same bytes land in the banks.
  EXPECT_EQ(coded.counters.sram_write_bytes, raw.counters.sram_write_bytes);
  // The cost model's DRAM bytes are the simulation's, within the bursts' rounding.
  const mapper::CostModel model(spec);
  const double estimated = static_cast<double>(model.evaluate(mapping).dram_bytes);
  const double simulated =
      static_cast<double>(coded.counters.dram_read_bytes + coded.counters.dram_write_bytes);
  EXPECT_NEAR(estimated, simulated, 0.01 * simulated);
  EXPECT_LT(coded.counters.cycles, raw.counters.cycles + 1);  // fewer bytes over the link never take longer
}

// An output whose tiles are stored as partial sums and added to later (k tiles outermost, more output tiles
// than fit) holds dense values while it does: the lowering declares it dense, every store moves raw, and the
// cost model counts the same bytes.
TEST(Compression, AnOutputThatTakesPartialSumsThroughDramMovesRaw) {
  arch::ArchSpec spec = load_arch("default");
  spec.dram.rlc = arch::RlcSpec{5, 3, 8};  // Eyeriss's coder
  const ops::Op op =
      std::move(ops::workload_from_yaml(
                    config::load_text("name: g\nseed: 2\nops:\n  - {name: g, kind: gemm, m: 96, n: "
                                      "64, k: 96, dtype: bf16, psum: fp16, density: {output: 0.4}}\n",
                                      "g.yaml"))
                    .ops.front());
  mapper::Mapping mapping = best_mapping(op, spec, arch::Dataflow::ws);
  mapping.split_m = mapping.split_n = mapping.split_k = 1;
  mapping.tile_m = 32, mapping.tile_n = 32, mapping.tile_k = 32;
  mapping.order = {mapper::Dim::k, mapper::Dim::m, mapper::Dim::n};
  const arch::Program program = mapper::lower(op, 2, mapping, spec, "partial");
  int accumulating = 0;
  for (const arch::CoreProgram& core : program.cores)
    for (const arch::Instruction& instruction : core.instructions)
      if (const auto* store = std::get_if<arch::DmaStore>(&instruction.operation))
        accumulating += store->accumulate ? 1 : 0;
  ASSERT_GT(accumulating, 0);
  EXPECT_EQ(program.tensors.back().name, "O");
  EXPECT_EQ(program.tensors.back().density, 1.0);
  sim::Machine machine(spec);
  const sim::RunResult result = machine.run(program, sim::RunOptions(/*functional_run=*/false));
  // Three passes over k store every output tile three times, two of them adding (a read and a write).
  EXPECT_EQ(result.counters.dram_write_bytes, 3 * 96 * 64 * 2);
  const mapper::CostModel model(spec);
  EXPECT_EQ(model.evaluate(mapping).dram_bytes_by_tensor[2], 5 * 96 * 64 * 2);
}

}  // namespace
// An unfused epilogue's pass stores the finished output coded when it is sparse: its estimate shortens by
// what the simulated pass gains (on Eyeriss's 60 MHz link the pass's stores wait on the DRAM), where it had
// been left at the dense pass's time. AlexNet CONV3's shape, measured 2026-12-06: the simulated unfused row
// 5,308,132 -> 5,149,594 cycles at output density 0.2, the estimate 4,726,236 -> 4,567,982.
TEST(Compression, AnUnfusedPassesCodedStoresShortenItsEstimateAsTheySimulate) {
  auto unfused = [](const std::string& output_density) {
    ScratchDir scratch;
    write_text(scratch.file("w.yaml"),
               "name: conv3\nseed: 12\nops:\n  - {name: conv3, kind: conv2d, n: 4, c: 256, h: 13, w: 13, k: "
               "384, r: 3, s: 3, pad: 1, dtype: bf16, epilogue: [bias, relu], psum: fp16, density: {input: "
               "0.3, output: " +
                   output_density + "}}\n");
    const CommandResult result =
        run_tessera({"run", "--arch", shipped("arch/eyeriss.yaml"), "--workload", scratch.file("w.yaml"),
                     "--out", scratch.file("out"), "--quiet", "--timing-only"});
    if (result.exit_code != 0) throw std::runtime_error(result.output);
    const nlohmann::json report = nlohmann::json::parse(read_text(scratch.file("out/report.json")));
    for (const auto& run : report.at("ops").at(0).at("runs"))
      if (run.at("fusion") == "unfused") return run;
    throw std::runtime_error("no unfused row");
  };
  const nlohmann::json dense = unfused("1"), sparse = unfused("0.2");
  const double simulated_gain = dense.at("cycles").get<double>() - sparse.at("cycles").get<double>();
  const double estimated_gain =
      dense.at("analytical_cycles").get<double>() - sparse.at("analytical_cycles").get<double>();
  ASSERT_GT(simulated_gain, 0.02 * dense.at("cycles").get<double>()) << "the coded stores save time";
  EXPECT_NEAR(estimated_gain, simulated_gain, 0.1 * simulated_gain);
}

}  // namespace tessera
