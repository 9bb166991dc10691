#include "arch/isa/vec_op.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "arch/isa/instruction_checks.hpp"
#include "arch/isa/text_reader.hpp"
#include "arch/isa/text_writer.hpp"
#include "arch/isa/vector_kinds/vector_kind_info.hpp"
#include "common/error.hpp"

namespace tessera::arch {

namespace {

// "a vector instruction is written: " and each VecOp kind's syntax: the kinds of the shared tile form first
// ("map|reduce_sum|... x=ADDR ..., then map: ...; softmax: ..."), then each of the others ("; or pool ...").
std::string compose_vec_syntax() {
  std::string shared_kinds, shared_options, own_lines;
  for (const VectorKindInfo& info : vector_kinds()) {
    if (!info.is_vec_op) continue;
    if (!info.shares_tile_syntax) {
      own_lines += fmt::format("; or {} {}", info.mnemonic, info.syntax);
      continue;
    }
    shared_kinds += (shared_kinds.empty() ? "" : "|") + std::string(info.mnemonic);
    if (*info.syntax != '\0')
      shared_options +=
          fmt::format("{}{}: {}", shared_options.empty() ? "" : "; ", info.mnemonic, info.syntax);
  }
  return fmt::format(
      "a vector instruction is written: {} x=ADDR o=ADDR rows=R cols=C dtype=DT [out=DT] [x_pitch=B] "
      "[o_pitch=B], then {}{}",
      shared_kinds, shared_options, own_lines);
}

const std::string& vec_syntax() {
  static const std::string syntax = compose_vec_syntax();
  return syntax;
}

bool reads_tile(VecFn fn) {
  return info_of(fn).operand == FnOperand::tile;
}

// Whether `chain` is empty or only the add of the tile at y.
bool adds_y_at_most(const std::vector<VecFn>& chain) {
  return chain.empty() || chain == std::vector<VecFn>{VecFn::add};
}

}  // namespace

const std::vector<std::string>& VecOp::mnemonics() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> vec_op_kinds;
    for (const VectorKindInfo& info : vector_kinds())
      if (info.is_vec_op) vec_op_kinds.emplace_back(info.mnemonic);
    return vec_op_kinds;
  }();
  return names;
}

bool VecOp::uses_statistics() const {
  const GRole g = info_of(kind).operands.g;
  return g == GRole::statistics_read || g == GRole::statistics_updated;
}

bool VecOp::reads_statistics() const {
  return uses_statistics() && !(info_of(kind).operands.g == GRole::statistics_updated && first);
}

bool VecOp::uses_y() const {
  switch (info_of(kind).operands.y) {
    case YRole::chain_step:
      return std::any_of(chain.begin(), chain.end(), reads_tile);
    case YRole::residual:
      return norm_adds_y();
    case YRole::none:
      break;
  }
  return false;
}

bool VecOp::norm_adds_y() const {
  return info_of(kind).operands.y == YRole::residual && chain == std::vector<VecFn>{VecFn::add};
}

bool VecOp::uses_b() const {
  switch (info_of(kind).operands.b) {
    case BRole::parameter_row:
      return true;
    case BRole::bias_step:
      return std::find(chain.begin(), chain.end(), VecFn::bias) != chain.end();
    case BRole::none:
      break;
  }
  return false;
}

int64_t VecOp::x_rows() const {
  switch (info_of(kind).operands.x_rows) {
    case XRows::pool_input:
      return ih * iw;
    case XRows::parts_of_rows:
      return parts * rows;
    case XRows::rows:
      break;
  }
  return rows;
}

int64_t VecOp::o_cols() const {
  return info_of(kind).operands.o_cols == OutputCols::one ? 1 : cols;
}

VectorWork VecOp::work() const {
  VectorWork work;
  work.kind = kind;
  work.rows = kind == VectorKind::pool ? e * q : rows;
  work.cols = cols;
  for (VecFn fn : chain) {
    work.map_simple_ops += info_of(fn).simple_ops;
    work.map_special_ops += info_of(fn).special_ops;
  }
  if (kind == VectorKind::map) {
    work.map_tile_operands = uses_y() ? 1 : 0;
    work.map_row_operands = uses_b() ? 1 : 0;
  }
  work.norm_adds_tile = norm_adds_y();
  work.softmax_extra_simple_ops = (scale != 1.0 ? 1 : 0) + (causal_shift != kNoCausalMask ? 1 : 0);
  work.pool_window = r * s;
  work.pool_average = average;
  work.online_first = kind == VectorKind::online_softmax && first;
  if (kind == VectorKind::merge_partials || kind == VectorKind::weighted_sum) work.merge_parts = parts;
  work.weighted_adds_tile = kind == VectorKind::weighted_sum && uses_y();
  return work;
}

