// Attention mapped flash-style (mapper/attention_stage.hpp) and naively (mapper/attention_naive.hpp): every
// mapping the search keeps, of either form, of MHA, GQA,
// causal (square and chunked), decode, paged (bhsd and bshd, a last block partly filled) and contiguous bshd
// attention, lowers to a program that runs and passes the float64 reference; the cost model's DRAM bytes are
// the program's; a program whose K load follows the wrong entry of the block table fails the check.
#include <gtest/gtest.h>

#include <variant>

#include "common/config.hpp"
#include "e2e/cli_helpers.hpp"
#include "e2e/pipeline_fixture.hpp"
#include "mapper/attention_naive.hpp"
#include "mapper/attention_stage.hpp"
#include "mapper/lowering.hpp"
#include "mapper/search.hpp"
#include "ops/workload.hpp"
#include "sim/machine.hpp"

namespace tessera {

namespace {

const char* kAttention = R"(name: attention
seed: 9
ops:
  - {name: mha, kind: attention, batch: 1, heads: 3, kv_heads: 3, seq_q: 70, seq_kv: 90, head_dim: 32, dtype: bf16}
  - {name: causal, kind: attention, batch: 2, heads: 2, kv_heads: 2, seq_q: 50, seq_kv: 50, head_dim: 16, causal: true, scale: 0.3, dtype: fp16}
  - {name: chunked, kind: attention, batch: 1, heads: 4, kv_heads: 2, seq_q: 20, seq_kv: 75, head_dim: 32, causal: true, dtype: fp32, kv_cache: {order: bshd}}
  - {name: decode, kind: attention, batch: 3, heads: 8, kv_heads: 2, seq_q: 1, seq_kv: 140, head_dim: 64, causal: true, dtype: bf16, kv_cache: {layout: paged, block_tokens: 16}}
  - {name: decode_bshd, kind: attention, batch: 2, heads: 4, kv_heads: 1, seq_q: 2, seq_kv: 45, head_dim: 16, causal: true, dtype: bf16, kv_cache: {layout: paged, block_tokens: 8, order: bshd}}
)";

ops::Workload attention_workload() {
  return ops::workload_from_yaml(config::load_text(kAttention, "attention.yaml"));
}

mapper::SearchResult search(const ops::Op& op, const arch::ArchSpec& spec, int keep) {
  mapper::SearchOptions options;
  options.dataflows = {arch::Dataflow::ws, arch::Dataflow::os, arch::Dataflow::is};
  options.keep_per_dataflow = keep;
  return mapper::search_op(op, spec, options);
}

}  // namespace

static void run_every_candidate(const std::string& machine_name) {
  {
    const arch::ArchSpec spec = load_arch(machine_name);
    sim::Machine machine(spec);
    const ops::Workload workload = attention_workload();
    for (const ops::Op& op : workload.ops) {
      const mapper::SearchResult result = search(op, spec, 3);
      // flash ws, os, is, then the multicast form's rows where every stream fits two blocks a core, then the
      // naive form's (S and P through DRAM).
      ASSERT_GE(result.per_dataflow.size(), 6u) << op.name;
      EXPECT_EQ(result.per_dataflow[0].label(), "flash ws");
      EXPECT_EQ(result.per_dataflow.back().label(), "naive is");
      for (size_t r = 3; r + 3 < result.per_dataflow.size(); ++r)
        EXPECT_EQ(result.per_dataflow[r].label().rfind("flash-mc ", 0), 0u) << result.per_dataflow[r].label();
      for (const mapper::DataflowSearch& row : result.per_dataflow) {
        ASSERT_FALSE(row.best.empty()) << op.name;
        for (const mapper::Candidate& candidate : row.best) {
          const std::string where = machine_name + " " + op.name + " " + candidate.mapping.describe();
          const arch::Program program = mapper::lower(op, workload.seed, candidate.mapping, spec, op.name);
          sim::RunResult run;
          ASSERT_NO_THROW(run = machine.run(program, sim::RunOptions{})) << where;
          std::string detail;
          EXPECT_TRUE(output_matches_reference(op, workload.seed, run, &detail)) << where << ": " << detail;
          EXPECT_EQ(candidate.cost.dram_bytes, run.traffic.dram_read_bytes + run.traffic.dram_write_bytes)
              << where;
          for (const sim::UnitResult& unit : run.units) {
            int64_t sum = 0;
            for (int64_t cycles : unit.cycles) sum += cycles;
            EXPECT_EQ(sum, run.cycles) << where << " " << unit.name;
          }
        }
      }
    }
  }
}

// One machine a test: SystemC elaborates once per process (ctest runs each test on its own).
TEST(Attention, EveryKeptMappingOfEachFormIsCorrectAndMovesTheDramBytesItsCostSaysOnMesh4x4) {
  run_every_candidate("mesh4x4");
}

