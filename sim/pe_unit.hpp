// The PE array of one core. Each instruction is timed fold by fold with the closed form of arch/pe_timing
// (exact against the per-cycle model), its SRAM operand traffic is booked on the banks (a bank that cannot
// keep up stretches the instruction), and, in functional runs, it computes on the SRAM bytes with ops' tile
// kernels.
#pragma once

#include "arch/pe_timing.hpp"
#include "sim/unit.hpp"

namespace tessera::sim {

class PeUnit : public Unit {
 public:
  PeUnit(sc_core::sc_module_name name, MachineState& machine, int core);

 protected:
  void execute(const arch::Instruction& instruction, int32_t position) override;
  void close_timeline() override;
  void reset_run_state() override;

 private:
  // Per-bank bank-width words the instruction reads and writes, and the byte totals.
  void count_sram_traffic(const arch::PeMatmul& op);

  arch::PeArrayTiming timing_;
  arch::PePipeline pipeline_;
  Tick drain_end_ = 0;  // the latest fold completion so far (relative ticks)
  std::vector<int64_t> bank_words_;
  int64_t read_bytes_ = 0;
  int64_t write_bytes_ = 0;
};

}  // namespace tessera::sim
