// report.json against its checked-in JSON Schema (docs/report.schema.json, written by
// scripts/report_schema.py; issue "forms in family rooms", item 6): every shipped workload's timing-only
// report on the 4x4 mesh, where every one maps, and a functional run and a `tessera sim` report of a small
// one. The check is Debian's python3-jsonschema, run by the script, which first checks that the schema file
// is what the script writes. Left out of the sanitized suite (scripts/test-sanitized.sh): minutes of mapping
// the largest MoE layers.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "e2e/cli_helpers.hpp"
#include "e2e/run_tessera.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> shipped_workloads() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(std::string(TESSERA_SOURCE_DIR) + "/configs/workloads"))
    if (entry.path().extension() == ".yaml") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

// The script's verdict on `reports`: its exit code and what it said.
CommandResult check_schema(const std::vector<std::string>& reports) {
  std::string command =
      std::string("/usr/bin/python3 ") + TESSERA_SOURCE_DIR + "/scripts/report_schema.py check";
  for (const std::string& report : reports) command += " '" + report + "'";
  return run_command(command);
}

class ShippedReports : public testing::TestWithParam<std::string> {};

TEST_P(ShippedReports, TheTimingOnlyReportOnTheMeshValidatesAgainstTheSchema) {
  ScratchDir scratch;
  const std::string workload = GetParam();
  // gemm-8192's report is a GEMM's like gemm-4096's: its hour of simulation adds no key.
  if (workload == "gemm-8192") GTEST_SKIP() << "the same report shape as gemm-4096";
  // The report as --format json prints it: what --out writes as report.json, without the trace and the
  // programs --out keeps (gigabytes for the MoE layers).
  const CommandResult run =
      run_command(std::string(TESSERA_BINARY) + " run --arch '" + shipped("arch/mesh4x4.yaml") +
                  "' --workload '" + shipped("workloads/" + workload + ".yaml") +
                  "' --timing-only --quiet --format json > '" + scratch.file("report.json") + "'");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const CommandResult check = check_schema({scratch.file("report.json")});
  EXPECT_EQ(check.exit_code, 0) << check.output;
}

INSTANTIATE_TEST_SUITE_P(Every, ShippedReports, testing::ValuesIn(shipped_workloads()),
                         [](const testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& c : name)
                             if (c == '-') c = '_';
                           return name;
                         });

// A functional run (numerics checked) of every form family and a `tessera sim` report validate too, and a
// report whose attention row carries a contraction's keys does not.
TEST(ReportSchema, AFunctionalRunAndASimReportValidateAndAForeignKeyFails) {
  ScratchDir scratch;
  write_text(scratch.file("w.yaml"), R"(name: forms
seed: 4
ops:
  - {name: gemm, kind: gemm, m: 64, n: 48, k: 40, dtype: bf16, epilogue: [bias, gelu]}
  - {name: conv, kind: conv2d, n: 1, c: 8, h: 10, w: 10, k: 16, r: 3, s: 3, pad: 1, dtype: bf16}
  - {name: attn, kind: attention, batch: 2, heads: 4, kv_heads: 2, seq_q: 1, seq_kv: 200, head_dim: 32,
     causal: true, dtype: bf16, kv_cache: {layout: paged, block_tokens: 16}}
  - {name: moe, kind: moe, tokens: 32, hidden: 64, ffn: 32, experts: 4, top_k: 2, dtype: bf16}
  - {name: norm, kind: rmsnorm, rows: 16, cols: 64, dtype: bf16}
  - {name: pool, kind: pool, mode: max, n: 1, c: 8, h: 8, w: 8, r: 2, s: 2, stride: 2, dtype: int8}
)");
  const CommandResult run = run_tessera({"run", "--arch", shipped("arch/mesh4x4.yaml"), "--workload",
                                         scratch.file("w.yaml"), "--quiet", "--out", scratch.file("run")});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const CommandResult sim =
      run_tessera({"sim", "--arch", shipped("arch/mesh4x4.yaml"), "--program",
                   scratch.file("run/attn.flash-ws.tprog"), "--quiet", "--out", scratch.file("sim")});
  ASSERT_EQ(sim.exit_code, 0) << sim.output;
  const CommandResult check =
      check_schema({scratch.file("run/report.json"), scratch.file("sim/report.json")});
  EXPECT_EQ(check.exit_code, 0) << check.output;

  // The attention row given a contraction's tile: the schema refuses another family's key.
  std::string text = read_text(scratch.file("run/report.json"));
  const size_t attention = text.find("\"form\": \"flash");
  ASSERT_NE(attention, std::string::npos);
  text.insert(attention, "\"tile\": {\"m\": 1, \"n\": 1, \"k\": 1}, ");
  write_text(scratch.file("foreign.json"), text);
  const CommandResult foreign = check_schema({scratch.file("foreign.json")});
  EXPECT_EQ(foreign.exit_code, 1) << foreign.output;
  EXPECT_NE(
      foreign.output.find(
          "ops/2/runs/0/mapping: as its form: Additional properties are not allowed ('tile' was unexpected)"),
      std::string::npos)
      << foreign.output;
}

// The simulator's per-unit counters reach report.json (issue "forms in family rooms", item 5: a stat declared
// once, in common/counters.hpp, that every writer walks): the PE arrays' MACs add up to the row's pe_macs,
// every unit's instructions to the program's, and a fused epilogue's vector units count the output's
// elements.
TEST(ReportCounters, PerUnitCountersAddUpToTheRowsFigures) {
  ScratchDir scratch;
  write_text(scratch.file("w.yaml"), R"(name: counters
seed: 2
ops:
  - {name: gemm, kind: gemm, m: 64, n: 48, k: 40, dtype: bf16, epilogue: [bias, gelu]}
)");
  const CommandResult run =
      run_tessera({"run", "--arch", shipped("arch/mesh4x4.yaml"), "--workload", scratch.file("w.yaml"),
                   "--timing-only", "--quiet", "--format", "json"});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const nlohmann::json report = nlohmann::json::parse(run.output);
  for (const auto& row : report.at("ops").at(0).at("runs")) {
    const std::string where =
        row.at("dataflow").get<std::string>() + " " + row.at("fusion").get<std::string>();
    int64_t pe_macs = 0, instructions = 0, vector_elements = 0, dma_bytes = 0, folds = 0;
    for (const auto& [unit, counters] : row.at("unit_counters").items()) {
      instructions += counters.value("instructions", int64_t{0});
      if (unit.size() > 3 && unit.substr(unit.size() - 3) == ".pe") {
        pe_macs += counters.value("macs", int64_t{0});
        folds += counters.value("folds", int64_t{0});
      }
      if (unit.find(".dma") != std::string::npos) dma_bytes += counters.value("bytes_moved", int64_t{0});
      vector_elements += counters.value("vector_elements", int64_t{0});
    }
    EXPECT_EQ(pe_macs, row.at("pe_macs").get<int64_t>()) << where;
    EXPECT_EQ(instructions, row.at("instructions").get<int64_t>()) << where;
    EXPECT_GT(folds, 0) << where;
    // The DMA engines move at least what DRAM read and wrote (a multicast's copies go over the NoC).
    EXPECT_GE(dma_bytes, 64 * 40 * 2) << where;
    // Bias and GELU over the 64 x 48 output: fused, each output tile once; unfused, the pass over it.
    if (row.at("fusion") != "array") EXPECT_GE(vector_elements, 64 * 48) << where;
  }
}

}  // namespace
}  // namespace tessera
