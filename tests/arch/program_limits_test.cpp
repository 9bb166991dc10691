// Hostile sizes and addresses in a tile program (issue "Hardening"): every size is bounded when it is read,
// and the checks' arithmetic cannot wrap, so a program that states them is refused with a located message
// instead of hanging the simulator or overflowing its address arithmetic. Each case passed the checks before.
#include <gtest/gtest.h>

#include <string>

#include "arch/isa/program.hpp"
#include "arch/isa/program_check.hpp"
#include "arch/isa/program_text.hpp"
#include "arch/spec.hpp"
#include "common/config.hpp"

namespace tessera::arch {
namespace {

const std::string kTensors =
    "tessera-program 1\n"
    "name limits\n"
    "mesh 1x1\n"
    "tensor A bf16 64x64 at 0x0 input seed=1 id=0\n";

ArchSpec machine() {
  return arch_from_yaml(config::load_text(
      "name: m\nclock_ghz: 1.0\nmesh: {rows: 1, cols: 1}\nnoc: {link_bytes_per_cycle: 64}\n"
      "dram: {bandwidth_gbps: 256, channels: 4, latency_cycles: 100}\ncore:\n  pe_array: {rows: 8, cols: 8}\n"
      "  sram: {kib: 64, banks: 4, bank_width_bytes: 32}\n  dma: {engines: 1, bytes_per_cycle: 32, "
      "setup_cycles: 8}\n",
      "m.yaml"));
}

// What reading and checking `text` throws: the message with its location and hint.
std::string error_of(const std::string& text) {
  try {
    check_program(read_program(text, "p.tprog"), machine());
  } catch (const InputError& error) {
    return std::string(error.what()) + " | hint: " + error.hint();
  }
  return "no error";
}

TEST(ProgramLimits, ASizePast2To40IsRefusedWhereItIsWritten) {
  // Before: n = 2^63 - 1 passed the SRAM check (its byte count wrapped) and the PE array's schedule spun.
  const std::string error = error_of(kTensors +
                                     "core 0,0\n"
                                     "  pe ws a=0x0 w=0x100 o=0x200 m=4 n=9223372036854775807 k=4 dtype=bf16 "
                                     "acc=0\n");
  EXPECT_NE(error.find("p.tprog:6:37: "), std::string::npos) << error;
  EXPECT_NE(error.find("9223372036854775807 is too large for n (at most 1099511627776)"), std::string::npos)
      << error;
  EXPECT_NE(error.find("hint: sizes, counts, pitches and indices in a tile program are at most 2^40"),
            std::string::npos)
      << error;
}

TEST(ProgramLimits, AnSramRangeThatWrapsPast2To64RunsPastTheSram) {
  // Before: a load to 0xffffffffffffffff was accepted (its end wrapped to a small number) and the simulator's
  // bank arithmetic overflowed.
  const std::string load = error_of(kTensors + "core 0,0\n  dma0 load A[0:1, 0:64] -> 0xffffffffffffffff\n");
  EXPECT_NE(load.find("SRAM bytes 0xffffffffffffffff..past 2^64 run past the end of the 64 KiB SRAM"),
            std::string::npos)
      << load;
  // Rows times pitch past 2^64, each within the limit.
  const std::string pitched =
      error_of(kTensors +
               "core 0,0\n"
               "  pe ws a=0x0 w=0x100 o=0x200 m=1099511627776 n=4 k=4 dtype=bf16 acc=0 "
               "a_pitch=1099511627776\n");
  EXPECT_NE(pitched.find("operand a: SRAM bytes 0x0..past 2^64 run past the end"), std::string::npos)
      << pitched;
}

TEST(ProgramLimits, ATensorWhoseDramRangeWrapsIsRefused) {
  // Before: its end wrapped past 2^64, so the overlap check saw a tiny range and let it through.
  const std::string error = error_of(
      "tessera-program 1\nname limits\nmesh 1x1\n"
      "tensor A bf16 64x64 at 0x0 input seed=1 id=0\n"
      "tensor B bf16 64x64 at 0xffffffffffffff00 input seed=1 id=1\n"
      "core 0,0\n");
  EXPECT_NE(error.find("tensor B: its DRAM range 0xffffffffffffff00 + 8192 B runs past the end of the 64-bit "
                       "address space"),
            std::string::npos)
      << error;
}

TEST(ProgramLimits, AnInstructionListsAtMost4096WaitsAndSignals) {
  // Before: 200,000 semaphores on one instruction took 49 s to check.
  std::string waits, signals;
  for (int i = 0; i <= kMaxSemaphoresPerInstruction; ++i) {
    waits += " w" + std::to_string(i);
    signals += " s" + std::to_string(i);
  }
  const std::string line = "  dma0 load A[0:1, 0:64] -> 0x0 ; wait" + waits;
  const std::string error = error_of(kTensors + "core 0,0\n" + line + "\n");
  // Located at the 4097th wait.
  const size_t column = line.find(" w4096") + 2;
  EXPECT_EQ(error.rfind("p.tprog:6:" + std::to_string(column) + ": ", 0), 0u) << error.substr(0, 300);
  EXPECT_NE(error.find("more than 4096 waits on one instruction"), std::string::npos) << error.substr(0, 300);
  const std::string too_many_signals =
      error_of(kTensors + "core 0,0\n  dma0 load A[0:1, 0:64] -> 0x0 ; signal" + signals + "\n");
  EXPECT_NE(too_many_signals.find("more than 4096 signals on one instruction"), std::string::npos);
}

}  // namespace
}  // namespace tessera::arch
