// kind: moe (ops/kinds/moe.hpp) and its routing (ops/moe_routing.hpp): top-k and its weights against
// hand-worked cases, ties, the group-limited option, zipf and explicit forced counts, capacity drops in token
// order; the float64 reference against a naive computation written here (and a permutation off by one token
// failing the numerics check); the sampled reference; the text forms and identity; every bad field a located
// error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "common/config.hpp"
#include "ops/kinds/moe.hpp"
#include "ops/numerics.hpp"
#include "ops/op.hpp"
#include "ops/reference.hpp"
#include "ops/workload.hpp"

namespace tessera::ops {
namespace {

Workload parse(const std::string& text) {
  return workload_from_yaml(config::load_text(text, "w.yaml"));
}

Op op_of(const std::string& entry) {
  return parse("name: w\nseed: 7\nops:\n  - " + entry + "\n").ops.at(0);
}

std::string error_of(const std::string& entry) {
  try {
    op_of(entry);
  } catch (const InputError& error) {
    return error.what();
  }
  return "no error";
}

MoeRoutingRule rule_of(int64_t tokens, int64_t experts, int64_t top_k) {
  MoeRoutingRule rule;
  rule.tokens = tokens;
  rule.experts = experts;
  rule.top_k = top_k;
  return rule;
}

std::vector<int32_t> identity_permutation(int64_t tokens) {
  std::vector<int32_t> permutation(static_cast<size_t>(tokens));
  std::iota(permutation.begin(), permutation.end(), 0);
  return permutation;
}

// Every token's top_k experts are distinct; the permutation lists each kept route once, in token order.
void expect_consistent(const MoeRouting& routing) {
  int64_t kept = 0;
  for (int64_t t = 0; t < routing.tokens; ++t) {
    std::set<int32_t> experts;
    for (int64_t j = 0; j < routing.top_k; ++j) {
      const MoeRoute& route = routing.routes[static_cast<size_t>(t * routing.top_k + j)];
      experts.insert(route.expert);
      kept += route.kept;
    }
    EXPECT_EQ(static_cast<int64_t>(experts.size()), routing.top_k) << "token " << t;
  }
  EXPECT_EQ(kept, routing.kept());
  EXPECT_EQ(kept + routing.dropped, routing.tokens * routing.top_k);
  for (int64_t e = 0; e < routing.experts; ++e) {
    const auto first = routing.expert_tokens.begin() + routing.expert_offsets[static_cast<size_t>(e)];
    EXPECT_TRUE(std::is_sorted(first, first + routing.count(e))) << "expert " << e;
    EXPECT_LE(routing.count(e), routing.capacity);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Routing

TEST(MoeRouting, SoftmaxTopKPicksTheHighestScoresAndRenormalisesTheirWeights) {
  // Logits 1, 3, 2, 0: experts 1 and 2; their softmax weights renormalised are e^3 / (e^3 + e^2) =
  // 1 / (1 + e^-1) = 0.7310585786300049 and 1 / (1 + e) = 0.2689414213699951.
  const MoeRouting routing = moe_route(rule_of(1, 4, 2), {1, 3, 2, 0}, nullptr);
  ASSERT_EQ(routing.routes.size(), 2u);
  EXPECT_EQ(routing.routes[0].expert, 1);
  EXPECT_EQ(routing.routes[1].expert, 2);
  EXPECT_NEAR(routing.routes[0].weight, 0.7310585786300049, 1e-15);
  EXPECT_NEAR(routing.routes[1].weight, 0.2689414213699951, 1e-15);
  EXPECT_EQ(routing.dropped, 0);
  EXPECT_EQ(routing.expert_offsets, (std::vector<int64_t>{0, 0, 1, 2, 2}));
}

TEST(MoeRouting, TiesGoToTheLowerExpertIndex) {
  const MoeRouting routing = moe_route(rule_of(1, 4, 2), {2, 5, 5, 5}, nullptr);
  EXPECT_EQ(routing.routes[0].expert, 1);
  EXPECT_EQ(routing.routes[1].expert, 2);
  EXPECT_DOUBLE_EQ(routing.routes[0].weight, 0.5);
  const std::vector<double> scores = {0.25, 0.5, 0.25, 0.5};
  EXPECT_EQ(moe_select(rule_of(1, 4, 3), scores.data()), (std::vector<int32_t>{1, 3, 0}));
}

TEST(MoeRouting, GroupLimitedTopKChoosesAmongTheBestGroupsByTheirTopTwoScores) {
  // 8 experts in 4 groups of 2; group sums 1.0, 1.25, 0.9375, 0.875: groups 1 and 0 kept, so expert 4 (the
  // second-best score, in group 2) is passed over for expert 2 (0.625, tied with 3: the lower index).
  const std::vector<double> scores = {0.75, 0.25, 0.625, 0.625, 0.875, 0.0625, 0.5, 0.375};
  MoeRoutingRule rule = rule_of(1, 8, 2);
  EXPECT_EQ(moe_select(rule, scores.data()), (std::vector<int32_t>{4, 0}));
  rule.options.groups = 4;
  rule.options.topk_groups = 2;
  EXPECT_EQ(moe_select(rule, scores.data()), (std::vector<int32_t>{0, 2}));
  // The same from logits with sigmoid scoring (DeepSeek-V3): weights the chosen sigmoid scores renormalised,
  // times routed_scaling: 2.5 x 0.75 / 1.375 and 2.5 x 0.625 / 1.375.
  rule.options.scoring = MoeScoring::sigmoid;
  rule.options.routed_scaling = 2.5;
  std::vector<double> logits;
  for (double s : scores) logits.push_back(std::log(s / (1 - s)));
  const MoeRouting routing = moe_route(rule, logits, nullptr);
  EXPECT_EQ(routing.routes[0].expert, 0);
  EXPECT_EQ(routing.routes[1].expert, 2);
  EXPECT_NEAR(routing.routes[0].weight, 2.5 * 0.75 / 1.375, 1e-14);
  EXPECT_NEAR(routing.routes[1].weight, 2.5 * 0.625 / 1.375, 1e-14);
}

TEST(MoeRouting, ZipfCountsSumToTokensTimesTopKAndFallWithRank) {
  // By hand: 10 tokens, top-1, alpha 1 over 4 experts: shares 10 x (1, 1/2, 1/3, 1/4) / (25/12) = 4.8, 2.4,
  // 1.6, 1.2; floors 4, 2, 1, 1 and the two largest remainders (0.8, 0.6) get one more: 5, 2, 2, 1.
  EXPECT_EQ(moe_zipf_counts(10, 4, 1, 1.0), (std::vector<int64_t>{5, 2, 2, 1}));
  // A steep law caps the busiest expert at the tokens and gives the excess to the others.
  EXPECT_EQ(moe_zipf_counts(10, 4, 3, 3.0).front(), 10);
  for (const auto& [tokens, experts, top_k, alpha] :
       {std::tuple<int64_t, int64_t, int64_t, double>{100, 8, 2, 1.2},
        {10, 4, 3, 3.0},
        {4096, 128, 8, 1.2},
        {7, 7, 7, 2.0}}) {
    SCOPED_TRACE(testing::Message() << tokens << " " << experts << " " << top_k << " " << alpha);
    const std::vector<int64_t> counts = moe_zipf_counts(tokens, experts, top_k, alpha);
    EXPECT_EQ(std::accumulate(counts.begin(), counts.end(), int64_t{0}), tokens * top_k);
    EXPECT_TRUE(std::is_sorted(counts.rbegin(), counts.rend())) << "counts never rise with the rank";
    EXPECT_LE(counts.front(), tokens);
    MoeRoutingRule rule = rule_of(tokens, experts, top_k);
    rule.options.skew = MoeSkew::zipf;
    rule.options.alpha = alpha;
    const std::vector<int32_t> permutation = identity_permutation(tokens);
    const MoeRouting routing =
        moe_route(rule, std::vector<double>(static_cast<size_t>(tokens * experts), 0.0), permutation.data());
    EXPECT_EQ(routing.assigned, counts);
    expect_consistent(routing);
  }
  EXPECT_GT(moe_zipf_counts(100, 8, 2, 1.2).front(), 2 * moe_zipf_counts(100, 8, 2, 1.2).back());
}

TEST(MoeRouting, ExplicitCountsAreHonouredExactlyWithDistinctExpertsPerToken) {
  MoeRoutingRule rule = rule_of(6, 4, 2);
  rule.options.counts = {5, 0, 3, 4};
  const std::vector<int32_t> permutation = {3, 0, 5, 1, 4, 2};
  std::vector<double> logits(24);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = std::sin(static_cast<double>(i));
  const MoeRouting routing = moe_route(rule, logits, permutation.data());
  EXPECT_EQ(routing.assigned, rule.options.counts);
  EXPECT_EQ(routing.count(1), 0);
  expect_consistent(routing);
  // Each token's weights: its forced experts' softmax scores renormalised (sum 1).
  for (int64_t t = 0; t < 6; ++t)
    EXPECT_NEAR(routing.routes[static_cast<size_t>(2 * t)].weight +
                    routing.routes[static_cast<size_t>(2 * t + 1)].weight,
                1.0, 1e-15);
}

TEST(MoeRouting, CapacityDropsAnExpertsLaterTokensAndKeepsTheOtherWeights) {
  // Every token prefers expert 0, then expert 1 + t % 3; capacity ceil(1.0 x 6 x 2 / 4) = 3: tokens 3, 4, 5
  // lose expert 0.
  MoeRoutingRule rule = rule_of(6, 4, 2);
  rule.capacity_factor = 1.0;
  std::vector<double> logits;
  for (int64_t t = 0; t < 6; ++t)
    for (int64_t e = 0; e < 4; ++e) logits.push_back(e == 0 ? 4.0 : e == 1 + t % 3 ? 2.0 : 0.0);
  const MoeRouting routing = moe_route(rule, logits, nullptr);
  EXPECT_EQ(routing.capacity, 3);
  EXPECT_EQ(routing.assigned[0], 6);
  EXPECT_EQ(routing.count(0), 3);
  EXPECT_EQ(routing.dropped, 3);
  EXPECT_EQ(std::vector<int64_t>(routing.expert_tokens.begin(), routing.expert_tokens.begin() + 3),
            (std::vector<int64_t>{0, 1, 2}));
  for (int64_t t = 0; t < 6; ++t) {
    const MoeRoute& first = routing.routes[static_cast<size_t>(2 * t)];
    EXPECT_EQ(first.expert, 0);
    EXPECT_EQ(first.kept, t < 3) << t;
    // Not renormalised: the kept weight is what it was with expert 0 beside it.
    EXPECT_NEAR(first.weight + routing.routes[static_cast<size_t>(2 * t + 1)].weight, 1.0, 1e-15);
  }
  expect_consistent(routing);
}

// ---------------------------------------------------------------------------------------------------------
// The reference

const char* kSwiglu =
    "{name: m, kind: moe, tokens: 12, hidden: 16, ffn: 8, experts: 4, top_k: 2, shared_experts: 1, dtype: "
    "fp32}";
const char* kGeluDropping =
    "{name: m, kind: moe, tokens: 12, hidden: 16, ffn: 8, experts: 4, top_k: 2, shared_experts: 1, "
    "capacity_factor: 0.75, activation: gelu, dtype: bf16}";
const char* kForcedDropping =
    "{name: m, kind: moe, tokens: 12, hidden: 16, ffn: 8, experts: 4, top_k: 2, capacity_factor: 1.0, "
    "routing: {counts: [12, 6, 4, 2]}, dtype: fp32}";

// The layer computed naively from the inputs: logits, softmax, a stable sort for the top-2, capacity in token
// order, each kept expert's FFN and the shared expert's, for tokens 0..; `with_dropped` adds the dropped
// assignments too (what a routing that forgot its capacity computes).
std::vector<double> naive_layer(const Op& op, const std::vector<HostTensor>& in, bool with_dropped) {
  const MoeShape& m = *op.as<MoeShape>();
  const int64_t T = m.tokens, H = m.hidden, F = m.ffn, E = m.experts;
  const bool swiglu = m.activation == MoeActivation::swiglu;
  // inputs: X, Wr, [W_gate], W_up, W_down, [S_gate], S_up, S_down
  size_t next = 0;
  const HostTensor& x = in[next++];
  const HostTensor& wr = in[next++];
  const HostTensor* wg = swiglu ? &in[next++] : nullptr;
  const HostTensor& wu = in[next++];
  const HostTensor& wd = in[next++];
  const HostTensor* sg = (swiglu && m.shared_experts) ? &in[next++] : nullptr;
  const HostTensor* su = m.shared_experts ? &in[next++] : nullptr;
  const HostTensor* sd = m.shared_experts ? &in[next++] : nullptr;
  auto ffn = [&](const HostTensor* gate, const HostTensor& up, const HostTensor& down, int64_t e, int64_t t) {
    std::vector<double> y(static_cast<size_t>(H), 0.0);
    for (int64_t c = 0; c < F; ++c) {
      double g = 0, u = 0;
      for (int64_t k = 0; k < H; ++k) {
        if (gate) g += x.value(t * H + k) * gate->value((e * H + k) * F + c);
        u += x.value(t * H + k) * up.value((e * H + k) * F + c);
      }
      const double a = gate ? g / (1 + std::exp(-g)) * u : 0.5 * u * (1 + std::erf(u / std::sqrt(2.0)));
      for (int64_t j = 0; j < H; ++j) y[static_cast<size_t>(j)] += a * down.value((e * F + c) * H + j);
    }
    return y;
  };
  const int64_t capacity =
      m.capacity_factor > 0 ? static_cast<int64_t>(std::ceil(m.capacity_factor * T * m.top_k / E)) : T;
  std::vector<int64_t> taken(static_cast<size_t>(E), 0);
  std::vector<double> out(static_cast<size_t>(T * H), 0.0);
  for (int64_t t = 0; t < T; ++t) {
    std::vector<double> p(static_cast<size_t>(E), 0.0);
    double z = 0;
    for (int64_t e = 0; e < E; ++e) {
      double logit = 0;
      for (int64_t k = 0; k < H; ++k) logit += x.value(t * H + k) * wr.value(k * E + e);
      z += p[static_cast<size_t>(e)] = std::exp(logit);
    }
    std::vector<int64_t> order(static_cast<size_t>(E));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return p[static_cast<size_t>(a)] > p[static_cast<size_t>(b)];
    });
    double chosen = 0;
    for (int64_t j = 0; j < m.top_k; ++j) chosen += p[static_cast<size_t>(order[static_cast<size_t>(j)])];
    for (int64_t j = 0; j < m.top_k; ++j) {
      const int64_t e = order[static_cast<size_t>(j)];
      const bool kept = taken[static_cast<size_t>(e)]++ < capacity;
      if (!kept && !with_dropped) continue;
      const std::vector<double> y = ffn(wg, wu, wd, e, t);
      for (int64_t c = 0; c < H; ++c)
        out[static_cast<size_t>(t * H + c)] += p[static_cast<size_t>(e)] / chosen * y[static_cast<size_t>(c)];
    }
    for (int64_t s = 0; s < m.shared_experts; ++s) {
      const std::vector<double> y = ffn(sg, *su, *sd, s, t);
      for (int64_t c = 0; c < H; ++c) out[static_cast<size_t>(t * H + c)] += y[static_cast<size_t>(c)];
    }
  }
  return out;
}

HostTensor fp32_tensor(const std::vector<double>& values, int64_t rows, int64_t cols) {
  HostTensor tensor(DType::fp32, rows, cols);
  auto* data = reinterpret_cast<float*>(tensor.bytes.data());
  for (size_t i = 0; i < values.size(); ++i) data[i] = static_cast<float>(values[i]);
  return tensor;
}

TEST(MoeReference, TheWholeLayerIsTheNaiveComputationForSwigluAndGeluWithASharedExpertAndDrops) {
  for (const char* entry : {kSwiglu, kGeluDropping}) {
    SCOPED_TRACE(entry);
    const Op op = op_of(entry);
    const std::vector<HostTensor> inputs = generate_inputs(op, 7);
    const std::vector<double> expected = naive_layer(op, inputs, false);
    for (int threads : {1, 3}) {
      const std::vector<double> got = reference_output(op, inputs, threads);
      ASSERT_EQ(got.size(), expected.size());
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_NEAR(got[i], expected[i], 1e-12 * (1 + std::abs(expected[i]))) << i;
    }
  }
  // The gelu op drops assignments (capacity ceil(0.75 x 12 x 2 / 4) = 5), and they contribute nothing: the
  // layer with them added is another layer.
  const Op op = op_of(kGeluDropping);
  const std::vector<HostTensor> inputs = generate_inputs(op, 7);
  const MoeRouting routing = moe_routing_of(op, inputs, 1);
  EXPECT_EQ(routing.capacity, 5);
  EXPECT_GT(routing.dropped, 0);
  const std::vector<double> got = reference_output(op, inputs, 2);
  const std::vector<double> with_dropped = naive_layer(op, inputs, true);
  EXPECT_FALSE(compare_output(fp32_tensor(with_dropped, 12, 16), got, DType::fp32, "cpu").pass);
}

TEST(MoeReference, APermutationOffByOneTokenFailsTheNumericsCheck) {
  for (const char* entry : {kSwiglu, kForcedDropping}) {
    SCOPED_TRACE(entry);
    const Op op = op_of(entry);
    const std::vector<HostTensor> inputs = generate_inputs(op, 7);
    const MoeRouting routing = moe_routing_of(op, inputs, 1);
    const std::vector<double> expected = reference_output(op, inputs, 1);
    EXPECT_TRUE(
        compare_output(fp32_tensor(moe_layer(op, inputs, routing, 2), 12, 16), expected, DType::fp32, "cpu")
            .pass);
    // An expert's list with one token replaced by one it does not hold.
    MoeRouting wrong = routing;
    const int64_t e = routing.count(0) > 0 ? 0 : 1;
    const auto first = wrong.expert_tokens.begin() + wrong.expert_offsets[static_cast<size_t>(e)];
    const auto last = first + wrong.count(e);
    int64_t token = 0;
    while (std::find(first, last, token) != last) ++token;
    ASSERT_LT(token, 12);
    *first = token;
    const NumericsResult result =
        compare_output(fp32_tensor(moe_layer(op, inputs, wrong, 2), 12, 16), expected, DType::fp32, "cpu");
    EXPECT_FALSE(result.pass) << result.rel_l2_err;
  }
}

TEST(MoeReference, TheSampledReferenceIsTheWholeOneAtTheSampledRows) {
  for (const char* entry : {kSwiglu, kGeluDropping, kForcedDropping}) {
    SCOPED_TRACE(entry);
    const Op op = op_of(entry);
    ASSERT_TRUE(op.kind->has_sampled_reference());
    const std::vector<double> whole = reference_output(op, generate_inputs(op, 7), 2);
    const std::vector<int64_t> positions = {0, 17, 5 * 16 + 3, 11 * 16 + 15, 17, 9 * 16};
    const std::vector<double> sampled = reference_at(op, 7, positions);
    ASSERT_EQ(sampled.size(), positions.size());
    for (size_t i = 0; i < positions.size(); ++i)
      EXPECT_EQ(sampled[i], whole[static_cast<size_t>(positions[i])]) << positions[i];
  }
}

// ---------------------------------------------------------------------------------------------------------
// Fields, text forms, identity

TEST(MoeOp, FieldsTakeTheirDefaultsAndTheWorkCountsTheKeptAssignments) {
  const Op op = op_of(kForcedDropping);
  const MoeShape& m = *op.as<MoeShape>();
  EXPECT_EQ(m.activation, MoeActivation::swiglu);
  EXPECT_EQ(m.routing.scoring, MoeScoring::softmax);
  EXPECT_EQ(m.routing.routed_scaling, 1.0);
  EXPECT_EQ(op.shape_text(), "t12 h16 f8 e4 top2 swiglu cf1 counts");
  // Capacity ceil(12 x 2 / 4) = 6 keeps 6 + 6 + 4 + 2 = 18 of the 24 assignments: the router's 12 x 16 x 4
  // and 18 FFNs of 3 x 16 x 8.
  EXPECT_EQ(op.macs(), 12 * 16 * 4 + 18 * 3 * 16 * 8);
  // X and O, the router, the four experts' weights (each gets a token), in fp32.
  EXPECT_EQ(op.minimum_dram_bytes(), (2 * 12 * 16 + 16 * 4 + 4 * 3 * 16 * 8) * 4);
  std::vector<std::string> names;
  for (const TensorDesc& tensor : tensors_of(op)) names.push_back(tensor.name);
  EXPECT_EQ(names, (std::vector<std::string>{"X", "Wr", "W_gate", "W_up", "W_down", "P", "O"}));
  // Counts leaving an expert without tokens leave its weights unread.
  const Op idle = op_of(
      "{name: m, kind: moe, tokens: 12, hidden: 16, ffn: 8, experts: 4, top_k: 2, activation: gelu, "
      "routing: {counts: [12, 12, 0, 0]}, dtype: bf16}");
  EXPECT_EQ(idle.minimum_dram_bytes(), (2 * 12 * 16 + 16 * 4 + 2 * 2 * 16 * 8) * 2);
  EXPECT_EQ(idle.macs(), 12 * 16 * 4 + 24 * 2 * 16 * 8);
}

TEST(MoeOp, TheResolvedFormAndTheEntryTextReadBackAsTheSameOp) {
  const Workload workload = parse(
      "name: w\nseed: 3\nops:\n"
      "  - {name: a, kind: moe, tokens: 64, hidden: 32, ffn: 16, experts: 8, top_k: 2, dtype: bf16, routing: "
      "{counts: [16, 16, 16, 16, 16, 16, 16, 16]}}\n"
      "  - {name: b, kind: moe, tokens: 64, hidden: 32, ffn: 16, experts: 16, top_k: 4, shared_experts: 1, "
      "capacity_factor: 1.25, dtype: fp16, routing: {scoring: sigmoid, groups: 4, topk_groups: 2, "
      "routed_scaling: 2.5}}\n"
      "  - {name: c, kind: moe, tokens: 64, hidden: 32, ffn: 16, experts: 8, top_k: 2, activation: gelu, "
      "dtype: fp32, routing: {skew: zipf, alpha: 1.5}}\n");
  const Workload again =
      workload_from_yaml(config::load_text(config::to_yaml_text(to_yaml(workload)), "resolved.yaml"));
  ASSERT_EQ(again.ops.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(identity_of(again.ops[i]), identity_of(workload.ops[i]));
    EXPECT_EQ(again.ops[i].shape_text(), workload.ops[i].shape_text());
  }
  const auto entry = entry_of(workload.ops[0]);
  EXPECT_NE(std::find(entry.begin(), entry.end(),
                      std::make_pair(std::string("routing.counts"), std::string("16+16+16+16+16+16+16+16"))),
            entry.end());
  EXPECT_EQ(list_fields_of(*workload.ops[0].kind), (std::vector<std::string>{"routing.counts"}));
  EXPECT_EQ(workload.ops[1].shape_text(),
            "t64 h32 f16 e16 top4 swiglu shared1 cf1.25 sigmoid groups 2/4 scale 2.5");
  EXPECT_FALSE(identity_of(workload.ops[0]) == identity_of(workload.ops[2]));
}

TEST(MoeOp, BadFieldsAreLocatedErrorsThatSayWhatIsExpected) {
  const std::string base = "{name: m, kind: moe, tokens: 8, hidden: 16, ffn: 8, ";
  EXPECT_EQ(error_of(base + "experts: 4, top_k: 5, dtype: bf16}"),
            "w.yaml:4:76: ops[0].top_k: top_k 5 is more than the 4 experts\n"
            "  hint: each token goes to top_k distinct experts: at most experts (Mixtral routes to 2 of 8)");
  EXPECT_EQ(error_of(base + "experts: 4, top_k: 0, dtype: bf16}"),
            "w.yaml:4:76: ops[0].top_k: expected a positive integer, got 0"
            "\n  hint: this field counts or sizes something: at least 1");
  EXPECT_EQ(error_of(base + "experts: 0, top_k: 1, dtype: bf16}"),
            "w.yaml:4:66: ops[0].experts: expected a positive integer, got 0"
            "\n  hint: this field counts or sizes something: at least 1");
  EXPECT_EQ(error_of(base + "experts: 4, top_k: 2, capacity_factor: -1, dtype: bf16}"),
            "w.yaml:4:96: ops[0].capacity_factor: capacity_factor must be 0 (no drops) or positive, got -1\n"
            "  hint: GShard and Switch use 1 to 2: an expert takes up to factor x tokens x top_k / experts");
  EXPECT_EQ(error_of(base + "experts: 4, top_k: 2, routing: {counts: [8, 4, 2, 1]}, dtype: bf16}"),
            "w.yaml:4:97: ops[0].routing.counts: the counts sum to 15, not tokens x top_k = 8 x 2 = 16\n"
            "  hint: each token goes to top_k experts: the counts total tokens x top_k");
  EXPECT_EQ(error_of(base + "experts: 4, top_k: 2, routing: {counts: [9, 4, 2, 1]}, dtype: bf16}"),
            "w.yaml:4:97: ops[0].routing.counts: expert 0's count 9 is more than the 8 tokens\n"
            "  hint: a token goes to an expert at most once");
  EXPECT_EQ(error_of(base + "experts: 4, top_k: 2, routing: {counts: [8, 8]}, dtype: bf16}"),
            "w.yaml:4:97: ops[0].routing.counts: 2 counts for 4 experts\n"
            "  hint: give one count per expert, in expert order");
  EXPECT_EQ(error_of(base + "experts: 4, top_k: 2, routing: {counts: [8, -8, 8, 8]}, dtype: bf16}"),
            "w.yaml:4:101: ops[0].routing.counts[1]: expected an integer >= 0, got '-8'"
            "\n  hint: each element is a whole number, 0 or more");
  EXPECT_EQ(error_of(base + "experts: 4, top_k: 2, routing: {skew: zipf, alpha: 0}, dtype: bf16}"),
            "w.yaml:4:108: ops[0].routing.alpha: zipf's alpha must be positive, got 0\n"
            "  hint: 1.2 is a moderate skew; a larger alpha is a steeper one");
  EXPECT_EQ(
      error_of(base + "experts: 4, top_k: 2, routing: {skew: zipf, counts: [4, 4, 4, 4]}, dtype: bf16}"),
      "w.yaml:4:109: ops[0].routing.counts: counts and skew: zipf both force the routing\n"
      "  hint: give the counts, or the zipf skew, not both");
  EXPECT_EQ(error_of(base + "experts: 6, top_k: 2, routing: {groups: 4}, dtype: bf16}"),
            "w.yaml:4:97: ops[0].routing.groups: 4 groups cannot split the 6 experts evenly\n"
            "  hint: groups divides experts: DeepSeek-V3 has 8 groups of 32 of its 256 experts");
  EXPECT_EQ(error_of(base + "experts: 8, top_k: 2, routing: {groups: 4, topk_groups: 5}, dtype: bf16}"),
            "w.yaml:4:113: ops[0].routing.topk_groups: topk_groups 5 is more than the 4 groups\n"
            "  hint: DeepSeek-V3 keeps the best 4 of its 8 groups; without groups leave both out");
  EXPECT_EQ(error_of(base + "experts: 8, top_k: 6, routing: {groups: 4, topk_groups: 2}, dtype: bf16}"),
            "w.yaml:4:113: ops[0].routing.topk_groups: 2 kept groups of 2 experts hold fewer than top_k = 6 "
            "experts\n"
            "  hint: keep more groups (topk_groups), or use fewer, larger ones");
  EXPECT_EQ(
      error_of(base + "experts: 8, top_k: 2, routing: {groups: 4, topk_groups: 2, skew: zipf}, dtype: bf16}"),
      "w.yaml:4:97: ops[0].routing.groups: forced routing (skew, counts) chooses no groups\n"
      "  hint: leave groups and topk_groups out, or the forcing");
  EXPECT_EQ(error_of("{name: m, kind: moe, tokens: 16777216, hidden: 131072, ffn: 8, experts: 4, top_k: 2, "
                     "dtype: bf16}"),
            "w.yaml:4:34: ops[0].tokens: X has more than 2^40 elements\n"
            "  hint: model fewer tokens or a narrower hidden");
  EXPECT_EQ(
      error_of(
          "{name: m, kind: moe, tokens: 8, hidden: 16384, ffn: 16384, experts: 8192, top_k: 2, dtype: bf16}"),
      "w.yaml:4:73: ops[0].experts: the experts' weights (experts x hidden x ffn) have more than 2^40 "
      "elements\n"
      "  hint: model fewer experts or a narrower ffn");
  EXPECT_EQ(
      error_of(
          "{name: m, kind: moe, tokens: 8, hidden: 16777217, ffn: 8, experts: 4, top_k: 2, dtype: bf16}"),
      "w.yaml:4:45: ops[0].hidden: hidden 16777217 is more than tessera models (16777216)");
  EXPECT_EQ(error_of(base + "experts: 4, top_k: 2, dtype: int8}"),
            "w.yaml:4:86: ops[0].dtype: 'int8' is not one of fp32, bf16 or fp16"
            "\n  hint: names are case-sensitive; pick one of those listed");
  EXPECT_EQ(error_of(base + "experts: 4, top_k: 2, activation: relu, dtype: bf16}"),
            "w.yaml:4:91: ops[0].activation: 'relu' is not one of swiglu or gelu; did you mean 'gelu'?"
            "\n  hint: names are case-sensitive; pick one of those listed");
}

}  // namespace
}  // namespace tessera::ops
