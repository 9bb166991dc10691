// Vector work on the vector unit (issue "Ops as stage graphs", sections 2 and 3; rope, issue "Attention"):
// every mapping the vector stage's search keeps, of every vector op kind (a rope's blocks spanning several
// sequences load each one's table rows), lowers to a program that runs and whose output passes the
// CPU reference; the cost model's DRAM bytes are what the program moves; one instruction takes the closed
// form's cycles on the unit; bubbles add up with the new causes.
#include <gtest/gtest.h>

#include "arch/timing/vector_timing.hpp"
#include "common/config.hpp"
#include "e2e/pipeline_fixture.hpp"
#include "mapper/kit/vector_stage.hpp"
#include "mapper/lowering.hpp"
#include "mapper/search.hpp"
#include "ops/kinds/norm.hpp"
#include "ops/workload.hpp"
#include "sim/machine.hpp"

namespace tessera {

namespace {

const char* kVectorOps = R"(name: vector
seed: 3
ops:
  - {name: sm, kind: softmax, rows: 37, cols: 300, scale: 0.125, dtype: bf16}
  - {name: causal, kind: softmax, rows: 24, cols: 64, causal: true, dtype: fp32}
  - {name: ln, kind: layernorm, rows: 33, cols: 96, dtype: fp16}
  - {name: rms, kind: rmsnorm, rows: 20, cols: 257, dtype: bf16}
  - {name: add_ln, kind: layernorm, rows: 40, cols: 768, residual: true, dtype: bf16}
  - {name: add_rms, kind: rmsnorm, rows: 9, cols: 130, residual: true, eps: 1.0e-5, dtype: fp32}
  - {name: gelu, kind: elementwise, rows: 19, cols: 100, fn: gelu, dtype: bf16}
  - {name: gelu_tanh, kind: elementwise, rows: 5, cols: 64, fn: gelu_tanh, dtype: fp32}
  - {name: silu, kind: elementwise, rows: 9, cols: 48, fn: silu, dtype: bf16}
  - {name: relu, kind: elementwise, rows: 9, cols: 48, fn: relu, dtype: fp16}
  - {name: add, kind: elementwise, rows: 31, cols: 40, fn: add, dtype: bf16}
  - {name: mul, kind: elementwise, rows: 8, cols: 40, fn: mul, dtype: fp32}
  - {name: bias, kind: elementwise, rows: 17, cols: 72, fn: bias, dtype: bf16}
  - {name: swiglu, kind: elementwise, rows: 12, cols: 80, fn: swiglu, dtype: bf16}
  - {name: maxpool, kind: pool, n: 2, c: 16, h: 13, w: 11, r: 3, s: 3, stride: 2, pad: 1, mode: max, dtype: bf16}
  - {name: avgpool, kind: pool, c: 24, h: 7, w: 7, r: 7, s: 7, mode: avg, dtype: fp16}
  - {name: rope_half, kind: rope, batch: 2, seq: 13, heads: 3, head_dim: 64, position: 5, dtype: bf16}
  - {name: rope_interleaved, kind: rope, batch: 3, seq: 5, heads: 2, head_dim: 32, rotary_dim: 16, position: 8191, base: 500000, style: interleaved, dtype: fp32}
  - {name: rope_decode, kind: rope, batch: 7, seq: 1, heads: 4, head_dim: 16, position: 100, dtype: fp16}
)";

ops::Workload vector_workload() {
  return ops::workload_from_yaml(config::load_text(kVectorOps, "vector.yaml"));
}

// Every kept candidate of every op: lowered, run functionally, checked.
void run_every_candidate(const std::string& machine_name) {
  const arch::ArchSpec spec = load_arch(machine_name);
  sim::Machine machine(spec);
  const ops::Workload workload = vector_workload();
  for (const ops::Op& op : workload.ops) {
    mapper::SearchOptions options;
    options.dataflows = spec.core.pe_array.dataflows;
    options.keep_per_dataflow = 6;
    const mapper::SearchResult search = mapper::search_op(op, spec, options);
    // A norm of X + R is searched fused and unfused side by side; every other vector op one way.
    const auto* norm = op.as<ops::NormShape>();
    const bool chain = norm && norm->adds_residual();
    std::vector<std::string> labels;
    for (const mapper::DataflowSearch& row : search.per_dataflow) labels.push_back(row.label());
    const std::vector<std::string> expected =
        chain ? std::vector<std::string>{"vec fused", "vec unfused"} : std::vector<std::string>{"vec"};
    EXPECT_EQ(labels, expected) << op.name;
    for (const mapper::DataflowSearch& row : search.per_dataflow) {
      ASSERT_GE(row.best.size(), 2u) << op.name;
      for (const mapper::Candidate& candidate : row.best) {
        EXPECT_EQ(candidate.mapping.fusion, row.fusion);
        EXPECT_EQ(candidate.mapping.prologue_pass != nullptr, row.fusion == mapper::Fusion::unfused);
        const arch::Program program = mapper::lower(op, workload.seed, candidate.mapping, spec, op.name);
        sim::RunResult result;
        ASSERT_NO_THROW(result = machine.run(program, sim::RunOptions{}))
            << op.name << " " << candidate.mapping.describe();
        std::string detail;
        EXPECT_TRUE(output_matches_reference(op, workload.seed, result, &detail))
            << machine_name << " " << op.name << " " << candidate.mapping.describe() << ": " << detail;
        // The cost model's DRAM bytes are the program's.
        EXPECT_EQ(candidate.cost.dram_bytes,
                  result.counters.dram_read_bytes + result.counters.dram_write_bytes)
            << op.name << " " << candidate.mapping.describe();
        // Every unit's busy cycles and bubbles add up to the run's.
        for (const sim::UnitResult& unit : result.units) {
          int64_t sum = 0;
          for (int64_t cycles : unit.cycles) sum += cycles;
          EXPECT_EQ(sum, result.counters.cycles) << unit.name;
        }
      }
    }
  }
}

}  // namespace

