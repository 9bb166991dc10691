// Every legal mapping must be correct, not only the best: a sample of the mapspace (all dataflows, splits,
// loop orders, buffering, ragged shapes, k splits with NoC reduction, multicast) is lowered and run
// functionally on one elaborated machine, and each output must match the CPU reference with no deadlock.
#include <gtest/gtest.h>

#include <random>

#include "e2e/pipeline_fixture.hpp"
#include "mapper/contraction/gemm_stage.hpp"
#include "mapper/contraction/mapspace.hpp"
#include "mapper/lowering.hpp"
#include "sim/machine.hpp"

namespace tessera {

namespace {
void run_sample(const std::string& machine_name, const std::vector<ops::Op>& ops, int per_op, uint32_t seed) {
  const arch::ArchSpec spec = load_arch(machine_name);
  sim::Machine machine(spec);
  std::mt19937 random(seed);
  for (const ops::Op& op : ops) {
    const auto& gemm = *op.as<ops::GemmShape>();
    const auto stage =
        std::make_shared<mapper::GemmStage>(mapper::GemmProblem{gemm.m, gemm.n, gemm.k, op.dtype});
    std::vector<mapper::Mapping> all;
    for (arch::Dataflow dataflow : spec.core.pe_array.dataflows)
      mapper::enumerate_mappings(
          stage, spec, dataflow, [](size_t) { return true; },
          [&](const mapper::Mapping& mapping, size_t) { all.push_back(mapping); });
    ASSERT_FALSE(all.empty());
    std::shuffle(all.begin(), all.end(), random);
    for (int i = 0; i < per_op && i < static_cast<int>(all.size()); ++i) {
      const mapper::Mapping& mapping = all[i];
      const arch::Program program = mapper::lower(op, 5, mapping, spec, "sample");
      sim::RunResult result;
      ASSERT_NO_THROW(result = machine.run(program, sim::RunOptions{})) << mapping.describe();
      std::string detail;
      EXPECT_TRUE(output_matches_reference(op, 5, result, &detail))
          << machine_name << " " << gemm.m << "x" << gemm.n << "x" << gemm.k << " " << name_of(op.dtype)
          << " " << mapping.describe() << ": " << detail;
    }
  }
}
}  // namespace

TEST(EveryMapping, SampleOnTheDefaultMeshIsCorrect) {
  run_sample("default",
             {gemm_op(200, 130, 170, DType::bf16), gemm_op(64, 256, 96, DType::int8),
              gemm_op(37, 41, 300, DType::fp32)},
             40, 1);
}

TEST(EveryMapping, SampleOnMesh4x4IsCorrect) {
  run_sample("mesh4x4", {gemm_op(300, 260, 512, DType::fp16), gemm_op(16, 512, 640, DType::bf16)}, 40, 2);
}

}  // namespace tessera
