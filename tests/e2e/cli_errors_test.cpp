// Bad input gives one clear message that names where (file:line:column, or the instruction) and what was
// expected, exits with status 2, and leaves no partial output behind.
#include <gtest/gtest.h>

#include "e2e/cli_helpers.hpp"
#include "e2e/run_tessera.hpp"

namespace tessera {

namespace {

// A small valid machine; tests break one thing in it.
const char* kMachine = R"(name: tiny
clock_ghz: 1.0
mesh: {rows: 1, cols: 2}
noc: {link_bytes_per_cycle: 64}
dram: {bandwidth_gbps: 128, channels: 2, latency_cycles: 100}
core:
  pe_array: {rows: 8, cols: 8}
  sram:
    kib: 64
    banks: 4
    bank_width_bytes: 32
  dma: {engines: 1, bytes_per_cycle: 32, setup_cycles: 8}
)";

const char* kWorkload = R"(name: small
seed: 1
ops:
  - {name: g, kind: gemm, m: 64, n: 48, k: 40, dtype: bf16}
)";

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

struct Failure {
  int exit_code;
  std::string output;
};

// Runs `tessera run` on the given machine and workload texts with --out, and checks that nothing was written.
Failure run_broken(const std::string& machine, const std::string& workload,
                   const std::vector<std::string>& extra = {}) {
  ScratchDir scratch;
  write_text(scratch.file("tiny.yaml"), machine);
  write_text(scratch.file("small.yaml"), workload);
  std::vector<std::string> arguments = {"run",
                                        "--arch",
                                        scratch.file("tiny.yaml"),
                                        "--workload",
                                        scratch.file("small.yaml"),
                                        "--out",
                                        scratch.file("out"),
                                        "--quiet"};
  arguments.insert(arguments.end(), extra.begin(), extra.end());
  const CommandResult result = run_tessera(arguments);
  if (result.exit_code != 0) {
    EXPECT_FALSE(exists(scratch.file("out"))) << "a failed run leaves no output folder";
  }
  // Messages name the file by the path it was given with; tests compare the name alone.
  std::string output = result.output;
  for (size_t at; (at = output.find(scratch.path() + "/")) != std::string::npos;)
    output.erase(at, scratch.path().size() + 1);
  return {result.exit_code, output};
}

void expect_error(const Failure& failure, const std::string& message) {
  EXPECT_EQ(failure.exit_code, 2) << failure.output;
  EXPECT_NE(failure.output.find(message), std::string::npos) << "expected:\n"
                                                             << message << "\ngot:\n"
                                                             << failure.output;
}

}  // namespace

TEST(CliErrors, TheValidInputsRun) {
  EXPECT_EQ(run_broken(kMachine, kWorkload).exit_code, 0);
}

TEST(CliErrors, AnAttentionInATypeTheArrayDoesNotComputeNamesTheMachinesDtypes) {
  // The tiny machine's array computes int8 only; an attention's GEMMs are bf16. Before, the program check
  // refused the lowered program without a location.
  expect_error(
      run_broken(
          replaced(kMachine, "pe_array: {rows: 8, cols: 8}",
                   "pe_array: {rows: 8, cols: 8, dtypes: [int8]}\n"
                   "  vector: {lanes: 8, special_per_cycle: 2, latency_cycles: 4}"),
          "name: small\nseed: 1\nops:\n  - {name: attn, kind: attention, batch: 1, heads: 2, kv_heads: 2, "
          "seq_q: 16, seq_kv: 16, head_dim: 8, dtype: bf16}\n",
          {"--timing-only"}),
      "error: tiny.yaml:7:40: core.pe_array.dtypes: no legal mapping for attn (attention b1 h2/2 q16 kv16 d8 "
      "bf16): the PE array does not compute in bf16\n  hint: core.pe_array.dtypes lists the types the array "
      "computes: use one of them, or another machine");
}

TEST(CliErrors, MissingFieldNamesItsMapAndTheKey) {
  expect_error(run_broken(replaced(kMachine, "clock_ghz: 1.0\n", ""), kWorkload),
               "error: tiny.yaml:1:1: clock_ghz: required field is missing\n  hint: add 'clock_ghz:' to the "
               "top level");
}

TEST(CliErrors, UnknownKeySuggestsTheRightOne) {
  expect_error(
      run_broken(replaced(kMachine, "banks: 4", "bnaks: 4"), kWorkload),
      "error: tiny.yaml:10:5: core.sram.bnaks: unknown key; did you mean 'banks'?\n  hint: 'banks' is "
      "required here");
}

