// The vector unit's mixture-of-experts instructions in the simulator (docs/tile-program.md, "vec route",
// "vec weighted_sum"): a hand-written tile program loads a router's logits, the chosen experts' int32 table
// and the experts' outputs by DMA, runs vec route (the gate weights of the chosen experts) and vec
// weighted_sum (the combine: each token's expert rows weighted by its gate weights, plus the residual), and
// stores the weights, the scores and the combined rows; each against float64 (ops/moe_routing.hpp's scores),
// the unit's busy cycles against the closed form; a table naming an expert outside the router or one expert
// twice in a row is a run-time error at the instruction.
//
// A tile program's inputs are generated values and int32 is no input type yet (the values fill that will
// load the host's routing is not on main): the table is built in SRAM by DMA instead, from a zeroed int32
// tile (an output tensor's DRAM starts as zeros) with one generated int8 byte loaded into the low byte of
// each word, the bytes picked by the test so that each row's experts are distinct and below `experts`.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "arch/isa/program_text.hpp"
#include "arch/timing/vector_timing.hpp"
#include "e2e/pipeline_fixture.hpp"
#include "ops/moe_routing.hpp"
#include "ops/tensor.hpp"
#include "sim/machine.hpp"

namespace tessera {
namespace {

struct Router {
  int64_t rows, experts, top_k, groups = 1, topk_groups = 1;
  bool sigmoid = false;
  double scaling = 1.0;
  int64_t cols = 96;  // of an expert's output row
};

constexpr uint64_t kSeed = 5;
constexpr int64_t kByteCols = 64;  // the int8 source of the table's bytes: B [rows x 64]

std::string shape(int64_t a, int64_t b) {
  return std::to_string(a) + "x" + std::to_string(b);
}
std::string range(int64_t a, int64_t b) {
  return "[0:" + std::to_string(a) + ", 0:" + std::to_string(b) + "]";
}
std::string hex(uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

// The table: per row, the first top_k bytes of its row of B (as unsigned) below `experts` and new to the row;
// the program lines that load each into the low byte of its word at `table` (after the zeros, signalled
// `zeros`); every load signals i_part.
struct Table {
  std::vector<int32_t> experts;  // rows x top_k
  std::string loads;
};

Table build_table(const Router& r, uint64_t table) {
  const ops::HostTensor bytes = ops::generate_input(DType::int8, r.rows, kByteCols, kSeed, 4);
  Table built;
  for (int64_t t = 0; t < r.rows; ++t) {
    std::vector<int32_t> row;
    for (int64_t c = 0; c < kByteCols && static_cast<int64_t>(row.size()) < r.top_k; ++c) {
      const auto value = static_cast<int32_t>(bytes.bytes[static_cast<size_t>(t * kByteCols + c)]);
      if (value >= r.experts || std::find(row.begin(), row.end(), value) != row.end()) continue;
      const uint64_t word =
          table + static_cast<uint64_t>(4 * (t * r.top_k + static_cast<int64_t>(row.size())));
      built.loads += "  dma0 load B[" + std::to_string(t) + ":" + std::to_string(t + 1) + ", " +
                     std::to_string(c) + ":" + std::to_string(c + 1) + "] -> " + hex(word) + " ; " +
                     (built.loads.empty() ? "wait zeros ; " : "") + "signal i_part\n";
      row.push_back(value);
    }
    EXPECT_EQ(static_cast<int64_t>(row.size()), r.top_k) << "row " << t << " of B has too few usable bytes";
    built.experts.insert(built.experts.end(), row.begin(), row.end());
  }
  return built;
}

// Tensors: L logits [R x E] fp32 (id 0), X the experts' outputs [R*K x C] bf16 (id 2), Y the residual [R x C]
// bf16 (id 3), B the table's bytes (id 4); outputs W [R x K], S the scores [R x E], O [R x C] fp32, Z [R x K]
// int32 (zeros, read only).
std::string combine_program(const Router& r, const Table& table) {
  const int64_t k = r.top_k, e = r.experts, c = r.cols, rows = r.rows;
  std::string route_options = r.sigmoid ? "scoring=sigmoid" : "scoring=softmax";
  if (r.groups > 1)
    route_options += " groups=" + std::to_string(r.groups) + " topk_groups=" + std::to_string(r.topk_groups);
  if (r.scaling != 1.0) route_options += " scaling=" + std::to_string(r.scaling);
  return "tessera-program 1\nname combine\nmesh 2x2\n"
         "tensor L fp32 " +
         shape(rows, e) +
         " at 0x0 input seed=5 id=0\n"
         "tensor X bf16 " +
         shape(rows * k, c) +
         " at 0x200000 input seed=5 id=2\n"
         "tensor Y bf16 " +
         shape(rows, c) +
         " at 0x300000 input seed=5 id=3\n"
         "tensor B int8 " +
         shape(rows, kByteCols) +
         " at 0x380000 input seed=5 id=4\n"
         "tensor W fp32 " +
         shape(rows, k) +
         " at 0x400000 output\n"
         "tensor S fp32 " +
         shape(rows, e) +
         " at 0x500000 output\n"
         "tensor O fp32 " +
         shape(rows, c) +
         " at 0x600000 output\n"
         "tensor Z int32 " +
         shape(rows, k) +
         " at 0x700000 output\n"
         "\ncore 0,0\n"
         "  dma1 load Z" +
         range(rows, k) + " -> 0x8000 ; signal zeros\n" + table.loads + "  dma0 load L" + range(rows, e) +
         " -> 0x0 ; signal l_full\n"
         "  dma0 load X" +
         range(rows * k, c) +
         " -> 0x10000 ; signal x_full\n"
         "  dma0 load Y" +
         range(rows, c) +
         " -> 0x20000 ; signal y_full\n"
         "  vec route x=0x0 i=0x8000 o=0x9000 rows=" +
         std::to_string(rows) + " experts=" + std::to_string(e) + " top_k=" + std::to_string(k) + " " +
         route_options + " ; wait l_full i_part*" + std::to_string(rows * k) +
         " ; signal weights\n"
         "  vec weighted_sum x=0x10000 y=0x20000 g=0x9000 o=0x28000 rows=" +
         std::to_string(rows) + " cols=" + std::to_string(c) +
         " dtype=bf16 out=fp32 parts=" + std::to_string(k) +
         " ; wait x_full y_full ; signal combined\n"
         "  dma1 store 0x9000 -> W" +
         range(rows, k) +
         " ; wait weights\n"
         "  dma1 store 0x0 -> S" +
         range(rows, e) +
         "\n"
         "  dma1 store 0x28000 -> O" +
         range(rows, c) + " ; wait combined\n";
}

void expect_combine_matches_float64(const Router& r) {
  const arch::ArchSpec spec = load_arch("default");
  const Table table = build_table(r, 0x8000);
  const arch::Program program = arch::read_program(combine_program(r, table), "combine.tprog");
  sim::Machine machine(spec);
  sim::RunResult result;
  ASSERT_NO_THROW(result = machine.run(program, sim::RunOptions{}));
  const ops::HostTensor logits = ops::generate_input(DType::fp32, r.rows, r.experts, kSeed, 0);
  const ops::HostTensor experts = ops::generate_input(DType::bf16, r.rows * r.top_k, r.cols, kSeed, 2);
  const ops::HostTensor residual = ops::generate_input(DType::bf16, r.rows, r.cols, kSeed, 3);
  const ops::HostTensor& weights = result.outputs.at(4);
  const ops::HostTensor& scores = result.outputs.at(5);
  const ops::HostTensor& combined = result.outputs.at(6);
  auto chosen = [&](int64_t index) { return static_cast<size_t>(table.experts[static_cast<size_t>(index)]); };
  double worst_weight = 0, worst_score = 0, error = 0, norm = 0;
  std::vector<double> row_logits(static_cast<size_t>(r.experts)), row_scores(row_logits.size());
  for (int64_t t = 0; t < r.rows; ++t) {
    for (int64_t e = 0; e < r.experts; ++e)
      row_logits[static_cast<size_t>(e)] = logits.value(t * r.experts + e);
    ops::moe_scores(r.sigmoid ? ops::MoeScoring::sigmoid : ops::MoeScoring::softmax, row_logits.data(),
                    r.experts, row_scores.data());
    for (int64_t e = 0; e < r.experts; ++e)
      worst_score = std::max(worst_score,
                             std::abs(scores.value(t * r.experts + e) - row_scores[static_cast<size_t>(e)]) /
                                 row_scores[static_cast<size_t>(e)]);
    double sum = 0;
    for (int64_t j = 0; j < r.top_k; ++j) sum += row_scores[chosen(t * r.top_k + j)];
    std::vector<double> gate(static_cast<size_t>(r.top_k));
    for (int64_t j = 0; j < r.top_k; ++j) {
      gate[static_cast<size_t>(j)] = row_scores[chosen(t * r.top_k + j)] / sum * r.scaling;
      worst_weight =
          std::max(worst_weight, std::abs(weights.value(t * r.top_k + j) - gate[static_cast<size_t>(j)]) /
                                     gate[static_cast<size_t>(j)]);
    }
    for (int64_t c = 0; c < r.cols; ++c) {
      double expected = residual.value(t * r.cols + c);
      for (int64_t j = 0; j < r.top_k; ++j)
        expected += gate[static_cast<size_t>(j)] * experts.value((t * r.top_k + j) * r.cols + c);
      const double got = combined.value(t * r.cols + c);
      error += (got - expected) * (got - expected);
      norm += expected * expected;
    }
  }
  EXPECT_LT(worst_score, 2e-6);
  EXPECT_LT(worst_weight, 2e-6);
  EXPECT_LT(std::sqrt(error / norm), 2e-6);

  // Each instruction's busy cycles on the unit are its closed form's.
  arch::VectorWork route_work;
  route_work.kind = arch::VectorKind::route;
  route_work.rows = r.rows;
  route_work.cols = r.experts;
  route_work.route_top_k = r.top_k;
  route_work.route_groups = r.groups;
  route_work.route_topk_groups = r.topk_groups;
  route_work.route_sigmoid = r.sigmoid;
  arch::VectorWork sum_work;
  sum_work.kind = arch::VectorKind::weighted_sum;
  sum_work.rows = r.rows;
  sum_work.cols = r.cols;
  sum_work.merge_parts = r.top_k;
  sum_work.weighted_adds_tile = true;
  const int64_t busy = arch::vector_timing(*spec.core.vector, route_work).busy_cycles +
                       arch::vector_timing(*spec.core.vector, sum_work).busy_cycles;
  for (const sim::UnitResult& unit : result.units)
    if (unit.core == 0 && unit.queue.kind == arch::QueueKind::vec) {
      EXPECT_EQ(unit.cycles[static_cast<int>(arch::Cause::busy)], busy);
      EXPECT_EQ(unit.counters.vector_elements, r.rows * r.experts + r.rows * r.cols);
    }
}

TEST(MoeVector, ASoftmaxRouteAndItsCombineMatchFloat64) {
  expect_combine_matches_float64(Router{16, 64, 4});
}

TEST(MoeVector, AGroupLimitedSigmoidRouteWithScalingAndItsCombineMatchFloat64) {
  expect_combine_matches_float64(Router{16, 64, 4, 8, 3, true, 2.5});
}

// The message a run of `text` throws.
std::string run_error(const std::string& text) {
  sim::Machine machine(load_arch("default"));
  try {
    machine.run(arch::read_program(text, "combine.tprog"), sim::RunOptions{});
  } catch (const InputError& error) {
    return error.what();
  }
  return "no error";
}

TEST(MoeVector, AChosenExpertOutsideTheRouterIsARunTimeErrorAtTheInstruction) {
  // The table loaded from fp32 logits: their bit patterns as int32 are far outside 8 experts.
  const std::string text =
      "tessera-program 1\nname bad\nmesh 2x2\n"
      "tensor L fp32 4x8 at 0x0 input seed=5 id=0\n"
      "tensor W fp32 4x4 at 0x2000 output\n"
      "\ncore 0,0\n"
      "  dma0 load L[0:4, 0:8] -> 0x0 ; signal l_full\n"
      "  dma0 load L[0:4, 0:4] -> 0x800 ; signal i_full\n"
      "  vec route x=0x0 i=0x800 o=0x900 rows=4 experts=8 top_k=4 scoring=softmax ; wait l_full i_full ; "
      "signal "
      "done\n"
      "  dma1 store 0x900 -> W[0:4, 0:4] ; wait done\n";
  const ops::HostTensor logits = ops::generate_input(DType::fp32, 4, 8, kSeed, 0);
  int64_t first = -1;
  int32_t bits = 0;
  for (int64_t index = 0; index < 16 && first < 0; ++index) {
    std::memcpy(&bits, logits.bytes.data() + 4 * ((index / 4) * 8 + index % 4), 4);
    if (bits < 0 || bits >= 8) first = index;
  }
  ASSERT_GE(first, 0);
  const std::string expected =
      "combine.tprog:10: core 0,0 vec #0: the chosen experts at i: row " + std::to_string(first / 4) +
      "'s chosen expert " + std::to_string(bits) + " (column " + std::to_string(first % 4) +
      ") is outside [0, 8)\n  hint: each row of i names top_k distinct experts in [0, "
      "experts)";
  EXPECT_EQ(run_error(text), expected);
}

TEST(MoeVector, AnExpertChosenTwiceInARowIsARunTimeErrorAtTheInstruction) {
  // A zero table (an output's DRAM) of top-2: every row chooses expert 0 in both columns.
  const std::string text =
      "tessera-program 1\nname twice\nmesh 2x2\n"
      "tensor L fp32 3x8 at 0x0 input seed=5 id=0\n"
      "tensor Z int32 3x2 at 0x1000 output\n"
      "tensor W fp32 3x2 at 0x2000 output\n"
      "\ncore 0,0\n"
      "  dma0 load L[0:3, 0:8] -> 0x0 ; signal l_full\n"
      "  dma0 load Z[0:3, 0:2] -> 0x800 ; signal i_full\n"
      "  vec route x=0x0 i=0x800 o=0x900 rows=3 experts=8 top_k=2 scoring=sigmoid ; wait l_full i_full ; "
      "signal done\n"
      "  dma1 store 0x900 -> W[0:3, 0:2] ; wait done\n";
  EXPECT_EQ(
      run_error(text),
      "combine.tprog:11: core 0,0 vec #0: the chosen experts at i: row 0 chooses expert 0 twice (columns 0 "
      "and 1)\n  hint: each row of i names top_k distinct experts in [0, experts)");
}

}  // namespace
}  // namespace tessera
