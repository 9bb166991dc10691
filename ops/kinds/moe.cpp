#include "ops/kinds/moe.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "ops/input_generator.hpp"
#include "ops/kinds/vector_shape.hpp"
#include "ops/op.hpp"
#include "ops/reference.hpp"
#include "ops/reference_kernels.hpp"
#include "ops/vector_kernels.hpp"

namespace tessera::ops {

namespace {

const std::vector<std::string>& activation_names() {
  static const std::vector<std::string> names = {"swiglu", "gelu"};
  return names;
}
const std::vector<std::string>& scoring_names() {
  static const std::vector<std::string> names = {"softmax", "sigmoid"};
  return names;
}
const std::vector<std::string>& skew_names() {
  static const std::vector<std::string> names = {"none", "zipf"};
  return names;
}

// The tensors' slots (input_generator.hpp's tensor ids), fixed whether or not the op has the tensor.
enum Slot : uint32_t { kX, kRouter, kGate, kUp, kDown, kSharedGate, kSharedUp, kSharedDown, kPermutation };

// Past these a dimension overflows what the simulator's tiles and the reference handle, and a tensor has
// more elements than tessera generates (as attention's and rope's limits).
constexpr int64_t kMaxDimension = int64_t{1} << 24;
constexpr double kMaxElements = 0x1p40;
constexpr double kMaxMacs = 0x1p62;

// A token's assignments kept: exact for forced counts (each expert keeps min(count, capacity)); for the
// router's routing, which depends on the seeded inputs, what a balanced router keeps, min(tokens x top_k,
// experts x capacity) — the most any routing keeps.
int64_t kept_assignments(const MoeShape& m) {
  const MoeRoutingRule rule = m.rule();
  const int64_t capacity = rule.capacity();
  if (!rule.forced()) return std::min(m.tokens * m.top_k, m.experts * capacity);
  int64_t kept = 0;
  for (int64_t count : moe_forced_counts(rule)) kept += std::min(count, capacity);
  return kept;
}

// Experts that receive a token: exact for forced counts; for the router's routing min(experts, tokens x
// top_k), as a balanced router's (the seeded routing may leave some out).
int64_t experts_used(const MoeShape& m) {
  const MoeRoutingRule rule = m.rule();
  if (!rule.forced()) return std::min(m.experts, m.tokens * m.top_k);
  const std::vector<int64_t> counts = moe_forced_counts(rule);
  return std::count_if(counts.begin(), counts.end(), [](int64_t count) { return count > 0; });
}

// Multiply-accumulates of one token through one expert's FFN.
int64_t ffn_macs(const MoeShape& m) {
  return (m.swiglu() ? 3 : 2) * m.hidden * m.ffn;
}

// Reads `count` elements of a weight tensor (by slot), from element `first`, as float64.
using WeightReader = std::function<void(uint32_t slot, int64_t first, int64_t count, double* out)>;

// The layer's float64 arithmetic, shared by the whole reference and the sampled one so that both compute
// each output element in the same order: every sum over hidden or ffn in ascending index, the output of a
// token summed over its kept experts in ascending expert index, then the shared experts.
class Layer {
 public:
  Layer(const MoeShape& m, WeightReader weight) : m_(m), weight_(std::move(weight)) {}

  // out[row_of[t]] for the tokens t with row_of[t] >= 0, x[row_of[t]] their rows of X.
  void accumulate(const MoeRouting& routing, const std::vector<int64_t>& row_of, const double* x, double* out,
                  int threads) const {
    std::vector<std::pair<int64_t, double>> rows;  // (row, weight)
    for (int64_t e = 0; e < m_.experts; ++e) {
      rows.clear();
      for (int64_t i = routing.expert_offsets[static_cast<size_t>(e)];
           i < routing.expert_offsets[static_cast<size_t>(e + 1)]; ++i) {
        const int64_t row = row_of[static_cast<size_t>(routing.expert_tokens[static_cast<size_t>(i)])];
        if (row >= 0) rows.emplace_back(row, routing.expert_weights[static_cast<size_t>(i)]);
      }
      run(kGate, kUp, kDown, e, rows, x, out, threads);
    }
    for (int64_t s = 0; s < m_.shared_experts; ++s) {
      rows.clear();
      for (int64_t row : row_of)
        if (row >= 0) rows.emplace_back(row, 1.0);
      std::sort(rows.begin(), rows.end());
      run(kSharedGate, kSharedUp, kSharedDown, s, rows, x, out, threads);
    }
  }

