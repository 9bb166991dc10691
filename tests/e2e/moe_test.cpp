// MoE layers mapped as a stage graph (mapper/moe/stage.hpp): every kept mapping of both placements (whole
// experts a core, and experts split over cores) of softmax and sigmoid group-limited routing, shared experts,
// SwiGLU and GELU, capacity drops and forced (zipf) routing lowers to a program that runs and passes the
// float64 reference of the whole layer; the cost for the routing's counts moves the program's DRAM bytes; a
// permutation or a combine off by one token fails the check; a skewed routing's run is bounded below by its
// busiest core's work and loses cycles to imbalance.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <variant>

#include "common/config.hpp"
#include "e2e/pipeline_fixture.hpp"
#include "mapper/lowering.hpp"
#include "mapper/moe/stage.hpp"
#include "mapper/search.hpp"
#include "ops/kinds/moe.hpp"
#include "ops/workload.hpp"
#include "sim/machine.hpp"

namespace tessera {

namespace {

const char* kMoe = R"(name: moe
seed: 21
ops:
  - {name: mixtral_like, kind: moe, tokens: 40, hidden: 64, ffn: 96, experts: 8, top_k: 2, dtype: bf16}
  - {name: deepseek_like, kind: moe, tokens: 33, hidden: 48, ffn: 64, experts: 16, top_k: 4, shared_experts: 1, routing: {scoring: sigmoid, groups: 4, topk_groups: 2, routed_scaling: 2.5}, dtype: bf16}
  - {name: drops, kind: moe, tokens: 48, hidden: 32, ffn: 48, experts: 4, top_k: 2, capacity_factor: 0.75, activation: gelu, dtype: fp32}
  - {name: zipf, kind: moe, tokens: 64, hidden: 32, ffn: 32, experts: 8, top_k: 2, shared_experts: 2, routing: {skew: zipf, alpha: 1.2}, dtype: bf16}
)";

ops::Workload moe_workload() {
  return ops::workload_from_yaml(config::load_text(kMoe, "moe.yaml"));
}

mapper::SearchResult search(const ops::Op& op, const arch::ArchSpec& spec, int keep) {
  mapper::SearchOptions options;
  options.dataflows = {arch::Dataflow::ws, arch::Dataflow::os, arch::Dataflow::is};
  options.keep_per_dataflow = keep;
  return mapper::search_op(op, spec, options);
}

std::vector<int64_t> counts_of(const ops::Op& op, uint64_t seed) {
  const ops::MoeRouting routing = ops::moe_routing_from_seed(op, seed, 1);
  std::vector<int64_t> counts;
  for (int64_t e = 0; e < routing.experts; ++e) counts.push_back(routing.count(e));
  return counts;
}

int64_t busy_of(const sim::UnitResult& unit) {
  return unit.cycles[static_cast<size_t>(arch::Cause::busy)];
}

}  // namespace

TEST(Moe, EveryKeptMappingOfBothPlacementsIsCorrectAndMovesTheDramBytesItsCostSays) {
  const arch::ArchSpec spec = load_arch("mesh4x4");
  sim::Machine machine(spec);
  const ops::Workload workload = moe_workload();
  int checked = 0;
  for (const ops::Op& op : workload.ops) {
    const mapper::SearchResult result = search(op, spec, 2);
    ASSERT_EQ(result.per_dataflow.size(), 6u) << op.name;
    EXPECT_EQ(result.per_dataflow[0].label(), "ep ws");
    EXPECT_EQ(result.per_dataflow[3].label(), "ep-split ws");
    const auto stage = mapper::MoeStage::of(op);
    const std::vector<int64_t> counts = counts_of(op, workload.seed);
    for (const mapper::DataflowSearch& row : result.per_dataflow) {
      ASSERT_FALSE(row.best.empty()) << op.name;
      for (const mapper::Candidate& candidate : row.best) {
        const std::string where = op.name + " " + candidate.mapping.describe();
        const arch::Program program = mapper::lower(op, workload.seed, candidate.mapping, spec, op.name);
        sim::RunResult run;
        ASSERT_NO_THROW(run = machine.run(program, sim::RunOptions{})) << where;
        std::string detail;
        EXPECT_TRUE(output_matches_reference(op, workload.seed, run, &detail)) << where << ": " << detail;
        ++checked;
        // Exact for the routing's counts where nothing is dropped (the estimate spreads drops evenly over the
        // combine's blocks).
        const mapper::Cost exact = stage->evaluate_counts(candidate.mapping, spec, counts);
        if (stage->shape().capacity_factor == 0) {
          EXPECT_EQ(exact.dram_bytes, run.counters.dram_read_bytes + run.counters.dram_write_bytes) << where;
        }
        for (const sim::UnitResult& unit : run.units) {
          int64_t sum = 0;
          for (int64_t cycles : unit.cycles) sum += cycles;
          EXPECT_EQ(sum, run.counters.cycles) << where << " " << unit.name;
        }
      }
    }
  }
  EXPECT_EQ(checked, 4 * 6 * 2);  // every op, both placements by three dataflows, two kept each
}

