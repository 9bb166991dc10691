// The routing of a mixture-of-experts layer (ops/kinds/moe.hpp): which experts each token goes to, with
// which gate weight, and which assignments an expert's capacity drops. Plain C++ on std::vector, with no
// yaml, fmt or Eigen, so that the CPU reference, the mapper, the simulator and the GPU runner's host code all
// include this one file (as they include input_generator.hpp) and route bit for bit alike.
//
// Scores from the router's logits (a token's row of X·Wr, computed in float64 by whoever calls):
// - softmax (Mixtral, Qwen3-MoE): p = softmax(logits) over all experts;
// - sigmoid (DeepSeek-V3): s = 1 / (1 + e^-logit) per expert.
// Selection: the top_k scores, ties broken by the lower expert index. Group-limited (DeepSeek-V3's
// n_group/topk_group): the experts in `groups` equal groups of consecutive indices, each group scored by the
// sum of its two highest scores (its one score when it holds one expert), the `topk_groups` best groups kept
// (ties: the lower group), and the top_k taken among their experts. DeepSeek-V3 also adds a learned bias to
// the scores for the selection only; a seeded router has none to add, so none is modelled.
// Gate weights: the chosen experts' scores divided by their sum, times routed_scaling (Mixtral's and
// Qwen3's norm_topk_prob, DeepSeek-V3's norm_topk_prob with routed_scaling_factor 2.5).
//
// Forced routing (imbalance studies): the per-expert counts are given (or follow a zipf law: expert e gets a
// share proportional to 1 / (e + 1)^alpha, so expert 0 is the busiest) and sum to tokens x top_k, each at
// most tokens. The assignments are dealt so that each token's experts are distinct: the experts' counts laid
// end to end (expert 0's, then expert 1's, ...) fill slot j = choice * tokens + i of the list, which goes to
// token perm(i), perm a pseudorandom permutation of the tokens (the op's index-table input P, the generator's
// input_index: every reader computes the same one from the seed); an expert's run is at most tokens long, so
// it never meets a token twice. Gate weights as above: the
// router's scores of the forced experts, renormalised (times routed_scaling).
//
// Capacity (GShard, Switch): capacity_factor > 0 gives each expert capacity = ceil(capacity_factor x tokens
// x top_k / experts) (in float64, at most tokens); an expert's assignments past its capacity, in token order,
// are dropped: they contribute nothing and the token's other weights are not renormalised.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