bool VecOp::operator==(const VecOp& other) const {
  return kind == other.kind && dtype == other.dtype && out_dtype == other.out_dtype &&
         x_address == other.x_address && y_address == other.y_address && g_address == other.g_address &&
         b_address == other.b_address && o_address == other.o_address &&
         x_pitch_bytes == other.x_pitch_bytes && y_pitch_bytes == other.y_pitch_bytes &&
         o_pitch_bytes == other.o_pitch_bytes && rows == other.rows && cols == other.cols &&
         chain == other.chain && scale == other.scale && causal_shift == other.causal_shift &&
         eps == other.eps && ih == other.ih && iw == other.iw && e == other.e && q == other.q &&
         r == other.r && s == other.s && stride == other.stride && pad_top == other.pad_top &&
         pad_left == other.pad_left && average == other.average && first == other.first &&
         by_inverse_sum == other.by_inverse_sum && parts == other.parts;
}

namespace {

// The value of `option` into `op`.
void read_option_value(LineReader& in, vec_option::Option option, VecOp& op) {
  switch (option) {
    case vec_option::x:
      op.x_address = in.read_unsigned("the SRAM address of X");
      break;
    case vec_option::y:
      op.y_address = in.read_unsigned("the SRAM address of Y");
      break;
    case vec_option::g:
      op.g_address =
          in.read_unsigned(info_of(op.kind).operands.g == GRole::weights ? "the SRAM address of the weights"
                                                                         : "the SRAM address of gamma");
      break;
    case vec_option::b:
      op.b_address = in.read_unsigned(info_of(op.kind).operands.b == BRole::bias_step
                                          ? "the SRAM address of the bias row"
                                          : "the SRAM address of beta");
      break;
    case vec_option::o:
      op.o_address = in.read_unsigned("the SRAM address of O");
      break;
    case vec_option::rows:
      op.rows = in.read_positive("rows");
      break;
    case vec_option::cols:
      op.cols = in.read_positive("cols");
      break;
    case vec_option::dtype:
      op.dtype = in.read_dtype("dtype", all_dtype_names());
      break;
    case vec_option::out:
      op.out_dtype = in.read_dtype("out", all_dtype_names());
      break;
    case vec_option::x_pitch:
      op.x_pitch_bytes = in.read_size("the row pitch of X in bytes");
      break;
    case vec_option::y_pitch:
      op.y_pitch_bytes = in.read_size("the row pitch of Y in bytes");
      break;
    case vec_option::o_pitch:
      op.o_pitch_bytes = in.read_size("the row pitch of O in bytes");
      break;
    case vec_option::fn:
      for (const std::string& name : in.read_name_list(
               "the chain's functions", element_fn_names(kInVectorChain),
               "a chain is element functions joined by '+' (fn=bias+gelu); an epilogue's residual "
               "is the chain's add of the tile at y"))
        op.chain.push_back(*element_fn_named(name, kInVectorChain));
      break;
    case vec_option::scale:
      op.scale = in.read_real("scale");
      break;
    case vec_option::causal_shift:
      op.causal_shift = in.read_signed("causal_shift");
      break;
    case vec_option::eps:
      op.eps = in.read_real("eps");
      break;
    case vec_option::ih:
      op.ih = in.read_positive("ih");
      break;
    case vec_option::iw:
      op.iw = in.read_positive("iw");
      break;
    case vec_option::e:
      op.e = in.read_positive("e");
      break;
    case vec_option::q:
      op.q = in.read_positive("q");
      break;
    case vec_option::r:
      op.r = in.read_positive("r");
      break;
    case vec_option::s:
      op.s = in.read_positive("s");
      break;
    case vec_option::stride:
      op.stride = in.read_positive("stride");
      break;
    case vec_option::pad_top:
      op.pad_top = in.read_size("pad_top");
      break;
    case vec_option::pad_left:
      op.pad_left = in.read_size("pad_left");
      break;
    case vec_option::mode:
      op.average = in.read_name_list("the pooling mode (max or avg)", {"max", "avg"}).at(0) == "avg";
      break;
    case vec_option::first:
      op.first =
          in.read_name_list("whether this is the rows' first K/V tile (yes or no)", {"no", "yes"}).at(0) ==
          "yes";
      break;
    case vec_option::parts:
      op.parts = in.read_positive("parts");
      break;
    case vec_option::by:
      op.by_inverse_sum =
          in.read_name_list("the factor (alpha or inverse_sum)", {"alpha", "inverse_sum"}).at(0) ==
          "inverse_sum";
      break;
    case vec_option::count:
      break;
  }
}

// The tiles in SRAM: sizes are bounded by vector_work_problem and the SRAM, so these products fit int64.
void check_sram_ranges(const VecOp& op, const InstructionChecks& checks) {
  const VectorOperandRoles& operands = info_of(op.kind).operands;
  const int64_t element = size_bytes(op.dtype), out_element = size_bytes(op.out_dtype);
  const int64_t sram = checks.spec().core.sram.bytes;
  if (op.x_rows() > sram || op.cols > sram / 4) checks.fail("the tiles are larger than the core's SRAM");
  checks.sram_range("operand x", op.x_address, op.x_rows(), op.cols * element, op.x_pitch_bytes);
  checks.sram_range("result o", op.o_address, op.rows, op.o_cols() * out_element, op.o_pitch_bytes);
  if (op.uses_y()) checks.sram_range("operand y", op.y_address, op.rows, op.cols * element, op.y_pitch_bytes);
  if (operands.b == BRole::bias_step && op.uses_b())
    checks.sram_range("bias row b", op.b_address, 1, op.cols * element, 0);
  if (operands.g == GRole::parameter_row) checks.sram_range("gamma", op.g_address, 1, op.cols * element, 0);
  if (operands.b == BRole::parameter_row) checks.sram_range("beta", op.b_address, 1, op.cols * element, 0);
  if (op.uses_statistics())
    checks.sram_range("running statistics g", op.g_address, op.statistics_rows(),
                      VecOp::kRowStatistics * size_bytes(DType::fp32), 0);
  // parts <= kMaxMergeParts (vector_work_problem) and rows <= the SRAM: the product fits int64.
  if (operands.g == GRole::weights)
    checks.sram_range("gate weights g", op.g_address, op.rows, op.parts * size_bytes(DType::fp32), 0);
}

}  // namespace

