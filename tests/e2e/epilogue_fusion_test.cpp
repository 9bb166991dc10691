// Epilogues fused or unfused, decided by cost (issue "Ops as stage graphs", section 4): every kept mapping of
// both kinds computes the right numbers and moves the DRAM bytes its cost says; an epilogue applied twice or
// to the wrong tile fails numerics; on a machine whose vector unit is too narrow for the epilogue the fused
// mapping's PE arrays wait for the vector unit and the unfused mapping wins, with a wide one the fused
// mapping wins; the report says fused or unfused per run and what fusion bought.
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "common/config.hpp"
#include "e2e/cli_helpers.hpp"
#include "e2e/pipeline_fixture.hpp"
#include "e2e/run_tessera.hpp"
#include "mapper/lowering.hpp"
#include "mapper/search.hpp"
#include "ops/workload.hpp"
#include "sim/machine.hpp"

namespace tessera {

namespace {

const char* kEpilogueOps = R"(name: epilogues
seed: 5
ops:
  - {name: ffn1, kind: gemm, m: 96, n: 160, k: 72, dtype: bf16, epilogue: [bias, gelu]}
  - {name: proj, kind: gemm, m: 40, n: 64, k: 300, dtype: fp32, epilogue: [bias, residual]}
  - {name: gate, kind: gemm, m: 33, n: 70, k: 48, dtype: fp16, epilogue: [silu]}
  - {name: act, kind: gemm, m: 256, n: 256, k: 32, dtype: bf16, epilogue: [gelu]}
  - {name: tanh, kind: gemm, m: 64, n: 64, k: 64, dtype: bf16, epilogue: [gelu_tanh, residual]}
  - {name: fc, kind: fc, batch: 5, inputs: 200, outputs: 96, dtype: bf16, epilogue: [bias, relu]}
  - {name: glu, kind: gemm, m: 48, n: 80, k: 64, dtype: bf16, epilogue: [bias, swiglu]}
  - {name: glu32, kind: fc, batch: 7, inputs: 96, outputs: 40, dtype: fp32, epilogue: [swiglu]}
  - {name: block, kind: conv2d, n: 1, c: 16, h: 10, w: 10, k: 32, r: 3, s: 3, pad: 1, dtype: bf16,
     epilogue: [bias, residual, relu]}
  - {name: grouped, kind: conv2d, n: 2, c: 16, h: 8, w: 8, k: 16, r: 3, s: 3, pad: 1, groups: 4, dtype: bf16,
     epilogue: [bias, relu]}
  - {name: half, kind: gemm, m: 256, n: 256, k: 64, dtype: bf16, out: bf16}
  - {name: narrow, kind: conv2d, n: 2, c: 8, h: 9, w: 9, k: 24, r: 3, s: 3, pad: 1, dtype: fp32,
     epilogue: [bias, residual, relu], out: fp16}
  - {name: fc16, kind: fc, batch: 6, inputs: 120, outputs: 80, dtype: bf16, epilogue: [bias, relu], out: bf16}
)";

ops::Workload epilogue_workload() {
  return ops::workload_from_yaml(config::load_text(kEpilogueOps, "epilogues.yaml"));
}

void run_every_candidate(const std::string& machine_name) {
  const arch::ArchSpec spec = load_arch(machine_name);
  sim::Machine machine(spec);
  const ops::Workload workload = epilogue_workload();
  int runs = 0;
  for (const ops::Op& op : workload.ops) {
    mapper::SearchOptions options;
    options.dataflows = {arch::Dataflow::ws, arch::Dataflow::os};
    options.keep_per_dataflow = 2;
    const mapper::SearchResult search = mapper::search_op(op, spec, options);
    std::set<mapper::Fusion> seen;
    for (const mapper::DataflowSearch& row : search.per_dataflow) {
      seen.insert(row.fusion);
      for (const mapper::Candidate& candidate : row.best) {
        const mapper::Mapping& mapping = candidate.mapping;
        ASSERT_TRUE(mapping.epilogue) << op.name;
        EXPECT_EQ(mapping.fusion, row.fusion);
        const arch::Program program = mapper::lower(op, workload.seed, mapping, spec, op.name);
        ++runs;
        sim::RunResult result;
        ASSERT_NO_THROW(result = machine.run(program, sim::RunOptions{}))
            << machine_name << " " << op.name << " " << mapping.describe();
        std::string detail;
        EXPECT_TRUE(output_matches_reference(op, workload.seed, result, &detail))
            << machine_name << " " << op.name << " " << mapping.describe() << ": " << detail;
        // The cost model's DRAM bytes, the epilogue's included, are the program's.
        EXPECT_EQ(candidate.cost.dram_bytes,
                  result.counters.dram_read_bytes + result.counters.dram_write_bytes)
            << machine_name << " " << op.name << " " << mapping.describe();
        for (const sim::UnitResult& unit : result.units) {
          int64_t sum = 0;
          for (int64_t cycles : unit.cycles) sum += cycles;
          EXPECT_EQ(sum, result.counters.cycles) << unit.name;
        }
      }
    }
    // Both ways are searched side by side.
    EXPECT_EQ(seen, (std::set<mapper::Fusion>{mapper::Fusion::fused, mapper::Fusion::unfused})) << op.name;
  }
  EXPECT_GE(runs, 4 * static_cast<int>(workload.ops.size()));  // two dataflows, fused and unfused, each kept
}

std::vector<arch::VecOp*> vec_ops(arch::Program& program);

// A fused WS candidate of `op` on `spec` whose epilogues use both O buffers, lowered.
struct FusedProgram {
  ops::Op op;
  arch::Program program;
};
FusedProgram fused_program(const std::string& op_name, const arch::ArchSpec& spec) {
  const ops::Workload workload = epilogue_workload();
  for (const ops::Op& op : workload.ops) {
    if (op.name != op_name) continue;
    mapper::SearchOptions options;
    options.dataflows = {arch::Dataflow::ws};
    options.keep_per_dataflow = 16;
    for (const mapper::DataflowSearch& row : mapper::search_op(op, spec, options).per_dataflow) {
      if (row.fusion != mapper::Fusion::fused) continue;
      for (const mapper::Candidate& candidate : row.best) {
        FusedProgram fused{op, mapper::lower(op, workload.seed, candidate.mapping, spec, op.name)};
        std::set<uint64_t> buffers;
        for (const arch::VecOp* vec : vec_ops(fused.program)) buffers.insert(vec->x_address);
        if (buffers.size() == 2) return fused;
      }
    }
  }
  ADD_FAILURE() << "no fused mapping of " << op_name << " with two O buffers in use";
  return {};
}

std::vector<arch::VecOp*> vec_ops(arch::Program& program) {
  std::vector<arch::VecOp*> found;
  for (arch::CoreProgram& core : program.cores)
    for (arch::Instruction& instruction : core.instructions)
      if (auto* vec = arch::operation_if<arch::VecOp>(instruction.operation)) found.push_back(vec);
  return found;
}

bool passes(const FusedProgram& fused, const arch::Program& program, sim::Machine& machine) {
  const sim::RunResult result = machine.run(program, sim::RunOptions{});
  std::string detail;
  return output_matches_reference(fused.op, epilogue_workload().seed, result, &detail);
}

const nlohmann::json& best_of(const nlohmann::json& op, const std::string& fusion) {
  const nlohmann::json* best = nullptr;
  for (const nlohmann::json& run : op.at("runs"))
    if (run.at("fusion") == fusion && (!best || run.at("cycles") < best->at("cycles"))) best = &run;
  EXPECT_NE(best, nullptr) << fusion;
  return *best;
}

}  // namespace