TEST(CliErrors, MistypedValueSaysWhatWasExpected) {
  expect_error(run_broken(replaced(kMachine, "clock_ghz: 1.0", "clock_ghz: fast"), kWorkload),
               "error: tiny.yaml:2:12: clock_ghz: expected a number, got 'fast'");
}

TEST(CliErrors, ZeroAndNegativeSizesAreRejected) {
  expect_error(run_broken(kMachine, replaced(kWorkload, "m: 64", "m: 0")),
               "small.yaml:4:30: ops[0].m: expected a positive integer, got 0");
  expect_error(run_broken(kMachine, replaced(kWorkload, "k: 40", "k: -5")),
               "small.yaml:4:44: ops[0].k: expected a positive integer, got -5");
}

TEST(CliErrors, AMachineWithoutPesIsRejected) {
  expect_error(run_broken(replaced(kMachine, "rows: 8, cols: 8", "rows: 0, cols: 8"), kWorkload),
               "tiny.yaml:7:20: core.pe_array.rows: expected a positive integer, got 0");
}

TEST(CliErrors, SramTooSmallForAnyTileSaysWhatTheSmallestNeeds) {
  // One core with a 64x64 array in bf16: the smallest tile of this GEMM is 64x48x40 (all of m, n, k: each is
  // under one fold), A 5120 B + W 3840 B + O 12288 B = 21248 B = 20.8 KiB single-buffered; the core has 16
  // KiB. (The systolic dataflows: RS would map the GEMM as a 1x1 convolution in much smaller tiles.)
  const std::string machine =
      replaced(replaced(replaced(kMachine, "rows: 8, cols: 8", "rows: 64, cols: 64, dataflows: [ws, os, is]"),
                        "kib: 64", "kib: 16"),
               "mesh: {rows: 1, cols: 2}", "mesh: {rows: 1, cols: 1}");
  expect_error(
      run_broken(machine, kWorkload),
      "error: tiny.yaml:9:10: core.sram.kib: no legal mapping for g (gemm 64x48x40 bf16):\n  ws: the "
      "smallest tile (m=64 n=48 k=40, single-buffered) needs 20.8 KiB of SRAM, the core has 16 KiB");
}

TEST(CliErrors, OverriddenValuesAreBlamedOnTheSetArgument) {
  expect_error(run_broken(kMachine, kWorkload, {"--set", "core.sram.kib=zero"}),
               "error: --set core.sram.kib=zero: core.sram.kib: expected an integer, got 'zero'");
}

TEST(CliErrors, MalformedYamlNamesThePosition) {
  expect_error(
      run_broken(replaced(kMachine, "mesh: {rows: 1, cols: 2}", "mesh: {rows: 1, cols: 2"), kWorkload),
      "tiny.yaml:");
  expect_error(
      run_broken(replaced(kMachine, "mesh: {rows: 1, cols: 2}", "mesh: {rows: 1, cols: 2"), kWorkload),
      "malformed YAML");
}