VecOp VecOp::read(LineReader& in, std::string_view mnemonic, int operation_column) {
  VecOp op;
  const auto& kinds = vector_kinds();
  const auto named = std::find_if(kinds.begin(), kinds.end(), [&](const VectorKindInfo& info) {
    return info.is_vec_op && info.mnemonic == mnemonic;
  });
  TESSERA_ASSERT(named != kinds.end(),
                 "an operation word is checked against mnemonics_of(queue) before it is read");
  op.kind = named->kind;
  const VectorKindInfo& info = info_of(op.kind);
  const std::string operation = std::string("vec ") + std::string(mnemonic);
  const char* syntax = vec_syntax().c_str();
  VecOptionSet given = 0;
  while (!in.at_operation_end()) {
    const int option_column = in.column();
    const auto option =
        static_cast<vec_option::Option>(in.read_option(vec_option_names(), 0, given, operation, syntax));
    if (!has(info.allowed(), option))
      in.fail(option_column, fmt::format("{} takes no {}=", operation, vec_option_names()[option]), syntax);
    read_option_value(in, option, op);
  }
  in.require_options(vec_option_names(), given, info.required, operation_column, operation, syntax);
  if (!has(given, vec_option::out)) op.out_dtype = op.dtype;
  if (info.operands.y == YRole::residual && has(given, vec_option::fn) != has(given, vec_option::y))
    in.fail(operation_column,
            fmt::format("{} takes fn=add and y=ADDR together (the tile at y added to X before normalising)",
                        operation),
            syntax);
  if (info.operands.x_rows == XRows::pool_input) op.rows = op.e * op.q;
  // A kind whose chain reads y but takes no fn=: y= is its chain's one step, the add of the tile.
  const bool y_is_the_chain = info.operands.y == YRole::chain_step && !has(info.allowed(), vec_option::fn);
  if (y_is_the_chain && has(given, vec_option::y)) op.chain = {VecFn::add};
  if (y_is_the_chain && has(given, vec_option::y_pitch) && !has(given, vec_option::y))
    in.fail(operation_column, fmt::format("{} takes y_pitch= only with y=ADDR (the tile added)", operation),
            syntax);
  // A chain's steps read the operands they name, at addresses the line must give: without y= or b= the
  // step would read whatever sits at address 0.
  if (info.operands.y == YRole::chain_step && has(info.allowed(), vec_option::fn)) {
    if (op.uses_y() != has(given, vec_option::y))
      in.fail(operation_column,
              op.uses_y()
                  ? fmt::format("{}'s chain reads the tile at y (add, mul, swiglu): y= is missing", operation)
                  : fmt::format("{} gives y= but no step of its chain reads it", operation),
              "give y=ADDR exactly when a step adds, multiplies by or gates with the tile at y");
    if (info.operands.b == BRole::bias_step && op.uses_b() != has(given, vec_option::b))
      in.fail(operation_column,
              op.uses_b() ? fmt::format("{}'s chain adds the bias row at b: b= is missing", operation)
                          : fmt::format("{} gives b= but its chain has no bias step", operation),
              "give b=ADDR exactly when the chain has a bias step");
  }
  return op;
}

