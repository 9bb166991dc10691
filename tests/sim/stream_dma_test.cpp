// Transfers booked as streams (sim/fabric.hpp, docs/design-notes.md "Transfers booked as streams"): a lone
// transfer takes its closed form — setup, its bytes at the engine's rate, the path's latencies — however many
// channels its bursts spread over, and an issue-bound one speeds up with the engine. Each TEST is its own
// process (one elaboration).
#include <gtest/gtest.h>

#include <string>

#include "arch/isa/program_text.hpp"
#include "common/config.hpp"
#include "sim/machine.hpp"

namespace tessera::sim {
namespace {

// One core; DRAM of 256 GB/s over 4 channels (64 B/cycle each, the engine's rate), 100 cycles of latency; the
// router adds 1 cycle; links and the ejection port carry 64 B/cycle.
arch::ArchSpec machine_spec(int engine_bytes_per_cycle) {
  const std::string text =
      "name: m\nclock_ghz: 1.0\nmesh: {rows: 1, cols: 1}\nnoc: {link_bytes_per_cycle: 64}\n"
      "dram: {bandwidth_gbps: 256, channels: 4, latency_cycles: 100}\ncore:\n  pe_array: {rows: 8, cols: 8}\n"
      "  sram: {kib: 64, banks: 4, bank_width_bytes: 64}\n  dma: {engines: 1, bytes_per_cycle: " +
      std::to_string(engine_bytes_per_cycle) + ", setup_cycles: 16}\n";
  return arch::arch_from_yaml(config::load_text(text, "m.yaml"));
}

// 32 KiB of whole rows (one contiguous run: 128 bursts of 256 B over the 4 channels) into SRAM.
const std::string kLoad =
    "tessera-program 1\nname lone\nmesh 1x1\ntensor A bf16 128x128 at 0x0 input seed=3 id=0\n"
    "core 0,0\n  dma0 load A[0:128, 0:128] -> 0x0\n";

}  // namespace

TEST(StreamDma, ALoneLoadTakesSetupItsBytesAtTheEngineRateAndTheLatency) {
  Machine machine(machine_spec(64));
  const RunResult result = machine.run(arch::read_program(kLoad, "lone.tprog"), RunOptions{false, false});
  // 16 cycles of setup, 32768 B at 64 B/cycle = 512 cycles of issue, 100 of DRAM latency, 1 router: 629. Each
  // channel's stream is a quarter of the bytes over the whole window; the port takes all four at its full
  // rate. Booked burst by burst (before streams), each burst saw its own stream's earlier bursts as spread
  // over the epoch and the port slowed the stream down: 645 cycles.
  EXPECT_EQ(result.counters.cycles, 16 + 512 + 100 + 1);
  EXPECT_EQ(result.counters.dram_read_bytes, 32768);
}

TEST(StreamDma, AnIssueBoundLoadSpeedsUpWithTheEngine) {
  // At 32 B/cycle the same load is issued in 1024 cycles: the engine's rate sets the issue time, the latency
  // stays. (Burst by burst, the last burst passed the channel at the channel's rate, not the engine's: 1140.)
  Machine machine(machine_spec(32));
  const RunResult result = machine.run(arch::read_program(kLoad, "lone.tprog"), RunOptions{false, false});
  EXPECT_EQ(result.counters.cycles, 16 + 1024 + 100 + 1);
}

}  // namespace tessera::sim
