// Workloads (ops/workload.hpp): the shipped ones parse, every rule is enforced with a location, tensors get
// the ids the generator documents, and the resolved form reads back as the same workload.
#include "ops/workload.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

#include "ops/input_generator.hpp"
#include "ops/kinds/gemm.hpp"
#include "support/input_errors.hpp"

namespace tessera::ops {
namespace {

std::string workload_config(const std::string& name) {
  return std::string(TESSERA_SOURCE_DIR) + "/configs/workloads/" + name;
}

using testing_support::input_error_of;

// Two ops on lines 4 and 5; in both, m is at column 30, n at 36, k at 42, kind at 21, dtype at 52.
const std::string kWorkload =
    "name: w\n"
    "seed: 3\n"
    "ops:\n"
    "  - {name: a, kind: gemm, m: 4, n: 5, k: 6, dtype: bf16}\n"
    "  - {name: b, kind: gemm, m: 7, n: 8, k: 9, dtype: int8}\n";

// kWorkload with `from` replaced by `to` (which must occur exactly once).
std::string workload_with(const std::string& from, const std::string& to) {
  return testing_support::replaced_once(kWorkload, from, to);
}

Workload parse(const std::string& text) {
  return workload_from_yaml(config::load_text(text, "w.yaml"));
}

InputError parse_error(const std::string& text) {
  return input_error_of([&] { parse(text); });
}

void expect_same_workload(const Workload& a, const Workload& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.seed, b.seed);
  ASSERT_EQ(a.ops.size(), b.ops.size());
  for (size_t i = 0; i < a.ops.size(); ++i) {
    SCOPED_TRACE(a.ops[i].name);
    EXPECT_EQ(a.ops[i].name, b.ops[i].name);
    EXPECT_EQ(a.ops[i].index, b.ops[i].index);
    EXPECT_EQ(a.ops[i].dtype, b.ops[i].dtype);
    EXPECT_EQ(std::string(a.ops[i].kind_name()), b.ops[i].kind_name());
    EXPECT_EQ(a.ops[i].shape_text(), b.ops[i].shape_text());
    EXPECT_EQ(YAML::Dump(to_yaml(a.ops[i])), YAML::Dump(to_yaml(b.ops[i])));
  }
}

Workload through_resolved_form(const Workload& workload) {
  return workload_from_yaml(config::load_text(config::to_yaml_text(to_yaml(workload)), "resolved.yaml"));
}

// ---------------------------------------------------------------------------------------------------------
// Shipped workloads

TEST(ShippedWorkloads, EveryWorkloadParsesAndSurvivesItsResolvedForm) {
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(workload_config(""))) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().string());
    const Workload workload = workload_from_yaml(config::load_file(entry.path().string()));
    EXPECT_EQ(workload.name + ".yaml", entry.path().filename().string())
        << "a workload is named after its file";
    EXPECT_FALSE(workload.ops.empty());
    for (size_t i = 0; i < workload.ops.size(); ++i) {
      EXPECT_EQ(workload.ops[i].index, static_cast<int>(i));
      // Multiply-accumulates are a contraction's (attention's two matmuls, an MoE layer's router and expert
      // GEMMs); a pool and the vector kinds have none.
      const std::string kind = workload.ops[i].kind_name();
      EXPECT_EQ(workload.ops[i].macs() > 0,
                kind == "gemm" || kind == "fc" || kind == "conv2d" || kind == "attention" || kind == "moe")
          << kind;
      EXPECT_EQ(workload.ops[i].where.file, entry.path().string());
      EXPECT_EQ(workload.ops[i].where.line,
                workload.ops[0].where.line + static_cast<int>(i));  // one op a line
    }
    expect_same_workload(through_resolved_form(workload), workload);
    names.insert(workload.name);
  }
  for (const char* name :
       {"default", "bert-ffn", "gemm-256", "gemm-4096", "llm-decode-proj", "ragged", "transformer-vector"})
    EXPECT_EQ(names.count(name), 1u) << name;
}