 private:
  static constexpr int64_t kRowsPerChunk = 32;

  // out[row] += weight x FFN(x[row]) for the (row, weight) pairs, in chunks dealt to threads (a row is in one
  // chunk, so chunks write distinct rows).
  void run(uint32_t gate, uint32_t up, uint32_t down, int64_t expert,
           const std::vector<std::pair<int64_t, double>>& rows, const double* x, double* out,
           int threads) const {
    const int64_t n = static_cast<int64_t>(rows.size()), h = m_.hidden, f = m_.ffn;
    const int64_t chunks = (n + kRowsPerChunk - 1) / kRowsPerChunk;
    for_each_row(chunks, threads, [&](int64_t chunk, std::vector<double>& scratch) {
      const int64_t first = chunk * kRowsPerChunk, count = std::min(kRowsPerChunk, n - first);
      scratch.assign(static_cast<size_t>(count * (2 * h + 2 * f) + std::max(h, f)), 0.0);
      double* in = scratch.data();
      double* g = in + count * h;
      double* u = g + count * f;
      double* y = u + count * f;
      double* weights = y + count * h;  // one row of a weight matrix
      for (int64_t i = 0; i < count; ++i)
        std::copy_n(x + rows[static_cast<size_t>(first + i)].first * h, h, in + i * h);
      for (int64_t k = 0; k < h; ++k) {
        if (m_.swiglu()) {
          weight_(gate, (expert * h + k) * f, f, weights);
          for (int64_t i = 0; i < count; ++i)
            for (int64_t c = 0; c < f; ++c) g[i * f + c] += in[i * h + k] * weights[c];
        }
        weight_(up, (expert * h + k) * f, f, weights);
        for (int64_t i = 0; i < count; ++i)
          for (int64_t c = 0; c < f; ++c) u[i * f + c] += in[i * h + k] * weights[c];
      }
      for (int64_t i = 0; i < count * f; ++i)
        u[i] = m_.swiglu() ? activate(ElementFn::silu, g[i]) * u[i] : activate(ElementFn::gelu, u[i]);
      for (int64_t c = 0; c < f; ++c) {
        weight_(down, (expert * f + c) * h, h, weights);
        for (int64_t i = 0; i < count; ++i)
          for (int64_t j = 0; j < h; ++j) y[i * h + j] += u[i * f + c] * weights[j];
      }
      for (int64_t i = 0; i < count; ++i) {
        const auto& [row, weight] = rows[static_cast<size_t>(first + i)];
        for (int64_t j = 0; j < h; ++j) out[row * h + j] += weight * y[i * h + j];
      }
    });
  }

  const MoeShape& m_;
  WeightReader weight_;
};

// The logits of the tokens t with row_of[t] >= 0 (x[row_of[t]] their rows) into logits[t x experts], each a
// float64 sum over hidden in ascending index; `router` is Wr widened.
void router_logits(const MoeShape& m, const std::vector<int64_t>& row_of, const double* x,
                   const std::vector<double>& router, std::vector<double>& logits, int threads) {
  logits.assign(static_cast<size_t>(m.tokens * m.experts), 0.0);
  for_each_row(m.tokens, threads, [&](int64_t t, std::vector<double>&) {
    const int64_t row = row_of[static_cast<size_t>(t)];
    if (row < 0) return;
    double* out = logits.data() + t * m.experts;
    for (int64_t k = 0; k < m.hidden; ++k) {
      const double value = x[row * m.hidden + k];
      for (int64_t e = 0; e < m.experts; ++e)
        out[e] += value * router[static_cast<size_t>(k * m.experts + e)];
    }
  });
}

std::vector<double> widened(const HostTensor& tensor) {
  std::vector<double> values(static_cast<size_t>(tensor.elements()));
  for (int64_t i = 0; i < tensor.elements(); ++i) values[static_cast<size_t>(i)] = tensor.value(i);
  return values;
}

// The op's inputs by slot (nullptr where it has none).
std::vector<const HostTensor*> by_slot(const Op& op, const std::vector<HostTensor>& inputs) {
  std::vector<const HostTensor*> slots(kPermutation + 1, nullptr);
  size_t next = 0;
  for (const TensorDesc& tensor : tensors_of(op))
    if (!tensor.is_output)
      slots.at(tensor.tensor_id - tensor_id(static_cast<uint32_t>(op.index), 0)) = &inputs.at(next++);
  return slots;
}

std::vector<int64_t> all_rows(int64_t tokens) {
  std::vector<int64_t> rows(static_cast<size_t>(tokens));
  for (int64_t t = 0; t < tokens; ++t) rows[static_cast<size_t>(t)] = t;
  return rows;
}

class MoeKind : public OpKindOf<MoeShape> {
 public:
  const char* name() const override { return "moe"; }
  const std::vector<std::string>& dtype_names() const override { return float_dtype_names(); }