// The options in their canonical order; those the kind does not take, and defaults, left out.
void VecOp::write(LineWriter& out) const {
  const VectorKindInfo& info = info_of(kind);
  const VecOptionSet allowed = info.allowed();
  out.put("{} x=0x{:x}", info.mnemonic, x_address);
  if (uses_y()) out.put(" y=0x{:x}", y_address);
  if (info.operands.g != GRole::none) out.put(" g=0x{:x}", g_address);
  if (uses_b()) out.put(" b=0x{:x}", b_address);
  out.put(" o=0x{:x}", o_address);
  if (has(allowed, vec_option::rows)) out.put(" rows={}", rows);
  out.put(" cols={} dtype={}", cols, name_of(dtype));
  if (out_dtype != dtype) out.put(" out={}", name_of(out_dtype));
  out.write_pitch("x_pitch", x_pitch_bytes);
  if (uses_y()) out.write_pitch("y_pitch", y_pitch_bytes);
  out.write_pitch("o_pitch", o_pitch_bytes);
  if (has(info.required, vec_option::fn)) out.put(" fn={}", joined_names(chain));
  if (has(allowed, vec_option::scale) && scale != 1.0) out.put(" scale={}", scale);
  if (has(allowed, vec_option::causal_shift) && causal_shift != kNoCausalMask)
    out.put(" causal_shift={}", causal_shift);
  if (has(allowed, vec_option::first) && first) out.put(" first=yes");
  if (has(allowed, vec_option::by)) out.put(" by={}", by_inverse_sum ? "inverse_sum" : "alpha");
  if (has(allowed, vec_option::parts)) out.put(" parts={}", parts);
  if (has(allowed, vec_option::eps)) out.put(" eps={}", eps);
  if (norm_adds_y()) out.put(" fn=add");
  if (info.operands.x_rows == XRows::pool_input) {
    out.put(" ih={} iw={} e={} q={} r={} s={}", ih, iw, e, q, r, s);
    if (stride != 1) out.put(" stride={}", stride);
    if (pad_top != 0) out.put(" pad_top={}", pad_top);
    if (pad_left != 0) out.put(" pad_left={}", pad_left);
    out.put(" mode={}", average ? "avg" : "max");
  }
}

void VecOp::check(const InstructionChecks& checks) const {
  const VectorKindInfo& info = info_of(kind);
  TESSERA_ASSERT(info.is_vec_op, "a rope is an arch::VecRope and a route an arch::VecRoute, never a VecOp");
  const auto& vector = checks.spec().core.vector;
  if (!vector)
    checks.fail("the machine has no vector unit", "give its cores one: core.vector (docs/vector-unit.md)");
  for (DType type : {dtype, out_dtype})
    if (type != DType::fp32 && type != DType::bf16 && type != DType::fp16)
      checks.fail(
          fmt::format("a vector instruction reads and stores fp32, bf16 or fp16, not {}", name_of(type)));
  if (info.check) info.check(*this, checks);
  if (const std::string problem = vector_work_problem(*vector, work()); !problem.empty())
    checks.fail(problem);
  if (info.operands.x_rows == XRows::parts_of_rows && parts > checks.spec().core.sram.bytes / rows)
    checks.fail(fmt::format("{} parts of {} rows are larger than the core's SRAM", parts, rows));
  for (VecFn fn : chain)
    if (!usable_in(fn, kInVectorChain))
      checks.fail(fmt::format("a vector chain has no step {}", name_of(fn)));
  if (info.operands.y == YRole::chain_step && !has(info.allowed(), vec_option::fn) && !adds_y_at_most(chain))
    checks.fail(fmt::format("a {}'s only step is the add of the tile at y", info.mnemonic));
  check_sram_ranges(*this, checks);
}

}  // namespace tessera::arch
