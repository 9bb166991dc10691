// The vector unit of one core (DESIGN.md, "The vector unit"; docs/vector-unit.md). Each vec instruction is
// timed with the closed form of arch/timing/vector_timing (exact against the per-cycle model), runs after the
// previous one has completed (the unit holds no state between instructions: a chain of dependent passes is
// the program's to order), books its SRAM traffic on the banks like the PE array (a bank that cannot keep up
// stretches it), and in functional runs computes on the SRAM bytes in fp32 with ops' vector kernels.
#pragma once

#include "arch/timing/vector_timing.hpp"
#include "arch/vector_spec.hpp"
#include "sim/unit.hpp"

namespace tessera::sim {

class VectorUnit : public Unit {
 public:
  VectorUnit(sc_core::sc_module_name name, MachineState& machine, int core);

 protected:
  void execute(const arch::Instruction& instruction, int32_t position) override;

 private:
  // Computes the result from the tiles in SRAM now; the returned commit writes it when the instruction
  // completes.
  std::function<void()> functional_commit(const arch::VecOp& op);
  void execute_rope(const arch::Instruction& instruction, const arch::VecRope& op, int32_t position);
  void execute_route(const arch::Instruction& instruction, const arch::VecRoute& op, int32_t position);
  // What every vector instruction does once its SRAM words are in bank_words_: its closed-form time after
  // its waits and the previous instruction, its traffic booked on the banks (a bank that cannot keep up
  // stretches it), its timeline; in a functional run `compute` (called at its start) gives the commit that
  // writes its result when it completes.
  void run(const arch::Instruction& instruction, int32_t position, const arch::VectorWork& work,
           const arch::VectorSramTraffic& traffic, const std::function<std::function<void()>()>& compute);

  std::vector<int64_t> bank_words_;
};

}  // namespace tessera::sim
