// On systolic-32x32.yaml (memory so wide that the array alone sets the time) the simulated PE array must take
// exactly the cycles of the per-cycle reference model (tests/models/pe_cycle_model) for the same sequence of
// PE instructions — the mapper's own tile programs, ragged shapes and convolutions (implicit GEMM) included —
// and the whole run may exceed the array's span only by the first loads and the last store.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>

#include "e2e/pipeline_fixture.hpp"
#include "mapper/contraction/gemm_stage.hpp"
#include "mapper/lowering.hpp"
#include "models/pe_cycle_model.hpp"
#include "sim/machine.hpp"

namespace tessera {

namespace {

// GEMMs of ragged shapes, and convolutions through the implicit-GEMM lowering (im2col view; grouped and
// depthwise ones with the mapper's packing). `gather_bound`: the A rows come in runs too short for the DMA
// engines to keep the array fed (3 channels; a 4-group pack of single channels), so the array waits.
struct ExactnessOp {
  ops::Op op;
  bool gather_bound = false;
};

std::vector<ExactnessOp> exactness_ops() {
  std::vector<ExactnessOp> ops;
  for (const auto& [m, n, k] : std::vector<std::array<int64_t, 3>>{{64, 64, 64},
                                                                   {100, 70, 90},
                                                                   {33, 97, 65},
                                                                   {1, 31, 129},
                                                                   {130, 33, 31},
                                                                   {17, 200, 40},
                                                                   {96, 32, 160},
                                                                   {45, 45, 45}})
    ops.push_back({gemm_op(m, n, k, DType::bf16)});
  // n, c, h, w, k, r, s, stride, pad, dilation, groups
  ops.push_back({conv_op({1, 16, 12, 12, 40, 3, 3, 1, 1, 1, 1}, DType::bf16)});
  ops.push_back({conv_op({1, 20, 8, 8, 30, 1, 1, 1, 0, 1, 2}, DType::bf16)});
  ops.push_back({conv_op({1, 32, 10, 10, 32, 3, 3, 2, 1, 1, 1}, DType::bf16)});
  ops.push_back({conv_op({1, 3, 23, 23, 8, 7, 7, 2, 3, 1, 1}, DType::bf16), true});
  ops.push_back({conv_op({2, 12, 9, 9, 12, 3, 3, 2, 1, 1, 12}, DType::bf16), true});
  return ops;
}

void check_exact(arch::Dataflow dataflow, arch::FoldOverlap overlap_folds) {
  arch::ArchSpec spec = load_arch("systolic-32x32");
  spec.core.pe_array.overlap_folds = overlap_folds;
  sim::Machine machine(spec);
  for (const auto& [op, gather_bound] : exactness_ops()) {
    SCOPED_TRACE(::testing::Message()
                 << arch::name_of(dataflow) << " " << op.kind_name() << " " << op.shape_text());
    const mapper::Mapping mapping = best_mapping(op, spec, dataflow);
    // The mapper picks the implicit GEMM on these (their PE instructions are matmuls).
    const auto* gemm = mapping.form_if<mapper::GemmStage>();
    ASSERT_NE(gemm, nullptr) << mapping.describe();
    const mapper::GemmProblem& shape = gemm->problem();
    const arch::Program program = mapper::lower(op, 3, mapping, spec, "exact");
    const sim::RunResult result = machine.run(program, sim::RunOptions{false, true});

    // The PE instructions, in order, for the model; their operands are in SRAM from the start.
    std::vector<testmodels::PeModelInstruction> instructions;
    for (const arch::Instruction& instruction : program.cores.at(0).instructions) {
      const auto* matmul = std::get_if<arch::PeMatmul>(&instruction.operation);
      if (!matmul) continue;
      testmodels::PeModelInstruction model;
      model.m = matmul->m, model.n = matmul->n, model.k = matmul->k;
      model.a.assign(static_cast<size_t>(model.m * model.k), 1);
      model.w.assign(static_cast<size_t>(model.k * model.n), 1);
      instructions.push_back(std::move(model));
    }
    const testmodels::PeModelRun model =
        testmodels::run_pe_cycle_model(spec.core.pe_array.rows, spec.core.pe_array.cols, dataflow,
                                       spec.core.pe_array.overlap_folds, instructions);
    int64_t model_end = 0;
    for (const auto& fold : model.folds) model_end = std::max(model_end, fold.complete);
    const int64_t model_span = model_end - model.folds.front().load_start;

    const auto pe = std::find_if(result.units.begin(), result.units.end(), [](const sim::UnitResult& unit) {
      return unit.queue.kind == arch::QueueKind::pe;
    });
    ASSERT_NE(pe, result.units.end());
    const int64_t busy = pe->cycles[static_cast<int>(arch::Cause::busy)];
    const int64_t fill_drain = pe->cycles[static_cast<int>(arch::Cause::fill_drain)];
    const int64_t starved = pe->cycles[static_cast<int>(arch::Cause::input_starvation)];
    if (gather_bound) {
      // The array waits for its operands and loses the overlap of folds across the wait: never faster than
      // the model, and the difference is no more than the waiting it had to do.
      EXPECT_GT(starved, 0) << mapping.describe();
      EXPECT_GE(busy + fill_drain, model_span) << mapping.describe();
      EXPECT_LE(busy + fill_drain - model_span, starved) << mapping.describe();
    } else {
      // Once started, the array never waits: every cycle of its span is busy or fill/drain, as in the model.
      EXPECT_EQ(busy + fill_drain, model_span)
          << mapping.describe() << " (input starvation " << starved << ")";
    }
    EXPECT_EQ(pe->counters.folds, static_cast<int64_t>(model.folds.size()));
    int64_t stream = 0;
    for (const auto& fold : model.folds) stream += fold.stream;
    EXPECT_EQ(busy, stream);
    EXPECT_EQ(pe->cycles[static_cast<int>(arch::Cause::bank_conflict)], 0);

    // Before the span: the first tiles' loads; after it: the last tile's store. Bound both by their bytes at
    // the slowest resource on the path (one DRAM channel) plus one DRAM round trip per `outstanding_bursts`
    // bursts (a DMA engine keeps that many in flight; each row of a tile is at least one burst).
    const int64_t tm = std::min(mapping.tile_m, shape.m), tn = std::min(mapping.tile_n, shape.n),
                  tk = std::min(mapping.tile_k, shape.k);
    const double element = size_bytes(op.dtype), accumulator = size_bytes(accumulator_of(op.dtype));
    const double bytes = element * (tm * tk + tk * tn) + accumulator * tm * tn;
    // A row is at least one burst per interleave block, and per contiguous run when gathered from a view.
    auto bursts = [&](int64_t rows, double row_bytes, int64_t runs) {
      return rows * (runs + static_cast<int64_t>(row_bytes) / spec.dram.interleave_bytes);
    };
    const int64_t a_runs = shape.a_run > 0 ? (tk + shape.a_run - 1) / shape.a_run + 1 : 1;
    const int64_t outstanding = spec.core.dma.outstanding_bursts;
    const int64_t round_trips = (bursts(tm, element * tk, a_runs) + outstanding - 1) / outstanding +
                                (bursts(tk, element * tn, 1) + outstanding - 1) / outstanding +
                                (bursts(tm, accumulator * tn, 1) + outstanding - 1) / outstanding;
    const double round_trip =
        spec.dram.latency_cycles + spec.core.dma.setup_cycles + 2 * spec.noc.router_latency_cycles + 2;
    const double bound = bytes / spec.dram.channel_bytes_per_cycle + round_trips * round_trip;
    EXPECT_GE(result.counters.cycles, model_span);
    EXPECT_LE(static_cast<double>(result.counters.cycles - model_span), bound) << mapping.describe();
  }
}

}  // namespace

TEST(SystolicExactness, WeightStationaryEqualsTheCycleModel) {
  check_exact(arch::Dataflow::ws, arch::FoldOverlap::full);
}
TEST(SystolicExactness, OutputStationaryEqualsTheCycleModel) {
  check_exact(arch::Dataflow::os, arch::FoldOverlap::full);
}
TEST(SystolicExactness, InputStationaryEqualsTheCycleModel) {
  check_exact(arch::Dataflow::is, arch::FoldOverlap::full);
}
// overlap_folds: none is the classic accounting of published systolic simulators: each fold start to finish.
TEST(SystolicExactness, WeightStationaryFoldByFoldEqualsTheCycleModel) {
  check_exact(arch::Dataflow::ws, arch::FoldOverlap::none);
}
TEST(SystolicExactness, OutputStationaryFoldByFoldEqualsTheCycleModel) {
  check_exact(arch::Dataflow::os, arch::FoldOverlap::none);
}
// overlap_folds: drain, the level in between: the next fold's preload (fill) under this one's drain.
TEST(SystolicExactness, WeightStationaryDrainEqualsTheCycleModel) {
  check_exact(arch::Dataflow::ws, arch::FoldOverlap::drain);
}
TEST(SystolicExactness, OutputStationaryDrainEqualsTheCycleModel) {
  check_exact(arch::Dataflow::os, arch::FoldOverlap::drain);
}

}  // namespace tessera
