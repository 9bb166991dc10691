#include "arch/isa/vec_rope.hpp"

#include <fmt/format.h>

#include "arch/isa/instruction_checks.hpp"
#include "arch/isa/text_reader.hpp"
#include "arch/isa/text_writer.hpp"

namespace tessera::arch {

namespace {

constexpr const char* kRopeSyntax =
    "a rope is written: rope x=ADDR y=ADDR o=ADDR rows=R cols=C dtype=DT head_dim=D rotary_dim=RD "
    "style=half|interleaved [x_pitch=B] [y_pitch=B] [o_pitch=B] (y: a row of rotary_dim fp32 cos and sin per "
    "row of X)";

enum RopeOption : size_t {
  key_x,
  key_y,
  key_o,
  key_rows,
  key_cols,
  key_dtype,
  key_head_dim,
  key_rotary_dim,
  key_style,
  key_x_pitch,
  key_y_pitch,
  key_o_pitch,
};

const std::vector<std::string>& option_names() {
  static const std::vector<std::string> names = {"x",     "y",       "o",        "rows",
                                                 "cols",  "dtype",   "head_dim", "rotary_dim",
                                                 "style", "x_pitch", "y_pitch",  "o_pitch"};
  return names;
}

const std::vector<std::string>& style_names() {
  static const std::vector<std::string> names = {"half", "interleaved"};
  return names;
}

constexpr uint32_t kRequired = (uint32_t{1} << key_x_pitch) - 1;  // every option before the pitches

}  // namespace

const std::vector<std::string>& VecRope::mnemonics() {
  static const std::vector<std::string> names = {"rope"};
  return names;
}

VectorWork VecRope::work() const {
  VectorWork work;
  work.kind = VectorKind::rope;
  work.rows = rows;
  work.cols = cols;
  // cols / head_dim heads of rotary_dim rotated columns each (check() makes head_dim divide cols).
  work.rope_rotated_cols = head_dim > 0 ? cols / head_dim * rotary_dim : 0;
  return work;
}

VecRope VecRope::read(LineReader& in, std::string_view, int operation_column) {
  VecRope op;
  uint32_t given = 0;
  while (!in.at_operation_end()) {
    switch (static_cast<RopeOption>(in.read_option(option_names(), 0, given, "vec rope", kRopeSyntax))) {
      case key_x:
        op.x_address = in.read_unsigned("the SRAM address of X");
        break;
      case key_y:
        op.y_address = in.read_unsigned("the SRAM address of the cos/sin table rows");
        break;
      case key_o:
        op.o_address = in.read_unsigned("the SRAM address of O");
        break;
      case key_rows:
        op.rows = in.read_positive("rows");
        break;
      case key_cols:
        op.cols = in.read_positive("cols");
        break;
      case key_dtype:
        op.dtype = in.read_dtype("dtype", all_dtype_names());
        break;
      case key_head_dim:
        op.head_dim = in.read_positive("head_dim");
        break;
      case key_rotary_dim:
        op.rotary_dim = in.read_positive("rotary_dim");
        break;
      case key_style:
        op.interleaved =
            in.read_name_list("the pairing (half or interleaved)", style_names()).at(0) == "interleaved";
        break;
      case key_x_pitch:
        op.x_pitch_bytes = in.read_size("the row pitch of X in bytes");
        break;
      case key_y_pitch:
        op.y_pitch_bytes = in.read_size("the row pitch of Y in bytes");
        break;
      case key_o_pitch:
        op.o_pitch_bytes = in.read_size("the row pitch of O in bytes");
        break;
    }
  }
  in.require_options(option_names(), given, kRequired, operation_column, "vec rope", kRopeSyntax);
  return op;
}

void VecRope::write(LineWriter& out) const {
  out.put("rope x=0x{:x} y=0x{:x} o=0x{:x} rows={} cols={} dtype={} head_dim={} rotary_dim={} style={}",
          x_address, y_address, o_address, rows, cols, name_of(dtype), head_dim, rotary_dim,
          interleaved ? "interleaved" : "half");
  out.write_pitch("x_pitch", x_pitch_bytes);
  out.write_pitch("y_pitch", y_pitch_bytes);
  out.write_pitch("o_pitch", o_pitch_bytes);
}

void VecRope::check(const InstructionChecks& checks) const {
  const auto& vector = checks.spec().core.vector;
  if (!vector)
    checks.fail("the machine has no vector unit", "give its cores one: core.vector (docs/vector-unit.md)");
  if (dtype != DType::fp32 && dtype != DType::bf16 && dtype != DType::fp16)
    checks.fail(
        fmt::format("a vector instruction reads and stores fp32, bf16 or fp16, not {}", name_of(dtype)));
  if (cols % head_dim != 0)
    checks.fail(fmt::format("cols {} is not a whole number of heads of head_dim {}", cols, head_dim),
                "a row of X is heads * head_dim columns");
  if (rotary_dim % 2 != 0 || rotary_dim > head_dim)
    checks.fail(
        fmt::format("rotary_dim must be even and at most head_dim ({}), got {}", head_dim, rotary_dim),
        "the rotation takes pairs of each head's first rotary_dim columns");
  if (const std::string problem = vector_work_problem(*vector, work()); !problem.empty())
    checks.fail(problem);
  // The tiles in SRAM: bounded by the SRAM before the products are formed, so they fit int64.
  const int64_t element = size_bytes(dtype);
  const int64_t sram = checks.spec().core.sram.bytes;
  if (rows > sram || cols > sram / 4) checks.fail("the tiles are larger than the core's SRAM");
  checks.sram_range("operand x", x_address, rows, cols * element, x_pitch_bytes);
  checks.sram_range("table rows y", y_address, rows, rotary_dim * size_bytes(DType::fp32), y_pitch_bytes);
  checks.sram_range("result o", o_address, rows, cols * element, o_pitch_bytes);
}

}  // namespace tessera::arch
