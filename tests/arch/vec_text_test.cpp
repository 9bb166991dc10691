// The vec instruction's text form (docs/tile-program.md, "vec"): every kind reads and writes back
// canonically, with its options; a bad option is a located error that says what the kind takes; the checker
// refuses what the machine's vector unit or SRAM cannot run.
#include <gtest/gtest.h>

#include "arch/isa/program_check.hpp"
#include "arch/isa/program_text.hpp"
#include "common/config.hpp"

namespace tessera::arch {
namespace {

// The hint of an option's value that is none of those listed (arch/isa/text_reader.hpp, read_name_list).
const std::string kListedOptions =
    "\n  hint: docs/tile-program.md lists each instruction's options and their values";

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
    "  vec weighted_sum x=0x0 g=0x4000 o=0x2000 rows=4 cols=64 dtype=bf16 parts=2",
    "  vec weighted_sum x=0x0 y=0x3000 g=0x4000 o=0x2000 rows=4 cols=64 dtype=bf16 out=fp32 x_pitch=256 "
    "y_pitch=256 o_pitch=512 parts=8",
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
  const VecOp pool =
      operation_as<VecOp>(read(kHeader + kLines[17] + "\n").cores[0].instructions[0].operation);
  EXPECT_EQ(pool.rows, 18);  // e * q
  EXPECT_EQ(pool.out_dtype, DType::fp32);
  EXPECT_TRUE(!pool.average);
  const VecOp softmax =
      operation_as<VecOp>(read(kHeader + kLines[6] + "\n").cores[0].instructions[0].operation);
  EXPECT_EQ(softmax.causal_shift, -3);
  EXPECT_EQ(softmax.scale, 0.125);
  const VecOp online =
      operation_as<VecOp>(read(kHeader + kLines[11] + "\n").cores[0].instructions[0].operation);
  EXPECT_TRUE(online.first);
  EXPECT_EQ(online.causal_shift, 2);
  EXPECT_EQ(online.g_address, 0x4000u);
  const VecOp last =
      operation_as<VecOp>(read(kHeader + kLines[14] + "\n").cores[0].instructions[0].operation);
  EXPECT_TRUE(last.by_inverse_sum);
  const VecOp merge =
      operation_as<VecOp>(read(kHeader + kLines[15] + "\n").cores[0].instructions[0].operation);
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
                .find("a merge_partials takes at most 4096 parts"),
            std::string::npos);
  EXPECT_EQ(error_of("  vec scale_rows x=0x0 g=0x4000 o=0x0 rows=16 cols=128 dtype=fp32 by=beta"),
            "v.tprog:5:70: core 0,0 vec #0: 'beta' is not one of alpha or inverse_sum" + kListedOptions);
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
            "normalising), nothing else"
            "\n  hint: docs/tile-program.md gives each instruction's options and their limits");
  EXPECT_EQ(
      error_of("  vec map x=0x0 o=0x800 rows=4 cols=64 dtype=bf16 fn=bias+gleu"),
      "v.tprog:5:59: core 0,0 vec #0: 'gleu' is not one of add, mul, bias, relu, gelu, gelu_tanh, silu, "
      "swiglu or scale; did you mean 'gelu'?\n  hint: a chain is element functions joined by '+' "
      "(fn=bias+gelu); "
      "an epilogue's residual is the chain's add of the tile at y");
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
            "v.tprog:5: core 0,0 vec #0: a vector instruction reads and stores fp32, bf16 or fp16, not int8"
            "\n  hint: docs/tile-program.md gives each instruction's options and their limits");
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
  const VecRope rope = operation_as<VecRope>(
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
            "v.tprog:5:97: core 0,0 vec #0: 'halves' is not one of half or interleaved" + kListedOptions);
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

// vec weighted_sum: a VecOp kind, the parts of row r at x rows r * parts + p, their fp32 weights at g.
TEST(VecText, AWeightedSumReadsItsPartsWeightsAndOptionalY) {
  const VecOp plain =
      operation_as<VecOp>(read(kHeader + kLines[18] + "\n").cores[0].instructions[0].operation);
  EXPECT_EQ(plain.kind, VectorKind::weighted_sum);
  EXPECT_EQ(plain.parts, 2);
  EXPECT_EQ(plain.x_rows(), 8);
  EXPECT_FALSE(plain.uses_y());
  EXPECT_FALSE(plain.uses_statistics());
  EXPECT_EQ(plain.work().merge_parts, 2);
  EXPECT_FALSE(plain.work().weighted_adds_tile);
  const VecOp with_y =
      operation_as<VecOp>(read(kHeader + kLines[19] + "\n").cores[0].instructions[0].operation);
  EXPECT_TRUE(with_y.uses_y());
  EXPECT_EQ(with_y.y_address, 0x3000u);
  EXPECT_EQ(with_y.work().weighted_adds_tile, true);
  EXPECT_EQ(check_error(kLines[18]), "no error");
  EXPECT_EQ(check_error(kLines[19]), "no error");
}