TEST(ShippedWorkloads, DefaultHasABf16AndAnInt8Projection) {
  const Workload workload = workload_from_yaml(config::load_file(workload_config("default.yaml")));
  EXPECT_EQ(workload.seed, 1u);
  ASSERT_EQ(workload.ops.size(), 2u);
  EXPECT_EQ(workload.ops[0].name, "up_proj");
  EXPECT_EQ(workload.ops[0].dtype, DType::bf16);
  EXPECT_EQ(workload.ops[0].macs(), int64_t{256} * 1024 * 512);
  EXPECT_EQ(workload.ops[1].name, "down_proj");
  EXPECT_EQ(workload.ops[1].dtype, DType::int8);
  const auto& shape = *workload.ops[1].as<GemmShape>();
  EXPECT_EQ(shape.m, 256);
  EXPECT_EQ(shape.n, 512);
  EXPECT_EQ(shape.k, 1024);
}

TEST(ShippedWorkloads, RaggedCoversEveryOperandType) {
  const Workload workload = workload_from_yaml(config::load_file(workload_config("ragged.yaml")));
  std::set<DType> dtypes;
  for (const Op& op : workload.ops) dtypes.insert(op.dtype);
  EXPECT_EQ(dtypes, (std::set<DType>{DType::fp32, DType::bf16, DType::fp16, DType::int8}));
}

// ---------------------------------------------------------------------------------------------------------
// Tensors

TEST(Workload, TensorsOfAGemmHaveTheDocumentedShapesAndIds) {
  const Workload workload = parse(kWorkload);
  const std::vector<TensorDesc> tensors = tensors_of(workload.ops[1]);  // m 7, n 8, k 9, int8, op index 1
  ASSERT_EQ(tensors.size(), 3u);
  EXPECT_EQ(tensors[0].name, "A");
  EXPECT_EQ(tensors[0].rows, 7);
  EXPECT_EQ(tensors[0].cols, 9);
  EXPECT_EQ(tensors[0].dtype, DType::int8);
  EXPECT_EQ(tensors[0].tensor_id, tensor_id(1, 0));
  EXPECT_FALSE(tensors[0].is_output);
  EXPECT_EQ(tensors[1].name, "W");
  EXPECT_EQ(tensors[1].rows, 9);
  EXPECT_EQ(tensors[1].cols, 8);
  EXPECT_EQ(tensors[1].tensor_id, tensor_id(1, 1));
  EXPECT_EQ(tensors[2].name, "O");
  EXPECT_EQ(tensors[2].rows, 7);
  EXPECT_EQ(tensors[2].cols, 8);
  EXPECT_EQ(tensors[2].dtype, DType::int32);  // int8 x int8 accumulates in int32
  EXPECT_TRUE(tensors[2].is_output);
  EXPECT_EQ(tensors_of(workload.ops[0])[2].dtype, DType::fp32);  // bf16 accumulates in fp32
  EXPECT_EQ(workload.ops[1].macs(), 7 * 8 * 9);
}

TEST(Workload, OpRemembersWhereItWasWritten) {
  const Workload workload = parse(kWorkload);
  EXPECT_EQ(workload.ops[1].where.str(), "w.yaml:5:5");
}

// ---------------------------------------------------------------------------------------------------------
// Rules

TEST(Workload, ZeroOrNegativeSizeIsRejectedAtTheField) {
  EXPECT_EQ(std::string(parse_error(workload_with("m: 4,", "m: 0,")).what()),
            "w.yaml:4:30: ops[0].m: expected a positive integer, got 0"
            "\n  hint: this field counts or sizes something: at least 1");
  EXPECT_EQ(std::string(parse_error(workload_with("n: 8,", "n: -8,")).what()),
            "w.yaml:5:36: ops[1].n: expected a positive integer, got -8"
            "\n  hint: this field counts or sizes something: at least 1");
  EXPECT_EQ(std::string(parse_error(workload_with("k: 6,", "k: 0,")).what()),
            "w.yaml:4:42: ops[0].k: expected a positive integer, got 0"
            "\n  hint: this field counts or sizes something: at least 1");
}