TEST(CliErrors, MissingFileNamesThePath) {
  const CommandResult result = run_tessera({"run", "--arch", "/nonexistent/machine.yaml", "--quiet"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(
      result.output.find("error: /nonexistent/machine.yaml: cannot open file: No such file or directory"),
      std::string::npos)
      << result.output;
}

TEST(CliErrors, UnsupportedDataflowIsABadInput) {
  const CommandResult result =
      run_tessera({"run", "--arch", shipped("arch/tpu-v1.yaml"), "--dataflow", "os", "--quiet"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.output.find("machine 'tpu-v1' does not support dataflow os"), std::string::npos)
      << result.output;
}

TEST(CliErrors, UnknownCommandLineOptionIsABadInput) {
  EXPECT_EQ(run_tessera({"run", "--no-such-option"}).exit_code, 2);
}

// A hand-written tile program: core 0,0 waits for a semaphore that nothing signals.
TEST(CliErrors, ProgramWaitingOnASemaphoreNobodySignalsNamesTheInstruction) {
  ScratchDir scratch;
  write_text(scratch.file("tiny.yaml"), kMachine);
  write_text(scratch.file("stuck.tprog"), R"(tessera-program 1
name stuck
mesh 1x2
tensor A bf16 8x8 at 0x0 input seed=1 id=0

core 0,0
  dma0 load A[0:8, 0:8] -> 0x0 ; signal a_full[0]
  pe ws a=0x0 w=0x0 o=0x400 m=8 n=8 k=8 dtype=bf16 acc=0 ; wait a_full[0] w_full[0]
)");
  const CommandResult result = run_tessera({"sim", "--arch", scratch.file("tiny.yaml"), "--program",
                                            scratch.file("stuck.tprog"), "--out", scratch.file("out")});
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(
      result.output.find("stuck.tprog:8: core 0,0 pe #0: waits for w_full[0] of core 0,0, which the whole "
                         "program signals 0 times"),
      std::string::npos)
      << result.output;
  EXPECT_FALSE(exists(scratch.file("out")));
}

// Two units each wait for the other: every semaphore is signalled somewhere, but nothing can go first.
TEST(CliErrors, DeadlockNamesEveryWaitingUnit) {
  ScratchDir scratch;
  write_text(scratch.file("tiny.yaml"), kMachine);
  write_text(scratch.file("cycle.tprog"), R"(tessera-program 1
name cycle
mesh 1x2
tensor A bf16 8x8 at 0x0 input seed=1 id=0
tensor O fp32 8x8 at 0x1000 output

core 0,0
  dma0 load A[0:8, 0:8] -> 0x0 ; wait o_done[0] ; signal a_full[0]
  pe ws a=0x0 w=0x0 o=0x400 m=8 n=8 k=8 dtype=bf16 acc=0 ; wait a_full[0] ; signal o_done[0]
)");
  const CommandResult result =
      run_tessera({"sim", "--arch", scratch.file("tiny.yaml"), "--program", scratch.file("cycle.tprog")});
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("deadlock: work remains but no unit can make progress"), std::string::npos)
      << result.output;
  EXPECT_NE(result.output.find("core 0,0 dma0 #0 (" + scratch.file("cycle.tprog") +
                               ":8) waits for o_done[0] of core 0,0"),
            std::string::npos)
      << result.output;
  EXPECT_NE(result.output.find("core 0,0 pe #0 (" + scratch.file("cycle.tprog") + ":9) waits for a_full[0]"),
            std::string::npos)
      << result.output;
}

TEST(CliErrors, ProgramSyntaxErrorNamesLineAndColumn) {
  ScratchDir scratch;
  write_text(scratch.file("tiny.yaml"), kMachine);
  write_text(scratch.file("typo.tprog"),
             "tessera-program 1\nname typo\nmesh 1x2\n\ncore 0,0\n  dam0 load A[0:8, 0:8] -> 0x0\n");
  const CommandResult result =
      run_tessera({"sim", "--arch", scratch.file("tiny.yaml"), "--program", scratch.file("typo.tprog")});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.output.find("typo.tprog:6:3: core 0,0: unknown queue 'dam0'; did you mean 'dma0'?"),
            std::string::npos)
      << result.output;
}

}  // namespace tessera

namespace tessera {

// A convolution's shape errors are located like any other field, through the whole command.
TEST(CliErrors, ConvShapesThatCannotBeComputedAreLocated) {
  const std::string conv = R"(name: small
seed: 1
ops:
  - {name: c, kind: conv2d, c: 6, h: 9, w: 9, k: 8, r: 3, s: 3, pad: 1, groups: 2, dtype: bf16}
)";
  EXPECT_EQ(run_broken(kMachine, conv).exit_code, 0);
  expect_error(
      run_broken(kMachine, replaced(conv, "groups: 2", "groups: 4")),
      "error: small.yaml:4:81: ops[0].groups: 4 groups do not divide c = 6\n  hint: each group takes "
      "c/groups input channels; depthwise is groups = c");
  expect_error(run_broken(kMachine, replaced(replaced(conv, "groups: 2", "groups: 3"), "k: 8", "k: 7")),
               "small.yaml:4:81: ops[0].groups: 3 groups do not divide k = 7");
  expect_error(run_broken(kMachine, replaced(conv, "pad: 1", "pad: -1")),
               "small.yaml:4:70: ops[0].pad: expected an integer >= 0, got -1");
  expect_error(run_broken(kMachine, replaced(conv, "r: 3, s: 3, pad: 1", "r: 13, s: 3, pad: 1")),
               "ops[0].r: the 13x3 filter (dilation 1) spans 13x3, larger than the padded 11x11 input");
  expect_error(run_broken(kMachine, replaced(conv, "pad: 1", "pad: 1, stride: 0")),
               "ops[0].stride: expected a positive integer, got 0");
}