  std::vector<TensorDesc> tensors(const Op& op) const override {
    const MoeShape& m = *op.as<MoeShape>();
    const auto index = static_cast<uint32_t>(op.index);
    const auto id = [index](Slot slot) { return tensor_id(index, slot); };
    std::vector<TensorDesc> tensors = {{"X", op.dtype, m.tokens, m.hidden, id(kX), false},
                                       {"Wr", op.dtype, m.hidden, m.experts, id(kRouter), false}};
    if (m.swiglu()) tensors.push_back({"W_gate", op.dtype, m.experts * m.hidden, m.ffn, id(kGate), false});
    tensors.push_back({"W_up", op.dtype, m.experts * m.hidden, m.ffn, id(kUp), false});
    tensors.push_back({"W_down", op.dtype, m.experts * m.ffn, m.hidden, id(kDown), false});
    if (m.shared_experts > 0) {
      const int64_t s = m.shared_experts;
      if (m.swiglu()) tensors.push_back({"S_gate", op.dtype, s * m.hidden, m.ffn, id(kSharedGate), false});
      tensors.push_back({"S_up", op.dtype, s * m.hidden, m.ffn, id(kSharedUp), false});
      tensors.push_back({"S_down", op.dtype, s * m.ffn, m.hidden, id(kSharedDown), false});
    }
    if (m.rule().forced())  // the token permutation that deals the forced assignments
      tensors.push_back({"P", DType::int32, 1, m.tokens, id(kPermutation), false, std::nullopt, m.tokens});
    tensors.push_back({"O", op.dtype, m.tokens, m.hidden, 0, true});
    return tensors;
  }

  // X and O once, the router, the weights of the experts that receive a token (see experts_used) and of the
  // shared experts; not the forced routing's permutation (the DMA descriptors follow it).
  int64_t minimum_dram_bytes(const Op& op) const override {
    const MoeShape& m = *op.as<MoeShape>();
    const int64_t expert = (m.swiglu() ? 3 : 2) * m.hidden * m.ffn;
    return (2 * m.tokens * m.hidden + m.hidden * m.experts + (experts_used(m) + m.shared_experts) * expert) *
           size_bytes(op.dtype);
  }

  std::vector<double> reference(const Op& op, const std::vector<HostTensor>& inputs,
                                int threads) const override {
    return moe_layer(op, inputs, moe_routing_of(op, inputs, threads), threads);
  }

