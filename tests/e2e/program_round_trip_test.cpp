// Every program tessera writes runs under `tessera sim` with the cycles and numerics of the run that wrote it
// (issue "hardening 2", defect 1: a paged cache's, a bshd cache's and a forced routing's programs were
// refused by `sim` with a message blaming the program).
//
// Two tests. For every shipped machine x workload, each dataflow's best mapping of every op (what
// `tessera map --out` writes) is lowered, written as text and read back: the program read equals the program
// lowered, passes sim's checks (check_program, the op line read back as the same op and seed, its tensors as
// the op declares them), so `sim` runs exactly what the run simulated. Programs of more than
// kWholeTextInstructions instructions (the MoE layers' programs run to a GB of text) are compared by their
// header alone: their instructions are of the kinds the smaller programs round-trip. And on small workloads
// of every form of the defect's ops (paged and bshd caches, forced and skewed routing, beside a conv, a
// vector op and a GEMM), the commands themselves: `tessera run --out` then `tessera sim` on each program it
// wrote, with the row's cycles and numerics.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "arch/isa/program_check.hpp"
#include "arch/isa/program_text.hpp"
#include "common/config.hpp"
#include "e2e/cli_helpers.hpp"
#include "e2e/run_tessera.hpp"
#include "flow/simulate_program.hpp"
#include "mapper/lowering.hpp"
#include "mapper/op_stages.hpp"
#include "mapper/search.hpp"
#include "ops/workload.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kWholeTextInstructions = 400000;

std::vector<std::string> shipped_names(const std::string& folder) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(shipped(folder)))
    if (entry.path().extension() == ".yaml") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

// What `sim` checks of a program it reads, and that its op is the op it was lowered from.
void expect_sim_takes(const arch::Program& read, const ops::Op& op, uint64_t seed, const arch::ArchSpec& spec,
                      const std::string& what) {
  ASSERT_TRUE(read.op.has_value()) << what;
  uint64_t read_seed = 0;
  ops::Op read_op;
  try {
    arch::check_program(read, spec);
    read_op = flow::op_from_binding(*read.op, what, &read_seed, read.header_lines.op);
    flow::check_op_tensors(read_op, read, what);
  } catch (const InputError& error) {
    ADD_FAILURE() << what << ": sim refuses it: " << error.what();
    return;
  }
  EXPECT_EQ(read_seed, seed) << what;
  EXPECT_EQ(read_op.index, op.index) << what;
  EXPECT_TRUE(ops::identity_of(read_op) == ops::identity_of(op)) << what;
  EXPECT_EQ(read_op.name, op.name) << what;
}

// Per op of the workload, each dataflow's best (as tessera map --out picks them): the number of programs.
int round_trip_workload(const arch::ArchSpec& spec, const std::string& machine, const std::string& name) {
  const ops::Workload workload =
      ops::workload_from_yaml(config::load_file(shipped("workloads/" + name + ".yaml")));
  int programs = 0;
  for (const ops::Op& op : workload.ops) {
    const std::vector<arch::Dataflow>& dataflows = spec.core.pe_array.dataflows;
    if (!mapper::stages_of(op, spec, dataflows).mapped()) continue;
    mapper::SearchOptions options;
    options.dataflows = dataflows;
    options.seed = workload.seed;
    options.threads = 2;
    mapper::SearchResult search;
    try {
      search = mapper::search_op(op, spec, options);
    } catch (const InputError&) {
      return programs;  // no legal mapping of this op: tessera map writes no program of this workload
    }
    for (const mapper::DataflowSearch& dataflow : search.per_dataflow) {
      if (dataflow.best.empty()) continue;
      const std::string what = fmt::format("{} on {}: {} {}", name, machine, op.name, dataflow.label());
      std::string program_name = fmt::format("{}.{}", op.name, dataflow.label());
      std::replace(program_name.begin(), program_name.end(), ' ', '-');  // as tessera map names it
      const arch::Program lowered =
          mapper::lower(op, workload.seed, dataflow.best.front().mapping, spec, program_name);
      ++programs;
      if (lowered.instruction_count() <= kWholeTextInstructions) {
        const std::string text = arch::write_program(lowered);
        const arch::Program read = arch::read_program(text, what);
        EXPECT_TRUE(read == lowered) << what << ": the text reads back as another program";
        EXPECT_EQ(arch::write_program(read), text) << what;
        expect_sim_takes(read, op, workload.seed, spec, what);
      } else {
        arch::Program header = lowered;
        header.cores.clear();
        arch::Program read = arch::read_program(arch::write_program(header), what);
        EXPECT_TRUE(read.op == lowered.op) << what;
        EXPECT_EQ(read.tensors.size(), lowered.tensors.size()) << what;
        for (size_t i = 0; i < read.tensors.size() && i < lowered.tensors.size(); ++i)
          EXPECT_TRUE(read.tensors[i] == lowered.tensors[i])
              << what << ": tensor " << lowered.tensors[i].name;
        // sim's checks of the instructions are the whole program's.
        read.cores = lowered.cores;
        read.semaphores = lowered.semaphores;
        expect_sim_takes(read, op, workload.seed, spec, what);
      }
    }
  }
  return programs;
}