// Vector work (a pool here) on a machine without a vector unit is a located error naming the op and the
// missing key; with one, the pool runs on it and its output passes the CPU reference.
TEST(CliErrors, VectorWorkOnAMachineWithoutAVectorUnitNamesTheOpAndTheMissingKey) {
  const std::string workload = R"(name: small
seed: 1
ops:
  - {name: g, kind: gemm, m: 64, n: 48, k: 40, dtype: bf16}
  - {name: p, kind: pool, c: 8, h: 6, w: 6, r: 2, s: 2, stride: 2, mode: max, dtype: bf16}
)";
  const Failure result = run_broken(kMachine, workload);
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_EQ(
      result.output,
      "error: small.yaml:5:5: p: p (pool max 2x2/2 p0 on 1x6x6x8) is vector work, and machine tiny has no "
      "vector unit\n  hint: give the machine's cores one: core.vector: {lanes, special_per_cycle, "
      "latency_cycles} (docs/vector-unit.md)\n");
  const std::string with_vector =
      std::string(kMachine) + "  vector: {lanes: 8, special_per_cycle: 2, latency_cycles: 4}\n";
  ScratchDir scratch;
  write_text(scratch.file("tiny.yaml"), with_vector);
  write_text(scratch.file("small.yaml"), workload);
  const CommandResult run = run_tessera({"run", "--arch", scratch.file("tiny.yaml"), "--workload",
                                         scratch.file("small.yaml"), "--format", "json", "--quiet"});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto pool = nlohmann::json::parse(run.output)["ops"][1];
  EXPECT_FALSE(pool.contains("not_simulated"));
  EXPECT_EQ(pool["runs"][0]["dataflow"], "vec");
  EXPECT_TRUE(pool["runs"][0]["numerics"][0]["pass"].get<bool>());
}

}  // namespace tessera

namespace tessera {
namespace {
// A hand-written direct convolution (docs/tile-program.md, "conv"): 1x6x6x2 input, 3 filters of 3x3, pad 1.
const char* kHandConv = R"(tessera-program 1
name hand-conv
mesh 1x1
op conv2d c=2 dilation=1 dtype=bf16 groups=1 h=6 index=0 k=3 n=1 name=c pad=1 r=3 s=3 seed=9 stride=1 w=6
tensor X bf16 36x2 at 0x0 input seed=9 id=0
tensor W bf16 18x3 at 0x100000 input seed=9 id=1
tensor O fp32 36x3 at 0x200000 output

core 0,0
  dma0 load X[0:36, 0:2] -> 0x0 ; signal in
  dma0 load W[0:18, 0:3] -> 0x100 ; signal in
  pe conv rs a=0x0 w=0x100 o=0x200 e=6 q=6 m=3 c=2 ih=6 iw=6 r=3 s=3 pad_top=1 pad_left=1 dtype=bf16 acc=0 ; wait in*2 ; signal done
  dma0 store 0x200 -> O[0:36, 0:3] ; wait done
)";

CommandResult simulate(const std::string& machine_file, const std::string& program_text,
                       ScratchDir& scratch) {
  write_text(scratch.file("conv.tprog"), program_text);
  return run_tessera({"sim", "--arch", machine_file, "--program", scratch.file("conv.tprog"), "--quiet"});
}
}  // namespace

TEST(CliErrors, AHandWrittenRowStationaryConvRunsAndMatchesTheReference) {
  ScratchDir scratch;
  const CommandResult result = simulate(shipped("arch/eyeriss.yaml"), kHandConv, scratch);
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("numerics: all pass"), std::string::npos) << result.output;
}