// The permutation's gather of X, then the combine's gather of Y, each moved by one token: the output no
// longer matches.
TEST(Moe, APermutationOrACombineOffByOneTokenFailsTheCheck) {
  const arch::ArchSpec spec = load_arch("mesh4x4");
  sim::Machine machine(spec);
  const ops::Workload workload = moe_workload();
  const ops::Op& op = workload.ops[0];
  const mapper::Candidate best = search(op, spec, 1).ranked().front();
  const arch::Program program = mapper::lower(op, workload.seed, best.mapping, spec, op.name);
  std::string detail;
  ASSERT_TRUE(output_matches_reference(op, workload.seed, machine.run(program, sim::RunOptions{}), &detail))
      << detail;
  for (const char* view : {"XG", "YG"}) {
    arch::Program broken = program;
    std::vector<int64_t>& rows =
        broken.tensors[static_cast<size_t>(broken.tensor_id(view))].view_if<arch::RowGatherView>()->rows;
    // The first gathered row that is not the last source row points at the next token's instead.
    const int64_t source_rows =
        broken
            .tensors[static_cast<size_t>(broken.tensors[static_cast<size_t>(broken.tensor_id(view))]
                                             .view_if<arch::RowGatherView>()
                                             ->source)]
            .rows;
    auto row =
        std::find_if(rows.begin(), rows.end(), [&](int64_t r) { return r >= 0 && r + 1 < source_rows; });
    ASSERT_NE(row, rows.end()) << view;
    ++*row;
    EXPECT_FALSE(output_matches_reference(op, workload.seed, machine.run(broken, sim::RunOptions{}), &detail))
        << view;
  }
}

// Zipf-skewed routing with whole experts a core: expert 0's core is the straggler; the run takes at least
// its busiest core's PE work, and the other cores wait for it (imbalance). Split over cores, the same
// routing loses fewer cycles to imbalance.
TEST(Moe, ASkewedRunIsBoundedBelowByItsBusiestCoreAndLosesCyclesToImbalance) {
  const arch::ArchSpec spec = load_arch("mesh4x4");
  sim::Machine machine(spec);
  const ops::Workload workload = ops::workload_from_yaml(config::load_text(
      R"(name: skew
seed: 4
ops:
  - {name: uniform, kind: moe, tokens: 512, hidden: 128, ffn: 128, experts: 16, top_k: 2, routing: {counts: [64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64]}, dtype: bf16}
  - {name: zipf, kind: moe, tokens: 512, hidden: 128, ffn: 128, experts: 16, top_k: 2, routing: {skew: zipf, alpha: 1.2}, dtype: bf16}
)",
      "skew.yaml"));
  std::map<std::string, double> imbalance_share;
  for (const ops::Op& op : workload.ops) {
    const mapper::SearchResult result = search(op, spec, 1);
    const mapper::Candidate& whole = result.per_dataflow[0].best.front();  // ep ws
    ASSERT_EQ(whole.mapping.label(), "ep ws");
    const sim::RunResult run = machine.run(mapper::lower(op, workload.seed, whole.mapping, spec, op.name),
                                           sim::RunOptions{false, false});
    int64_t busiest = 0, imbalance = 0, pe_cycles = 0;
    for (const sim::UnitResult& unit : run.units) {
      if (unit.queue.kind != arch::QueueKind::pe) continue;
      busiest = std::max(busiest, busy_of(unit));
      imbalance += unit.cycles[static_cast<size_t>(arch::Cause::imbalance)];
      pe_cycles += run.counters.cycles;
    }
    EXPECT_GE(run.counters.cycles, busiest) << op.name;
    imbalance_share[op.name] = static_cast<double>(imbalance) / static_cast<double>(pe_cycles);
  }
  EXPECT_GT(imbalance_share["zipf"], 0.3);
  EXPECT_GT(imbalance_share["zipf"], 2 * imbalance_share["uniform"]);
}

