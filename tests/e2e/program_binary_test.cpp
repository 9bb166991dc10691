// The binary form of tile programs (arch/isa/program_binary.hpp) on the programs the lowerings make: every
// dataflow's best program of shipped workloads (flow::map_workload, as `tessera map --out` writes them),
// read back from its text and then through the binary form, equal to the program. Each workload is chosen
// for the forms it lowers to (named in each test), which the test checks are there.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "arch/isa/program_binary.hpp"
#include "arch/isa/program_text.hpp"
#include "common/config.hpp"
#include "e2e/pipeline_fixture.hpp"
#include "flow/map_workload.hpp"
#include "mapper/lowering.hpp"
#include "ops/workload.hpp"

namespace tessera {
namespace {

// What the programs of a workload hold, to check that a test covers the forms it names.
struct Seen {
  std::set<size_t> instruction_kinds;  // indices into arch::Operation
  bool im2col = false, block_diagonal = false, row_gather = false, values = false, rope_table = false;
  int programs = 0;
};

// Every program `tessera map --out` writes for `ops` on `machine` survives the binary form exactly.
Seen expect_binary_round_trips(const std::string& machine, const ops::Workload& ops) {
  const arch::ArchSpec spec = load_arch(machine);
  const std::string workload = ops.name;
  flow::MapSettings settings;
  settings.dataflows = spec.core.pe_array.dataflows;
  settings.top = 1;
  settings.threads = 2;
  settings.write_programs = true;
  Seen seen;
  for (const auto& [name, text] : flow::map_workload(ops, spec, settings).program_files) {
    const arch::Program program = arch::read_program(text, name);
    const std::string bytes = arch::write_program_binary(program);
    EXPECT_TRUE(arch::read_program_binary(bytes) == program) << workload << ": " << name;
    ++seen.programs;
    for (const arch::TensorDecl& tensor : program.tensors) {
      seen.im2col |= tensor.view_if<arch::Im2colView>() != nullptr;
      seen.block_diagonal |= tensor.view_if<arch::BlockDiagonalView>() != nullptr;
      seen.row_gather |= tensor.view_if<arch::RowGatherView>() != nullptr;
      seen.values |= tensor.fill_if<arch::ValuesFill>() != nullptr;
      seen.rope_table |= tensor.fill_if<arch::RopeTableFill>() != nullptr;
    }
    for (const arch::CoreProgram& core : program.cores)
      for (const arch::Instruction& instruction : core.instructions)
        seen.instruction_kinds.insert(instruction.operation.index());
  }
  EXPECT_GT(seen.programs, 0) << workload;
  return seen;
}
Seen expect_binary_round_trips(const std::string& machine, const std::string& shipped_workload) {
  return expect_binary_round_trips(
      machine, ops::workload_from_yaml(config::load_file(
                   std::string(TESSERA_SOURCE_DIR) + "/configs/workloads/" + shipped_workload + ".yaml")));
}
// Small ops of the shipped LLM workloads' kinds (those take tens of seconds to map).
Seen expect_binary_round_trips_of(const std::string& machine, const std::string& ops_yaml) {
  return expect_binary_round_trips(machine, ops::workload_from_yaml(config::load_text(
                                                "name: small\nseed: 3\nops:\n" + ops_yaml, "small.yaml")));
}

constexpr size_t kDmaLoad = 0, kDmaStore = 1, kPeMatmul = 2, kPeConv = 3, kPePost = 4, kNocSend = 5,
                 kVecOp = 6, kVecRope = 7, kVecRoute = 8;
static_assert(
    std::is_same_v<arch::Unboxed<std::variant_alternative_t<kVecRoute, arch::Operation>>, arch::VecRoute>);

TEST(ProgramBinary, GemmProgramsOfEveryDataflowReadBackExactly) {
  // WS, OS, IS and RS; k split over cores: partial sums sent over the NoC.
  const Seen seen = expect_binary_round_trips("mesh4x4", "gemm-256");
  for (size_t kind : {kDmaLoad, kDmaStore, kPeMatmul})
    EXPECT_TRUE(seen.instruction_kinds.count(kind)) << kind;
}

TEST(ProgramBinary, LoweredProgramReadsBackExactlyWithoutTheText) {
  // Straight from the lowering, semaphores numbered as it numbers them.
  const arch::ArchSpec spec = load_arch("mesh4x4");
  const ops::Op op = gemm_op(1024, 512, 256, DType::bf16);
  for (arch::Dataflow dataflow : {arch::Dataflow::ws, arch::Dataflow::os}) {
    const arch::Program program = mapper::lower(op, 1, best_mapping(op, spec, dataflow), spec, "gemm");
    EXPECT_TRUE(arch::read_program_binary(arch::write_program_binary(program)) == program)
        << arch::name_of(dataflow);
  }
}

TEST(ProgramBinary, ConvProgramsDirectAndImplicitReadBackExactly) {
  // AlexNet: im2col views, direct convs, pools on the vector unit.
  const Seen seen = expect_binary_round_trips("mesh4x4", "alexnet");
  EXPECT_TRUE(seen.im2col);
  EXPECT_TRUE(seen.instruction_kinds.count(kPeConv));
  // A depthwise conv: groups packed side by side in a block-diagonal W.
  EXPECT_TRUE(expect_binary_round_trips_of(
                  "mesh4x4",
                  "  - {name: dw, kind: conv2d, c: 64, h: 14, w: 14, k: 64, r: 3, s: 3, pad: 1, "
                  "groups: 64, dtype: bf16}\n")
                  .block_diagonal);
}

TEST(ProgramBinary, FusedEpilogueAndVectorProgramsReadBackExactly) {
  // Softmax, norms, elementwise ops and GEMMs with fused epilogues (bias + GELU, SwiGLU).
  const Seen seen = expect_binary_round_trips("mesh4x4", "transformer-vector");
  EXPECT_TRUE(seen.instruction_kinds.count(kVecOp));
  EXPECT_TRUE(seen.instruction_kinds.count(kPeMatmul));
}

TEST(ProgramBinary, AttentionProgramsFlashAndNaiveReadBackExactly) {
  const Seen seen = expect_binary_round_trips("mesh4x4", "bert-base-attn");
  EXPECT_TRUE(seen.instruction_kinds.count(kVecOp));
}

TEST(ProgramBinary, PagedDecodeAndRopeProgramsReadBackExactly) {
  // A paged KV cache read through its block table (llama3-8b-decode's kind of attention), and rope with its
  // table input.
  const Seen seen = expect_binary_round_trips_of(
      "mesh4x4",
      "  - {name: decode, kind: attention, batch: 3, heads: 8, kv_heads: 2, seq_q: 1, seq_kv: 140, head_dim: "
      "64, "
      "causal: true, dtype: bf16, kv_cache: {layout: paged, block_tokens: 16}}\n"
      "  - {name: r, kind: rope, batch: 2, seq: 8, heads: 2, head_dim: 16, rotary_dim: 8, position: 4, "
      "base: 10000, style: interleaved, dtype: bf16}\n");
  EXPECT_TRUE(seen.instruction_kinds.count(kVecRope));
  EXPECT_TRUE(seen.rope_table);
}

TEST(ProgramBinary, MoeProgramsReadBackExactly) {
  // Router, gathers of routed rows, listed expert indices, grouped GEMMs, the combine (qwen3-30b-a3b-moe's
  // kind of layer, smaller).
  const Seen seen = expect_binary_round_trips_of(
      "mesh4x4",
      "  - {name: experts, kind: moe, tokens: 64, hidden: 128, ffn: 64, experts: 8, top_k: 2, "
      "dtype: bf16}\n");
  EXPECT_TRUE(seen.instruction_kinds.count(kVecRoute));
  EXPECT_TRUE(seen.row_gather);
  EXPECT_TRUE(seen.values);
  EXPECT_TRUE(seen.instruction_kinds.count(kNocSend) || seen.instruction_kinds.count(kDmaStore));
}

}  // namespace
}  // namespace tessera