TEST(CliErrors, RowStationaryRunsConvolutionsOnlyAndNeedsRoomForAFilterRow) {
  ScratchDir scratch;
  // A matmul cannot be row stationary.
  const std::string matmul = replaced(kHandConv,
                                      "pe conv rs a=0x0 w=0x100 o=0x200 e=6 q=6 m=3 c=2 ih=6 iw=6 r=3 s=3 "
                                      "pad_top=1 pad_left=1 dtype=bf16 acc=0",
                                      "pe rs a=0x0 w=0x100 o=0x200 m=36 n=3 k=2 dtype=bf16 acc=0");
  const CommandResult as_matmul = simulate(shipped("arch/eyeriss.yaml"), matmul, scratch);
  EXPECT_EQ(as_matmul.exit_code, 2) << as_matmul.output;
  EXPECT_NE(as_matmul.output.find("conv.tprog:12: core 0,0 pe #0: row stationary runs convolutions: a matmul "
                                  "takes ws, os or is"),
            std::string::npos)
      << as_matmul.output;
  // Scratchpads too small for a 3-wide filter row and input window.
  write_text(scratch.file("conv.tprog"), kHandConv);
  const CommandResult small_spad =
      run_tessera({"sim", "--arch", shipped("arch/eyeriss.yaml"), "--set", "core.pe_spad_bytes.ifmap=4",
                   "--program", scratch.file("conv.tprog"), "--quiet"});
  EXPECT_EQ(small_spad.exit_code, 2) << small_spad.output;
  EXPECT_NE(
      small_spad.output.find("conv.tprog:12: core 0,0 pe #0: row stationary keeps a filter row (3 weights) "
                             "and an input window (3 values) of bf16 per PE, and a partial sum in fp32: "
                             "the PE scratchpads hold 224 filter, 2 input and 24 partial-sum words"),
      std::string::npos)
      << small_spad.output;
  EXPECT_NE(small_spad.output.find("hint: give the PEs larger scratchpads (core.pe_spad_bytes)"),
            std::string::npos)
      << small_spad.output;
}

}  // namespace tessera

namespace tessera {

TEST(CliErrors, BadEpiloguesAreLocatedAndSayWhatIsAllowed) {
  auto op = [](const std::string& line) { return "name: small\nseed: 1\nops:\n  - " + line + "\n"; };
  const std::string with_vector =
      std::string(kMachine) + "  vector: {lanes: 8, special_per_cycle: 2, latency_cycles: 4}\n";
  EXPECT_EQ(
      run_broken(with_vector, op("{name: g, kind: gemm, m: 64, n: 48, k: 40, dtype: bf16, epilogue: [bias, "
                                 "gleu]}"))
          .output,
      "error: small.yaml:4:78: ops[0].epilogue[1]: 'gleu' is not one of bias, relu, gelu, gelu_tanh, silu, "
      "residual or swiglu; did you mean 'gelu'?\n  hint: names are case-sensitive; pick one of those "
      "listed\n");
  EXPECT_EQ(
      run_broken(with_vector,
                 op("{name: g, kind: gemm, m: 64, n: 48, k: 40, dtype: bf16, epilogue: [residual, "
                    "swiglu]}"))
          .output,
      "error: small.yaml:4:71: ops[0].epilogue: an epilogue reads one tile beside its output: residual or "
      "swiglu, not both\n  hint: add the residual in an op of its own (an elementwise add)\n");
  EXPECT_EQ(
      run_broken(with_vector, op("{name: p, kind: pool, c: 8, h: 6, w: 6, r: 2, s: 2, stride: 2, mode: max, "
                                 "dtype: bf16, epilogue: [relu]}"))
          .output,
      "error: small.yaml:4:102: ops[0].epilogue: a pool takes no epilogue: gemm, fc and conv2d do\n  hint: "
      "write the step as an op of its own: kind: elementwise, fn: relu (or gelu, silu, add, ...)\n");
  EXPECT_EQ(
      run_broken(with_vector, op("{name: g, kind: gemm, m: 64, n: 48, k: 40, dtype: int8, epilogue: [relu]}"))
          .output,
      "error: small.yaml:4:71: ops[0].epilogue: an int8 contraction's int32 output takes no epilogue\n  "
      "hint: the "
      "vector unit computes in floating point: use bf16, fp16 or fp32 operands\n");
  EXPECT_EQ(
      run_broken(with_vector, op("{name: g, kind: gemm, m: 64, n: 48, k: 40, dtype: bf16, epilogue: [relu, "
                                 "relu]}"))
          .output,
      "error: small.yaml:4:78: ops[0].epilogue[1]: 'relu' is listed twice\n  hint: list each name once\n");
  const Failure no_unit = run_broken(
      kMachine, op("{name: g, kind: gemm, m: 64, n: 48, k: 40, dtype: bf16, epilogue: [bias, gelu]}"));
  EXPECT_EQ(no_unit.exit_code, 2);
  EXPECT_EQ(no_unit.output,
            "error: small.yaml:4:5: g: g (gemm 64x48x40 +bias+gelu) has an epilogue (bias+gelu), and machine "
            "tiny has "
            "no vector unit to run it\n  hint: give the machine's cores one: core.vector: {lanes, "
            "special_per_cycle, "
            "latency_cycles} (docs/vector-unit.md), or drop the epilogue\n");
  // An output type narrower than the accumulator's is rounded on the vector unit too.
  EXPECT_EQ(
      run_broken(kMachine, op("{name: g, kind: gemm, m: 64, n: 48, k: 40, dtype: bf16, out: bf16}")).output,
      "error: small.yaml:4:5: g: g (gemm 64x48x40 ->bf16) stores its output as bf16 (out), rounded on the "
      "vector unit, and machine tiny has none\n  hint: give the machine's cores one: core.vector: {lanes, "
      "special_per_cycle, latency_cycles} (docs/vector-unit.md), or drop `out` (the output then stays in the "
      "accumulator type)\n");
}

}  // namespace tessera

