// Functional execution catches wrong tile programs: take the mapper's program, break it the way a buggy
// mapper would, and `tessera sim` must report a numerics failure (exit status 1, after writing its report).
#include <gtest/gtest.h>

#include <regex>

#include "e2e/cli_helpers.hpp"
#include "e2e/run_tessera.hpp"

namespace tessera {

namespace {

class BrokenProgram : public ::testing::Test {
 protected:
  void SetUp() override {
    // ffn2 (512x768x3072) cannot hold k in one tile on the default machine: its output accumulates over k
    // tiles.
    write_text(
        scratch_.file("ffn2.yaml"),
        "name: broken\nseed: 7\nops:\n  - {name: ffn2, kind: gemm, m: 512, n: 768, k: 3072, dtype: bf16}\n");
    const CommandResult mapped =
        run_tessera({"map", "--arch", shipped("arch/default.yaml"), "--workload", scratch_.file("ffn2.yaml"),
                     "--dataflow", "ws", "--out", scratch_.file("mapped"), "--quiet"});
    ASSERT_EQ(mapped.exit_code, 0) << mapped.output;
    program_ = read_text(scratch_.file("mapped/ffn2.ws.tprog"));
    ASSERT_NE(program_.find("acc=1"), std::string::npos) << "the program accumulates over k tiles";
  }

  // Runs `text` as a tile program; returns the exit status and the parsed report.
  std::pair<int, nlohmann::json> simulate(const std::string& text,
                                          const std::vector<std::string>& overrides = {},
                                          const std::vector<std::string>& extra = {"--threads", "1"}) {
    write_text(scratch_.file("edited.tprog"), text);
    std::vector<std::string> arguments = {"sim",
                                          "--arch",
                                          shipped("arch/default.yaml"),
                                          "--program",
                                          scratch_.file("edited.tprog"),
                                          "--out",
                                          scratch_.file("report"),
                                          "--format",
                                          "json",
                                          "--quiet"};
    for (const std::string& assignment : overrides) {
      arguments.push_back("--set");
      arguments.push_back(assignment);
    }
    arguments.insert(arguments.end(), extra.begin(), extra.end());
    const CommandResult result = run_tessera(arguments);
    const size_t start = result.output.find('{');
    EXPECT_NE(start, std::string::npos) << result.output;
    return {result.exit_code, start == std::string::npos
                                  ? nlohmann::json()
                                  : nlohmann::json::parse(result.output.substr(start))};
  }

  ScratchDir scratch_;
  std::string program_;
};

}  // namespace

TEST_F(BrokenProgram, TheUnbrokenProgramPasses) {
  const auto [exit_code, report] = simulate(program_);
  EXPECT_EQ(exit_code, 0);
  EXPECT_TRUE(report["ops"][0]["runs"][0]["numerics"][0]["pass"].get<bool>());
  EXPECT_EQ(report["ops"][0]["runs"][0]["sram_hazards"].get<int64_t>(), 0);
}

// One k tile's partial sums dropped: an accumulating PE instruction overwrites instead of adding.
TEST_F(BrokenProgram, DroppingAKTileFailsNumerics) {
  std::string broken = program_;
  broken.replace(broken.find("acc=1"), 5, "acc=0");
  const auto [exit_code, report] = simulate(broken);
  EXPECT_EQ(exit_code, 1);
  const auto& check = report["ops"][0]["runs"][0]["numerics"][0];
  EXPECT_FALSE(check["pass"].get<bool>()) << check.dump();
  EXPECT_TRUE(exists(scratch_.file("report/report.json"))) << "a numerics failure still writes its report";
}

// Two live buffers overlapped: every load into A's second buffer lands on the first one instead.
TEST_F(BrokenProgram, OverlappingTwoLiveBuffersFailsNumerics) {
  const std::regex a_load(R"(load A\[[^\]]*\] -> (0x[0-9a-f]+))");
  std::vector<std::string> addresses;
  for (std::sregex_iterator it(program_.begin(), program_.end(), a_load), end; it != end; ++it)
    if (std::find(addresses.begin(), addresses.end(), (*it)[1].str()) == addresses.end())
      addresses.push_back((*it)[1].str());
  ASSERT_EQ(addresses.size(), 2u) << "A is double-buffered";
  const std::string broken =
      std::regex_replace(program_, std::regex("\\] -> " + addresses[1]), "] -> " + addresses[0]);
  const auto [exit_code, report] = simulate(broken);
  EXPECT_EQ(exit_code, 1);
  EXPECT_FALSE(report["ops"][0]["runs"][0]["numerics"][0]["pass"].get<bool>());
}

// A prefetch racing a read: the second A load no longer waits for its buffer to be freed.
TEST_F(BrokenProgram, APrefetchThatDoesNotWaitForItsBufferFailsNumerics) {
  std::string broken = program_;
  const std::regex waiting_load(R"((dma0 load A\[[^\n]*?) ; wait a_free\[0\](\*\d+)?)");
  broken = std::regex_replace(broken, waiting_load, "$1");
  ASSERT_NE(broken, program_) << "the program reuses A's first buffer";
  // The semaphore the loads no longer consume is still signalled: leftover signals are harmless. On the
  // default machine the early load happens to land just as the instruction reading that buffer ends; with a
  // fast memory system it lands while the array is still reading the tile it replaces.
  const std::vector<std::string> fast_memory = {
      "dram.latency_cycles=1", "dram.bandwidth_gbps=65536", "noc.link_bytes_per_cycle=4096",
      "core.dma.bytes_per_cycle=4096", "core.dma.outstanding_bursts=4096"};
  const auto [correct_exit, correct] = simulate(program_, fast_memory);
  EXPECT_EQ(correct_exit, 0);
  EXPECT_EQ(correct["ops"][0]["runs"][0]["sram_hazards"].get<int64_t>(), 0)
      << "no race in the correct program";
  const auto [exit_code, report] = simulate(broken, fast_memory);
  EXPECT_EQ(exit_code, 1);
  EXPECT_FALSE(report["ops"][0]["runs"][0]["numerics"][0]["pass"].get<bool>());
  EXPECT_GT(report["ops"][0]["runs"][0]["sram_hazards"].get<int64_t>(), 0)
      << "the race is named, not only felt";
  // The arithmetic on two threads (each PE instruction's product computed beside the simulation, a write
  // into its operands waiting for it) finds the same race and the same wrong numbers, to the bit.
  const auto [threaded_exit, threaded] = simulate(broken, fast_memory, {"--threads", "2"});
  EXPECT_EQ(threaded_exit, 1);
  const auto& run = report["ops"][0]["runs"][0];
  const auto& threaded_run = threaded["ops"][0]["runs"][0];
  EXPECT_EQ(threaded_run["sram_hazards"], run["sram_hazards"]);
  EXPECT_EQ(threaded_run["cycles"], run["cycles"]);
  EXPECT_EQ(threaded_run["numerics"][0].dump(), run["numerics"][0].dump());
}

}  // namespace tessera