namespace tessera::ops {

enum class MoeScoring : uint8_t { softmax, sigmoid };  // in the order of their names
enum class MoeSkew : uint8_t { none, zipf };           // in the order of their names

// The routing group of a moe op (`routing: {...}` in its workload entry).
struct MoeRoutingOptions {
  MoeScoring scoring = MoeScoring::softmax;
  int64_t groups = 1, topk_groups = 1;  // groups = 1: not group-limited
  double routed_scaling = 1;
  MoeSkew skew = MoeSkew::none;
  double alpha = 1.2;           // zipf's exponent
  std::vector<int64_t> counts;  // forced per-expert counts (empty: none)
  bool forced() const { return skew != MoeSkew::none || !counts.empty(); }
};

// What routing needs to know of a moe op (its fields, ops/kinds/moe.hpp).
struct MoeRoutingRule {
  int64_t tokens = 0, experts = 0, top_k = 0;
  double capacity_factor = 0;  // 0: no drops
  MoeRoutingOptions options;
  bool forced() const { return options.forced(); }
  // Each expert's capacity: ceil(capacity_factor x tokens x top_k / experts), at most tokens; tokens when
  // nothing is dropped.
  int64_t capacity() const {
    if (capacity_factor <= 0) return tokens;
    const double wanted = std::ceil(capacity_factor * static_cast<double>(tokens) *
                                    static_cast<double>(top_k) / static_cast<double>(experts));
    return wanted >= static_cast<double>(tokens) ? tokens
                                                 : std::max<int64_t>(1, static_cast<int64_t>(wanted));
  }
};

// One of a token's top_k assignments.
struct MoeRoute {
  int32_t expert = 0;
  double weight = 0;  // the gate weight (kept or not: a dropped one's would have been this)
  bool kept = true;
};

struct MoeRouting {
  int64_t tokens = 0, experts = 0, top_k = 0, capacity = 0;
  // Token t's assignments at t * top_k .. t * top_k + top_k - 1, by falling weight (ties: the lower expert).
  std::vector<MoeRoute> routes;
  // The permutation: expert e's kept tokens, in token order, at expert_offsets[e] .. expert_offsets[e + 1]
  // - 1 of expert_tokens, with their gate weights in expert_weights.
  std::vector<int64_t> expert_offsets;
  std::vector<int64_t> expert_tokens;
  std::vector<double> expert_weights;
  std::vector<int64_t> assigned;  // per expert: assignments before drops
  int64_t dropped = 0;            // assignments dropped over all experts
  int64_t count(int64_t expert) const {
    return expert_offsets[static_cast<size_t>(expert + 1)] - expert_offsets[static_cast<size_t>(expert)];
  }
  int64_t kept() const { return static_cast<int64_t>(expert_tokens.size()); }
};

// A token's scores from its logits (experts values).
inline void moe_scores(MoeScoring scoring, const double* logits, int64_t experts, double* scores) {
  if (scoring == MoeScoring::sigmoid) {
    for (int64_t e = 0; e < experts; ++e) scores[e] = 1.0 / (1.0 + std::exp(-logits[e]));
    return;
  }
  double maximum = logits[0];
  for (int64_t e = 1; e < experts; ++e) maximum = std::max(maximum, logits[e]);
  double sum = 0;
  for (int64_t e = 0; e < experts; ++e) sum += scores[e] = std::exp(logits[e] - maximum);
  for (int64_t e = 0; e < experts; ++e) scores[e] /= sum;
}

// The top `count` of `candidates` (expert indices, ascending) by score, highest first, ties to the lower
// index.
inline std::vector<int32_t> moe_top(const double* scores, std::vector<int32_t> candidates, int64_t count) {
  const auto before = [scores](int32_t a, int32_t b) {
    return scores[a] > scores[b] || (scores[a] == scores[b] && a < b);
  };
  std::partial_sort(candidates.begin(), candidates.begin() + count, candidates.end(), before);
  candidates.resize(static_cast<size_t>(count));
  return candidates;
}

// A token's top_k experts by its scores, group-limited when rule.options.groups > 1; highest score first.
inline std::vector<int32_t> moe_select(const MoeRoutingRule& rule, const double* scores) {
  std::vector<int32_t> candidates;
  if (rule.options.groups <= 1) {
    candidates.resize(static_cast<size_t>(rule.experts));
    std::iota(candidates.begin(), candidates.end(), 0);
    return moe_top(scores, std::move(candidates), rule.top_k);
  }
  const int64_t size = rule.experts / rule.options.groups;
  std::vector<double> group_scores(static_cast<size_t>(rule.options.groups));
  for (int64_t g = 0; g < rule.options.groups; ++g) {
    std::vector<int32_t> members(static_cast<size_t>(size));
    std::iota(members.begin(), members.end(), static_cast<int32_t>(g * size));
    double sum = 0;
    for (int32_t e : moe_top(scores, std::move(members), std::min<int64_t>(2, size))) sum += scores[e];
    group_scores[static_cast<size_t>(g)] = sum;
  }
  std::vector<int32_t> groups(static_cast<size_t>(rule.options.groups));
  std::iota(groups.begin(), groups.end(), 0);
  std::vector<int32_t> kept = moe_top(group_scores.data(), std::move(groups), rule.options.topk_groups);
  std::sort(kept.begin(), kept.end());
  for (int32_t g : kept)
    for (int64_t e = g * size; e < (g + 1) * size; ++e) candidates.push_back(static_cast<int32_t>(e));
  return moe_top(scores, std::move(candidates), rule.top_k);
}

// Zipf's per-expert counts: tokens x top_k apportioned by 1 / (e + 1)^alpha (largest remainders, ties to
// the lower expert), each capped at tokens with the excess apportioned again among the others; so the counts
// never rise with e and sum to tokens x top_k.
inline std::vector<int64_t> moe_zipf_counts(int64_t tokens, int64_t experts, int64_t top_k, double alpha) {
  std::vector<int64_t> counts(static_cast<size_t>(experts), 0);
  std::vector<bool> full(static_cast<size_t>(experts), false);
  int64_t left = tokens * top_k;
  while (left > 0) {
    double total = 0;
    for (int64_t e = 0; e < experts; ++e)
      if (!full[static_cast<size_t>(e)]) total += std::pow(static_cast<double>(e + 1), -alpha);
    std::vector<int64_t> share(static_cast<size_t>(experts), 0);
    std::vector<double> remainder(static_cast<size_t>(experts), -1);
    int64_t given = 0;
    for (int64_t e = 0; e < experts; ++e) {
      if (full[static_cast<size_t>(e)]) continue;
      const double exact = static_cast<double>(left) * std::pow(static_cast<double>(e + 1), -alpha) / total;
      share[static_cast<size_t>(e)] = static_cast<int64_t>(std::floor(exact));
      remainder[static_cast<size_t>(e)] = exact - std::floor(exact);
      given += share[static_cast<size_t>(e)];
    }
    std::vector<int32_t> order(static_cast<size_t>(experts));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      return remainder[static_cast<size_t>(a)] > remainder[static_cast<size_t>(b)];
    });
    for (size_t i = 0; given < left && i < order.size(); ++i)
      if (!full[static_cast<size_t>(order[i])]) ++share[static_cast<size_t>(order[i])], ++given;
    left = 0;
    for (int64_t e = 0; e < experts; ++e) {
      int64_t& count = counts[static_cast<size_t>(e)];
      count += share[static_cast<size_t>(e)];
      if (count >= tokens) {
        left += count - tokens;
        count = tokens;
        full[static_cast<size_t>(e)] = true;
      }
    }
  }
  return counts;
}