// The first line of an error (the hint, the syntax, follows).
std::string first_line(const std::string& error) {
  return error.substr(0, error.find('\n'));
}

TEST(VecText, ABadWeightedSumIsALocatedErrorOrRefusedByTheChecker) {
  const std::string ws = "  vec weighted_sum x=0x0 g=0x4000 o=0x2000 rows=4 cols=64 ";
  EXPECT_EQ(first_line(error_of(ws + "dtype=bf16")),
            "v.tprog:5:7: core 0,0 vec #0: vec weighted_sum is missing 'parts='");
  EXPECT_EQ(first_line(error_of("  vec weighted_sum x=0x0 o=0x2000 rows=4 cols=64 parts=2 dtype=bf16")),
            "v.tprog:5:7: core 0,0 vec #0: vec weighted_sum is missing 'g='");
  EXPECT_EQ(
      first_line(error_of(ws + "parts=2 dtype=bf16 y_pitch=256")),
      "v.tprog:5:7: core 0,0 vec #0: vec weighted_sum takes y_pitch= only with y=ADDR (the tile added)");
  EXPECT_EQ(first_line(error_of(ws + "parts=2 dtype=bf16 fn=add")),
            "v.tprog:5:78: core 0,0 vec #0: vec weighted_sum takes no fn=");
  EXPECT_EQ(first_line(error_of(ws + "parts=2 dtype=bf16 eps=1e-5")),
            "v.tprog:5:78: core 0,0 vec #0: vec weighted_sum takes no eps=");
  EXPECT_EQ(error_of(ws + "parts=0 dtype=bf16"),
            "v.tprog:5:65: core 0,0 vec #0: parts must be at least 1"
            "\n  hint: a count or a size: 1 or more");
  EXPECT_EQ(check_error(ws + "parts=5000 dtype=bf16"),
            "v.tprog:5: core 0,0 vec #0: a weighted_sum takes at most 4096 parts, got 5000"
            "\n  hint: one part per core of a split: a mesh has at most 64x64 cores");
  EXPECT_EQ(check_error(ws + "parts=2 dtype=int8"),
            "v.tprog:5: core 0,0 vec #0: a vector instruction reads and stores fp32, bf16 or fp16, not int8"
            "\n  hint: docs/tile-program.md gives each instruction's options and their limits");
  // 4 rows x 2 fp32 weights = 32 B from 0xfff0
  EXPECT_EQ(
      check_error("  vec weighted_sum x=0x0 g=0xfff0 o=0x2000 rows=4 cols=64 parts=2 dtype=bf16"),
      "v.tprog:5: core 0,0 vec #0: gate weights g: SRAM bytes 0xfff0..0x10010 run past the end of the 64 "
      "KiB SRAM (0x10000)\n  hint: addresses are per core and start at 0");
  EXPECT_EQ(
      first_line(check_error(ws + "parts=2 dtype=bf16 y=0xff00")),
      "v.tprog:5: core 0,0 vec #0: operand y: SRAM bytes 0xff00..0x10100 run past the end of the 64 KiB "
      "SRAM (0x10000)");
  // 2 rows x 4000 parts of 64 bf16: X is 8000 rows
  EXPECT_EQ(
      first_line(
          check_error("  vec weighted_sum x=0x0 g=0x4000 o=0x2000 rows=2 cols=64 parts=4000 dtype=bf16")),
      "v.tprog:5: core 0,0 vec #0: operand x: SRAM bytes 0x0..0xfa000 run past the end of the 64 KiB SRAM "
      "(0x10000)");
}

