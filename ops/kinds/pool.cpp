#include "ops/kinds/pool.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "ops/input_generator.hpp"
#include "ops/kinds/spatial.hpp"
#include "ops/op.hpp"

namespace tessera::ops {

namespace {

const std::vector<std::string>& mode_names() {
  static const std::vector<std::string> names = {"max", "avg"};
  return names;
}

class PoolKind : public OpKindOf<PoolShape> {
 public:
  const char* name() const override { return "pool"; }

  std::vector<TensorDesc> tensors(const Op& op) const override {
    const PoolShape& pool = *op.as<PoolShape>();
    const auto index = static_cast<uint32_t>(op.index);
    return {
        {"X", op.dtype, pool.n * pool.h * pool.w, pool.c, tensor_id(index, 0), false},
        {"O", accumulator_of(op.dtype), pool.n * pool.p() * pool.q(), pool.c, 0, true},
    };
  }

  std::vector<double> reference(const Op& op, const std::vector<HostTensor>& inputs, int) const override {
    const PoolShape& pool = *op.as<PoolShape>();
    const HostTensor& x = inputs.at(0);
    const int64_t p = pool.p(), q = pool.q();
    std::vector<double> out(static_cast<size_t>(pool.n * p * q * pool.c));
    for (int64_t image = 0; image < pool.n; ++image)
      for (int64_t y = 0; y < p; ++y)
        for (int64_t z = 0; z < q; ++z)
          for (int64_t channel = 0; channel < pool.c; ++channel) {
            double best = -INFINITY, sum = 0;
            for (int64_t rr = 0; rr < pool.r; ++rr)
              for (int64_t ss = 0; ss < pool.s; ++ss) {
                const int64_t iy = y * pool.stride + rr - pool.pad, ix = z * pool.stride + ss - pool.pad;
                if (iy < 0 || iy >= pool.h || ix < 0 || ix >= pool.w) continue;
                const double value = x.value(((image * pool.h + iy) * pool.w + ix) * pool.c + channel);
                best = std::max(best, value);
                sum += value;
              }
            out[static_cast<size_t>(((image * p + y) * q + z) * pool.c + channel)] =
                pool.mode == PoolMode::max ? best : sum / static_cast<double>(pool.r * pool.s);
          }
    return out;
  }

 protected:
  void visit_fields(PoolShape& pool, FieldVisitor& visitor) const override {
    visitor.integer("n", pool.n, IntegerRule::positive, 1);
    visitor.integer("c", pool.c, IntegerRule::positive, std::nullopt);
    visitor.integer("h", pool.h, IntegerRule::positive, std::nullopt);
    visitor.integer("w", pool.w, IntegerRule::positive, std::nullopt);
    visitor.integer("r", pool.r, IntegerRule::positive, std::nullopt);
    visitor.integer("s", pool.s, IntegerRule::positive, std::nullopt);
    visitor.integer("stride", pool.stride, IntegerRule::positive, 1);
    visitor.integer("pad", pool.pad, IntegerRule::nonnegative, 0);
    visit_choice(visitor, "mode", pool.mode, mode_names());
  }

  void check_fields(const PoolShape& pool, const FieldChecks& checks) const override {
    check_spatial({{"h", pool.h},
                   {"w", pool.w},
                   {"r", pool.r},
                   {"s", pool.s},
                   {"stride", pool.stride},
                   {"pad", pool.pad}},
                  checks);
    if (pool.r > pool.h + 2 * pool.pad || pool.s > pool.w + 2 * pool.pad)
      checks.fail("r",
                  fmt::format("the {}x{} window is larger than the padded {}x{} input", pool.r, pool.s,
                              pool.h + 2 * pool.pad, pool.w + 2 * pool.pad),
                  "a window fits its padded input: a smaller r and s, or pad (at most half the window)");
    if (2 * pool.pad > std::min(pool.r, pool.s))
      checks.fail("pad", fmt::format("pad {} is more than half the {}x{} window", pool.pad, pool.r, pool.s),
                  "a window would see padding only");
  }

  std::string text_of(const PoolShape& pool) const override {
    return fmt::format("{} {}x{}/{} p{} on {}x{}x{}x{}", mode_names()[static_cast<size_t>(pool.mode)], pool.r,
                       pool.s, pool.stride, pool.pad, pool.n, pool.h, pool.w, pool.c);
  }

  int64_t macs_of(const PoolShape&) const override { return 0; }
};

}  // namespace

std::unique_ptr<OpKind> make_pool_kind() {
  return std::make_unique<PoolKind>();
}

}  // namespace tessera::ops