// The forced counts: as given, or zipf's.
inline std::vector<int64_t> moe_forced_counts(const MoeRoutingRule& rule) {
  if (!rule.options.counts.empty()) return rule.options.counts;
  return moe_zipf_counts(rule.tokens, rule.experts, rule.top_k, rule.options.alpha);
}

// Each token's forced experts (token t's at t * top_k ..., in no particular order), dealt as the header says
// by `permutation` (tokens entries, a permutation of 0 .. tokens - 1).
inline std::vector<int32_t> moe_forced_experts(const MoeRoutingRule& rule, const int32_t* permutation) {
  const std::vector<int64_t> counts = moe_forced_counts(rule);
  std::vector<int32_t> experts(static_cast<size_t>(rule.tokens * rule.top_k));
  int64_t slot = 0;
  for (int64_t e = 0; e < rule.experts; ++e)
    for (int64_t n = 0; n < counts[static_cast<size_t>(e)]; ++n, ++slot) {
      const int64_t choice = slot / rule.tokens;
      const int64_t token = permutation[slot % rule.tokens];
      experts[static_cast<size_t>(token * rule.top_k + choice)] = static_cast<int32_t>(e);
    }
  return experts;
}

// The routing of all tokens from their logits [tokens x experts, row-major]; `permutation` deals forced
// assignments (tokens entries; unread, and may be null, when the routing is not forced).
inline MoeRouting moe_route(const MoeRoutingRule& rule, const std::vector<double>& logits,
                            const int32_t* permutation) {
  MoeRouting routing;
  routing.tokens = rule.tokens;
  routing.experts = rule.experts;
  routing.top_k = rule.top_k;
  routing.capacity = rule.capacity();
  routing.routes.resize(static_cast<size_t>(rule.tokens * rule.top_k));
  std::vector<int32_t> forced;
  if (rule.forced()) forced = moe_forced_experts(rule, permutation);
  std::vector<double> scores(static_cast<size_t>(rule.experts));
  for (int64_t t = 0; t < rule.tokens; ++t) {
    moe_scores(rule.options.scoring, logits.data() + t * rule.experts, rule.experts, scores.data());
    std::vector<int32_t> chosen;
    if (rule.forced()) {
      chosen.assign(forced.begin() + t * rule.top_k, forced.begin() + (t + 1) * rule.top_k);
      std::sort(chosen.begin(), chosen.end());
      chosen = moe_top(scores.data(), std::move(chosen), rule.top_k);
    } else {
      chosen = moe_select(rule, scores.data());
    }
    double sum = 0;
    for (int32_t e : chosen) sum += scores[static_cast<size_t>(e)];
    for (int64_t j = 0; j < rule.top_k; ++j) {
      MoeRoute& route = routing.routes[static_cast<size_t>(t * rule.top_k + j)];
      route.expert = chosen[static_cast<size_t>(j)];
      route.weight = scores[static_cast<size_t>(route.expert)] / sum * rule.options.routed_scaling;
    }
  }
  // Capacity, in token order; then the permutation.
  routing.assigned.assign(static_cast<size_t>(rule.experts), 0);
  std::vector<int64_t> kept(static_cast<size_t>(rule.experts), 0);
  for (MoeRoute& route : routing.routes) {
    ++routing.assigned[static_cast<size_t>(route.expert)];
    route.kept = kept[static_cast<size_t>(route.expert)] < routing.capacity;
    if (route.kept)
      ++kept[static_cast<size_t>(route.expert)];
    else
      ++routing.dropped;
  }
  routing.expert_offsets.assign(static_cast<size_t>(rule.experts + 1), 0);
  for (int64_t e = 0; e < rule.experts; ++e)
    routing.expert_offsets[static_cast<size_t>(e + 1)] =
        routing.expert_offsets[static_cast<size_t>(e)] + kept[static_cast<size_t>(e)];
  routing.expert_tokens.resize(static_cast<size_t>(routing.expert_offsets.back()));
  routing.expert_weights.resize(routing.expert_tokens.size());
  std::vector<int64_t> next(routing.expert_offsets.begin(), routing.expert_offsets.end() - 1);
  for (int64_t r = 0; r < rule.tokens * rule.top_k; ++r) {
    const MoeRoute& route = routing.routes[static_cast<size_t>(r)];
    if (!route.kept) continue;
    const int64_t at = next[static_cast<size_t>(route.expert)]++;
    routing.expert_tokens[static_cast<size_t>(at)] = r / rule.top_k;
    routing.expert_weights[static_cast<size_t>(at)] = route.weight;
  }
  return routing;
}

}  // namespace tessera::ops