TEST(Attention, EveryKeptMappingOfEachFormIsCorrectAndMovesTheDramBytesItsCostSaysOnTheDefaultMesh) {
  run_every_candidate("default");
}

// The paged decode's first K load moved to another physical block (as if the block table's entry were
// misread): the output no longer matches.
TEST(Attention, AKLoadFromTheWrongBlockOfTheTableFailsTheCheck) {
  const arch::ArchSpec spec = load_arch("mesh4x4");
  const ops::Workload workload = attention_workload();
  const ops::Op& op = workload.ops[3];
  const mapper::Candidate best = search(op, spec, 1).ranked().front();
  arch::Program program = mapper::lower(op, workload.seed, best.mapping, spec, op.name);
  sim::Machine machine(spec);
  std::string detail;
  ASSERT_TRUE(output_matches_reference(op, workload.seed, machine.run(program, sim::RunOptions{}), &detail))
      << detail;
  const int k = program.tensor_id("K");
  bool moved = false;
  for (arch::Instruction& instruction : program.cores[0].instructions) {
    auto* load = std::get_if<arch::DmaLoad>(&instruction.operation);
    if (!load || load->source.tensor != k || moved) continue;
    const int64_t block_rows = 16;  // block_tokens rows of one kv head (bhsd inside a block)
    const int64_t pool_rows = program.tensors[static_cast<size_t>(k)].rows;
    load->source.row = (load->source.row + 2 * block_rows * 2) % (pool_rows - load->source.rows + 1);
    moved = true;
  }
  ASSERT_TRUE(moved);
  EXPECT_FALSE(output_matches_reference(op, workload.seed, machine.run(program, sim::RunOptions{}), &detail))
      << detail;
}

}  // namespace tessera

namespace tessera {

// The DRAM minimum the report compares with: Q and O, and K and V of the seq_kv tokens, once; not the paged
// pool's padding (140 tokens in blocks of 16: 144 slots) nor the block table. A GEMM's is A, W and O.
TEST(Attention, TheDramMinimumCountsTheTokensNotThePool) {
  const ops::Workload workload = attention_workload();
  const ops::Op& decode = workload.ops[3];  // b3 h8/2 q1 kv140 d64 bf16, paged 16
  EXPECT_EQ(decode.minimum_dram_bytes(), (2 * 3 * 8 * 1 + 2 * 3 * 2 * 140) * 64 * 2);
  const ops::Workload gemm = ops::workload_from_yaml(config::load_text(
      "name: g\nseed: 1\nops:\n  - {name: g, kind: gemm, m: 64, n: 32, k: 16, dtype: bf16}\n", "g.yaml"));
  EXPECT_EQ(gemm.ops[0].minimum_dram_bytes(), (64 * 16 + 16 * 32) * 2 + 64 * 32 * 4);
}

}  // namespace tessera

namespace tessera {

// The softmax between the two matmuls: with the shipped 32-lane vector units the PE arrays rarely wait for
// it; with 2 lanes (and one special-function lane) they wait most of the time, charged `vector`.
TEST(Attention, AVectorUnitTooNarrowForTheSoftmaxShowsVectorBubblesOnThePeArrays) {
  const std::string op =
      "{name: a, kind: attention, heads: 4, kv_heads: 4, seq_q: 256, seq_kv: 256, head_dim: 64, dtype: bf16}";
  auto winner_vector_share = [&](const std::string& vector) {
    const nlohmann::json report = run_report(mesh4x4_with_vector(vector), op);
    for (const nlohmann::json& run : report.at("ops").at(0).at("runs"))
      if (run.at("winner")) return pe_share(run, "vector");
    ADD_FAILURE() << "no winner";
    return 0.0;
  };
  const double narrow = winner_vector_share("vector: {lanes: 2, special_per_cycle: 1, latency_cycles: 8}");
  const double wide = winner_vector_share("vector: {lanes: 32, special_per_cycle: 8, latency_cycles: 8}");
  EXPECT_GT(narrow, 0.5);
  EXPECT_LT(wide, 0.5 * narrow);
}

}  // namespace tessera

namespace tessera {

// The multicast form reads each K/V tile once for every core that uses it: its DRAM bytes are the op's
// minimum (Q, K, V and O once), where each core streaming its own blocks' tiles reads K and V once a block.
TEST(Attention, TheMulticastFormMovesTheDramMinimum) {
  const arch::ArchSpec spec = load_arch("mesh4x4");
  const ops::Workload workload = attention_workload();
  for (const size_t index : {size_t{0}, size_t{1}}) {  // MHA, and causal with blocks of unequal work
    const ops::Op& op = workload.ops[index];
    int multicast = 0;
    for (const mapper::DataflowSearch& row : search(op, spec, 3).per_dataflow)
      for (const mapper::Candidate& candidate : row.best) {
        if (candidate.mapping.label().rfind("flash-mc ", 0) != 0) {
          EXPECT_GT(candidate.cost.dram_bytes, op.minimum_dram_bytes()) << op.name;
          continue;
        }
        ++multicast;
        EXPECT_EQ(candidate.cost.dram_bytes, op.minimum_dram_bytes())
            << op.name << " " << candidate.mapping.describe();
      }
    EXPECT_GT(multicast, 0) << op.name;
  }
}

}  // namespace tessera

