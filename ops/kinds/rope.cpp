#include "ops/kinds/rope.hpp"

#include <fmt/format.h>

#include <cmath>

#include "ops/input_generator.hpp"
#include "ops/kinds/vector_shape.hpp"
#include "ops/op.hpp"

namespace tessera::ops {

namespace {

// Past these the tensors' element counts (and a position's angle) stop fitting what the simulator and the
// float64 reference handle exactly: every product below is checked in double against them.
constexpr double kMaxElements = 0x1p40;
constexpr double kMaxPosition = 0x1p40;

class RopeKind : public OpKindOf<RopeShape> {
 public:
  const char* name() const override { return "rope"; }
  const std::vector<std::string>& dtype_names() const override { return float_dtype_names(); }

  // X, the cos/sin table T (fp32, computed rather than random), O.
  std::vector<TensorDesc> tensors(const Op& op) const override {
    const RopeShape& rope = *op.as<RopeShape>();
    const auto index = static_cast<uint32_t>(op.index);
    return {{"X", op.dtype, rope.rows(), rope.cols(), tensor_id(index, 0), false},
            {"T", DType::fp32, rope.seq, rope.rotary(), tensor_id(index, 1), false,
             RopeTableFill{rope.position, rope.base}},
            {"O", op.dtype, rope.rows(), rope.cols(), 0, true}};
  }

  // In float64 from X's stored values, with the angles' cos and sin computed here (not read from the fp32
  // table T): the table's rounding is part of the error the numerics check measures.
  std::vector<double> reference(const Op& op, const std::vector<HostTensor>& inputs, int) const override {
    const RopeShape& rope = *op.as<RopeShape>();
    const HostTensor& x = inputs.at(0);
    const int64_t cols = rope.cols(), rotary = rope.rotary(), half = rotary / 2;
    std::vector<double> out(static_cast<size_t>(rope.rows() * cols));
    for (int64_t i = 0; i < rope.rows() * cols; ++i) out[static_cast<size_t>(i)] = x.value(i);
    for (int64_t row = 0; row < rope.rows(); ++row) {
      const int64_t position = rope.position + row % rope.seq;
      for (int64_t pair = 0; pair < half; ++pair) {
        const double angle = rope_angle(rope.base, rotary, pair, position);
        const double c = std::cos(angle), s = std::sin(angle);
        // The pair's two columns within a head.
        const int64_t first = rope.style == RopeStyle::half ? pair : 2 * pair;
        const int64_t second = rope.style == RopeStyle::half ? pair + half : 2 * pair + 1;
        for (int64_t head = 0; head < rope.heads; ++head) {
          const int64_t at = row * cols + head * rope.head_dim;
          const double a = x.value(at + first), b = x.value(at + second);
          out[static_cast<size_t>(at + first)] = a * c - b * s;
          out[static_cast<size_t>(at + second)] = b * c + a * s;
        }
      }
    }
    return out;
  }

 protected:
  void visit_fields(RopeShape& rope, FieldVisitor& visitor) const override {
    visitor.integer("batch", rope.batch, IntegerRule::positive, 1);
    visitor.integer("seq", rope.seq, IntegerRule::positive, std::nullopt);
    visitor.integer("heads", rope.heads, IntegerRule::positive, std::nullopt);
    visitor.integer("head_dim", rope.head_dim, IntegerRule::positive, std::nullopt);
    visitor.integer("rotary_dim", rope.rotary_dim, IntegerRule::nonnegative, 0);  // 0: head_dim
    visitor.integer("position", rope.position, IntegerRule::nonnegative, 0);
    visitor.real("base", rope.base, RealRule::any, 10000.0);
    visit_choice(visitor, "style", rope.style, rope_style_names(), std::optional<RopeStyle>(RopeStyle::half));
  }
  void check_fields(const RopeShape& rope, const FieldChecks& checks) const override {
    if (rope.head_dim % 2 != 0)
      checks.fail("head_dim",
                  fmt::format("head_dim must be even (the rotation takes pairs), got {}", rope.head_dim),
                  "heads of rotary embeddings have an even size: 64, 128");
    if (rope.rotary_dim % 2 != 0 || rope.rotary_dim > rope.head_dim)
      checks.fail("rotary_dim",
                  fmt::format("rotary_dim must be even and at most head_dim ({}), got {}", rope.head_dim,
                              rope.rotary_dim),
                  "leave it out to rotate the whole head; GPT-NeoX rotates head_dim/4");
    if (!(rope.base > 1) || !std::isfinite(rope.base))
      checks.fail("base", fmt::format("base must be a number greater than 1, got {}", rope.base),
                  "theta is 10000 for Llama-2, 500000 for Llama-3");
    const double rows = static_cast<double>(rope.batch) * static_cast<double>(rope.seq);
    if (rows * static_cast<double>(rope.heads) * static_cast<double>(rope.head_dim) > kMaxElements)
      checks.fail("seq", "X has more than 2^40 elements", "model fewer tokens, heads or sequences");
    if (static_cast<double>(rope.position) + static_cast<double>(rope.seq) > kMaxPosition)
      checks.fail(
          "position",
          fmt::format("positions past 2^40 are not modelled, got {} + {} tokens", rope.position, rope.seq),
          "position is the first token's index in its sequence: at most 2^40 - seq");
  }
  std::string text_of(const RopeShape& rope) const override {
    return fmt::format("b{} s{} h{} d{}{} pos{} base {} {}", rope.batch, rope.seq, rope.heads, rope.head_dim,
                       rope.rotary() != rope.head_dim ? fmt::format(" rot{}", rope.rotary()) : std::string(),
                       rope.position, rope.base, rope_style_names()[static_cast<size_t>(rope.style)]);
  }
  int64_t macs_of(const RopeShape&) const override { return 0; }
};

}  // namespace

const std::vector<std::string>& rope_style_names() {
  static const std::vector<std::string> names = {"half", "interleaved"};
  return names;
}

std::unique_ptr<OpKind> make_rope_kind() {
  return std::make_unique<RopeKind>();
}

}  // namespace tessera::ops
