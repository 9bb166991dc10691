// The vector kinds' descriptor table (arch/isa/vector_kinds): every kind's line names its own kind and
// mnemonic; a VecOp kind's line of its required options reads and writes back canonically; the reader takes
// exactly the options its descriptor allows and requires those it requires; and vector_timing times its
// passes, the descriptor's.
#include <gtest/gtest.h>

#include <map>

#include "arch/isa/program_text.hpp"
#include "arch/isa/vec_op.hpp"
#include "arch/isa/vec_rope.hpp"
#include "arch/isa/vec_route.hpp"
#include "arch/isa/vector_kinds/vector_kind_info.hpp"
#include "arch/spec.hpp"
#include "common/config.hpp"

namespace tessera::arch {
namespace {

const std::string kHeader = "tessera-program 1\nname v\nmesh 1x1\ncore 0,0\n";

// A value each option reads (the pool's window fits its 4x4 input; fn=relu reads no operand, so a map with
// its required options alone is whole).
const std::map<std::string, std::string> kSampleValues = {{"x", "0x0"},      {"y", "0x1000"},
                                                          {"g", "0x2000"},   {"b", "0x3000"},
                                                          {"o", "0x4000"},   {"rows", "4"},
                                                          {"cols", "8"},     {"dtype", "fp32"},
                                                          {"x_pitch", "64"}, {"y_pitch", "64"},
                                                          {"o_pitch", "64"}, {"fn", "relu"},
                                                          {"scale", "0.5"},  {"causal_shift", "1"},
                                                          {"eps", "0.001"},  {"ih", "4"},
                                                          {"iw", "4"},       {"e", "2"},
                                                          {"q", "2"},        {"r", "2"},
                                                          {"s", "2"},        {"stride", "2"},
                                                          {"pad_top", "0"},  {"pad_left", "0"},
                                                          {"mode", "max"},   {"out", "bf16"},
                                                          {"first", "yes"},  {"by", "alpha"},
                                                          {"parts", "2"}};

// `vec <mnemonic>` with `options` (a bit set) in the order of vec_option::Option.
std::string line_of(const VectorKindInfo& info, VecOptionSet options) {
  std::string line = std::string("  vec ") + info.mnemonic;
  for (size_t option = 0; option < vec_option::count; ++option)
    if (has(options, static_cast<vec_option::Option>(option)))
      line += " " + vec_option_names()[option] + "=" + kSampleValues.at(vec_option_names()[option]);
  return line;
}

std::string error_of(const std::string& line) {
  try {
    read_program(kHeader + line + "\n", "v.tprog");
  } catch (const InputError& error) {
    return error.what();
  }
  return "no error";
}

VecOp read_one(const std::string& line) {
  return operation_as<VecOp>(
      read_program(kHeader + line + "\n", "v.tprog").cores[0].instructions[0].operation);
}

}  // namespace

TEST(VectorKindTable, EveryLineNamesItsOwnKindAndMnemonicInEnumOrder) {
  ASSERT_EQ(vector_kinds().size(), static_cast<size_t>(kVectorKindCount));
  std::vector<std::string> vec_op_kinds;
  for (size_t index = 0; index < vector_kinds().size(); ++index) {
    const VectorKindInfo& info = vector_kinds()[index];
    EXPECT_EQ(static_cast<size_t>(info.kind), index) << info.mnemonic;
    EXPECT_STREQ(name_of(info.kind), info.mnemonic);
    EXPECT_NE(info.add_passes, nullptr) << info.mnemonic;
    if (info.is_vec_op) vec_op_kinds.emplace_back(info.mnemonic);
  }
  EXPECT_EQ(VecOp::mnemonics(), vec_op_kinds);
  EXPECT_EQ(VecRope::mnemonics(), std::vector<std::string>{info_of(VectorKind::rope).mnemonic});
  EXPECT_EQ(VecRoute::mnemonics(), std::vector<std::string>{info_of(VectorKind::route).mnemonic});
}

TEST(VectorKindTable, EachVecOpKindsRequiredOptionsReadAndWriteBackAsTheSameInstruction) {
  for (const VectorKindInfo& info : vector_kinds()) {
    if (!info.is_vec_op) continue;
    const Program program = read_program(kHeader + line_of(info, info.required) + "\n", "v.tprog");
    const VecOp op = operation_as<VecOp>(program.cores[0].instructions[0].operation);
    EXPECT_EQ(op.kind, info.kind) << info.mnemonic;
    const std::string written = write_program(program);
    EXPECT_NE(written.find(std::string("vec ") + info.mnemonic + " "), std::string::npos) << written;
    EXPECT_EQ(write_program(read_program(written, "w.tprog")), written) << info.mnemonic;
    EXPECT_EQ(operation_as<VecOp>(read_program(written, "w.tprog").cores[0].instructions[0].operation), op)
        << info.mnemonic;
  }
}

TEST(VectorKindTable, TheReaderTakesExactlyTheOptionsADescriptorAllowsAndRequiresThoseItRequires) {
  for (const VectorKindInfo& info : vector_kinds()) {
    if (!info.is_vec_op) continue;
    for (size_t index = 0; index < vec_option::count; ++index) {
      const auto option = static_cast<vec_option::Option>(index);
      const std::string& name = vec_option_names()[index];
      if (has(info.required, option)) {
        const VecOptionSet without = info.required & ~options({option});
        EXPECT_NE(error_of(line_of(info, without)).find("is missing '" + name + "='"), std::string::npos)
            << info.mnemonic << " without " << name;
        continue;
      }
      const std::string error = error_of(line_of(info, info.required | options({option})));
      const bool refused = error.find("takes no " + name + "=") != std::string::npos;
      EXPECT_EQ(refused, !has(info.allowed(), option)) << info.mnemonic << " with " << name << ": " << error;
    }
  }
}

TEST(VectorKindTable, VectorTimingTimesEachKindsDescriptorPasses) {
  const VectorSpec spec =
      arch_from_yaml(config::load_text("name: m\nclock_ghz: 1.0\nmesh: {rows: 1, cols: 1}\n"
                                       "noc: {link_bytes_per_cycle: 64}\n"
                                       "dram: {bandwidth_gbps: 256, channels: 4, latency_cycles: 100}\n"
                                       "core:\n  pe_array: {rows: 8, cols: 8}\n"
                                       "  sram: {kib: 64, banks: 4, bank_width_bytes: 32}\n"
                                       "  dma: {engines: 1, bytes_per_cycle: 32, setup_cycles: 8}\n"
                                       "  vector: {lanes: 16, special_per_cycle: 4, latency_cycles: 6}\n",
                                       "m.yaml"))
          .core.vector.value();
  for (const VectorKindInfo& info : vector_kinds()) {
    if (!info.is_vec_op) continue;
    const VectorWork work = read_one(line_of(info, info.required)).work();
    VectorPasses described;
    info.add_passes(work, described);
    const VectorPasses passes = vector_passes(work);
    ASSERT_EQ(passes.count, described.count) << info.mnemonic;
    ASSERT_GE(passes.count, 1) << info.mnemonic;
    for (int p = 0; p < passes.count; ++p) EXPECT_STREQ(passes.pass[p].what, described.pass[p].what);
    EXPECT_EQ(vector_work_problem(spec, work), "") << info.mnemonic;
    const VectorTiming timing = vector_timing(spec, work);
    EXPECT_EQ(timing.passes, passes.count) << info.mnemonic;
    EXPECT_GT(timing.cycles, 0) << info.mnemonic;
  }
}

}  // namespace tessera::arch
