// An epilogue in the PE array's output path (core.pe_array.output_steps; arch/isa/pe_post.hpp): on a machine
// whose array applies bias and ReLU as a finished tile drains, a conv's bias+ReLU runs there — a `pe post`
// after each tile's last PE instruction, no vector unit needed — computes the reference, takes the bare
// conv's time, and the report names it; an epilogue the path cannot apply (another order, a residual) is not
// offered there.
#include <gtest/gtest.h>

#include <string>

#include "arch/isa/program_binary.hpp"
#include "arch/isa/program_text.hpp"
#include "common/config.hpp"
#include "e2e/cli_helpers.hpp"
#include "e2e/pipeline_fixture.hpp"
#include "mapper/lowering.hpp"
#include "ops/workload.hpp"
#include "sim/machine.hpp"

namespace tessera {
namespace {

// mesh4x4 with an output path of bias then ReLU, and (vector = false) without its vector units.
std::string machine_with_output_path(bool vector) {
  std::string text = read_text(shipped("arch/mesh4x4.yaml"));
  const std::string unit = "vector: {lanes: 32, special_per_cycle: 8, latency_cycles: 8}";
  const size_t at = text.find(unit);
  if (at == std::string::npos) throw std::runtime_error("mesh4x4.yaml no longer has: " + unit);
  if (!vector) text.erase(at, unit.size());
  const std::string array = "pe_array: {";
  return text.insert(text.find(array) + array.size(), "output_steps: [bias, relu], ");
}

const char* kConv =
    "{name: c, kind: conv2d, n: 2, c: 32, h: 14, w: 14, k: 48, r: 3, s: 3, pad: 1, dtype: bf16, epilogue: "
    "[bias, "
    "relu]}";

TEST(OutputPath, ABiasAndReluInTheArraysOutputPathComputeTheReferenceWithoutAVectorUnit) {
  ScratchDir scratch;
  write_text(scratch.file("m.yaml"), machine_with_output_path(false));
  const arch::ArchSpec spec = arch::arch_from_yaml(config::load_file(scratch.file("m.yaml")));
  ASSERT_FALSE(spec.core.vector.has_value());
  const ops::Op op =
      std::move(ops::workload_from_yaml(
                    config::load_text(std::string("name: c\nseed: 6\nops:\n  - ") + kConv + "\n", "c.yaml"))
                    .ops.front());
  for (arch::Dataflow dataflow : {arch::Dataflow::os, arch::Dataflow::rs})
    EXPECT_EQ(best_mapping(op, spec, dataflow).fusion, mapper::Fusion::array) << arch::name_of(dataflow);
  const mapper::Mapping mapping = best_mapping(op, spec, arch::Dataflow::ws);
  ASSERT_EQ(mapping.fusion, mapper::Fusion::array);
  const arch::Program program = mapper::lower(op, 6, mapping, spec, "post");
  int posts = 0, vec = 0;
  for (const arch::CoreProgram& core : program.cores)
    for (const arch::Instruction& instruction : core.instructions) {
      if (const auto* post = arch::operation_if<arch::PePost>(instruction.operation)) {
        ++posts;
        EXPECT_EQ(post->steps,
                  (std::vector<arch::OutputStep>{arch::OutputStep::bias, arch::OutputStep::relu}));
      }
      vec += arch::operation_if<arch::VecOp>(instruction.operation) ? 1 : 0;
    }
  EXPECT_GT(posts, 0);
  EXPECT_EQ(vec, 0);
  EXPECT_EQ(arch::read_program(arch::write_program(program), "p.tprog"), program);
  EXPECT_EQ(arch::read_program_binary(arch::write_program_binary(program)), program);
  sim::Machine machine(spec);  // one elaboration per process: both runs use it
  std::string detail;
  EXPECT_TRUE(output_matches_reference(op, 6, machine.run(program, sim::RunOptions{}), &detail)) << detail;
  // The output path takes no array time: the same mapping without the epilogue runs as long, but for the
  // bias slices' loads.
  mapper::Mapping bare_mapping = mapping;
  bare_mapping.epilogue = nullptr;
  bare_mapping.fusion = mapper::Fusion::none;
  const sim::RunOptions timing(/*functional_run=*/false);
  const int64_t with_path = machine.run(program, timing).counters.cycles;
  const int64_t bare = machine.run(mapper::lower(op, 6, bare_mapping, spec, "bare"), timing).counters.cycles;
  EXPECT_GE(with_path, bare);
  EXPECT_LE(with_path, bare * 103 / 100) << bare;
  // Without the ReLU step the output path leaves negative values: the numbers no longer match.
  arch::Program bias_only = program;
  for (arch::CoreProgram& core : bias_only.cores)
    for (arch::Instruction& instruction : core.instructions)
      if (auto* post = arch::operation_if<arch::PePost>(instruction.operation))
        post->steps = {arch::OutputStep::bias};
  EXPECT_FALSE(output_matches_reference(op, 6, machine.run(bias_only, sim::RunOptions{}), &detail));
}

TEST(OutputPath, TheArrayFormWinsOverTheVectorUnitsFormsAndOnlyWhereThePathAppliesTheEpilogue) {
  const nlohmann::json with_path = run_report(machine_with_output_path(true), kConv);
  const nlohmann::json& entry = with_path.at("ops").at(0);
  EXPECT_EQ(entry.at("fusion").at("winner"), "array");
  for (const nlohmann::json& run : entry.at("runs")) {
    if (run.at("winner")) {
      EXPECT_EQ(run.at("fusion"), "array") << run.dump();
    }
  }
  // ReLU before the bias is not the path's order; a residual reads a tile: neither is offered there.
  for (const char* epilogue : {"[relu, bias]", "[bias, residual, relu]"}) {
    const nlohmann::json other =
        run_report(machine_with_output_path(true),
                   std::string("{name: c, kind: conv2d, n: 1, c: 16, h: 8, w: 8, k: 16, r: 3, s: 3, pad: "
                               "1, dtype: bf16, epilogue: ") +
                       epilogue + "}");
    for (const nlohmann::json& run : other.at("ops").at(0).at("runs"))
      EXPECT_NE(run.at("fusion"), "array") << epilogue;
  }
}

}  // namespace
}  // namespace tessera