namespace tessera {

// Attention's bad inputs (issue "Attention"): each a located message at the offending value and exit 2,
// nothing run.
TEST(CliErrors, AttentionBadInputsAreLocatedErrors) {
  const std::string machine =
      replaced(kMachine, "  dma: {engines: 1, bytes_per_cycle: 32, setup_cycles: 8}\n",
               "  dma: {engines: 1, bytes_per_cycle: 32, setup_cycles: 8}\n"
               "  vector: {lanes: 8, special_per_cycle: 2, latency_cycles: 4}\n");
  const std::string good =
      "name: small\nseed: 1\nops:\n  - {name: a, kind: attention, heads: 4, kv_heads: 2, seq_q: 8, seq_kv: "
      "20, "
      "head_dim: 16, causal: true, dtype: bf16, kv_cache: {layout: paged, block_tokens: 8}}\n";
  EXPECT_EQ(run_broken(machine, good).exit_code, 0);
  expect_error(run_broken(machine, replaced(good, "head_dim: 16", "head_dim: 0")),
               "error: small.yaml:4:87: ops[0].head_dim: expected a positive integer, got 0");
  expect_error(run_broken(machine, replaced(good, "block_tokens: 8", "block_tokens: 0")),
               "error: small.yaml:4:158: ops[0].kv_cache.block_tokens: expected a positive integer, got 0");
  expect_error(run_broken(machine, replaced(good, "kv_heads: 2", "kv_heads: 3")),
               "error: small.yaml:4:52: ops[0].kv_heads: 4 query heads cannot share 3 kv heads evenly");
  expect_error(
      run_broken(machine, replaced(good, "seq_q: 8", "seq_q: 21")),
      "error: small.yaml:4:62: ops[0].seq_q: a causal attention of 21 queries over 20 keys leaves its "
      "first queries no key");
  // The paged pool: more blocks than the sequences use is a bigger cache; fewer cannot hold seq_kv.
  EXPECT_EQ(run_broken(machine, replaced(good, "block_tokens: 8}", "block_tokens: 8, blocks: 9}")).exit_code,
            0);
  expect_error(run_broken(machine, replaced(good, "block_tokens: 8}", "block_tokens: 8, blocks: 2}")),
               "error: small.yaml:4:169: ops[0].kv_cache.blocks: a pool of 2 blocks of 8 tokens cannot hold "
               "batch x seq_kv = 1 x 20 tokens: it takes 3 blocks\n  hint: give the cache at least 3 blocks "
               "(batch x ceil(seq_kv / block_tokens)), or shorten seq_kv");
  expect_error(
      run_broken(machine, replaced(replaced(good, "layout: paged, ", ""), "block_tokens: 8}", "blocks: 9}")),
      "error: small.yaml:4:137: ops[0].kv_cache.blocks: blocks: 9 sizes a paged pool; this cache is "
      "contiguous\n  hint: add layout: paged, or leave blocks out");
}

// A rope's bad fields, each located at its value with what is expected (exit 2, no output left behind).
TEST(CliErrors, RopeBadInputsAreLocatedErrors) {
  const std::string machine =
      replaced(kMachine, "  dma: {engines: 1, bytes_per_cycle: 32, setup_cycles: 8}\n",
               "  dma: {engines: 1, bytes_per_cycle: 32, setup_cycles: 8}\n"
               "  vector: {lanes: 8, special_per_cycle: 2, latency_cycles: 4}\n");
  const std::string good =
      "name: small\nseed: 1\nops:\n  - {name: r, kind: rope, batch: 2, seq: 8, heads: 2, head_dim: 16, "
      "rotary_dim: 8, position: 4, base: 10000, style: interleaved, dtype: bf16}\n";
  EXPECT_EQ(run_broken(machine, good).exit_code, 0);
  expect_error(
      run_broken(machine, replaced(good, "head_dim: 16", "head_dim: 15")),
      "error: small.yaml:4:65: ops[0].head_dim: head_dim must be even (the rotation takes pairs), got "
      "15\n  hint: heads of rotary embeddings have an even size: 64, 128");
  expect_error(
      run_broken(machine, replaced(good, "rotary_dim: 8", "rotary_dim: 7")),
      "error: small.yaml:4:81: ops[0].rotary_dim: rotary_dim must be even and at most head_dim (16), "
      "got 7\n  hint: leave it out to rotate the whole head; GPT-NeoX rotates head_dim/4");
  expect_error(
      run_broken(machine, replaced(good, "rotary_dim: 8", "rotary_dim: 18")),
      "error: small.yaml:4:81: ops[0].rotary_dim: rotary_dim must be even and at most head_dim (16), "
      "got 18");
  expect_error(run_broken(machine, replaced(good, "base: 10000", "base: 0.5")),
               "error: small.yaml:4:103: ops[0].base: base must be a number greater than 1, got 0.5\n  hint: "
               "theta is 10000 for Llama-2, 500000 for Llama-3");
  expect_error(run_broken(machine, replaced(good, "position: 4", "position: -4")),
               "error: small.yaml:4:94: ops[0].position: expected an integer >= 0, got -4");
  expect_error(
      run_broken(machine, replaced(good, "batch: 2, seq: 8", "batch: 1048576, seq: 1048576")),
      "error: small.yaml:4:48: ops[0].seq: X has more than 2^40 elements\n  hint: model fewer tokens, "
      "heads or sequences");
  expect_error(run_broken(machine, replaced(good, "position: 4", "position: 2000000000000")),
               "error: small.yaml:4:94: ops[0].position: positions past 2^40 are not modelled, got "
               "2000000000000 + 8 tokens");
  expect_error(run_broken(machine, replaced(good, "style: interleaved", "style: neox")),
               "error: small.yaml:4:117: ops[0].style: 'neox' is not one of half or interleaved");
}

}  // namespace tessera