TEST(EpilogueFusion, EveryKeptFusedAndUnfusedMappingIsCorrectOnTheDefaultMesh) {
  run_every_candidate("default");
}

TEST(EpilogueFusion, EveryKeptFusedAndUnfusedMappingIsCorrectOnMesh4x4) {
  run_every_candidate("mesh4x4");
}

TEST(EpilogueFusion, AnEpilogueAppliedTwiceOrToTheWrongTileFailsNumerics) {
  const arch::ArchSpec spec = load_arch("default");
  const FusedProgram fused = fused_program("act", spec);
  sim::Machine machine(spec);  // one elaboration per process
  EXPECT_TRUE(passes(fused, fused.program, machine));
  // Twice: gelu(gelu(x)).
  arch::Program twice = fused.program;
  for (arch::VecOp* vec : vec_ops(twice)) vec->chain = {arch::VecFn::gelu, arch::VecFn::gelu};
  EXPECT_FALSE(passes(fused, twice, machine));
  // The wrong tile: every epilogue reads the other O buffer.
  arch::Program wrong = fused.program;
  const std::vector<arch::VecOp*> vecs = vec_ops(wrong);
  ASSERT_GE(vecs.size(), 2u);
  std::set<uint64_t> buffers;
  for (const arch::VecOp* vec : vecs) buffers.insert(vec->x_address);
  ASSERT_EQ(buffers.size(), 2u) << "double-buffered O";
  for (arch::VecOp* vec : vecs)
    vec->x_address = vec->x_address == *buffers.begin() ? *buffers.rbegin() : *buffers.begin();
  EXPECT_FALSE(passes(fused, wrong, machine));
}

