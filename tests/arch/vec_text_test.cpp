// The vec instruction's text form (docs/tile-program.md, "vec"): every kind reads and writes back
// canonically, with its options; a bad option is a located error that says what the kind takes; the checker
// refuses what the machine's vector unit or SRAM cannot run.
#include <gtest/gtest.h>

#include "arch/isa/program_check.hpp"
#include "arch/isa/program_text.hpp"
#include "common/config.hpp"

namespace tessera::arch {
namespace {

const std::string kHeader =
    "tessera-program 1\n"
    "name v\n"
    "mesh 1x1\n"
    "core 0,0\n";

// Canonical lines of every kind (the writer's spelling: addresses in hex, defaults left out).
const std::vector<std::string> kLines = {
    "  vec map x=0x0 b=0x400 o=0x800 rows=4 cols=64 dtype=bf16 fn=bias+gelu",
    "  vec map x=0x0 y=0x400 b=0x1000 o=0x800 rows=4 cols=64 dtype=fp32 fn=bias+add+relu",
    "  vec map x=0x0 y=0x400 o=0x800 rows=4 cols=64 dtype=fp32 out=bf16 y_pitch=512 fn=swiglu",
    "  vec map x=0x0 o=0x800 rows=4 cols=64 dtype=fp16 o_pitch=256 fn=relu+silu+gelu_tanh",
    "  vec reduce_sum x=0x0 o=0x800 rows=4 cols=64 dtype=fp32",
    "  vec reduce_max x=0x0 o=0x800 rows=4 cols=64 dtype=fp32 x_pitch=512",
    "  vec softmax x=0x0 o=0x800 rows=16 cols=64 dtype=bf16 scale=0.125 causal_shift=-3",
    "  vec layernorm x=0x0 g=0x4000 b=0x4100 o=0x800 rows=16 cols=64 dtype=bf16 eps=1e-05",
    "  vec rmsnorm x=0x0 g=0x4000 o=0x800 rows=16 cols=64 dtype=bf16 eps=1e-06",
    "  vec layernorm x=0x0 y=0x2000 g=0x4000 b=0x4100 o=0x800 rows=16 cols=64 dtype=bf16 eps=1e-05 fn=add",
    "  vec rmsnorm x=0x0 y=0x2000 g=0x4000 o=0x800 rows=16 cols=64 dtype=fp16 y_pitch=256 eps=1e-06 fn=add",
    "  vec online_softmax x=0x0 g=0x4000 o=0x800 rows=16 cols=64 dtype=fp32 out=bf16 scale=0.125 "
    "causal_shift=2 first=yes",
    "  vec online_softmax x=0x0 g=0x4000 o=0x800 rows=16 cols=64 dtype=fp32 out=bf16",
    "  vec scale_rows x=0x0 g=0x4000 o=0x0 rows=16 cols=128 dtype=fp32 by=alpha",
    "  vec scale_rows x=0x0 g=0x4000 o=0x2000 rows=16 cols=128 dtype=fp32 out=bf16 by=inverse_sum",
    "  vec merge_partials x=0x0 g=0x4000 o=0x2000 rows=4 cols=128 dtype=fp32 out=bf16 parts=8",
    "  vec map x=0x0 o=0x800 rows=4 cols=64 dtype=fp32 out=bf16 fn=scale scale=0.125",
    "  vec pool x=0x0 o=0x8000 cols=16 dtype=bf16 out=fp32 ih=5 iw=11 e=3 q=6 r=3 s=3 stride=2 pad_top=1 "
    "pad_left=1 mode=max",
};

Program read(const std::string& text) {
  return read_program(text, "v.tprog");
}

std::string error_of(const std::string& line) {
  try {
    read(kHeader + line + "\n");
  } catch (const InputError& error) {
    return error.what();
  }
  return "no error";
}

ArchSpec machine(bool with_vector) {
  std::string text =
      "name m\nclock_ghz: 1.0\nmesh: {rows: 1, cols: 1}\nnoc: {link_bytes_per_cycle: 64}\n"
      "dram: {bandwidth_gbps: 256, channels: 4, latency_cycles: 100}\ncore:\n  pe_array: {rows: 8, cols: 8}\n"
      "  sram: {kib: 64, banks: 4, bank_width_bytes: 32}\n  dma: {engines: 1, bytes_per_cycle: 32, "
      "setup_cycles: 8}\n";
  text.replace(0, 6, "name: m");
  if (with_vector) text += "  vector: {lanes: 16, special_per_cycle: 4, latency_cycles: 6}\n";
  return arch_from_yaml(config::load_text(text, "m.yaml"));
}

std::string check_error(const std::string& line, bool with_vector = true) {
  try {
    check_program(read(kHeader + line + "\n"), machine(with_vector));
  } catch (const InputError& error) {
    return error.what();
  }
  return "no error";
}

}  // namespace

TEST(VecText, EveryKindReadsAndWritesBackCanonically) {
  for (const std::string& line : kLines) {
    const std::string text = kHeader + line + "\n";
    const Program program = read(text);
    ASSERT_EQ(program.cores.size(), 1u);
    ASSERT_EQ(program.cores[0].instructions.size(), 1u);
    EXPECT_EQ(program.cores[0].instructions[0].queue, (QueueId{QueueKind::vec, 0}));
    EXPECT_EQ(write_program(program), "tessera-program 1\nname v\nmesh 1x1\n\ncore 0,0\n" + line + "\n")
        << line;
  }
  const VecOp pool = std::get<VecOp>(read(kHeader + kLines.back() + "\n").cores[0].instructions[0].operation);
  EXPECT_EQ(pool.rows, 18);  // e * q
  EXPECT_EQ(pool.out_dtype, DType::fp32);
  EXPECT_TRUE(!pool.average);
  const VecOp softmax = std::get<VecOp>(read(kHeader + kLines[6] + "\n").cores[0].instructions[0].operation);
  EXPECT_EQ(softmax.causal_shift, -3);
  EXPECT_EQ(softmax.scale, 0.125);
  const VecOp online = std::get<VecOp>(read(kHeader + kLines[11] + "\n").cores[0].instructions[0].operation);
  EXPECT_TRUE(online.first);
  EXPECT_EQ(online.causal_shift, 2);
  EXPECT_EQ(online.g_address, 0x4000u);
  const VecOp last = std::get<VecOp>(read(kHeader + kLines[14] + "\n").cores[0].instructions[0].operation);
  EXPECT_TRUE(last.by_inverse_sum);
  const VecOp merge = std::get<VecOp>(read(kHeader + kLines[15] + "\n").cores[0].instructions[0].operation);
  EXPECT_EQ(merge.kind, VectorKind::merge_partials);
  EXPECT_EQ(merge.parts, 8);
  EXPECT_EQ(merge.x_rows(), 32);
  EXPECT_EQ(merge.statistics_rows(), 32);
  // The parts' statistics must fit in SRAM: 8 parts x 4 rows x 12 B = 384 B at the last 300 B of the 64 KiB;
  // a merge needs its parts.
  EXPECT_EQ(
      check_error("  vec merge_partials x=0x0 g=0xfed4 o=0x2000 rows=4 cols=128 dtype=fp32 parts=8"),
      "v.tprog:5: core 0,0 vec #0: running statistics g: SRAM bytes 0xfed4..0x10054 run past the end of "
      "the 64 KiB SRAM (0x10000)\n  hint: addresses are per core and start at 0");
  EXPECT_NE(
      error_of("  vec merge_partials x=0x0 g=0x4000 o=0x2000 rows=4 cols=128 dtype=fp32").find("parts="),
      std::string::npos);
  EXPECT_NE(check_error("  vec merge_partials x=0x0 g=0x4000 o=0x2000 rows=4 cols=128 dtype=fp32 parts=5000")
                .find("merge_parts must be in [1, 4096]"),
            std::string::npos);
  EXPECT_EQ(error_of("  vec scale_rows x=0x0 g=0x4000 o=0x0 rows=16 cols=128 dtype=fp32 by=beta"),
            "v.tprog:5:70: core 0,0 vec #0: 'beta' is not one of alpha or inverse_sum");
  // The running statistics must fit in SRAM: 16 rows x 12 B at the last 100 B of the 64 KiB.
  EXPECT_EQ(
      check_error("  vec online_softmax x=0x0 g=0xff9c o=0x800 rows=16 cols=64 dtype=fp32 out=bf16"),
      "v.tprog:5: core 0,0 vec #0: running statistics g: SRAM bytes 0xff9c..0x1005c run past the end of "
      "the 64 KiB SRAM (0x10000)\n  hint: addresses are per core and start at 0");
}

TEST(VecText, BadOptionsAreLocatedErrorsThatSayWhatTheKindTakes) {
  EXPECT_EQ(
      error_of("  vec softmax x=0x0 o=0x800 rows=16 cols=64 dtype=bf16 fn=relu"),
      "v.tprog:5:56: core 0,0 vec #0: vec softmax takes no fn=\n  hint: a vector instruction is written: "
      "map|reduce_sum|reduce_max|softmax|layernorm|rmsnorm x=ADDR o=ADDR rows=R cols=C dtype=DT [out=DT] "
      "[x_pitch=B] [o_pitch=B], then map: fn=F[+F...] [y=ADDR] [y_pitch=B] [b=ADDR] [scale=S]; softmax: "
      "[scale=S] "
      "[causal_shift=N]; layernorm: g=ADDR b=ADDR eps=E [fn=add y=ADDR [y_pitch=B]]; rmsnorm: g=ADDR eps=E "
      "[fn=add y=ADDR [y_pitch=B]]; or pool x=ADDR o=ADDR "
      "cols=C dtype=DT ih=H iw=W e=E q=Q r=R s=S [stride=N] [pad_top=N] [pad_left=N] mode=max|avg; or "
      "online_softmax x=ADDR o=ADDR g=ADDR rows=R cols=C dtype=DT [out=DT] [scale=S] [causal_shift=N] "
      "[first=yes]; or scale_rows x=ADDR o=ADDR g=ADDR rows=R cols=C dtype=DT [out=DT] by=alpha|inverse_sum; "
      "or merge_partials x=ADDR o=ADDR g=ADDR rows=R cols=C dtype=DT [out=DT] [x_pitch=B] parts=N; or "
      "weighted_sum x=ADDR g=ADDR o=ADDR rows=R cols=C parts=P dtype=DT [out=DT] [y=ADDR] [x_pitch=B] "
      "[o_pitch=B] [y_pitch=B]");
  // A norm of X + Y names both options; fn= is add and nothing else.
  const std::string together =
      error_of("  vec rmsnorm x=0x0 g=0x4000 o=0x800 rows=16 cols=64 dtype=bf16 eps=1e-6 fn=add");
  EXPECT_EQ(
      together.substr(0, together.find('\n')),
      "v.tprog:5:7: core 0,0 vec #0: vec rmsnorm takes fn=add and y=ADDR together (the tile at y added to X "
      "before normalising)");
  EXPECT_EQ(check_error("  vec layernorm x=0x0 y=0x2000 g=0x4000 b=0x4100 o=0x800 rows=16 cols=64 dtype=bf16 "
                        "eps=1e-5 fn=relu"),
            "v.tprog:5: core 0,0 vec #0: a layernorm's fn= is add (the tile at y added to X before "
            "normalising), nothing else");
  EXPECT_EQ(
      error_of("  vec map x=0x0 o=0x800 rows=4 cols=64 dtype=bf16 fn=bias+gleu"),
      "v.tprog:5:59: core 0,0 vec #0: 'gleu' is not one of add, mul, bias, relu, gelu, gelu_tanh, silu, "
      "swiglu or scale; did you mean 'gelu'?");
  EXPECT_EQ(
      error_of("  vec layernorm x=0x0 g=0x4000 b=0x4100 o=0x800 rows=16 cols=64 dtype=bf16 eps=1e-5x"),
      "v.tprog:5:80: core 0,0 vec #0: malformed number '1e-5x' for eps\n  hint: write it as 0.125 or 1e-05");
  EXPECT_NE(error_of("  vec rmsnorm x=0x0 o=0x800 rows=16 cols=64 dtype=bf16 eps=1e-6").find("g="),
            std::string::npos);  // a required option missing names it
  EXPECT_NE(error_of("  vec blur x=0x0").find("blur"), std::string::npos);
}

TEST(VecText, TheCheckerRefusesWhatTheMachineCannotRun) {
  EXPECT_EQ(
      check_error(kLines[0], /*with_vector=*/false),
      "v.tprog:5: core 0,0 vec #0: the machine has no vector unit\n  hint: give its cores one: core.vector "
      "(docs/vector-unit.md)");
  EXPECT_EQ(
      check_error("  vec map x=0x0 y=0x400 o=0x800 rows=4 cols=64 dtype=bf16 fn=add+mul"),
      "v.tprog:5: core 0,0 vec #0: a chain reads y in at most one step\n  hint: split the chain into two "
      "vec map instructions");
  EXPECT_EQ(
      check_error("  vec map x=0x0 b=0x400 o=0x800 rows=4 cols=64 dtype=bf16 fn=bias+relu+bias"),
      "v.tprog:5: core 0,0 vec #0: a chain adds the bias row at b in at most one step\n  hint: split the "
      "chain into two vec map instructions");
  EXPECT_EQ(check_error("  vec map x=0x0 o=0x800 rows=4 cols=64 dtype=fp32 out=bf16 fn=relu scale=0.5"),
            "v.tprog:5: core 0,0 vec #0: scale=0.5 has no scale step to apply it\n  hint: add scale to fn=");
  EXPECT_EQ(check_error("  vec rmsnorm x=0x0 g=0x4000 o=0x800 rows=16 cols=64 dtype=int8 eps=1e-06"),
            "v.tprog:5: core 0,0 vec #0: a vector instruction reads and stores fp32, bf16 or fp16, not int8");
  EXPECT_NE(check_error("  vec softmax x=0xff00 o=0x800 rows=16 cols=64 dtype=fp32").find("run past the end"),
            std::string::npos);
  EXPECT_NE(check_error("  vec pool x=0x0 o=0x8000 cols=16 dtype=bf16 ih=2 iw=11 e=3 q=6 r=3 s=3 stride=2 "
                        "mode=max")
                .find("windows outside the 2x11 input tile"),
            std::string::npos);
  EXPECT_EQ(check_error(kLines[0]), "no error");
}

// vec rope: its own instruction kind on the vec queue, with the table rows at y (fp32, rotary_dim a row).
TEST(VecText, ARopeReadsAndWritesBackCanonically) {
  for (const std::string line :
       {"  vec rope x=0x0 y=0x2000 o=0x4000 rows=8 cols=256 dtype=bf16 head_dim=128 rotary_dim=128 "
        "style=half",
        "  vec rope x=0x0 y=0x2000 o=0x4000 rows=8 cols=128 dtype=fp32 head_dim=64 rotary_dim=16 "
        "style=interleaved x_pitch=1024 y_pitch=128"}) {
    const Program program = read(kHeader + line + "\n");
    ASSERT_EQ(program.cores[0].instructions.size(), 1u);
    EXPECT_EQ(program.cores[0].instructions[0].queue, (QueueId{QueueKind::vec, 0}));
    EXPECT_EQ(write_program(program), "tessera-program 1\nname v\nmesh 1x1\n\ncore 0,0\n" + line + "\n");
    EXPECT_EQ(read(write_program(program)), program);
    EXPECT_EQ(check_error(line), "no error");
  }
  const VecRope rope = std::get<VecRope>(
      read(kHeader +
           "  vec rope x=0x0 y=0x2000 o=0x4000 rows=8 cols=128 dtype=fp32 head_dim=64 rotary_dim=16 "
           "style=interleaved\n")
          .cores[0]
          .instructions[0]
          .operation);
  EXPECT_TRUE(rope.interleaved);
  EXPECT_EQ(rope.work().rope_rotated_cols, 32);  // 2 heads of 16 rotated columns
}

TEST(VecText, ABadRopeIsALocatedErrorOrRefusedByTheChecker) {
  EXPECT_EQ(error_of("  vec rope x=0x0 y=0x2000 o=0x4000 rows=8 cols=256 dtype=bf16 head_dim=128 "
                     "rotary_dim=128 style=halves"),
            "v.tprog:5:97: core 0,0 vec #0: 'halves' is not one of half or interleaved");
  const std::string missing =
      error_of("  vec rope x=0x0 o=0x4000 rows=8 cols=256 dtype=bf16 head_dim=128 rotary_dim=128 style=half");
  EXPECT_NE(missing.find("y="), std::string::npos) << missing;
  EXPECT_EQ(
      check_error("  vec rope x=0x0 y=0x2000 o=0x4000 rows=8 cols=200 dtype=bf16 head_dim=128 "
                  "rotary_dim=128 style=half"),
      "v.tprog:5: core 0,0 vec #0: cols 200 is not a whole number of heads of head_dim 128\n  hint: a row "
      "of X is heads * head_dim columns");
  EXPECT_EQ(check_error("  vec rope x=0x0 y=0x2000 o=0x4000 rows=8 cols=256 dtype=bf16 head_dim=128 "
                        "rotary_dim=33 style=half"),
            "v.tprog:5: core 0,0 vec #0: rotary_dim must be even and at most head_dim (128), got 33\n  hint: "
            "the rotation takes pairs of each head's first rotary_dim columns");
  // 8 rows x 128 fp32 table words from 0xf800 run past the 64 KiB SRAM
  EXPECT_NE(check_error("  vec rope x=0x0 y=0xf800 o=0x4000 rows=8 cols=256 dtype=bf16 head_dim=128 "
                        "rotary_dim=128 style=half")
                .find("table rows y: SRAM bytes 0xf800..0x10800 run past the end"),
            std::string::npos);
  EXPECT_EQ(check_error("  vec rope x=0x0 y=0x2000 o=0x4000 rows=8 cols=256 dtype=bf16 head_dim=128 "
                        "rotary_dim=128 style=half",
                        /*with_vector=*/false)
                .substr(0, 55),
            "v.tprog:5: core 0,0 vec #0: the machine has no vector u");
}

}  // namespace tessera::arch