namespace tessera {

// The naive form's DRAM bytes in closed form: Q and O once; K and V once for each block of Br query rows (a
// block: Br rows of one head when causal with several queries, else of the kv head's group stacked), over the
// keys its last row sees; S written and read back, P written and read back, over the same rows and keys.
// Where one block holds all the rows of a kv head's group (the MHA op's 70 rows in a block of 128), K and V
// are read once and the bytes are the minimum plus S and P: 4 * b * h * seq_q * seq_kv elements.
TEST(Attention, TheNaiveFormMovesQKVOAsItsBlocksReadThemPlusSAndPWrittenAndReadOnce) {
  const arch::ArchSpec spec = load_arch("mesh4x4");
  const ops::Workload workload = attention_workload();
  for (const ops::Op& op : workload.ops) {
    const auto& a = *op.as<ops::AttentionShape>();
    const int64_t element = size_bytes(op.dtype), d = a.head_dim;
    const bool causal = a.mask == ops::AttentionMask::causal && a.seq_q > 1;
    int naive = 0;
    for (const mapper::DataflowSearch& row : search(op, spec, 3).per_dataflow)
      for (const mapper::Candidate& candidate : row.best) {
        if (candidate.mapping.label().rfind("naive ", 0) != 0) continue;
        ++naive;
        const int64_t block_rows = candidate.mapping.graph_tiling.values[0];
        int64_t kv_elements = 0, score_elements = 0;
        if (causal) {
          for (int64_t s = 0; s < a.seq_q; s += block_rows) {
            const int64_t rows = std::min(block_rows, a.seq_q - s);
            const int64_t keys = std::min(a.seq_kv, s + rows + a.seq_kv - a.seq_q);
            kv_elements += a.batch * a.heads * 2 * keys * d;
            score_elements += a.batch * a.heads * rows * keys;
          }
        } else {
          const int64_t group_rows = a.heads / a.kv_heads * a.seq_q;
          const int64_t blocks = (group_rows + block_rows - 1) / block_rows;
          kv_elements = a.batch * a.kv_heads * blocks * 2 * a.seq_kv * d;
          score_elements = a.batch * a.heads * a.seq_q * a.seq_kv;
        }
        const int64_t expected =
            (2 * a.batch * a.heads * a.seq_q * d + kv_elements + 4 * score_elements) * element;
        EXPECT_EQ(candidate.cost.dram_bytes, expected) << op.name << " " << candidate.mapping.describe();
      }
    EXPECT_GT(naive, 0) << op.name;
  }
}

// A block of 70 rows holds each MHA head's queries: K and V are read once, and the program moves exactly the
// minimum plus S and P, each written once and read once (4 * 3 heads * 70 * 90 bf16 elements), and passes.
TEST(Attention, WhereABlockHoldsAHeadsQueriesTheNaiveFormMovesTheMinimumPlusSAndP) {
  const arch::ArchSpec spec = load_arch("mesh4x4");
  const ops::Workload workload = attention_workload();
  const ops::Op& op = workload.ops[0];  // b1 h3/3 q70 kv90 d32 bf16
  mapper::Mapping mapping;
  for (const mapper::DataflowSearch& row : search(op, spec, 1).per_dataflow)
    if (row.label() == "naive ws") mapping = row.best.front().mapping;
  ASSERT_TRUE(mapping.graph);
  const auto& stage = dynamic_cast<const mapper::AttentionStage&>(*mapping.graph);
  mapping.graph_tiling.values[mapper::AttentionStage::kBlockRows] = 70;
  mapping.graph_tiling.values[mapper::AttentionStage::kBlockCols] = 32;
  mapping.graph_tiling.values[mapper::AttentionStage::kCores] = 3;
  mapping.graph_tiling.values[mapper::AttentionStage::kSoftmaxRows] =
      mapper::naive_softmax_rows(stage, 70, 32, spec.core.sram.bytes);
  const int64_t expected = op.minimum_dram_bytes() + 4 * 3 * 70 * 90 * 2;
  EXPECT_EQ(stage.evaluate(mapping, spec).dram_bytes, expected);
  sim::Machine machine(spec);
  const sim::RunResult run =
      machine.run(mapper::lower(op, workload.seed, mapping, spec, op.name), sim::RunOptions{});
  EXPECT_EQ(run.traffic.dram_read_bytes + run.traffic.dram_write_bytes, expected);
  std::string detail;
  EXPECT_TRUE(output_matches_reference(op, workload.seed, run, &detail)) << detail;
}

}  // namespace tessera
