// Every configured DMA engine carries transfers (mapper/kit/dma_engines.hpp; issue "Fidelity", section 1): a
// DMA-bound GEMM's delivered bandwidth doubles with its engines, every engine is busy, and the output is
// still right; so do attention's and MoE's programs. Through the command, as a user runs it (one machine per
// process).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>

#include "e2e/cli_helpers.hpp"
#include "e2e/run_tessera.hpp"

namespace tessera {
namespace {

// One core of a 64x64 WS array whose engines, 4 B/cycle each, are the bottleneck: DRAM, the NoC port and
// SRAM are far wider than any engine count below.
std::string machine(int engines) {
  return "name: dma-bound\nclock_ghz: 1.0\nmesh: {rows: 1, cols: 1}\n"
         "noc: {link_bytes_per_cycle: 1024, router_latency_cycles: 1, multicast: false}\n"
         "dram: {bandwidth_gbps: 2048, channels: 16, latency_cycles: 100}\n"
         "core:\n  pe_array: {rows: 64, cols: 64, dataflows: [ws], overlap_folds: true}\n"
         "  sram: {kib: 4096, banks: 32, bank_width_bytes: 64}\n"
         "  dma: {engines: " +
         std::to_string(engines) + ", bytes_per_cycle: 4, setup_cycles: 16}\n";
}

// 256x256x2048 bf16: 1 MiB of A, 1 MiB of W, 256 KiB of fp32 O; 32,768 cycles of MACs on the array, at
// least 147,456 cycles of transfers on four engines of 4 B/cycle.
const std::string kGemm = "{name: g, kind: gemm, m: 256, n: 256, k: 2048, dtype: bf16}";

struct Outcome {
  nlohmann::json run;                  // the winner's record
  std::set<std::string> busy_engines;  // DMA units with any busy cycle
  std::string program;                 // the winner's tile program
};

// The same core with a vector unit (attention and MoE need one).
std::string machine_with_vector(int engines) {
  return machine(engines) + "  vector: {lanes: 64, special_per_cycle: 16, latency_cycles: 8}\n";
}

Outcome run_op(const std::string& machine_text, const std::string& op, bool timing_only) {
  ScratchDir scratch;
  write_text(scratch.file("machine.yaml"), machine_text);
  write_text(scratch.file("w.yaml"), "name: dma\nseed: 4\nops:\n  - " + op + "\n");
  std::vector<std::string> arguments = {"run",
                                        "--arch",
                                        scratch.file("machine.yaml"),
                                        "--workload",
                                        scratch.file("w.yaml"),
                                        "--out",
                                        scratch.file("out"),
                                        "--quiet"};
  if (timing_only) arguments.push_back("--timing-only");
  const CommandResult result = run_tessera(arguments);
  if (result.exit_code != 0) throw std::runtime_error("tessera run failed: " + result.output);
  const nlohmann::json report = nlohmann::json::parse(read_text(scratch.file("out/report.json")));
  Outcome outcome;
  for (const auto& candidate : report.at("ops").at(0).at("runs"))
    if (candidate.at("winner").get<bool>()) outcome.run = candidate;
  for (const auto& [unit, causes] : outcome.run.at("bubbles").items())
    if (unit.find(".dma") != std::string::npos && causes.at("busy").get<int64_t>() > 0)
      outcome.busy_engines.insert(unit);
  outcome.program = read_text(scratch.file("out/" + outcome.run.at("program").get<std::string>()));
  return outcome;
}

Outcome run(int engines, bool timing_only) {
  return run_op(machine(engines), kGemm, timing_only);
}

void expect_numerics_pass(const Outcome& outcome) {
  ASSERT_FALSE(outcome.run.at("numerics").empty());
  for (const auto& check : outcome.run.at("numerics")) EXPECT_TRUE(check.at("pass").get<bool>()) << check;
}

double delivered_gbps(const Outcome& outcome) {
  return outcome.run.at("dram_gbps").get<double>();
}

}  // namespace

TEST(DmaEngines, DoublingTheEnginesOfADmaBoundGemmDoublesItsDeliveredBandwidth) {
  const Outcome four = run(4, true), eight = run(8, true), sixteen = run(16, true);
  // Before the engines were split into groups every transfer went to dma0 and dma1, whatever the count: the
  // three runs took the same cycles.
  EXPECT_EQ(four.busy_engines.size(), 4u);
  EXPECT_EQ(eight.busy_engines.size(), 8u);
  EXPECT_EQ(sixteen.busy_engines.size(), 16u);
  EXPECT_GE(delivered_gbps(eight) / delivered_gbps(four), 1.8)
      << four.run.at("cycles") << " vs " << eight.run.at("cycles");
  EXPECT_GE(delivered_gbps(sixteen) / delivered_gbps(eight), 1.6)
      << eight.run.at("cycles") << " vs " << sixteen.run.at("cycles");
  // Still DMA-bound at sixteen engines of 4 B/cycle (64 B/cycle against 32,768 cycles of MACs).
  EXPECT_GT(sixteen.run.at("cycles").get<int64_t>(), 32768);
}

TEST(DmaEngines, LoadsAreCutIntoRowBlocksOnEveryEngineAndTheOutputIsRight) {
  const Outcome eight = run(8, false);
  for (const auto& check : eight.run.at("numerics")) EXPECT_TRUE(check.at("pass").get<bool>()) << check;
  ASSERT_FALSE(eight.run.at("numerics").empty());
  for (int engine = 0; engine < 8; ++engine)
    EXPECT_NE(eight.program.find("dma" + std::to_string(engine) + " "), std::string::npos) << engine;
  // The engines after the first of a group free their buffers through their own semaphores.
  EXPECT_TRUE(std::regex_search(eight.program, std::regex(R"(wait [aw]_free_e[0-9]+\[)")));
}

// A decode step's attention over a paged KV cache of 16-token blocks, four q heads a kv head (GQA): every K
// and V tile is many short runs (one per cache block), dealt round the load engines so that all of them carry
// some (before: every load on dma0, the O stores on dma1).
const std::string kPagedDecode =
    "{name: decode, kind: attention, batch: 2, heads: 8, kv_heads: 2, seq_q: 1, seq_kv: 512, head_dim: 64, "
    "causal: true, dtype: bf16, kv_cache: {layout: paged, block_tokens: 16}}";

TEST(DmaEngines, APagedGqaDecodeUsesEveryEngineAndItsOutputIsRight) {
  const Outcome eight = run_op(machine_with_vector(8), kPagedDecode, false);
  expect_numerics_pass(eight);
  EXPECT_EQ(eight.busy_engines.size(), 8u) << eight.run.at("mapping").at("description");
  // The K and V buffers' frees reach each engine of their next load on its own semaphore.
  EXPECT_TRUE(std::regex_search(eight.program, std::regex(R"(wait [kv]_free_e[0-9]+\[)")));
}

TEST(DmaEngines, DoublingTheEnginesOfADmaBoundAttentionDecodeNearlyHalvesItsCycles) {
  // One q head a kv head, 4096 keys of 64 bf16: 1 MiB of K and V against 1M multiply-accumulates (256
  // cycles of the 64x64 array per K/V tile of 256 keys, 16 tiles): the engines' 4 B/cycle each bound it.
  const std::string decode =
      "{name: decode, kind: attention, batch: 1, heads: 1, kv_heads: 1, seq_q: 1, seq_kv: 4096, head_dim: "
      "64, "
      "causal: true, dtype: bf16}";
  const Outcome four = run_op(machine_with_vector(4), decode, true),
                eight = run_op(machine_with_vector(8), decode, true);
  EXPECT_EQ(four.busy_engines.size(), 4u);
  EXPECT_EQ(eight.busy_engines.size(), 8u);
  const auto four_cycles = four.run.at("cycles").get<int64_t>(),
             eight_cycles = eight.run.at("cycles").get<int64_t>();
  EXPECT_GE(static_cast<double>(four_cycles) / static_cast<double>(eight_cycles), 1.7)
      << four_cycles << " vs " << eight_cycles;
  EXPECT_GE(delivered_gbps(eight) / delivered_gbps(four), 1.7);
}

TEST(DmaEngines, AMoeLayerUsesEveryEngineAndItsOutputIsRight) {
  // Router, 8 experts' gate/up and down GEMMs on their ragged rows, the combine: every phase's loads dealt
  // round the load engines and its stores round the store engines.
  const Outcome eight = run_op(
      machine_with_vector(8),
      "{name: experts, kind: moe, tokens: 64, hidden: 128, ffn: 96, experts: 8, top_k: 2, dtype: bf16}",
      false);
  expect_numerics_pass(eight);
  EXPECT_EQ(eight.busy_engines.size(), 8u) << eight.run.at("mapping").at("description");
  EXPECT_TRUE(std::regex_search(eight.program, std::regex(R"(wait [a-z_]*w_free_e[0-9]+\[)")));
}

TEST(DmaEngines, KSplitConvolutionsOnSixteenEnginesLowerAndRun) {
  // AlexNet on tpu-v4-like maps some layers with k split across cores: a sending core's PE signals the
  // plain o_done its NoC send waits for, not a store engine's (the program check refused them before).
  const CommandResult result = run_tessera({"run", "--arch", shipped("arch/tpu-v4-like.yaml"), "--workload",
                                            shipped("workloads/alexnet.yaml"), "--timing-only", "--quiet"});
  EXPECT_EQ(result.exit_code, 0) << result.output;
}

}  // namespace tessera