// vec route: its own instruction kind on the vec queue.
TEST(VecText, ARouteReadsAndWritesBackCanonically) {
  for (const std::string line :
       {"  vec route x=0x0 i=0x1000 o=0x2000 rows=4 experts=8 top_k=2 scoring=softmax",
        "  vec route x=0x0 i=0x1000 o=0x2000 rows=4 experts=256 top_k=8 scoring=sigmoid groups=8 "
        "topk_groups=4 "
        "scaling=2.5 x_pitch=2048 o_pitch=64"}) {
    const Program program = read(kHeader + line + "\n");
    ASSERT_EQ(program.cores[0].instructions.size(), 1u);
    EXPECT_EQ(program.cores[0].instructions[0].queue, (QueueId{QueueKind::vec, 0}));
    EXPECT_EQ(write_program(program), "tessera-program 1\nname v\nmesh 1x1\n\ncore 0,0\n" + line + "\n");
    EXPECT_EQ(read(write_program(program)), program);
  }
  // 4 rows x 256 fp32 logits = 4 KiB at pitch 2 KiB from 0: fits the 64 KiB SRAM
  EXPECT_EQ(check_error("  vec route x=0x0 i=0x1000 o=0x2000 rows=4 experts=8 top_k=2 scoring=softmax"),
            "no error");
  const VecRoute route = operation_as<VecRoute>(
      read(kHeader +
           "  vec route x=0x100 i=0x1000 o=0x2000 rows=4 experts=256 top_k=8 scoring=sigmoid groups=8 "
           "topk_groups=4 scaling=2.5\n")
          .cores[0]
          .instructions[0]
          .operation);
  EXPECT_TRUE(route.sigmoid);
  EXPECT_EQ(route.x_address, 0x100u);
  EXPECT_EQ(route.scaling, 2.5);
  const VectorWork work = route.work();
  EXPECT_EQ(work.kind, VectorKind::route);
  EXPECT_EQ(work.cols, 256);
  EXPECT_EQ(work.route_top_k, 8);
  EXPECT_EQ(work.route_groups, 8);
  EXPECT_EQ(work.route_topk_groups, 4);
  EXPECT_TRUE(work.route_sigmoid);
}