TEST(Workload, ATensorPast2To36ElementsIsRefusedAtItsOp) {
  // Before: m = 10^12 grew memory without bound, m = n = k = 2^31 spun in the cost model; both exited 0
  // eventually or never.
  const std::string big =
      "name: w\nseed: 1\nops:\n  - {name: g, kind: gemm, m: 1000000000000, n: 64, k: 64, "
      "dtype: bf16}\n";
  EXPECT_EQ(std::string(parse_error(big).what()),
            "w.yaml:4:5: ops[0]: A of op g is 1000000000000 x 64 elements, more than 2^36 (68719476736)\n"
            "  hint: tessera maps an op onto one machine's memory: split the op, or make its sizes smaller");
  const std::string cube =
      "name: w\nseed: 1\nops:\n  - {name: g, kind: gemm, m: 2147483648, n: 2147483648, "
      "k: 2147483648, dtype: bf16}\n";
  EXPECT_EQ(std::string(parse_error(cube).what()).substr(0, 76),
            "w.yaml:4:5: ops[0]: the sizes of op g multiply past 2^62 (at k = 2147483648)");
  // A conv whose input pixels would overflow where they are multiplied: its sides are past the spatial limit
  // (ops/kinds/spatial.hpp), checked before any sum or product of them.
  const std::string conv =
      "name: w\nseed: 1\nops:\n  - {name: c, kind: conv2d, n: 1, c: 3, h: 4000000000, "
      "w: 4000000000, k: 8, r: 3, s: 3, dtype: bf16}\n";
  EXPECT_NE(std::string(parse_error(conv).what())
                .find("ops[0].h: h = 4000000000 is more than tessera models (2^24)"),
            std::string::npos)
      << parse_error(conv).what();
  // Below that limit the product check still speaks: 2^24 x 2^24 pixels of 2^20 channels.
  const std::string wide =
      "name: w\nseed: 1\nops:\n  - {name: c, kind: conv2d, n: 16384, c: 1048576, h: 16777216, "
      "w: 16777216, k: 8, r: 3, s: 3, dtype: bf16}\n";
  EXPECT_NE(std::string(parse_error(wide).what()).find("the sizes of op c multiply past 2^62"),
            std::string::npos)
      << parse_error(wide).what();
  // 2^36 elements exactly is allowed.
  EXPECT_NO_THROW(
      parse("name: w\nseed: 1\nops:\n  - {name: g, kind: gemm, m: 1048576, n: 65536, k: 64, "
            "dtype: bf16}\n"));
}

TEST(Workload, MissingSizeIsRequired) {
  EXPECT_EQ(std::string(parse_error(workload_with(" k: 9,", "")).what()),
            "w.yaml:5:5: ops[1].k: required field is missing\n  hint: add 'k:' to 'ops[1]'");
}

TEST(Workload, UnknownKindIsRejectedWithDidYouMean) {
  EXPECT_EQ(std::string(parse_error(workload_with("b, kind: gemm", "b, kind: gemn")).what()),
            "w.yaml:5:21: ops[1].kind: 'gemn' is not one of gemm, conv2d, fc, pool, softmax, layernorm, "
            "rmsnorm, elementwise, attention, rope or moe; did you mean 'gemm'?"
            "\n  hint: names are case-sensitive; pick one of those listed");
  EXPECT_EQ(
      parse_error(workload_with("b, kind: gemm", "b, kind: conv")).message(),
      "'conv' is not one of gemm, conv2d, fc, pool, softmax, layernorm, rmsnorm, elementwise, attention, "
      "rope or moe; did you mean 'conv2d'?");
}

TEST(Workload, UnknownDtypeIsRejectedWithDidYouMean) {
  EXPECT_EQ(std::string(parse_error(workload_with("dtype: bf16", "dtype: fp8")).what()),
            "w.yaml:4:52: ops[0].dtype: 'fp8' is not one of fp32, bf16, fp16 or int8; did you mean 'fp32'?"
            "\n  hint: names are case-sensitive; pick one of those listed");
  // int32 is an accumulator type, never an operand.
  EXPECT_EQ(parse_error(workload_with("dtype: int8", "dtype: int32")).field(), "ops[1].dtype");
}

TEST(Workload, DuplicateOpNameIsRejectedAtTheSecondOp) {
  EXPECT_EQ(std::string(parse_error(workload_with("{name: b,", "{name: a,")).what()),
            "w.yaml:5:12: ops[1].name: another op is already named 'a'\n  hint: op names must be unique");
}