  // The tokens holding the positions: their logits (and, when the capacity may drop assignments, those of
  // every earlier token, whose assignments come first), the routing, and their experts' FFNs with the
  // weights read from the generator row by row.
  bool has_sampled_reference() const override { return true; }
  std::vector<double> reference_at(const Op& op, uint64_t seed,
                                   const std::vector<int64_t>& positions) const override {
    const MoeShape& m = *op.as<MoeShape>();
    const MoeRoutingRule rule = m.rule();
    const auto index = static_cast<uint32_t>(op.index);
    std::vector<bool> sampled(static_cast<size_t>(m.tokens), false);
    int64_t last = 0;
    for (int64_t position : positions) {
      sampled[static_cast<size_t>(position / m.hidden)] = true;
      last = std::max(last, position / m.hidden);
    }
    const bool drops = rule.capacity() < m.tokens;
    std::vector<int64_t> row_of(static_cast<size_t>(m.tokens), -1);
    int64_t rows = 0;
    for (int64_t t = 0; t < m.tokens; ++t)
      if (sampled[static_cast<size_t>(t)] || (drops && t <= last)) row_of[static_cast<size_t>(t)] = rows++;
    std::vector<double> x(static_cast<size_t>(rows * m.hidden));
    for (int64_t t = 0; t < m.tokens; ++t)
      for (int64_t k = 0; row_of[static_cast<size_t>(t)] >= 0 && k < m.hidden; ++k)
        x[static_cast<size_t>(row_of[static_cast<size_t>(t)] * m.hidden + k)] =
            generated_value(op.dtype, seed, tensor_id(index, kX), t * m.hidden + k);
    const std::vector<double> router = widened(
        generate_input(op.dtype, m.hidden, m.experts, seed, tensor_id(index, kRouter), std::nullopt, 0));
    std::vector<double> logits;
    router_logits(m, row_of, x.data(), router, logits, 1);
    HostTensor permutation;
    if (rule.forced())
      permutation = generate_input(DType::int32, 1, m.tokens, seed, tensor_id(index, kPermutation),
                                   std::nullopt, m.tokens);
    const MoeRouting routing =
        moe_route(rule, logits, reinterpret_cast<const int32_t*>(permutation.bytes.data()));
    // Only the sampled tokens' outputs.
    for (int64_t t = 0; t < m.tokens; ++t)
      if (!sampled[static_cast<size_t>(t)]) row_of[static_cast<size_t>(t)] = -1;
    std::vector<double> out(static_cast<size_t>(rows * m.hidden), 0.0);
    const Layer layer(m, [&](uint32_t slot, int64_t first, int64_t count, double* values) {
      for (int64_t i = 0; i < count; ++i)
        values[i] = generated_value(op.dtype, seed, tensor_id(index, slot), first + i);
    });
    layer.accumulate(routing, row_of, x.data(), out.data(), 1);
    std::vector<double> values;
    for (int64_t position : positions)
      values.push_back(out[static_cast<size_t>(row_of[static_cast<size_t>(position / m.hidden)] * m.hidden +
                                               position % m.hidden)]);
    return values;
  }

 protected:
  void visit_fields(MoeShape& m, FieldVisitor& visitor) const override {
    visitor.integer("tokens", m.tokens, IntegerRule::positive, std::nullopt);
    visitor.integer("hidden", m.hidden, IntegerRule::positive, std::nullopt);
    visitor.integer("ffn", m.ffn, IntegerRule::positive, std::nullopt);
    visitor.integer("experts", m.experts, IntegerRule::positive, std::nullopt);
    visitor.integer("top_k", m.top_k, IntegerRule::positive, std::nullopt);
    visitor.real("capacity_factor", m.capacity_factor, RealRule::any, 0.0);
    visitor.integer("shared_experts", m.shared_experts, IntegerRule::nonnegative, 0);
    visit_choice(visitor, "activation", m.activation, activation_names(),
                 std::optional<MoeActivation>(MoeActivation::swiglu));
    visitor.group("routing", [&](FieldVisitor& routing) {
      visit_choice(routing, "scoring", m.routing.scoring, scoring_names(),
                   std::optional<MoeScoring>(MoeScoring::softmax));
      routing.integer("groups", m.routing.groups, IntegerRule::positive, 1);
      routing.integer("topk_groups", m.routing.topk_groups, IntegerRule::positive, 1);
      routing.real("routed_scaling", m.routing.routed_scaling, RealRule::positive, 1.0);
      visit_choice(routing, "skew", m.routing.skew, skew_names(), std::optional<MoeSkew>(MoeSkew::none));
      routing.real("alpha", m.routing.alpha, RealRule::any, 1.2);
      routing.integer_list("counts", m.routing.counts);
    });
  }