class ShippedPrograms : public ::testing::TestWithParam<std::string> {};

TEST_P(ShippedPrograms, EveryProgramMapWritesReadsBackAsLoweredAndSimTakesIt) {
  const std::string machine = GetParam();
  const arch::ArchSpec spec = arch::arch_from_yaml(config::load_file(shipped("arch/" + machine + ".yaml")));
  int programs = 0;
  for (const std::string& workload : shipped_names("workloads"))
    programs += round_trip_workload(spec, machine, workload);
  // Every shipped machine but tpu-v1 (int8 only; no shipped workload is all int8) maps a shipped workload.
  if (machine != "tpu-v1") EXPECT_GT(programs, 0) << machine;
}

INSTANTIATE_TEST_SUITE_P(EveryShippedMachine, ShippedPrograms,
                         ::testing::Values("default", "eyeriss", "mesh4x4", "systolic-32x32", "tpu-v1",
                                           "tpu-v4-like"));

TEST(ShippedPrograms, TheParameterListIsEveryShippedMachine) {
  EXPECT_EQ(shipped_names("arch"), (std::vector<std::string>{"default", "eyeriss", "mesh4x4",
                                                             "systolic-32x32", "tpu-v1", "tpu-v4-like"}));
}

// Small ops of every form of the defect's cases, with a conv, a vector op and a GEMM beside them.
const char* kWorkload = R"(name: round-trip
seed: 11
ops:
  - {name: paged, kind: attention, batch: 2, heads: 4, kv_heads: 2, seq_q: 1, seq_kv: 200, head_dim: 32,
     causal: true, dtype: bf16, kv_cache: {layout: paged, block_tokens: 16}}
  - {name: bshd, kind: attention, batch: 1, heads: 4, kv_heads: 2, seq_q: 32, seq_kv: 96, head_dim: 32,
     dtype: bf16, kv_cache: {order: bshd}}
  - {name: paged_bshd, kind: attention, batch: 2, heads: 2, kv_heads: 1, seq_q: 4, seq_kv: 64, head_dim: 32,
     dtype: fp16, kv_cache: {layout: paged, block_tokens: 8, order: bshd}}
  - {name: counts, kind: moe, tokens: 32, hidden: 64, ffn: 32, experts: 4, top_k: 2, dtype: bf16,
     routing: {counts: [24, 16, 16, 8]}}
  - {name: zipf, kind: moe, tokens: 32, hidden: 64, ffn: 32, experts: 4, top_k: 2, dtype: bf16,
     routing: {skew: zipf}}
  - {name: conv, kind: conv2d, n: 1, c: 8, h: 10, w: 10, k: 16, r: 3, s: 3, pad: 1, dtype: bf16,
     epilogue: [bias, relu]}
  - {name: norm, kind: rmsnorm, rows: 16, cols: 64, dtype: bf16}
  - {name: gemm, kind: gemm, m: 48, n: 40, k: 56, dtype: fp32}
)";

// The row of report.json whose program is `file` ("paged.flash-os.tprog").
const nlohmann::json* row_of(const nlohmann::json& report, const std::string& file) {
  for (const auto& op : report.at("ops"))
    for (const auto& run : op.at("runs"))
      if (run.value("program", "") == file) return &run;
  return nullptr;
}

TEST(ProgramRoundTrip, EveryProgramRunWritesSimulatesUnderSimWithTheRowsCyclesAndNumerics) {
  ScratchDir scratch;
  write_text(scratch.file("w.yaml"), kWorkload);
  const std::string out = scratch.file("out");
  const CommandResult run =
      run_tessera({"run", "--arch", shipped("arch/mesh4x4.yaml"), "--workload", scratch.file("w.yaml"),
                   "--quiet", "--format", "json", "--out", out});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const nlohmann::json report = nlohmann::json::parse(read_text(out + "/report.json"));
  int programs = 0;
  for (const auto& entry : fs::directory_iterator(out)) {
    const std::string file = entry.path().filename().string();
    if (entry.path().extension() != ".tprog") continue;
    ++programs;
    const nlohmann::json* row = row_of(report, file);
    ASSERT_NE(row, nullptr) << file;
    const CommandResult sim = run_tessera({"sim", "--arch", shipped("arch/mesh4x4.yaml"), "--program",
                                           entry.path().string(), "--quiet", "--format", "json"});
    ASSERT_EQ(sim.exit_code, 0) << file << ": " << sim.output;
    const nlohmann::json simulated = nlohmann::json::parse(sim.output).at("ops").at(0).at("runs").at(0);
    EXPECT_EQ(simulated.at("cycles"), row->at("cycles")) << file;
    EXPECT_EQ(simulated.at("dram_bytes"), row->at("dram_bytes")) << file;
    ASSERT_FALSE(row->at("numerics").empty()) << file;
    const nlohmann::json& expected = row->at("numerics").at(0);
    const nlohmann::json& got = simulated.at("numerics").at(0);
    for (const char* key : {"reference", "pass", "max_abs_err", "rel_l2_err"})
      EXPECT_EQ(got.at(key), expected.at(key)) << file << " " << key;
  }
  // At least a program per op (a row per dataflow or form of each).
  EXPECT_GE(programs, 8);
}

}  // namespace
}  // namespace tessera