namespace tessera {

// A core too small for the smallest flash blocks, 16 rows and 16 keys at head_dim 512 in bf16: Q 16 KiB, two
// K and two V tiles 64 KiB, two S (fp32) and two P tiles 3 KiB, the fp32 accumulator 32 KiB, the output block
// 16 KiB, the statistics 192 B: 134,336 B, 132 KiB rounded up. The SRAM key, located, with what they need.
TEST(CliErrors, AnAttentionTooLargeForTheSramSaysWhatTheSmallestBlocksNeed) {
  const std::string machine =
      replaced(kMachine, "  dma: {engines: 1, bytes_per_cycle: 32, setup_cycles: 8}\n",
               "  dma: {engines: 1, bytes_per_cycle: 32, setup_cycles: 8}\n"
               "  vector: {lanes: 8, special_per_cycle: 2, latency_cycles: 4}\n");
  const std::string workload =
      "name: small\nseed: 1\nops:\n  - {name: a, kind: attention, heads: 2, kv_heads: 2, seq_q: 16, seq_kv: "
      "16, "
      "head_dim: 512, dtype: bf16}\n";
  expect_error(
      run_broken(machine, workload),
      "error: tiny.yaml:9:10: core.sram.kib: no legal mapping for a (attention b1 h2/2 q16 kv16 d512 "
      "bf16): the smallest flash blocks need 132 KiB of SRAM, the core has 64 KiB\n  hint: give the core "
      "more SRAM (core.sram.kib)");
}

}  // namespace tessera