  void check_fields(const MoeShape& m, const FieldChecks& checks) const override {
    for (const auto& [field, value] : {std::pair<const char*, int64_t>{"tokens", m.tokens},
                                       {"hidden", m.hidden},
                                       {"ffn", m.ffn},
                                       {"experts", m.experts},
                                       {"shared_experts", m.shared_experts}})
      if (value > kMaxDimension)
        checks.fail(field,
                    fmt::format("{} {} is more than tessera models ({})", field, value, kMaxDimension));
    if (m.top_k > m.experts)
      checks.fail("top_k", fmt::format("top_k {} is more than the {} experts", m.top_k, m.experts),
                  "each token goes to top_k distinct experts: at most experts (Mixtral routes to 2 of 8)");
    if (!(m.capacity_factor >= 0) || !std::isfinite(m.capacity_factor))
      checks.fail("capacity_factor",
                  fmt::format("capacity_factor must be 0 (no drops) or positive, got {}", m.capacity_factor),
                  "GShard and Switch use 1 to 2: an expert takes up to factor x tokens x top_k / experts");
    if (m.experts % m.routing.groups != 0)
      checks.fail("routing.groups",
                  fmt::format("{} groups cannot split the {} experts evenly", m.routing.groups, m.experts),
                  "groups divides experts: DeepSeek-V3 has 8 groups of 32 of its 256 experts");
    if (m.routing.topk_groups > m.routing.groups)
      checks.fail(
          "routing.topk_groups",
          fmt::format("topk_groups {} is more than the {} groups", m.routing.topk_groups, m.routing.groups),
          "DeepSeek-V3 keeps the best 4 of its 8 groups; without groups leave both out");
    if (m.top_k > m.routing.topk_groups * (m.experts / m.routing.groups))
      checks.fail("routing.topk_groups",
                  fmt::format("{} kept groups of {} experts hold fewer than top_k = {} experts",
                              m.routing.topk_groups, m.experts / m.routing.groups, m.top_k),
                  "keep more groups (topk_groups), or use fewer, larger ones");
    check_forced(m, checks);
    const double tokens = static_cast<double>(m.tokens), hidden = static_cast<double>(m.hidden),
                 ffn = static_cast<double>(m.ffn), experts = static_cast<double>(m.experts);
    if (tokens * hidden > kMaxElements)
      checks.fail("tokens", "X has more than 2^40 elements", "model fewer tokens or a narrower hidden");
    if (experts * hidden * ffn > kMaxElements)
      checks.fail("experts", "the experts' weights (experts x hidden x ffn) have more than 2^40 elements",
                  "model fewer experts or a narrower ffn");
    if (static_cast<double>(m.shared_experts) * hidden * ffn > kMaxElements)
      checks.fail("shared_experts",
                  "the shared experts' weights (shared_experts x hidden x ffn) have more than 2^40 elements",
                  "model fewer shared experts or a narrower ffn");
    const double per_token = (m.swiglu() ? 3 : 2) * hidden * ffn;
    if (tokens * (hidden * experts + (static_cast<double>(m.top_k + m.shared_experts)) * per_token) >
        kMaxMacs)
      checks.fail("tokens", "the layer has more than 2^62 multiply-accumulates", "model fewer tokens");
  }

  std::string text_of(const MoeShape& m) const override {
    std::string text = fmt::format("t{} h{} f{} e{} top{} {}", m.tokens, m.hidden, m.ffn, m.experts, m.top_k,
                                   activation_names()[static_cast<size_t>(m.activation)]);
    if (m.shared_experts > 0) text += fmt::format(" shared{}", m.shared_experts);
    if (m.capacity_factor > 0) text += fmt::format(" cf{}", m.capacity_factor);
    if (m.routing.scoring == MoeScoring::sigmoid) text += " sigmoid";
    if (m.routing.groups > 1) text += fmt::format(" groups {}/{}", m.routing.topk_groups, m.routing.groups);
    if (m.routing.routed_scaling != 1) text += fmt::format(" scale {}", m.routing.routed_scaling);
    if (m.routing.skew == MoeSkew::zipf) text += fmt::format(" zipf {}", m.routing.alpha);
    if (!m.routing.counts.empty()) text += " counts";
    return text;
  }

  // The router GEMM, the kept assignments' FFNs (kept_assignments) and the shared experts' on every token.
  int64_t macs_of(const MoeShape& m) const override {
    return m.tokens * m.hidden * m.experts +
           (kept_assignments(m) + m.shared_experts * m.tokens) * ffn_macs(m);
  }

