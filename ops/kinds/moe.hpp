// moe (issue 12): a mixture-of-experts FFN layer. Each of `tokens` rows of X [tokens, hidden] is routed to
// top_k of `experts` experts (ops/moe_routing.hpp: router logits X·Wr in float64, softmax or sigmoid
// scores, top-k — group-limited as an option —, renormalised weights; or forced counts for imbalance
// studies), each expert an FFN of width `ffn`:
//   swiglu: (silu(x W_gate[e]) * (x W_up[e])) W_down[e]     gelu: gelu(x W_up[e]) W_down[e]   (gelu: erf
//   form)
// and O = sum over the token's kept experts of weight x FFN_e(x), plus each of `shared_experts` FFNs (same
// ffn, weight 1) on every token. capacity_factor > 0 drops an expert's assignments past its capacity, in
// token order (GShard, Switch: the token's other weights are not renormalised).
//
// Workload spelling: `routing: {scoring: softmax|sigmoid, groups: 1, topk_groups: 1, routed_scaling: 1,
// skew: none|zipf, alpha: 1.2, counts: [..]}`; skew: zipf or counts (one per expert, summing to tokens x
// top_k, each at most tokens) force the assignments, whose weights are the router's scores of the forced
// experts renormalised.
//
// Tensors, in slot order (a slot's tensor id is fixed whether the tensor is there or not): X [tokens,
// hidden]; Wr [hidden, experts]; W_gate (swiglu only) and W_up [experts·hidden, ffn] (expert e's rows
// e·hidden
// ..); W_down [experts·ffn, hidden]; S_gate (swiglu only), S_up [shared·hidden, ffn] and S_down [shared·ffn,
// hidden] when there are shared experts; P [1, tokens] int32 (forced routing only: the token permutation that
// deals the forced assignments); O [tokens, hidden].
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ops/moe_routing.hpp"
#include "ops/op_kind.hpp"

namespace tessera::ops {

struct Op;

enum class MoeActivation : uint8_t { swiglu, gelu };  // in the order of their names

struct MoeShape {
  int64_t tokens = 0, hidden = 0, ffn = 0, experts = 0, top_k = 0;
  double capacity_factor = 0;  // 0: no drops
  int64_t shared_experts = 0;
  MoeActivation activation = MoeActivation::swiglu;
  MoeRoutingOptions routing;
  MoeRoutingRule rule() const { return {tokens, experts, top_k, capacity_factor, routing}; }
  bool swiglu() const { return activation == MoeActivation::swiglu; }
};

std::unique_ptr<OpKind> make_moe_kind();

// The steps of the float64 reference, for tests and for the later mapped forms that reuse its routing: the
// router logits [tokens x experts] from X and Wr; the routing (P read when forced); the layer's output for a
// given routing.
std::vector<double> moe_router_logits(const Op& op, const std::vector<HostTensor>& inputs, int threads);
MoeRouting moe_routing_of(const Op& op, const std::vector<HostTensor>& inputs, int threads);
std::vector<double> moe_layer(const Op& op, const std::vector<HostTensor>& inputs, const MoeRouting& routing,
                              int threads);
// The routing of the op's inputs generated from `seed` (X, Wr and, when forced, P; not the experts'
// weights): what the mapper lays a program out by.
MoeRouting moe_routing_from_seed(const Op& op, uint64_t seed, int threads);

}  // namespace tessera::ops
