// Why a row loses (traces/report.hpp, explain_gap): more cycles, a tie within 0.5% either way, or — judged by
// energy, energy x delay or DRAM bytes — fewer cycles but more of what the run is judged by.
#include <gtest/gtest.h>

#include "traces/report.hpp"

namespace tessera::traces {
namespace {

RunRecord run(int64_t cycles, int64_t dram_bytes, double energy_uj) {
  RunRecord record;
  record.counters.cycles = cycles;
  record.dram_bytes = dram_bytes;
  record.energy_uj = energy_uj;
  return record;
}

TEST(ExplainGap, SlowerByMoreThanHalfAPercentIsTheRatioOfCycles) {
  EXPECT_EQ(explain_gap(run(1200, 100, 1.0), run(1000, 100, 1.0)), "1.20x the cycles");
}

TEST(ExplainGap, WithinHalfAPercentEitherWayIsATie) {
  EXPECT_EQ(explain_gap(run(1004, 100, 1.0), run(1000, 100, 1.0)), "a tie: 4 cycles more (within 0.5%)");
  EXPECT_EQ(explain_gap(run(996, 100, 1.0), run(1000, 100, 1.0)), "a tie: 4 cycles fewer (within 0.5%)");
}

// Measured on tpu-v4-like's bert-base-attn with --objective dram: flash ws, 68,544 cycles against the winner
// flash-mc ws's 86,611, had read "a tie: -18067 cycles more (within 0.5%)".
TEST(ExplainGap, FasterButLosingOnTheObjectiveSaysWhatItCostsMore) {
  EXPECT_EQ(explain_gap(run(68544, 4720000, 312.9), run(86611, 3150000, 272.0)),
            "0.79x the cycles (faster), 1.15x the energy, 1.50x the DRAM traffic");
}

}  // namespace
}  // namespace tessera::traces
