// The cost model against the simulator (issue "Fidelity", section 4), through the command as a user runs it:
// on every shipped machine, over a fast subset of the shipped workloads it can map, each simulated row's
// estimate (analytical_cycles) lies in a stated band around its simulated cycles, and the row the cost model
// ranks best (least analytical_cycles among the simulated rows) is within 5% of the simulated best on at
// least a stated number of ops. The bands are what scripts/cost-vs-sim.py measured (figures beside each
// machine), widened a little: a change to the cost model or the simulator that moves them fails here, and
// the new figures belong in docs/performance.md ("Cost model against the simulator") and
// docs/design-notes.md. Each row simulates only the candidate the cost model ranks first (--simulate-top 1
// --refine-rounds 0): the band measures the estimates the search acts on, not those of candidates further
// down that a row's own simulations picked (their estimates may be far off either way: that is why the run
// simulates several, and refines).
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "e2e/cli_helpers.hpp"
#include "e2e/run_tessera.hpp"

namespace tessera {
namespace {

struct Band {
  double low = 0;   // estimate / simulated, every row at least this
  double high = 0;  // and at most this
  int hits = 0;     // ops whose cost-model best is within 5% of the simulated best, at least this many
};

struct Measured {
  double low = std::numeric_limits<double>::infinity();
  double high = 0;
  int rows = 0;
  int ranked = 0;  // ops with two or more simulated rows
  int hits = 0;
  std::string outside;  // rows outside the band, and ranking misses, one a line
};

// Runs each workload on the machine (timing only) and gathers every simulated row's ratio and the ranking.
Measured measure(const std::string& machine, const std::vector<std::string>& workloads, const Band& band) {
  Measured measured;
  for (const std::string& workload : workloads) {
    ScratchDir scratch;
    const CommandResult result =
        run_tessera({"run", "--arch", shipped("arch/" + machine + ".yaml"), "--workload",
                     shipped("workloads/" + workload + ".yaml"), "--timing-only", "--simulate-top", "1",
                     "--refine-rounds", "0", "--out", scratch.file("out"), "--quiet"});
    if (result.exit_code != 0) throw std::runtime_error(machine + " " + workload + ": " + result.output);
    const nlohmann::json report = nlohmann::json::parse(read_text(scratch.file("out/report.json")));
    for (const nlohmann::json& op : report.at("ops")) {
      const nlohmann::json& runs = op.at("runs");
      const nlohmann::json* by_estimate = nullptr;
      const nlohmann::json* by_simulation = nullptr;
      for (const nlohmann::json& run : runs) {
        const double estimate = run.at("analytical_cycles").get<double>();
        const double simulated = run.at("cycles").get<double>();
        const double ratio = estimate / simulated;
        ++measured.rows;
        measured.low = std::min(measured.low, ratio);
        measured.high = std::max(measured.high, ratio);
        if (ratio < band.low || ratio > band.high)
          measured.outside += workload + " " + op.at("name").get<std::string>() + " " +
                              run.at("dataflow").get<std::string>() + " " + run.value("fusion", "") + ": " +
                              std::to_string(ratio) + "\n";
        // Equal estimates: the one simulated faster, as scripts/cost-vs-sim.py breaks the tie.
        if (!by_estimate || estimate < by_estimate->at("analytical_cycles").get<double>() ||
            (estimate == by_estimate->at("analytical_cycles").get<double>() &&
             simulated < by_estimate->at("cycles").get<double>()))
          by_estimate = &run;
        if (!by_simulation || simulated < by_simulation->at("cycles").get<double>()) by_simulation = &run;
      }
      if (runs.size() < 2) continue;
      ++measured.ranked;
      const double behind =
          by_estimate->at("cycles").get<double>() / by_simulation->at("cycles").get<double>();
      if (behind <= 1.05)
        ++measured.hits;
      else
        measured.outside += workload + " " + op.at("name").get<std::string>() + ": the cost model's best " +
                            by_estimate->at("dataflow").get<std::string>() + " " +
                            by_estimate->value("fusion", "") + " is " + std::to_string(behind) +
                            "x the simulated best\n";
    }
  }
  return measured;
}

void expect_within(const std::string& machine, const std::vector<std::string>& workloads, const Band& band) {
  const Measured measured = measure(machine, workloads, band);
  ASSERT_GT(measured.rows, 0);
  EXPECT_GE(measured.low, band.low) << measured.outside;
  EXPECT_LE(measured.high, band.high) << measured.outside;
  EXPECT_GE(measured.hits, band.hits) << "of " << measured.ranked << " ranked ops\n" << measured.outside;
  // Printed so that a run shows where the figures sit inside their band.
  std::printf("%s: %d rows, estimate/simulated %.3f..%.3f; ranking %d of %d\n", machine.c_str(),
              measured.rows, measured.low, measured.high, measured.hits, measured.ranked);
}

}  // namespace

// Bands: the measured extremes widened by about 3%, figures of the cost model after its vector-pass fix
// (docs/design-notes.md, "Cost model against the simulator").
// Measured (scripts/cost-vs-sim.py --arch default, these workloads): 140 rows, 0.837..1.321; ranking 18
// of 19. Each row's first candidate alone (2026-12-07, as this test now measures): 0.711..1.321; ranking 17
// of 19 (bert-base-attn's naive rows' first candidates are estimated at 0.71 of their cycles; bert-ffn
// ffn1's os fused first candidate simulates 1.12x the best row).
TEST(CostModelAgainstSimulator, DefaultMachineEstimatesStayInTheirBandAndRankTheBestRow) {
  expect_within("default",
                {"default", "gemm-256", "ragged", "llm-decode-proj", "bert-ffn", "bert-base-attn", "alexnet"},
                {0.69, 1.36, 17});
}

// Measured: 140 rows, 0.619..1.151; ranking 17 of 19; 18 of 19 (2026-12-06) once a tile whose inputs do not
// fit twice could double-buffer its output and a single-buffered vector pass was timed at the DRAM's rate.
// Each row's first candidate alone (2026-12-07): 0.622..1.151; ranking 17 of 19 (bert-ffn ffn2, alexnet
// conv5 miss by 1.15x and 1.10x).
TEST(CostModelAgainstSimulator, Mesh4x4EstimatesStayInTheirBandAndRankTheBestRow) {
  expect_within("mesh4x4",
                {"default", "gemm-256", "ragged", "llm-decode-proj", "bert-ffn", "bert-base-attn", "alexnet"},
                {0.60, 1.19, 17});
}

// Measured: 30 rows, 0.750..1.039; ranking 8 of 9 (bert-base-attn's flash ws misses).
TEST(CostModelAgainstSimulator, Systolic32x32EstimatesStayInTheirBandAndRankTheBestRow) {
  expect_within("systolic-32x32", {"default", "gemm-256", "ragged", "llm-decode-proj", "bert-base-attn"},
                {0.73, 1.07, 8});
}

// Measured: 21 rows, 0.790..1.037; ranking 8 of 8. With the output path (2026-12-06): 29 rows, 0.790..1.037;
// ranking 7 of 8: AlexNet CONV2's array row is estimated exactly and simulates 1.18x faster than its fused
// row, whose DMA-bound time (smaller tiles beside the E buffer) the cost model puts 15% low, so it ranks the
// fused row first by 0.06%. With the link at the measured 60 MHz, AlexNet's activation densities and a
// single-buffered vector pass's loads and stores timed at the DRAM's rate where it is the slower
// (2026-12-06): 29 rows, 0.850..1.024; ranking 8 of 8. With RS's even filter groups and tiles, a coded
// stream's short bursts timed by their count, one engine's transfers each at most the DRAM's rate, and a
// single-buffered fused tile's store in its stall (2026-12-06): 29 rows, 0.857..1.014; ranking 8 of 8 (the
// new tiles had been estimated at 0.77-0.80 of their simulated cycles without the last three).
TEST(CostModelAgainstSimulator, EyerissEstimatesStayInTheirBandAndRankTheBestRow) {
  expect_within("eyeriss", {"gemm-256", "llm-decode-proj", "alexnet"}, {0.83, 1.05, 8});
}

// Measured: 2 rows, 1.037..1.081 (one row per op: nothing to rank).
TEST(CostModelAgainstSimulator, TpuV1EstimatesStayInTheirBand) {
  expect_within("tpu-v1", {"int8-mlp"}, {1.00, 1.12, 0});
}

// Measured: 9 rows, 0.671..1.180; ranking 2 of 3 (bert-base-attn's flash-mc ws misses). The low end is
// bert-base-attn's flash-mc ws (0.721 before its cost ran the lockstep, 2026-12-05): on the 128x128 WS array
// its PE arrays fill and drain 52% of the time between S and P V, which wait on the softmax; the steps'
// estimate counts the matmuls' intervals only (docs/design-notes.md, "Cost model against the simulator").
TEST(CostModelAgainstSimulator, TpuV4LikeEstimatesStayInTheirBandAndRankTheBestRow) {
  expect_within("tpu-v4-like", {"gemm-256", "llm-decode-proj", "bert-ffn", "bert-base-attn"},
                {0.65, 1.22, 2});
}

}  // namespace tessera