TEST(Workload, OpNameMustBeOneWord) {
  // The name selects the op in --set ops.NAME.m=... and is written unquoted into tile programs
  // (op gemm ... name=NAME): a name with a space, a dot or only digits could not be addressed or read back.
  EXPECT_EQ(std::string(parse_error(workload_with("{name: b,", "{name: 'my op',")).what()),
            "w.yaml:5:12: ops[1].name: 'my op' is not a valid op name\n"
            "  hint: start with a letter or '_', then use letters, digits, '_' or '-'");
  for (const char* name : {"''", "'1'", "ffn.1", "'a=b'", "-x"})
    EXPECT_EQ(parse_error(workload_with("{name: b,", std::string("{name: ") + name + ",")).field(),
              "ops[1].name")
        << name;
  for (const char* name : {"ffn_1", "_tmp", "up-proj", "B2"})
    EXPECT_EQ(parse(workload_with("{name: b,", std::string("{name: ") + name + ",")).ops[1].name, name);
}

TEST(Workload, SeedIsRequiredAndNonnegative) {
  EXPECT_EQ(std::string(parse_error(workload_with("seed: 3\n", "")).what()),
            "w.yaml:1:1: seed: required field is missing\n  hint: add 'seed:' to the top level");
  EXPECT_EQ(parse_error(workload_with("seed: 3", "seed: -1")).message(), "expected an integer >= 0, got -1");
  EXPECT_EQ(parse(workload_with("seed: 3", "seed: 0")).seed, 0u);
}

TEST(Workload, OpsMustBeANonEmptyList) {
  EXPECT_EQ(parse_error("name: w\nseed: 1\nops: []\n").message(), "expected at least one element");
  EXPECT_EQ(parse_error("name: w\nseed: 1\nops: {name: a}\n").message(), "expected a list, got a mapping");
}

TEST(Workload, UnknownKeysAreRejected) {
  EXPECT_EQ(std::string(parse_error(workload_with("dtype: int8}", "dtype: int8, dtyp: int8}")).what()),
            "w.yaml:5:58: ops[1].dtyp: unknown key; did you mean 'dtype'?\n"
            "  hint: the README lists every field of this file");
  EXPECT_EQ(parse_error(workload_with("seed: 3", "seed: 3\nsede: 4")).field(), "sede");
}

TEST(Workload, OverrideSelectsAnOpByName) {
  config::Document document = config::load_text(kWorkload, "w.yaml");
  config::apply_override(document, "ops.b.m=1024");
  config::apply_override(document, "ops.0.dtype=fp16");
  const Workload workload = workload_from_yaml(document);
  EXPECT_EQ(workload.ops[1].as<GemmShape>()->m, 1024);
  EXPECT_EQ(workload.ops[0].dtype, DType::fp16);

  config::Document bad = config::load_text(kWorkload, "w.yaml");
  config::apply_override(bad, "ops.b.m=0");
  EXPECT_EQ(std::string(input_error_of([&] { workload_from_yaml(bad); }).what()),
            "--set ops.b.m=0: ops[1].m: expected a positive integer, got 0"
            "\n  hint: this field counts or sizes something: at least 1");
}

// ---------------------------------------------------------------------------------------------------------
// The resolved form

TEST(ResolvedWorkload, RoundTripsToAnIdenticalWorkload) {
  const Workload workload = parse(kWorkload);
  expect_same_workload(through_resolved_form(workload), workload);
  EXPECT_EQ(config::to_yaml_text(to_yaml(through_resolved_form(workload))),
            config::to_yaml_text(to_yaml(workload)));
}

TEST(ResolvedWorkload, KeepsALargeSeed) {
  // Seeds are uint64 in the generator; every seed the reader accepts must survive the resolved form.
  const Workload workload = parse(workload_with("seed: 3", "seed: 9223372036854775807"));
  EXPECT_EQ(workload.seed, 9223372036854775807ull);
  EXPECT_EQ(through_resolved_form(workload).seed, workload.seed);
}

}  // namespace
}  // namespace tessera::ops
