#include "arch/isa/vec_op.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "arch/isa/instruction_checks.hpp"
#include "arch/isa/text_reader.hpp"
#include "arch/isa/text_writer.hpp"
#include "common/error.hpp"

namespace tessera::arch {

namespace {

constexpr const char* kVecSyntax =
    "a vector instruction is written: map|reduce_sum|reduce_max|softmax|layernorm|rmsnorm x=ADDR o=ADDR "
    "rows=R cols=C dtype=DT [out=DT] [x_pitch=B] [o_pitch=B], then map: fn=F[+F...] [y=ADDR] [y_pitch=B] "
    "[b=ADDR] [scale=S]; "
    "softmax: "
    "[scale=S] [causal_shift=N]; layernorm: g=ADDR b=ADDR eps=E [fn=add y=ADDR [y_pitch=B]]; rmsnorm: g=ADDR "
    "eps=E [fn=add y=ADDR [y_pitch=B]]; or pool x=ADDR "
    "o=ADDR "
    "cols=C dtype=DT ih=H iw=W e=E q=Q r=R s=S [stride=N] [pad_top=N] [pad_left=N] mode=max|avg; or "
    "online_softmax x=ADDR o=ADDR g=ADDR rows=R cols=C dtype=DT [out=DT] [scale=S] [causal_shift=N] "
    "[first=yes]; or scale_rows x=ADDR o=ADDR g=ADDR rows=R cols=C dtype=DT [out=DT] by=alpha|inverse_sum; "
    "or "
    "merge_partials x=ADDR o=ADDR g=ADDR rows=R cols=C dtype=DT [out=DT] [x_pitch=B] parts=N; or "
    "weighted_sum "
    "x=ADDR g=ADDR o=ADDR rows=R cols=C parts=P dtype=DT [out=DT] [y=ADDR] [x_pitch=B] [o_pitch=B] "
    "[y_pitch=B]";

enum VecOption : size_t {
  key_x,
  key_y,
  key_g,
  key_b,
  key_o,
  key_rows,
  key_cols,
  key_dtype,
  key_x_pitch,
  key_y_pitch,
  key_o_pitch,
  key_fn,
  key_scale,
  key_causal_shift,
  key_eps,
  key_ih,
  key_iw,
  key_e,
  key_q,
  key_r,
  key_s,
  key_stride,
  key_pad_top,
  key_pad_left,
  key_mode,
  key_out,
  key_first,
  key_by,
  key_parts,
};

const std::vector<std::string>& option_names() {
  static const std::vector<std::string> names = {
      "x",       "y",       "g",       "b",  "o",     "rows",         "cols",    "dtype",
      "x_pitch", "y_pitch", "o_pitch", "fn", "scale", "causal_shift", "eps",     "ih",
      "iw",      "e",       "q",       "r",  "s",     "stride",       "pad_top", "pad_left",
      "mode",    "out",     "first",   "by", "parts"};
  return names;
}

constexpr uint32_t bit(VecOption option) {
  return uint32_t{1} << option;
}

// The options each kind requires, and those it may take.
uint32_t required_of(VectorKind kind) {
  const uint32_t tile = bit(key_x) | bit(key_o) | bit(key_rows) | bit(key_cols) | bit(key_dtype);
  switch (kind) {
    case VectorKind::map:
      return tile | bit(key_fn);
    case VectorKind::layernorm:
      return tile | bit(key_g) | bit(key_b) | bit(key_eps);
    case VectorKind::rmsnorm:
      return tile | bit(key_g) | bit(key_eps);
    case VectorKind::pool:
      return bit(key_x) | bit(key_o) | bit(key_cols) | bit(key_dtype) | bit(key_ih) | bit(key_iw) |
             bit(key_e) | bit(key_q) | bit(key_r) | bit(key_s) | bit(key_mode);
    case VectorKind::online_softmax:
      return tile | bit(key_g);
    case VectorKind::scale_rows:
      return tile | bit(key_g) | bit(key_by);
    case VectorKind::merge_partials:
    case VectorKind::weighted_sum:
      return tile | bit(key_g) | bit(key_parts);
    default:
      return tile;
  }
}

uint32_t allowed_of(VectorKind kind) {
  const uint32_t pitches = bit(key_x_pitch) | bit(key_o_pitch) | bit(key_out);
  switch (kind) {
    case VectorKind::map:  // scale=: the factor of a `scale` step
      return required_of(kind) | pitches | bit(key_y) | bit(key_y_pitch) | bit(key_b) | bit(key_scale);
    case VectorKind::softmax:
      return required_of(kind) | pitches | bit(key_scale) | bit(key_causal_shift);
    case VectorKind::online_softmax:
      return required_of(kind) | pitches | bit(key_scale) | bit(key_causal_shift) | bit(key_first);
    case VectorKind::pool:
      return required_of(kind) | pitches | bit(key_stride) | bit(key_pad_top) | bit(key_pad_left);
    case VectorKind::layernorm:
    case VectorKind::rmsnorm:  // fn=add: the tile at y added to X before normalising (a residual)
      return required_of(kind) | pitches | bit(key_fn) | bit(key_y) | bit(key_y_pitch);
    case VectorKind::weighted_sum:  // y=: a tile of the output's shape added
      return required_of(kind) | pitches | bit(key_y) | bit(key_y_pitch);
    default:
      return required_of(kind) | pitches;
  }
}

}  // namespace

const std::vector<std::string>& VecOp::mnemonics() {
  static const std::vector<std::string> names = {
      "map",  "reduce_sum",     "reduce_max", "softmax",        "layernorm",   "rmsnorm",
      "pool", "online_softmax", "scale_rows", "merge_partials", "weighted_sum"};
  return names;
}

namespace {
bool reads_tile(VecFn fn) {
  return info_of(fn).operand == FnOperand::tile;
}
}  // namespace

bool VecOp::uses_statistics() const {
  return kind == VectorKind::online_softmax || kind == VectorKind::scale_rows ||
         kind == VectorKind::merge_partials;
}

bool VecOp::uses_y() const {
  return (kind == VectorKind::map || kind == VectorKind::weighted_sum || norm_adds_y()) &&
         std::any_of(chain.begin(), chain.end(), reads_tile);
}

bool VecOp::norm_adds_y() const {
  return (kind == VectorKind::layernorm || kind == VectorKind::rmsnorm) &&
         chain == std::vector<VecFn>{VecFn::add};
}

bool VecOp::uses_b() const {
  return kind == VectorKind::layernorm ||
         (kind == VectorKind::map && std::find(chain.begin(), chain.end(), VecFn::bias) != chain.end());
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

VecOp VecOp::read(LineReader& in, std::string_view mnemonic, int operation_column) {
  VecOp op;
  const auto& kinds = mnemonics();
  op.kind = static_cast<VectorKind>(std::find(kinds.begin(), kinds.end(), mnemonic) - kinds.begin());
  const std::string operation = std::string("vec ") + std::string(mnemonic);
  const uint32_t allowed = allowed_of(op.kind);
  uint32_t given = 0;
  while (!in.at_operation_end()) {
    const int option_column = in.column();
    const auto option =
        static_cast<VecOption>(in.read_option(option_names(), 0, given, operation, kVecSyntax));
    if ((allowed & bit(option)) == 0)
      in.fail(option_column, fmt::format("{} takes no {}=", operation, option_names()[option]), kVecSyntax);
    switch (option) {
      case key_x:
        op.x_address = in.read_unsigned("the SRAM address of X");
        break;
      case key_y:
        op.y_address = in.read_unsigned("the SRAM address of Y");
        break;
      case key_g:
        op.g_address =
            in.read_unsigned(op.kind == VectorKind::weighted_sum ? "the SRAM address of the weights"
                                                                 : "the SRAM address of gamma");
        break;
      case key_b:
        op.b_address = in.read_unsigned(op.kind == VectorKind::map ? "the SRAM address of the bias row"
                                                                   : "the SRAM address of beta");
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
      case key_out:
        op.out_dtype = in.read_dtype("out", all_dtype_names());
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
      case key_fn:
        for (const std::string& name : in.read_name_list(
                 "the chain's functions", element_fn_names(kInVectorChain),
                 "a chain is element functions joined by '+' (fn=bias+gelu); an epilogue's residual "
                 "is the chain's add of the tile at y"))
          op.chain.push_back(*element_fn_named(name, kInVectorChain));
        break;
      case key_scale:
        op.scale = in.read_real("scale");
        break;
      case key_causal_shift:
        op.causal_shift = in.read_signed("causal_shift");
        break;
      case key_eps:
        op.eps = in.read_real("eps");
        break;
      case key_ih:
        op.ih = in.read_positive("ih");
        break;
      case key_iw:
        op.iw = in.read_positive("iw");
        break;
      case key_e:
        op.e = in.read_positive("e");
        break;
      case key_q:
        op.q = in.read_positive("q");
        break;
      case key_r:
        op.r = in.read_positive("r");
        break;
      case key_s:
        op.s = in.read_positive("s");
        break;
      case key_stride:
        op.stride = in.read_positive("stride");
        break;
      case key_pad_top:
        op.pad_top = in.read_size("pad_top");
        break;
      case key_pad_left:
        op.pad_left = in.read_size("pad_left");
        break;
      case key_mode:
        op.average = in.read_name_list("the pooling mode (max or avg)", {"max", "avg"}).at(0) == "avg";
        break;
      case key_first:
        op.first =
            in.read_name_list("whether this is the rows' first K/V tile (yes or no)", {"no", "yes"}).at(0) ==
            "yes";
        break;
      case key_parts:
        op.parts = in.read_positive("parts");
        break;
      case key_by:
        op.by_inverse_sum =
            in.read_name_list("the factor (alpha or inverse_sum)", {"alpha", "inverse_sum"}).at(0) ==
            "inverse_sum";
        break;
    }
  }
  in.require_options(option_names(), given, required_of(op.kind), operation_column, operation, kVecSyntax);
  if ((given & bit(key_out)) == 0) op.out_dtype = op.dtype;
  if ((op.kind == VectorKind::layernorm || op.kind == VectorKind::rmsnorm) &&
      ((given & bit(key_fn)) != 0) != ((given & bit(key_y)) != 0))
    in.fail(operation_column,
            fmt::format("{} takes fn=add and y=ADDR together (the tile at y added to X before normalising)",
                        operation),
            kVecSyntax);
  if (op.kind == VectorKind::pool) op.rows = op.e * op.q;
  if (op.kind == VectorKind::weighted_sum && (given & bit(key_y)) != 0) op.chain = {VecFn::add};
  if (op.kind == VectorKind::weighted_sum && (given & bit(key_y_pitch)) != 0 && (given & bit(key_y)) == 0)
    in.fail(operation_column, fmt::format("{} takes y_pitch= only with y=ADDR (the tile added)", operation),
            kVecSyntax);
  return op;
}

void VecOp::write(LineWriter& out) const {
  out.put("{} x=0x{:x}", mnemonics()[static_cast<size_t>(kind)], x_address);
  if (uses_y()) out.put(" y=0x{:x}", y_address);
  if (kind == VectorKind::layernorm || kind == VectorKind::rmsnorm || uses_statistics() ||
      kind == VectorKind::weighted_sum)
    out.put(" g=0x{:x}", g_address);
  if (uses_b()) out.put(" b=0x{:x}", b_address);
  out.put(" o=0x{:x}", o_address);
  if (kind != VectorKind::pool) out.put(" rows={}", rows);
  out.put(" cols={} dtype={}", cols, name_of(dtype));
  if (out_dtype != dtype) out.put(" out={}", name_of(out_dtype));
  out.write_pitch("x_pitch", x_pitch_bytes);
  if (uses_y()) out.write_pitch("y_pitch", y_pitch_bytes);
  out.write_pitch("o_pitch", o_pitch_bytes);
  if (kind == VectorKind::map) {
    out.put(" fn={}", joined_names(chain));
    if (scale != 1.0) out.put(" scale={}", scale);
  }
  const bool softmax_like = kind == VectorKind::softmax || kind == VectorKind::online_softmax;
  if (softmax_like && scale != 1.0) out.put(" scale={}", scale);
  if (softmax_like && causal_shift != kNoCausalMask) out.put(" causal_shift={}", causal_shift);
  if (kind == VectorKind::online_softmax && first) out.put(" first=yes");
  if (kind == VectorKind::scale_rows) out.put(" by={}", by_inverse_sum ? "inverse_sum" : "alpha");
  if (kind == VectorKind::merge_partials || kind == VectorKind::weighted_sum) out.put(" parts={}", parts);
  if (kind == VectorKind::layernorm || kind == VectorKind::rmsnorm) out.put(" eps={}", eps);
  if (norm_adds_y()) out.put(" fn=add");
  if (kind == VectorKind::pool) {
    out.put(" ih={} iw={} e={} q={} r={} s={}", ih, iw, e, q, r, s);
    if (stride != 1) out.put(" stride={}", stride);
    if (pad_top != 0) out.put(" pad_top={}", pad_top);
    if (pad_left != 0) out.put(" pad_left={}", pad_left);
    out.put(" mode={}", average ? "avg" : "max");
  }
}

void VecOp::check(const InstructionChecks& checks) const {
  TESSERA_ASSERT(kind != VectorKind::rope && kind != VectorKind::route,
                 "a rope is an arch::VecRope and a route an arch::VecRoute, never a VecOp");
  const auto& vector = checks.spec().core.vector;
  if (!vector)
    checks.fail("the machine has no vector unit", "give its cores one: core.vector (docs/vector-unit.md)");
  for (DType type : {dtype, out_dtype})
    if (type != DType::fp32 && type != DType::bf16 && type != DType::fp16)
      checks.fail(
          fmt::format("a vector instruction reads and stores fp32, bf16 or fp16, not {}", name_of(type)));
  if (kind == VectorKind::map) {
    const auto readers_of_y = std::count_if(chain.begin(), chain.end(), reads_tile);
    if (readers_of_y > 1)
      checks.fail("a chain reads y in at most one step", "split the chain into two vec map instructions");
    if (std::count(chain.begin(), chain.end(), VecFn::bias) > 1)
      checks.fail("a chain adds the bias row at b in at most one step",
                  "split the chain into two vec map instructions");
    const bool scales = std::find(chain.begin(), chain.end(), VecFn::scale) != chain.end();
    if (!scales && scale != 1.0)
      checks.fail(fmt::format("scale={} has no scale step to apply it", scale), "add scale to fn=");
    if (scales && !std::isfinite(scale)) checks.fail(fmt::format("scale must be finite, got {}", scale));
  }
  if ((kind == VectorKind::layernorm || kind == VectorKind::rmsnorm) && !chain.empty() && !norm_adds_y())
    checks.fail(fmt::format("a {}'s fn= is add (the tile at y added to X before normalising), nothing else",
                            name_of(kind)));
  if ((kind == VectorKind::layernorm || kind == VectorKind::rmsnorm) && !(eps > 0 && std::isfinite(eps)))
    checks.fail(fmt::format("eps must be a positive number, got {}", eps));
  if ((kind == VectorKind::softmax || kind == VectorKind::online_softmax) &&
      !(scale > 0 && std::isfinite(scale)))
    checks.fail(fmt::format("scale must be a positive number, got {}", scale));
  // Every output window of a pool must see a pixel of the tile: padding (above, left, and past the tile's
  // last row or column) takes no part in a max and counts as zero in an average.
  if (kind == VectorKind::pool && (pad_top >= r || pad_left >= s || (e - 1) * stride - pad_top >= ih ||
                                   (q - 1) * stride - pad_left >= iw))
    checks.fail(
        fmt::format("an e x q = {}x{} output of a {}x{}/{} window (pad_top {}, pad_left {}) has windows "
                    "outside the {}x{} input tile",
                    e, q, r, s, stride, pad_top, pad_left, ih, iw));
  if (kind == VectorKind::weighted_sum && parts > kMaxMergeParts)
    checks.fail(fmt::format("a weighted_sum takes at most {} parts, got {}", kMaxMergeParts, parts));
  if (const std::string problem = vector_work_problem(*vector, work()); !problem.empty())
    checks.fail(problem);
  if ((kind == VectorKind::merge_partials || kind == VectorKind::weighted_sum) &&
      parts > checks.spec().core.sram.bytes / rows)
    checks.fail(fmt::format("{} parts of {} rows are larger than the core's SRAM", parts, rows));
  for (VecFn fn : chain)
    if (!usable_in(fn, kInVectorChain))
      checks.fail(fmt::format("a vector chain has no step {}", name_of(fn)));
  if (kind == VectorKind::weighted_sum && !(chain.empty() || chain == std::vector<VecFn>{VecFn::add}))
    checks.fail("a weighted_sum's only step is the add of the tile at y");
  // The tiles in SRAM: sizes are bounded by vector_work_problem and the SRAM, so these products fit int64.
  const int64_t element = size_bytes(dtype), out_element = size_bytes(out_dtype);
  const int64_t sram = checks.spec().core.sram.bytes;
  if (x_rows() > sram || cols > sram / 4) checks.fail("the tiles are larger than the core's SRAM");
  checks.sram_range("operand x", x_address, x_rows(), cols * element, x_pitch_bytes);
  checks.sram_range("result o", o_address, rows, o_cols() * out_element, o_pitch_bytes);
  if (uses_y()) checks.sram_range("operand y", y_address, rows, cols * element, y_pitch_bytes);
  if (kind == VectorKind::map && uses_b()) checks.sram_range("bias row b", b_address, 1, cols * element, 0);
  if (kind == VectorKind::layernorm || kind == VectorKind::rmsnorm)
    checks.sram_range("gamma", g_address, 1, cols * element, 0);
  if (kind == VectorKind::layernorm) checks.sram_range("beta", b_address, 1, cols * element, 0);
  if (uses_statistics())
    checks.sram_range("running statistics g", g_address, statistics_rows(),
                      kRowStatistics * size_bytes(DType::fp32), 0);
  // parts <= kMaxMergeParts (vector_work_problem) and rows <= the SRAM: the product fits int64.
  if (kind == VectorKind::weighted_sum)
    checks.sram_range("gate weights g", g_address, rows, parts * size_bytes(DType::fp32), 0);
}

}  // namespace tessera::arch