TEST(VecText, EveryBadRouteOptionIsALocatedErrorOrRefusedByTheChecker) {
  const std::string route = "  vec route x=0x0 i=0x1000 o=0x2000 rows=4 experts=8 ";
  const std::string syntax =
      "\n  hint: a route is written: route x=ADDR i=ADDR o=ADDR rows=R experts=E top_k=K "
      "scoring=softmax|sigmoid [groups=G topk_groups=T] [scaling=S] [x_pitch=B] [o_pitch=B] (x: fp32 logits "
      "[R "
      "x E], overwritten by the scores; i: int32 chosen experts [R x K]; o: fp32 gate weights [R x K])";
  EXPECT_EQ(error_of(route + "top_k=2"),
            "v.tprog:5:7: core 0,0 vec #0: vec route is missing 'scoring='" + syntax);
  EXPECT_EQ(
      error_of(route + "top_k=2 scoring=softmx"),
      "v.tprog:5:70: core 0,0 vec #0: 'softmx' is not one of softmax or sigmoid; did you mean 'softmax'?" +
          kListedOptions);
  EXPECT_EQ(error_of(route + "top_k=2 scoring=softmax groups=2"),
            "v.tprog:5:7: core 0,0 vec #0: vec route takes groups= and topk_groups= together (the groups of "
            "experts and how many are kept)" +
                syntax);
  EXPECT_EQ(first_line(error_of(route + "top_k=2 scoring=softmax topk_groups=2")),
            "v.tprog:5:7: core 0,0 vec #0: vec route takes groups= and topk_groups= together (the groups of "
            "experts and how many are kept)");
  EXPECT_EQ(error_of(route + "top_k=0 scoring=softmax"),
            "v.tprog:5:60: core 0,0 vec #0: top_k must be at least 1"
            "\n  hint: a count or a size: 1 or more");
  EXPECT_EQ(error_of("  vec route x=0x0 i=0x1000 o=0x2000 rows=0 experts=8 top_k=2 scoring=softmax"),
            "v.tprog:5:42: core 0,0 vec #0: rows must be at least 1"
            "\n  hint: a count or a size: 1 or more");
  EXPECT_EQ(error_of(route + "top_k=2 scoring=softmax cols=3"),
            "v.tprog:5:78: core 0,0 vec #0: unknown key 'cols' for vec route; did you mean 'rows'?" + syntax);
  EXPECT_EQ(first_line(error_of(route + "top_k=2 scoring=softmax y_pitch=3")),
            "v.tprog:5:78: core 0,0 vec #0: unknown key 'y_pitch' for vec route; did you mean 'x_pitch'?");
  EXPECT_EQ(
      error_of(route + "top_k=2 scoring=softmax scaling=x"),
      "v.tprog:5:86: core 0,0 vec #0: malformed number 'x' for scaling\n  hint: write it as 0.125 or 1e-05");
  EXPECT_EQ(error_of(route + "top_k=2 scoring=softmax rows=3"),
            "v.tprog:5:78: core 0,0 vec #0: duplicate 'rows'\n  hint: each key may appear once");
  EXPECT_EQ(first_line(error_of(route + "top_k=2 scoring=softmax x_pitch=-4")).substr(0, 31),
            "v.tprog:5:86: core 0,0 vec #0: ");
  // The checker: limits, the routing rule, the scaling, the tiles in SRAM, the unit.
  EXPECT_EQ(check_error("  vec route x=0x0 i=0x1000 o=0x2000 rows=4 experts=70000 top_k=2 scoring=softmax"),
            "v.tprog:5: core 0,0 vec #0: a route scores at most 65536 experts, got 70000"
            "\n  hint: every shipped model has at most 256");
  EXPECT_EQ(check_error(route + "top_k=9 scoring=softmax"),
            "v.tprog:5: core 0,0 vec #0: top_k 9 is more than the 8 experts"
            "\n  hint: each row chooses top_k distinct experts: at most experts");
  EXPECT_EQ(
      check_error(route + "top_k=2 scoring=softmax groups=3 topk_groups=1"),
      "v.tprog:5: core 0,0 vec #0: groups 3 does not divide the 8 experts\n  hint: the groups are equal "
      "runs of consecutive experts");
  EXPECT_EQ(check_error(route + "top_k=2 scoring=softmax groups=4 topk_groups=5"),
            "v.tprog:5: core 0,0 vec #0: topk_groups 5 is more than the 4 groups"
            "\n  hint: the groups kept are some of the groups: at most groups");
  EXPECT_EQ(check_error(route + "top_k=5 scoring=softmax groups=4 topk_groups=2"),
            "v.tprog:5: core 0,0 vec #0: top_k 5 is more than the 4 experts of the 2 kept groups"
            "\n  hint: keep more groups (topk_groups) or choose fewer experts");
  EXPECT_EQ(check_error(route + "top_k=2 scoring=softmax scaling=0"),
            "v.tprog:5: core 0,0 vec #0: scaling must be a positive number, got 0"
            "\n  hint: the gate weights' factor (DeepSeek-V3's routed_scaling 2.5); leave it out for 1");
  EXPECT_EQ(check_error(route + "top_k=2 scoring=softmax scaling=-1"),
            "v.tprog:5: core 0,0 vec #0: scaling must be a positive number, got -1"
            "\n  hint: the gate weights' factor (DeepSeek-V3's routed_scaling 2.5); leave it out for 1");
  EXPECT_EQ(check_error("  vec route x=0xffc0 i=0x1000 o=0x2000 rows=4 experts=8 top_k=2 scoring=softmax"),
            "v.tprog:5: core 0,0 vec #0: logits x: SRAM bytes 0xffc0..0x10040 run past the end of the 64 KiB "
            "SRAM (0x10000)\n  hint: addresses are per core and start at 0");
  EXPECT_EQ(
      first_line(check_error("  vec route x=0x0 i=0xfff8 o=0x2000 rows=4 experts=8 top_k=2 scoring=softmax")),
      "v.tprog:5: core 0,0 vec #0: chosen experts i: SRAM bytes 0xfff8..0x10018 run past the end of the 64 "
      "KiB SRAM (0x10000)");
  EXPECT_EQ(
      first_line(check_error("  vec route x=0x0 i=0x1000 o=0xfff8 rows=4 experts=8 top_k=2 scoring=softmax")),
      "v.tprog:5: core 0,0 vec #0: weights o: SRAM bytes 0xfff8..0x10018 run past the end of the 64 KiB "
      "SRAM (0x10000)");
  EXPECT_EQ(check_error(route + "top_k=2 scoring=softmax x_pitch=16"),
            "v.tprog:5: core 0,0 vec #0: logits x: row pitch 16 B is shorter than a row (32 B)\n  hint: rows "
            "would overlap; use a pitch of at least the row size, or omit it for packed rows");
  // rows x experts x 4 B past the SRAM, and a count past the text's limit of 2^40, refused where it is
  // written (programs built in memory meet the checker's overflow test: tests/arch/vector_timing_test.cpp)
  EXPECT_EQ(
      check_error("  vec route x=0x0 i=0x1000 o=0x2000 rows=100000 experts=65536 top_k=2 scoring=softmax"),
      "v.tprog:5: core 0,0 vec #0: the tiles are larger than the core's SRAM"
      "\n  hint: docs/tile-program.md gives each instruction's options and their limits");
  EXPECT_EQ(
      check_error("  vec route x=0x0 i=0x1000 o=0x2000 rows=9223372036854775807 experts=65536 top_k=2 "
                  "scoring=softmax"),
      "v.tprog:5:42: core 0,0 vec #0: 9223372036854775807 is too large for rows (at most 1099511627776)\n"
      "  hint: sizes, counts, pitches and indices in a tile program are at most 2^40");
  EXPECT_EQ(first_line(check_error(route + "top_k=2 scoring=softmax", /*with_vector=*/false)),
            "v.tprog:5: core 0,0 vec #0: the machine has no vector unit");
}

}  // namespace tessera::arch
