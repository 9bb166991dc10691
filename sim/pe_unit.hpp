// The PE array of one core. Each instruction is timed fold by fold with the closed form of arch/pe_timing
// (exact against the per-cycle model), its SRAM operand traffic is booked on the banks (a bank that cannot
// keep up stretches the instruction), and, in functional runs, it computes on the SRAM bytes with ops' tile
// kernels.
#pragma once

#include "arch/timing/pe_timing.hpp"
#include "arch/timing/rs_timing.hpp"
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
  void count_sram_traffic(const arch::Operation& operation);
  // A `pe post`: the output path's steps on a finished tile (arch/isa/pe_post.hpp).
  void run_post(const arch::PePost& post, const arch::Instruction& instruction);
  // Times the instruction's folds (RS: rounds) from `ready`, advancing the timeline; returns when the
  // operands are first read and when the last result is written.
  std::pair<Tick, Tick> schedule(const arch::Operation& operation, Tick ready, int32_t position);
  // One fold or round: preload from load_start, stream from stream_start for `stream` cycles, done at
  // complete.
  void advance(Tick ready, int64_t stream_start, int64_t stream, int64_t complete, int32_t position);

  // Computes the result from the operands in SRAM now; the returned commit writes it when the instruction
  // completes (recomputing if a write raced the array's reads).
  std::function<void()> functional_commit(const arch::Operation& operation, Tick first_load);

  arch::PeArrayTiming timing_;
  arch::RsTiming rs_timing_;
  arch::PePipeline pipeline_;
  arch::RsPipeline rs_pipeline_;
  int64_t last_complete_ = 0;  // cycles: when switching between RS and the others, nothing overlaps
  Tick drain_end_ = 0;         // the latest fold completion so far (relative ticks)
  std::vector<int64_t> bank_words_;
  int64_t read_bytes_ = 0;
  int64_t write_bytes_ = 0;
};

}  // namespace tessera::sim
