// attention (issue "Attention: flash-style prefill, paged KV-cache decode with GQA, and a whole decoder
// layer"): O = softmax(scale * Q K^T [+ causal mask]) V for each batch and query head. Q and O are
// [batch * heads * seq_q, head_dim], K and V [batch * kv_heads * seq_kv, head_dim] (b, h, s, d order); query
// head h reads kv head h / (heads / kv_heads): MHA (kv_heads = heads), GQA, MQA (kv_heads = 1). Causal with
// seq_q < seq_kv: the queries are the last seq_q positions (decode, chunked prefill), so query i sees keys
// 0 .. i + seq_kv - seq_q. scale 0 (the default) means 1 / sqrt(head_dim).
#pragma once

#include <cstdint>
#include <memory>

#include "ops/op_kind.hpp"

namespace tessera::ops {

enum class AttentionMask : uint8_t { none, causal };  // in the order of their names: false, true

struct AttentionShape {
  int64_t batch = 1, heads = 0, kv_heads = 0, seq_q = 0, seq_kv = 0, head_dim = 0;
  AttentionMask mask = AttentionMask::none;
  double scale = 0;  // 0: 1 / sqrt(head_dim)
  double effective_scale() const;
  int64_t group() const { return heads / kv_heads; }  // query heads per kv head
  // Keys query i (0-based among the seq_q) sees: all, or 0 .. i + seq_kv - seq_q when causal.
  int64_t visible_keys(int64_t query) const;
};

std::unique_ptr<OpKind> make_attention_kind();

}  // namespace tessera::ops