// `out: bf16` (ops/epilogue.hpp): the fused rounding pass writes the output in half the bytes, and the store
// moves exactly those; rounding to the wrong 16-bit type fails numerics.
TEST(EpilogueFusion, ANarrowOutputTypeIsStoredInHalfTheBytesRoundedOnce) {
  const arch::ArchSpec spec = load_arch("default");
  const FusedProgram fused = fused_program("half", spec);
  sim::Machine machine(spec);  // one elaboration per process
  const sim::RunResult result = machine.run(fused.program, sim::RunOptions{});
  const ops::HostTensor& output = result.outputs.rbegin()->second;
  EXPECT_EQ(output.dtype, DType::bf16);
  EXPECT_EQ(result.counters.dram_write_bytes, 256 * 256 * 2);
  std::string detail;
  EXPECT_TRUE(output_matches_reference(fused.op, epilogue_workload().seed, result, &detail)) << detail;
  const std::vector<arch::VecOp*> original = vec_ops(const_cast<arch::Program&>(fused.program));
  ASSERT_FALSE(original.empty());
  for (const arch::VecOp* vec : original) {
    EXPECT_EQ(vec->out_dtype, DType::bf16);
    EXPECT_EQ(vec->dtype, DType::fp32);
    EXPECT_EQ(vec->chain, std::vector<arch::VecFn>{arch::VecFn::scale});
    EXPECT_EQ(vec->scale, 1.0);
  }
  arch::Program wrong = fused.program;
  for (arch::VecOp* vec : vec_ops(wrong)) vec->out_dtype = DType::fp16;
  EXPECT_FALSE(passes(fused, wrong, machine));
}

TEST(EpilogueFusion, ANarrowVectorUnitMakesTheFusedPeArraysWaitAndTheUnfusedMappingWin) {
  // A small, deep GEMM: its fused epilogue runs on the cores that finish output tiles after the k split's
  // reduction, the unfused pass on all 16.
  const std::string op =
      "{name: b, kind: gemm, m: 128, n: 128, k: 2048, dtype: bf16, epilogue: [bias, gelu_tanh]}";
  const nlohmann::json narrow =
      run_report(mesh4x4_with_vector("vector: {lanes: 1, special_per_cycle: 1, latency_cycles: 8}"), op);
  const nlohmann::json& entry = narrow.at("ops").at(0);
  for (const nlohmann::json& run : entry.at("runs"))
    if (run.at("winner")) {
      EXPECT_EQ(run.at("fusion"), "unfused") << run.dump();
    }
  EXPECT_EQ(entry.at("fusion").at("winner"), "unfused");
  EXPECT_LT(entry.at("fusion").at("unfused_vs_fused_cycles").get<double>(), 0.95);
  // The fused mapping's PE arrays wait for the vector unit most of their time.
  EXPECT_GT(pe_share(best_of(entry, "fused"), "vector"), 0.5);

  const nlohmann::json wide =
      run_report(mesh4x4_with_vector("vector: {lanes: 256, special_per_cycle: 256, latency_cycles: 8}"), op);
  const nlohmann::json& wide_entry = wide.at("ops").at(0);
  EXPECT_EQ(wide_entry.at("fusion").at("winner"), "fused");
  for (const nlohmann::json& run : wide_entry.at("runs"))
    if (run.at("winner")) {
      EXPECT_EQ(run.at("fusion"), "fused") << run.dump();
    }
  // Fusion saves the round trip of the raw output through DRAM.
  EXPECT_LT(wide_entry.at("fusion").at("fused").at("dram_bytes").get<int64_t>(),
            wide_entry.at("fusion").at("unfused").at("dram_bytes").get<int64_t>());
}

TEST(EpilogueFusion, TheTableSaysFusedOrUnfusedAndWhatFusionBought) {
  ScratchDir scratch;
  write_text(scratch.file("w.yaml"),
             "name: f\nseed: 2\nops:\n  - {name: ffn1, kind: gemm, m: 256, n: 512, k: 256, dtype: bf16, "
             "epilogue: [bias, gelu]}\n");
  const CommandResult result =
      run_tessera({"run", "--arch", shipped("arch/mesh4x4.yaml"), "--workload", scratch.file("w.yaml"),
                   "--out", scratch.file("out"), "--quiet", "--dataflow", "ws"});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("ws fused"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("ws unfused"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("      fusion: fused ws "), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("unfused epilogue: "), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("numerics: all pass"), std::string::npos) << result.output;
  const std::string csv = read_text(scratch.file("out/report.csv"));
  EXPECT_NE(csv.find(",fusion,"), std::string::npos);
  EXPECT_NE(csv.find(",fused,"), std::string::npos);
  EXPECT_NE(csv.find(",unfused,"), std::string::npos);
}

}  // namespace tessera