// The all-to-all form (decode-sized layers whose experts' rows fit the cores' SRAM): each route whose expert
// lives on another core than its token's home crosses the mesh twice — its X row there, its output row back —
// and nothing else does: the run's NoC bytes less its DRAM bytes (DRAM bursts cross the mesh too) are exactly
// 2 x hidden x elt per such route, counted here from the routing and the placement; the output passes the
// reference and the estimate's DRAM bytes are the program's.
TEST(Moe, TheAllToAllsNocBytesAreWhatTheRoutingImplies) {
  const arch::ArchSpec spec = load_arch("mesh4x4");
  sim::Machine machine(spec);
  const ops::Workload workload = ops::workload_from_yaml(config::load_text(
      R"(name: a2a
seed: 5
ops:
  - {name: mix, kind: moe, tokens: 32, hidden: 256, ffn: 384, experts: 8, top_k: 2, dtype: bf16}
  - {name: qwen, kind: moe, tokens: 24, hidden: 128, ffn: 96, experts: 32, top_k: 4, activation: gelu, dtype: fp32}
)",
      "a2a.yaml"));
  const int cores = spec.mesh.rows * spec.mesh.cols;
  for (const ops::Op& op : workload.ops) {
    mapper::SearchOptions options;
    options.dataflows = {arch::Dataflow::ws, arch::Dataflow::os};
    options.keep_per_dataflow = 2;
    options.seed = workload.seed;
    const mapper::SearchResult result = mapper::search_op(op, spec, options);
    ASSERT_EQ(result.per_dataflow.size(), 6u) << op.name;  // ep, ep-split and ep-a2a by two dataflows
    EXPECT_EQ(result.per_dataflow[4].label(), "ep-a2a ws");
    // The routes that cross: the token's home core (tokens dealt in blocks of ceil(tokens / cores)) is not
    // its expert's (whole experts, heaviest first to the least loaded core).
    const auto stage = mapper::MoeStage::of(op);
    const ops::MoeRouting routing = ops::moe_routing_from_seed(op, workload.seed, 1);
    std::vector<int64_t> counts;
    for (int64_t e = 0; e < routing.experts; ++e) counts.push_back(routing.count(e));
    std::vector<int> owner(counts.size(), -1);
    const auto shares = stage->place(counts, mapper::MoeStage::whole, 1, cores);
    for (size_t c = 0; c < shares.size(); ++c)
      for (const auto& share : shares[c]) owner[static_cast<size_t>(share.expert)] = static_cast<int>(c);
    const int64_t home_tokens = (routing.tokens + cores - 1) / cores;
    int64_t crossing = 0;
    for (int64_t t = 0; t < routing.tokens; ++t)
      for (int64_t j = 0; j < routing.top_k; ++j)
        crossing +=
            owner[static_cast<size_t>(routing.routes[static_cast<size_t>(t * routing.top_k + j)].expert)] !=
                    static_cast<int>(t / home_tokens)
                ? 1
                : 0;
    ASSERT_GT(crossing, 0) << op.name;
    const int64_t expected = 2 * crossing * stage->shape().hidden * size_bytes(op.dtype);
    for (size_t r = 4; r < 6; ++r)
      for (const mapper::Candidate& candidate : result.per_dataflow[r].best) {
        const std::string where = op.name + " " + candidate.mapping.describe();
        EXPECT_EQ(stage->a2a_noc_bytes(candidate.mapping, spec), expected) << where;
        EXPECT_EQ(candidate.cost.noc_bytes, expected) << where;
        const sim::RunResult run = machine.run(
            mapper::lower(op, workload.seed, candidate.mapping, spec, op.name), sim::RunOptions{});
        std::string detail;
        EXPECT_TRUE(output_matches_reference(op, workload.seed, run, &detail)) << where << ": " << detail;
        const int64_t dram = run.counters.dram_read_bytes + run.counters.dram_write_bytes;
        EXPECT_EQ(run.counters.noc_bytes - dram, expected) << where;
        EXPECT_EQ(candidate.cost.dram_bytes, dram) << where;
      }
  }
}

}  // namespace tessera
