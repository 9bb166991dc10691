// The vector unit's mixture-of-experts kernels (ops/vector_kernels.hpp): route_weights in fp32 against the
// float64 routing of ops/moe_routing.hpp for random logits (the weights of the experts moe_route chooses,
// the scores themselves), weighted_sum against float64, and the chosen-experts check's messages.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "ops/moe_routing.hpp"
#include "ops/vector_kernels.hpp"

namespace tessera::ops {
namespace {

std::vector<float> random_values(int64_t count, double spread, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, spread);
  std::vector<float> values(static_cast<size_t>(count));
  for (float& value : values) value = static_cast<float>(normal(rng));
  return values;
}

struct RouteCase {
  const char* name;
  int64_t tokens, experts, top_k;
  MoeRoutingOptions options;
};

MoeRoutingOptions routing_options(MoeScoring scoring, int64_t groups, int64_t topk_groups, double scaling) {
  MoeRoutingOptions options;
  options.scoring = scoring;
  options.groups = groups;
  options.topk_groups = topk_groups;
  options.routed_scaling = scaling;
  return options;
}

// The shipped models' routers (Mixtral 8 top-2, Qwen3 128 top-8 softmax; DeepSeek-V3 256 top-8 sigmoid in 8
// groups, 4 kept, scaling 2.5) and a top-1 of a few experts.
TEST(RouteWeights, EqualTheFloat64RoutingsWeightsOfItsChosenExpertsWithinFp32) {
  const std::vector<RouteCase> cases = {
      {"mixtral", 64, 8, 2, routing_options(MoeScoring::softmax, 1, 1, 1.0)},
      {"qwen3", 32, 128, 8, routing_options(MoeScoring::softmax, 1, 1, 1.0)},
      {"deepseek_v3", 32, 256, 8, routing_options(MoeScoring::sigmoid, 8, 4, 2.5)},
      {"top1_sigmoid", 16, 4, 1, routing_options(MoeScoring::sigmoid, 1, 1, 1.0)},
  };
  for (const RouteCase& c : cases) {
    SCOPED_TRACE(c.name);
    // Logits of a router GEMM's spread; the float64 routing reads the same fp32 values.
    const std::vector<float> logits = random_values(c.tokens * c.experts, 2.0, c.experts);
    const std::vector<double> wide(logits.begin(), logits.end());
    MoeRoutingRule rule;
    rule.tokens = c.tokens;
    rule.experts = c.experts;
    rule.top_k = c.top_k;
    rule.options = c.options;
    const MoeRouting routing = moe_route(rule, wide, nullptr);
    std::vector<int32_t> chosen(routing.routes.size());
    for (size_t r = 0; r < chosen.size(); ++r) chosen[r] = routing.routes[r].expert;
    ASSERT_EQ(route_choice_problem(chosen.data(), c.tokens, c.experts, c.top_k), "");

    std::vector<float> scores = logits;
    std::vector<float> weights(chosen.size());
    route_weights(scores.data(), chosen.data(), weights.data(), c.tokens, c.experts, c.top_k,
                  c.options.scoring == MoeScoring::sigmoid, static_cast<float>(c.options.routed_scaling));
    double worst = 0;
    for (size_t r = 0; r < weights.size(); ++r)
      worst = std::max(worst, std::abs(weights[r] - routing.routes[r].weight) / routing.routes[r].weight);
    EXPECT_LT(worst, 2e-6);  // a few fp32 roundings: exp, the sums, the divisions
    if (c.top_k > 1) {
      EXPECT_GT(worst, 0.0);  // computed in fp32, not copied (top-1: exactly 1 either way)
    }
    // The scores written over the logits are moe_scores'.
    std::vector<double> expected(static_cast<size_t>(c.experts));
    for (int64_t t = 0; t < c.tokens; ++t) {
      moe_scores(c.options.scoring, wide.data() + t * c.experts, c.experts, expected.data());
      for (int64_t e = 0; e < c.experts; ++e)
        ASSERT_NEAR(scores[static_cast<size_t>(t * c.experts + e)], expected[static_cast<size_t>(e)],
                    2e-6 * expected[static_cast<size_t>(e)] + 1e-12)
            << "token " << t << " expert " << e;
    }
  }
}

// A row's weights sum to the scaling, and fall with the chosen experts' scores; a table naming other
// experts gives their weights (the device computes exactly the experts the host chose).
TEST(RouteWeights, AreTheChosenExpertsScoresRenormalisedInTheTablesOrder) {
  // softmax of (0, ln 2, ln 3, 0): scores 1/7, 2/7, 3/7, 1/7.
  std::vector<float> scores = {0.0f, std::log(2.0f), std::log(3.0f), 0.0f};
  const std::vector<int32_t> chosen = {1, 2};  // not by falling score: the order is the table's
  std::vector<float> weights(2);
  route_weights(scores.data(), chosen.data(), weights.data(), 1, 4, 2, false, 2.0f);
  EXPECT_NEAR(scores[2], 3.0 / 7.0, 1e-7);
  EXPECT_NEAR(weights[0], 2.0 * 2.0 / 5.0, 1e-6);
  EXPECT_NEAR(weights[1], 2.0 * 3.0 / 5.0, 1e-6);
  // sigmoid(0) = 1/2 for both: equal weights
  std::vector<float> zeros = {0.0f, 0.0f, 0.0f};
  const std::vector<int32_t> two = {2, 0};
  route_weights(zeros.data(), two.data(), weights.data(), 1, 3, 2, true, 1.0f);
  EXPECT_EQ(weights[0], 0.5f);
  EXPECT_EQ(weights[1], 0.5f);
}

TEST(RouteWeights, AChoiceOutsideTheExpertsOrTwiceInARowIsNamed) {
  const std::vector<int32_t> good = {0, 3, 3, 0};
  EXPECT_EQ(route_choice_problem(good.data(), 2, 4, 2), "");
  const std::vector<int32_t> outside = {0, 1, 2, 4};
  EXPECT_EQ(route_choice_problem(outside.data(), 2, 4, 2),
            "row 1's chosen expert 4 (column 1) is outside [0, 4)");
  const std::vector<int32_t> negative = {-1, 1};
  EXPECT_EQ(route_choice_problem(negative.data(), 1, 4, 2),
            "row 0's chosen expert -1 (column 0) is outside [0, 4)");
  const std::vector<int32_t> twice = {0, 1, 2, 3, 1, 3};
  EXPECT_EQ(route_choice_problem(twice.data(), 2, 4, 3), "row 1 chooses expert 3 twice (columns 0 and 2)");
}

TEST(WeightedSum, EqualsTheFloat64SumOfTheWeightedPartsPlusY) {
  const int64_t rows = 9, cols = 70, parts = 8;
  const std::vector<float> x = random_values(rows * parts * cols, 1.0, 1);
  const std::vector<float> g = random_values(rows * parts, 0.5, 2);
  const std::vector<float> y = random_values(rows * cols, 1.0, 3);
  for (const bool with_y : {false, true}) {
    SCOPED_TRACE(with_y ? "with y" : "without y");
    std::vector<float> out(static_cast<size_t>(rows * cols));
    weighted_sum(x.data(), g.data(), with_y ? y.data() : nullptr, out.data(), rows, cols, parts);
    double error = 0, norm = 0;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        double expected = with_y ? y[static_cast<size_t>(r * cols + c)] : 0.0;
        for (int64_t p = 0; p < parts; ++p)
          expected += static_cast<double>(g[static_cast<size_t>(r * parts + p)]) *
                      x[static_cast<size_t>((r * parts + p) * cols + c)];
        const double got = out[static_cast<size_t>(r * cols + c)];
        error += (got - expected) * (got - expected);
        norm += expected * expected;
      }
    EXPECT_LT(std::sqrt(error / norm), 1e-6);
  }
  // Part p of row r is row r * parts + p: one part weighted 1, the others 0, picks it out exactly.
  std::vector<float> picker(static_cast<size_t>(rows * parts), 0.0f);
  for (int64_t r = 0; r < rows; ++r) picker[static_cast<size_t>(r * parts + r % parts)] = 1.0f;
  std::vector<float> out(static_cast<size_t>(rows * cols));
  weighted_sum(x.data(), picker.data(), nullptr, out.data(), rows, cols, parts);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      ASSERT_EQ(out[static_cast<size_t>(r * cols + c)],
                x[static_cast<size_t>((r * parts + r % parts) * cols + c)]);
}

}  // namespace
}  // namespace tessera::ops
