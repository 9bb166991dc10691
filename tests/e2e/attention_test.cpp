// Attention mapped flash-style (mapper/attention/stage.hpp; split over cores for decode,
// mapper/attention/split.cpp) and naively (mapper/attention/naive.hpp): every mapping the search keeps, of
// every form, of MHA, GQA,
// causal (square and chunked), decode, paged (bhsd and bshd, a last block partly filled) and contiguous bshd
// attention, lowers to a program that runs and passes the float64 reference; the cost model's DRAM bytes are
// the program's; a program whose K load follows the wrong entry of the block table fails the check.
#include <gtest/gtest.h>

#include <algorithm>
#include <variant>

#include "common/config.hpp"
#include "e2e/cli_helpers.hpp"
#include "e2e/pipeline_fixture.hpp"
#include "mapper/attention/naive.hpp"
#include "mapper/attention/stage.hpp"
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
  - {name: decode_bshd, kind: attention, batch: 2, heads: 4, kv_heads: 1, seq_q: 2, seq_kv: 45, head_dim: 16, causal: true, dtype: bf16, kv_cache: {layout: paged, block_tokens: 8, order: bshd, blocks: 23}}
  - {name: decode_fp32, kind: attention, batch: 1, heads: 4, kv_heads: 1, seq_q: 1, seq_kv: 300, head_dim: 32, dtype: fp32}
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
      // flash ws, os, is, then the multicast form's rows where every stream fits two blocks a core, the
      // split-KV form's where a decode's blocks leave cores idle, then the naive form's (S and P through
      // DRAM).
      ASSERT_GE(result.per_dataflow.size(), 6u) << op.name;
      EXPECT_EQ(result.per_dataflow[0].label(), "flash ws");
      EXPECT_EQ(result.per_dataflow.back().label(), "naive is");
      for (size_t r = 3; r + 3 < result.per_dataflow.size(); ++r)
        EXPECT_TRUE(result.per_dataflow[r].label().rfind("flash-mc ", 0) == 0 ||
                    result.per_dataflow[r].label().rfind("flash-split ", 0) == 0)
            << result.per_dataflow[r].label();
      for (const mapper::DataflowSearch& row : result.per_dataflow) {
        ASSERT_FALSE(row.best.empty()) << op.name;
        for (const mapper::Candidate& candidate : row.best) {
          const std::string where = machine_name + " " + op.name + " " + candidate.mapping.describe();
          const arch::Program program = mapper::lower(op, workload.seed, candidate.mapping, spec, op.name);
          sim::RunResult run;
          ASSERT_NO_THROW(run = machine.run(program, sim::RunOptions{})) << where;
          std::string detail;
          EXPECT_TRUE(output_matches_reference(op, workload.seed, run, &detail)) << where << ": " << detail;
          EXPECT_EQ(candidate.cost.dram_bytes, run.counters.dram_read_bytes + run.counters.dram_write_bytes)
              << where;
          // Into the mesh: the DRAM traffic and the partial results sent to be merged (a multicast load
          // counts once per destination).
          if (candidate.mapping.label().rfind("flash-mc ", 0) != 0) {
            EXPECT_EQ(run.counters.noc_bytes, candidate.cost.dram_bytes + candidate.cost.reduction_bytes)
                << where;
          }
          for (const sim::UnitResult& unit : run.units) {
            int64_t sum = 0;
            for (int64_t cycles : unit.cycles) sum += cycles;
            EXPECT_EQ(sum, run.counters.cycles) << where << " " << unit.name;
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

// The softmax between the two matmuls of the flash form: with the shipped 32-lane vector units the PE arrays
// rarely wait for it; with 2 lanes (and one special-function lane) they wait most of the time, charged
// `vector`. (The naive form, S and P through DRAM, may then win by a hair: its PE arrays wait for loads.)
TEST(Attention, AVectorUnitTooNarrowForTheSoftmaxShowsVectorBubblesOnThePeArrays) {
  const std::string op =
      "{name: a, kind: attention, heads: 4, kv_heads: 4, seq_q: 256, seq_kv: 256, head_dim: 64, dtype: bf16}";
  auto winner_vector_share = [&](const std::string& vector) {
    const nlohmann::json report = run_report(mesh4x4_with_vector(vector), op);
    const nlohmann::json* fastest_flash = nullptr;
    for (const nlohmann::json& run : report.at("ops").at(0).at("runs"))
      if (run.at("dataflow").get<std::string>().rfind("flash ", 0) == 0 &&
          (!fastest_flash || run.at("cycles") < fastest_flash->at("cycles")))
        fastest_flash = &run;
    if (fastest_flash) return pe_share(*fastest_flash, "vector");
    ADD_FAILURE() << "no flash row";
    return 0.0;
  };
  const double narrow = winner_vector_share("vector: {lanes: 2, special_per_cycle: 1, latency_cycles: 8}");
  const double wide = winner_vector_share("vector: {lanes: 32, special_per_cycle: 8, latency_cycles: 8}");
  EXPECT_GT(narrow, 0.5);
  EXPECT_LT(wide, 0.5 * narrow);
}

// On a machine whose DRAM is the bottleneck (mesh4x4 at 128 GB/s), a decode step (16 blocks: every core
// busy) reads every cached K and V byte once for one query a head: its PE arrays wait for the loads most of
// their time (`input_starvation`); a prefill over the same machine reuses each K/V tile for a whole Q block:
// it keeps its units busy and the loads in the shadow.
TEST(Attention, DecodeOnABandwidthLimitedMachineIsMemoryBoundAndPrefillIsNot) {
  std::string machine = mesh4x4_with_vector("vector: {lanes: 32, special_per_cycle: 8, latency_cycles: 8}");
  const std::string from = "bandwidth_gbps: 1024";
  ASSERT_NE(machine.find(from), std::string::npos);
  machine.replace(machine.find(from), from.size(), "bandwidth_gbps: 128");
  auto winner = [&](const std::string& op) {
    const nlohmann::json report = run_report(machine, op);
    for (const nlohmann::json& run : report.at("ops").at(0).at("runs"))
      if (run.at("winner")) return run;
    ADD_FAILURE() << "no winner";
    return nlohmann::json();
  };
  const nlohmann::json decode = winner(
      "{name: d, kind: attention, batch: 8, heads: 8, kv_heads: 2, seq_q: 1, seq_kv: 2048, head_dim: 64, "
      "causal: true, dtype: bf16, kv_cache: {layout: paged, block_tokens: 16}}");
  const nlohmann::json prefill = winner(
      "{name: p, kind: attention, heads: 4, kv_heads: 4, seq_q: 512, seq_kv: 512, head_dim: 64, "
      "causal: true, dtype: bf16}");
  EXPECT_GT(pe_share(decode, "input_starvation"), 0.5) << decode.at("bubbles").dump();
  EXPECT_LT(pe_share(prefill, "input_starvation"), 0.1) << prefill.at("bubbles").dump();
  EXPECT_GT(pe_share(prefill, "busy") + pe_share(prefill, "vector"), 0.6) << prefill.at("bubbles").dump();
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

// A stream's blocks are dealt heaviest first, one a core a round, there and back, so that a core with a
// heavier block of one round has a lighter one of the next: a GQA causal head pair of 200 queries on the 2x2
// mesh in blocks of 64 rows (two a core, dealt exactly so), 40 (three), 32 (four, two cores with three) and
// 25 (four). Each of those, on K/V tiles of 32 keys with two to four buffers, lowers to a program that passes
// the float64 reference and moves the DRAM minimum.
TEST(Attention, TheMulticastFormDealsOneToFourBlocksACoreThereAndBackAndEachIsCorrect) {
  const arch::ArchSpec spec = load_arch("default");
  const ops::Workload workload = ops::workload_from_yaml(config::load_text(R"(name: deal
seed: 5
ops:
  - {name: causal, kind: attention, batch: 1, heads: 2, kv_heads: 1, seq_q: 200, seq_kv: 200, head_dim: 16, causal: true, dtype: fp16}
)",
                                                                           "deal.yaml"));
  const ops::Op& op = workload.ops[0];
  mapper::Mapping mapping;
  for (const mapper::DataflowSearch& row : search(op, spec, 1).per_dataflow)
    if (row.label() == "flash-mc os") mapping = row.best.front().mapping;
  ASSERT_TRUE(mapping.form_if<mapper::AttentionStage>());
  const auto& stage = *mapping.form_if<mapper::AttentionStage>();
  // Blocks of 64 rows: q heads 0 and 1 in blocks 0..3 and 4..7 seeing 64, 128, 192 and 200 keys, dealt in
  // the order 3 7 2 6 to cores 0..3, then 1 5 0 4 to cores 3..0.
  const std::vector<mapper::AttentionStage::Stream> pairs = stage.streams(64, 32, 4);
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_EQ(pairs[0].slots, (std::vector<std::vector<size_t>>{{3, 4}, {7, 0}, {2, 5}, {6, 1}}));
  EXPECT_EQ(pairs[0].keys, 200);
  EXPECT_EQ(pairs[0].tiles, 7);
  sim::Machine machine(spec);
  for (const auto& [rows, per_core] :
       std::vector<std::pair<int64_t, int>>{{64, 2}, {40, 3}, {32, 4}, {25, 4}}) {
    EXPECT_EQ(mapper::AttentionStage::blocks_per_core(stage.streams(rows, 32, 4)), per_core) << rows;
    for (int kv : {2, 4}) {
      mapper::AttentionStage::Choice choice = mapper::AttentionStage::choice_of(mapping);
      choice.block_rows = rows;
      choice.block_cols = 32;
      choice.cores = 4;
      choice.kv_buffers = kv;
      mapping.choice = choice;
      const std::string where = mapping.describe();
      const sim::RunResult run =
          machine.run(mapper::lower(op, workload.seed, mapping, spec, op.name), sim::RunOptions{});
      std::string detail;
      EXPECT_TRUE(output_matches_reference(op, workload.seed, run, &detail)) << where << ": " << detail;
      EXPECT_EQ(run.counters.dram_read_bytes + run.counters.dram_write_bytes, op.minimum_dram_bytes())
          << where;
      EXPECT_EQ(stage.evaluate(mapping, spec).dram_bytes, op.minimum_dram_bytes()) << where;
    }
  }
  // Five blocks a core is more than a core holds: no stream.
  EXPECT_TRUE(stage.streams(16, 32, 4).empty());
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
        const int64_t block_rows = mapper::AttentionStage::choice_of(candidate.mapping).block_rows;
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
  ASSERT_TRUE(mapping.form_if<mapper::AttentionStage>());
  const auto& stage = *mapping.form_if<mapper::AttentionStage>();
  mapper::AttentionStage::Choice choice = mapper::AttentionStage::choice_of(mapping);
  choice.block_rows = 70;
  choice.block_cols = 32;
  choice.cores = 3;
  choice.softmax_rows = mapper::naive_softmax_rows(stage, 70, 32, spec.core.sram.bytes);
  mapping.choice = choice;
  const int64_t expected = op.minimum_dram_bytes() + 4 * 3 * 70 * 90 * 2;
  EXPECT_EQ(stage.evaluate(mapping, spec).dram_bytes, expected);
  sim::Machine machine(spec);
  const sim::RunResult run =
      machine.run(mapper::lower(op, workload.seed, mapping, spec, op.name), sim::RunOptions{});
  EXPECT_EQ(run.counters.dram_read_bytes + run.counters.dram_write_bytes, expected);
  std::string detail;
  EXPECT_TRUE(output_matches_reference(op, workload.seed, run, &detail)) << detail;
}

namespace {

int64_t splits_of(const mapper::Mapping& mapping) {
  return mapper::AttentionStage::choice_of(mapping).splits;
}

}  // namespace

// The split-KV form is searched for decode only (a few queries, blocks fewer than the cores), and every
// split count it offers — of a GQA decode through a paged cache, of two causal queries a head through a
// paged bshd cache (the ranges past a row's last key masked), of an fp32 decode split up to the 16 cores —
// lowers to a program that passes the float64 reference (bf16 1e-2, fp32 1e-5).
TEST(Attention, EverySplitCountTheSearchOffersIsCorrectForDecodeOnly) {
  const arch::ArchSpec spec = load_arch("mesh4x4");
  sim::Machine machine(spec);
  const ops::Workload workload = attention_workload();
  const std::vector<std::vector<int64_t>> expected = {{}, {}, {}, {2}, {2}, {2, 4, 8, 16}};
  for (size_t index = 0; index < workload.ops.size(); ++index) {
    const ops::Op& op = workload.ops[index];
    std::vector<int64_t> offered;
    for (const mapper::DataflowSearch& row : search(op, spec, 1000).per_dataflow)
      for (const mapper::Candidate& candidate : row.best) {
        const int64_t splits = splits_of(candidate.mapping);
        if (splits == 0 || std::find(offered.begin(), offered.end(), splits) != offered.end()) continue;
        offered.push_back(splits);
        const std::string where = op.name + " " + candidate.mapping.describe();
        EXPECT_EQ(candidate.mapping.label().rfind("flash-split ", 0), 0u) << where;
        const arch::Program program = mapper::lower(op, workload.seed, candidate.mapping, spec, op.name);
        sim::RunResult run;
        ASSERT_NO_THROW(run = machine.run(program, sim::RunOptions{})) << where;
        std::string detail;
        EXPECT_TRUE(output_matches_reference(op, workload.seed, run, &detail)) << where << ": " << detail;
      }
    std::sort(offered.begin(), offered.end());
    EXPECT_EQ(offered, expected[index]) << op.name;
  }
}

// The merge written without its weights exp(m_i - m), O = (O_0 + O_1) / (l_0 + l_1) with the existing vec
// kinds in place of each merging core's merge_partials, fails the check that the program as lowered passes.
TEST(Attention, ASplitMergeThatForgetsTheMaxCorrectionFailsTheCheck) {
  const arch::ArchSpec spec = load_arch("mesh4x4");
  const ops::Workload workload = attention_workload();
  const ops::Op& op = workload.ops[3];  // b3 h8/2 q1 kv140 d64 bf16, paged 16: 6 blocks, split 2
  const mapper::SearchResult result = search(op, spec, 1);
  const mapper::Candidate* split = nullptr;
  for (const mapper::DataflowSearch& row : result.per_dataflow)
    if (!row.best.empty() && splits_of(row.best.front().mapping) == 2) split = &row.best.front();
  ASSERT_NE(split, nullptr);
  arch::Program program = mapper::lower(op, workload.seed, split->mapping, spec, op.name);
  sim::Machine machine(spec);
  std::string detail;
  ASSERT_TRUE(output_matches_reference(op, workload.seed, machine.run(program, sim::RunOptions{}), &detail))
      << detail;
  int merges = 0;
  for (arch::CoreProgram& core : program.cores) {
    auto& list = core.instructions;
    for (size_t i = 0; i < list.size(); ++i) {
      const auto* merge = arch::operation_if<arch::VecOp>(list[i].operation);
      if (!merge || merge->kind != arch::VectorKind::merge_partials) continue;
      ASSERT_EQ(merge->parts, 2);
      const int64_t accumulator_bytes = merge->rows * merge->cols * 4, statistics_bytes = merge->rows * 12;
      arch::VecOp add_accumulators;  // O_0 + O_1 into O_0
      add_accumulators.kind = arch::VectorKind::map;
      add_accumulators.chain = {arch::VecFn::add};
      add_accumulators.dtype = add_accumulators.out_dtype = DType::fp32;
      add_accumulators.x_address = add_accumulators.o_address = merge->x_address;
      add_accumulators.y_address = merge->x_address + static_cast<uint64_t>(accumulator_bytes);
      add_accumulators.rows = merge->rows;
      add_accumulators.cols = merge->cols;
      arch::VecOp add_sums = add_accumulators;  // l_0 + l_1 into l_0 (the second of each row's 3 words)
      add_sums.x_address = add_sums.o_address = merge->g_address + 4;
      add_sums.y_address = merge->g_address + static_cast<uint64_t>(statistics_bytes) + 4;
      add_sums.cols = 1;
      add_sums.x_pitch_bytes = add_sums.y_pitch_bytes = add_sums.o_pitch_bytes = 12;
      arch::VecOp divide;  // by l_0 + l_1 into the output
      divide.kind = arch::VectorKind::scale_rows;
      divide.by_inverse_sum = true;
      divide.dtype = DType::fp32;
      divide.out_dtype = merge->out_dtype;
      divide.x_address = merge->x_address;
      divide.g_address = merge->g_address;
      divide.o_address = merge->o_address;
      divide.rows = merge->rows;
      divide.cols = merge->cols;
      const arch::Instruction original = list[i];
      list[i] = arch::Instruction{original.queue, divide, {}, original.signals};
      list.insert(list.begin() + static_cast<std::ptrdiff_t>(i),
                  {arch::Instruction{original.queue, add_accumulators, original.waits, {}},
                   arch::Instruction{original.queue, add_sums, {}, {}}});
      ++merges;
      break;
    }
  }
  EXPECT_EQ(merges, 6);
  EXPECT_FALSE(output_matches_reference(op, workload.seed, machine.run(program, sim::RunOptions{}), &detail))
      << detail;
}

// Batch-1 decode with a long context on the shipped 4x4 mesh: 8 blocks (batch x kv heads, the 4 q heads of a
// kv head stacked) stream 32768 keys each. One core a block keeps 8 of the 16 cores busy; split 2 ways, every
// core streams half a block's keys and the halves meet over the NoC (8 partials of 4 x 128 fp32 and their
// statistics: 16768 bytes). The split wins in simulated cycles, says why, and its NoC bytes are the DRAM
// traffic plus the partials.
TEST(Attention, SplitKvBeatsOneCoreABlockOnALongContextDecode) {
  const nlohmann::json report =
      run_report(read_text(shipped("arch/mesh4x4.yaml")),
                 "{name: decode, kind: attention, batch: 1, heads: 32, kv_heads: 8, seq_q: 1, seq_kv: 32768, "
                 "head_dim: 128, "
                 "causal: true, dtype: bf16, kv_cache: {layout: paged, block_tokens: 16}}");
  const nlohmann::json* winner = nullptr;
  int64_t one_core_a_block = 0;
  for (const nlohmann::json& run : report.at("ops").at(0).at("runs")) {
    if (run.at("winner")) winner = &run;
    const std::string label = run.at("dataflow");
    if (label.rfind("flash ", 0) == 0 && (one_core_a_block == 0 || run.at("cycles") < one_core_a_block))
      one_core_a_block = run.at("cycles");
  }
  ASSERT_NE(winner, nullptr);
  ASSERT_GT(one_core_a_block, 0);
  EXPECT_EQ(winner->at("dataflow").get<std::string>().rfind("flash-split ", 0), 0u) << winner->at("dataflow");
  EXPECT_LT(winner->at("cycles").get<int64_t>() * 5, one_core_a_block * 4);  // at least 1.25x faster
  const std::string why = winner->at("mapping").at("description");
  EXPECT_NE(why.find("8 q blocks of 4 rows, each block's keys split 2 ways keep 16 cores busy (one core a "
                     "block: 8)"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("merged there: 16768 bytes"), std::string::npos) << why;
  EXPECT_EQ(winner->at("noc_bytes").get<int64_t>(), winner->at("dram_bytes").get<int64_t>() + 16768);
}

}  // namespace tessera
