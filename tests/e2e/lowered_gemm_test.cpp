// End-to-end through the libraries: the mapper's best mapping of a GEMM, lowered to a tile program and run
// functionally on the SystemC model, reproduces the CPU reference.
#include <gtest/gtest.h>

#include "e2e/pipeline_fixture.hpp"
#include "mapper/lower_gemm.hpp"
#include "sim/machine.hpp"

namespace tessera {

TEST(LoweredGemm, DefaultMachineWsBf16MatchesReference) {
  const arch::ArchSpec spec = load_arch("default");
  const ops::Op op = gemm_op(256, 192, 160, DType::bf16);
  const mapper::GemmMapping mapping = best_mapping(op, spec, arch::Dataflow::ws);
  const arch::Program program = mapper::lower_gemm(op, 9, mapping, spec, "test");
  sim::Machine machine(spec);
  const sim::RunResult result = machine.run(program, sim::RunOptions{});
  std::string detail;
  EXPECT_TRUE(output_matches_reference(op, 9, result, &detail)) << mapping.describe() << " " << detail;
  EXPECT_GT(result.cycles, 0);
}

}  // namespace tessera