namespace tessera {

// A moe op on a machine without a vector unit (its routing, activations and combine run there) is reported
// as not simulated, with the reason, and the run goes on; a bad moe field is a located error, exit 2, at the
// command line as in the workload reader's own tests (tests/ops/moe_test.cpp has every one).
TEST(CliErrors, AMoeOpWithoutAVectorUnitIsNotSimulatedAndItsBadFieldsAreLocated) {
  const std::string workload =
      "name: small\nseed: 1\nops:\n  - {name: g, kind: gemm, m: 64, n: 48, k: 40, dtype: bf16}\n"
      "  - {name: experts, kind: moe, tokens: 16, hidden: 32, ffn: 16, experts: 4, top_k: 2, dtype: bf16, "
      "routing: {counts: [16, 8, 4, 4]}}\n";
  ScratchDir scratch;
  write_text(scratch.file("tiny.yaml"), kMachine);
  write_text(scratch.file("small.yaml"), workload);
  const CommandResult table = run_tessera(
      {"run", "--arch", scratch.file("tiny.yaml"), "--workload", scratch.file("small.yaml"), "--quiet"});
  EXPECT_EQ(table.exit_code, 0) << table.output;
  EXPECT_NE(
      table.output.find("not simulated: the machine model has no vector unit for its routing, activations "
                        "and combine (core.vector): this moe op is not lowered or timed"),
      std::string::npos)
      << table.output;
  expect_error(run_broken(kMachine, replaced(workload, "top_k: 2", "top_k: 0")),
               "small.yaml:5:84: ops[1].top_k: expected a positive integer, got 0");
  expect_error(run_broken(kMachine, replaced(workload, "experts: 4", "experts: 0")),
               "small.yaml:5:74: ops[1].experts: expected a positive integer, got 0");
}

}  // namespace tessera

namespace tessera {

TEST(CliErrors, HelpShowsEachOptionsDefault) {
  // Before: --format, --dataflow, --simulate-top, --threads and map's --top showed no default.
  const CommandResult run = run_tessera({"run", "--help"});
  EXPECT_EQ(run.exit_code, 0);
  for (const char* shown :
       {"--format TEXT:{table,json}=table", "--dataflow TEXT:{ws,os,is,rs,all}=all",
        "--simulate-top INT:INT in [1 - 64]=3", "--objective TEXT:{cycles,energy,edp,dram}=cycles",
        "(default: this machine's cores)"})
    EXPECT_NE(run.output.find(shown), std::string::npos) << shown << "\n" << run.output;
  EXPECT_NE(run_tessera({"map", "--help"}).output.find("--top INT:POSITIVE=10"), std::string::npos);
}

TEST(CliErrors, AFolderGivenForAFileSaysSo) {
  // Before: a folder as --arch said "name: required field is missing", as --program "the file is empty".
  const CommandResult arch = run_tessera({"validate", shipped("arch")});
  EXPECT_EQ(arch.exit_code, 2);
  EXPECT_NE(arch.output.find("arch: is a folder, not a YAML file\n  hint: name a file in it"),
            std::string::npos)
      << arch.output;
  const CommandResult workload = run_tessera({"run", "--workload", shipped("workloads"), "--timing-only"});
  EXPECT_EQ(workload.exit_code, 2);
  EXPECT_NE(workload.output.find("workloads: is a folder, not a YAML file"), std::string::npos)
      << workload.output;
  const CommandResult program = run_tessera({"sim", "--program", shipped("arch"), "--timing-only"});
  EXPECT_EQ(program.exit_code, 2);
  EXPECT_NE(program.output.find("arch: is a folder, not a tile program\n  hint: name a *.tprog file in it"),
            std::string::npos)
      << program.output;
}

TEST(CliErrors, AnUnwritableStandardOutputFailsTheCommand) {
  // Before: `tessera validate ... > /dev/full` lost its output and exited 0.
  const CommandResult result =
      run_command(std::string("(SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 ") + TESSERA_BINARY + " validate " +
                  shipped("arch/default.yaml") + " > /dev/full)");
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("error: cannot write to standard output: No space left on device"),
            std::string::npos)
      << result.output;
}

TEST(CliErrors, SimulateTopOutOfRangeSaysTheRange) {
  // Before: --simulate-top 1000000 simulated every candidate of every row, silently, for minutes.
  for (const char* top : {"0", "65", "1000000"}) {
    const CommandResult result = run_tessera({"run", "--simulate-top", top, "--timing-only"});
    EXPECT_EQ(result.exit_code, 2) << top;
    EXPECT_NE(result.output.find(std::string("--simulate-top: Value ") + top + " not in range 1 to 64"),
              std::string::npos)
        << result.output;
  }
}

TEST(CliErrors, ThreadsOutOfRangeSayTheRange) {
  // Before: --threads 0 printed a 300-digit upper bound, and any count was taken.
  for (const char* threads : {"0", "1025", "50000"}) {
    const CommandResult result = run_tessera({"run", "--threads", threads, "--timing-only"});
    EXPECT_EQ(result.exit_code, 2) << threads;
    EXPECT_NE(result.output.find(std::string("--threads: Value ") + threads + " not in range 1 to 1024"),
              std::string::npos)
        << result.output;
  }
}

}  // namespace tessera
