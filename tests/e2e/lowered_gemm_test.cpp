// End-to-end through the libraries: the mapper's best mapping of a GEMM, lowered to a tile program and run
// functionally on the SystemC model, reproduces the CPU reference.
#include <gtest/gtest.h>

#include "e2e/pipeline_fixture.hpp"
#include "mapper/lowering.hpp"
#include "sim/machine.hpp"

namespace tessera {

TEST(LoweredGemm, DefaultMachineWsBf16MatchesReference) {
  const arch::ArchSpec spec = load_arch("default");
  const ops::Op op = gemm_op(256, 192, 160, DType::bf16);
  const mapper::Mapping mapping = best_mapping(op, spec, arch::Dataflow::ws);
  const arch::Program program = mapper::lower(op, 9, mapping, spec, "test");
  sim::Machine machine(spec);
  const sim::RunResult result = machine.run(program, sim::RunOptions{});
  std::string detail;
  EXPECT_TRUE(output_matches_reference(op, 9, result, &detail)) << mapping.describe() << " " << detail;
  EXPECT_GT(result.counters.cycles, 0);
}

}  // namespace tessera

namespace tessera {

// The first run of a process once started units in SystemC's initialisation phase and later runs from their
// start events, so equal-time bookings came in another order and the same program took other cycles.
TEST(LoweredGemm, AProgramTakesTheSameCyclesEveryTimeAndWithOrWithoutArithmetic) {
  const arch::ArchSpec spec = load_arch("mesh4x4");
  const ops::Op op = gemm_op(1024, 512, 256, DType::bf16);
  const arch::Program program =
      mapper::lower(op, 1, best_mapping(op, spec, arch::Dataflow::ws), spec, "again");
  sim::Machine machine(spec);
  const int64_t first = machine.run(program, sim::RunOptions{false, false}).counters.cycles;
  EXPECT_EQ(machine.run(program, sim::RunOptions{false, false}).counters.cycles, first);
  EXPECT_EQ(machine.run(program, sim::RunOptions{true, false}).counters.cycles, first);
  EXPECT_EQ(machine.run(program, sim::RunOptions{false, true}).counters.cycles, first);
}

}  // namespace tessera