 private:
  void check_forced(const MoeShape& m, const FieldChecks& checks) const {
    const bool counted = !m.routing.counts.empty(), zipf = m.routing.skew == MoeSkew::zipf;
    if (counted && zipf)
      checks.fail("routing.counts", "counts and skew: zipf both force the routing",
                  "give the counts, or the zipf skew, not both");
    if (zipf && (!(m.routing.alpha > 0) || !std::isfinite(m.routing.alpha)))
      checks.fail("routing.alpha", fmt::format("zipf's alpha must be positive, got {}", m.routing.alpha),
                  "1.2 is a moderate skew; a larger alpha is a steeper one");
    if ((counted || zipf) && m.routing.groups > 1)
      checks.fail("routing.groups", "forced routing (skew, counts) chooses no groups",
                  "leave groups and topk_groups out, or the forcing");
    if (!counted) return;
    if (static_cast<int64_t>(m.routing.counts.size()) != m.experts)
      checks.fail("routing.counts",
                  fmt::format("{} counts for {} experts", m.routing.counts.size(), m.experts),
                  "give one count per expert, in expert order");
    int64_t sum = 0;  // each count at most tokens <= 2^24 and at most 2^24 of them: the sum fits
    for (size_t e = 0; e < m.routing.counts.size(); ++e) {
      if (m.routing.counts[e] > m.tokens)
        checks.fail(
            "routing.counts",
            fmt::format("expert {}'s count {} is more than the {} tokens", e, m.routing.counts[e], m.tokens),
            "a token goes to an expert at most once");
      sum += m.routing.counts[e];
    }
    if (sum != m.tokens * m.top_k)
      checks.fail("routing.counts",
                  fmt::format("the counts sum to {}, not tokens x top_k = {} x {} = {}", sum, m.tokens,
                              m.top_k, m.tokens * m.top_k),
                  "each token goes to top_k experts: the counts total tokens x top_k");
  }
};

}  // namespace

std::vector<double> moe_router_logits(const Op& op, const std::vector<HostTensor>& inputs, int threads) {
  const MoeShape& m = *op.as<MoeShape>();
  const std::vector<const HostTensor*> slots = by_slot(op, inputs);
  std::vector<double> logits;
  router_logits(m, all_rows(m.tokens), widened(*slots[kX]).data(), widened(*slots[kRouter]), logits, threads);
  return logits;
}

MoeRouting moe_routing_of(const Op& op, const std::vector<HostTensor>& inputs, int threads) {
  const MoeShape& m = *op.as<MoeShape>();
  const std::vector<const HostTensor*> slots = by_slot(op, inputs);
  const int32_t* permutation =
      slots[kPermutation] ? reinterpret_cast<const int32_t*>(slots[kPermutation]->bytes.data()) : nullptr;
  return moe_route(m.rule(), moe_router_logits(op, inputs, threads), permutation);
}

MoeRouting moe_routing_from_seed(const Op& op, uint64_t seed, int threads) {
  const MoeShape& m = *op.as<MoeShape>();
  const auto index = static_cast<uint32_t>(op.index);
  const std::vector<double> x =
      widened(generate_input(op.dtype, m.tokens, m.hidden, seed, tensor_id(index, kX), std::nullopt, 0));
  const std::vector<double> router = widened(
      generate_input(op.dtype, m.hidden, m.experts, seed, tensor_id(index, kRouter), std::nullopt, 0));
  std::vector<double> logits;
  router_logits(m, all_rows(m.tokens), x.data(), router, logits, threads);
  HostTensor permutation;
  if (m.rule().forced())
    permutation = generate_input(DType::int32, 1, m.tokens, seed, tensor_id(index, kPermutation),
                                 std::nullopt, m.tokens);
  return moe_route(m.rule(), logits, reinterpret_cast<const int32_t*>(permutation.bytes.data()));
}

std::vector<double> moe_layer(const Op& op, const std::vector<HostTensor>& inputs, const MoeRouting& routing,
                              int threads) {
  const MoeShape& m = *op.as<MoeShape>();
  const std::vector<const HostTensor*> slots = by_slot(op, inputs);
  const Layer layer(m, [&](uint32_t slot, int64_t first, int64_t count, double* values) {
    const HostTensor& tensor = *slots[slot];
    for (int64_t i = 0; i < count; ++i) values[i] = tensor.value(first + i);
  });
  std::vector<double> out(static_cast<size_t>(m.tokens * m.hidden), 0.0);
  layer.accumulate(routing, all_rows(m.tokens), widened(*slots[kX]).data(), out.data(), threads);
  return out;
}

std::unique_ptr<OpKind> make_moe_kind() {
  return std::make_unique<MoeKind>();
}

}  // namespace tessera::ops
