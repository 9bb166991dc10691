#include "arch/isa/pe_post.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "arch/isa/instruction_checks.hpp"
#include "arch/isa/text_reader.hpp"
#include "arch/isa/text_writer.hpp"
#include "common/error.hpp"

namespace tessera::arch {

namespace {

constexpr const char* kPostSyntax =
    "an output path is written: post o=ADDR rows=R cols=C dtype=DT steps=S[+S...] [b=ADDR] [o_pitch=B] "
    "(steps "
    "from the machine's core.pe_array.output_steps, in its order; b: the bias row, with steps=bias...)";

enum PostOption : size_t { key_o, key_rows, key_cols, key_dtype, key_steps, key_b, key_o_pitch };

const std::vector<std::string>& option_names() {
  static const std::vector<std::string> names = {"o", "rows", "cols", "dtype", "steps", "b", "o_pitch"};
  return names;
}

constexpr uint32_t kRequired = (uint32_t{1} << key_b) - 1;  // o through steps

}  // namespace

const std::vector<std::string>& PePost::mnemonics() {
  static const std::vector<std::string> names = {"post"};
  return names;
}

bool PePost::has_bias() const {
  return std::find(steps.begin(), steps.end(), OutputStep::bias) != steps.end();
}

PePost PePost::read(LineReader& in, std::string_view, int operation_column) {
  PePost post;
  uint32_t given = 0;
  while (!in.at_operation_end()) {
    switch (static_cast<PostOption>(in.read_option(option_names(), 0, given, "post", kPostSyntax))) {
      case key_o:
        post.o_address = in.read_unsigned("the SRAM address of O");
        break;
      case key_rows:
        post.rows = in.read_positive("rows");
        break;
      case key_cols:
        post.cols = in.read_positive("cols");
        break;
      case key_dtype:
        post.dtype = in.read_dtype("dtype", all_dtype_names());
        break;
      case key_steps:
        for (const std::string& name :
             in.read_name_list("an output step", output_step_names(),
                               "an output path applies functions of x and a bias row only (the machine's "
                               "core.pe_array.output_steps, in its order); a step that reads a tile runs on "
                               "the vector unit"))
          post.steps.push_back(*element_fn_named(name, kInOutputPath));
        break;
      case key_b:
        post.b_address = in.read_unsigned("the SRAM address of the bias row");
        break;
      case key_o_pitch:
        post.o_pitch_bytes = in.read_size("the row pitch of O in bytes");
        break;
    }
  }
  in.require_options(option_names(), given, kRequired, operation_column, "post", kPostSyntax);
  if (post.has_bias() != ((given >> key_b) & 1))
    in.fail(operation_column,
            post.has_bias() ? "steps=bias needs b=, the bias row's SRAM address"
                            : "b= is the bias row of steps=bias",
            kPostSyntax);
  return post;
}

void PePost::write(LineWriter& out) const {
  const std::string names = joined_names(steps);
  out.put("post o=0x{:x} rows={} cols={} dtype={} steps={}", o_address, rows, cols, tessera::name_of(dtype),
          names);
  if (has_bias()) out.put(" b=0x{:x}", b_address);
  out.write_pitch("o_pitch", o_pitch_bytes);
}

void PePost::check(const InstructionChecks& checks) const {
  const std::vector<OutputStep>& path = checks.spec().core.pe_array.output_steps;
  if (steps.empty()) checks.fail("a post applies at least one step");
  for (OutputStep step : steps)
    if (!usable_in(step, kInOutputPath))
      checks.fail(fmt::format("an output path has no step {}", name_of(step)));
  if (!output_path_applies(path, steps)) {
    const std::string listed = joined_names(path, ", "), asked = joined_names(steps);
    checks.fail(fmt::format("the PE array of machine '{}' has no output path for {} (its output steps, in "
                            "order: {})",
                            checks.spec().name, asked, listed.empty() ? "none" : listed),
                "core.pe_array.output_steps lists what the array applies to a finished tile, in order");
  }
  if (dtype != DType::fp32 && dtype != DType::bf16 && dtype != DType::fp16)
    checks.fail(
        fmt::format("the output path applies to fp32, bf16 or fp16 tiles, not {}", tessera::name_of(dtype)));
  const int64_t element = size_bytes(dtype);
  checks.sram_range("output tile o", o_address, rows, cols * element, o_pitch_bytes);
  if (has_bias()) checks.sram_range("bias row b", b_address, 1, cols * element, 0);
}

}  // namespace tessera::arch