TEST(VectorOps, EveryKeptMappingOfEveryVectorKindIsCorrectOnTheDefaultMesh) {
  run_every_candidate("default");
}

TEST(VectorOps, EveryKeptMappingOfEveryVectorKindIsCorrectOnMesh4x4) {
  run_every_candidate("mesh4x4");
}

// A vec instruction alone on a core, after its load: the unit is busy and stalled exactly the closed form's
// cycles, and the store waits for it (a `vector` bubble).
TEST(VectorUnit, AnInstructionTakesItsClosedFormCyclesAndItsWaitersAreChargedVector) {
  const arch::ArchSpec spec = load_arch("mesh4x4");
  const ops::Workload workload = ops::workload_from_yaml(config::load_text(
      "name: w\nseed: 1\nops:\n  - {name: s, kind: softmax, rows: 16, cols: 256, dtype: fp32}\n", "w.yaml"));
  const ops::Op& op = workload.ops[0];
  mapper::Mapping mapping;
  mapping.form = mapper::VectorStage::of(op);
  mapping.split_m = 1;
  mapping.tile_n = 16;
  mapping.tile_m = 16;  // one block: load, one vec softmax, store
  mapping.double_buffer_inputs = mapping.double_buffer_output = false;
  const arch::Program program = mapper::lower(op, 1, mapping, spec, "one");
  sim::Machine machine(spec);
  const sim::RunResult result = machine.run(program, sim::RunOptions{});
  const arch::VectorTiming timing =
      arch::vector_timing(*spec.core.vector, mapper::vector_stage_of(mapping).block(0, 16).work());
  for (const sim::UnitResult& unit : result.units) {
    if (unit.core != 0) continue;
    if (unit.queue.kind == arch::QueueKind::vec) {
      EXPECT_EQ(unit.cycles[static_cast<int>(arch::Cause::busy)], timing.busy_cycles);
      EXPECT_EQ(unit.cycles[static_cast<int>(arch::Cause::fill_drain)],
                timing.stall_cycles + timing.drain_cycles);
      EXPECT_EQ(unit.counters.vector_elements, 16 * 256);
    }
    // The store waits for the vec result from its start: the load's time and the instruction's.
    if (unit.queue.kind == arch::QueueKind::dma && unit.queue.index == 1) {
      EXPECT_GE(unit.cycles[static_cast<int>(arch::Cause::vector)], timing.cycles);
    }
  }
  std::string detail;
  EXPECT_TRUE(output_matches_reference(op, 1, result, &detail)) << detail;
}

// With a core's share done early, its idle units wait for the other cores: imbalance, not sync.
TEST(VectorUnit, CoresThatFinishEarlyWaitInImbalance) {
  const arch::ArchSpec spec = load_arch("default");  // 4 cores
  const ops::Workload workload = ops::workload_from_yaml(config::load_text(
      "name: w\nseed: 1\nops:\n  - {name: s, kind: softmax, rows: 7, cols: 512, dtype: fp32}\n", "w.yaml"));
  const ops::Op& op = workload.ops[0];
  mapper::Mapping mapping;
  mapping.form = mapper::VectorStage::of(op);
  mapping.split_m = 4;
  mapping.tile_n = 2;  // shares of 2, 2, 2 and 1 rows: the last core finishes first
  mapping.tile_m = 1;
  const arch::Program program = mapper::lower(op, 1, mapping, spec, "skewed");
  sim::Machine machine(spec);
  const sim::RunResult result = machine.run(program, sim::RunOptions{});
  std::vector<int64_t> imbalance(4, 0);
  for (const sim::UnitResult& unit : result.units)
    if (unit.queue.kind == arch::QueueKind::vec)
      imbalance[static_cast<size_t>(unit.core)] = unit.cycles[static_cast<int>(arch::Cause::imbalance)];
  // Core 3 has one row for the others' two: it waits about a row's time; the others at most DRAM jitter.
  for (int core = 0; core < 3; ++core)
    EXPECT_GT(imbalance[3], 10 * imbalance[static_cast<size_t>(core)]) << core;
}

}  // namespace tessera
