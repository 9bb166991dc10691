// attention (issue "Attention: flash-style prefill, paged KV-cache decode with GQA, and a whole decoder
// layer"): O = softmax(scale * Q K^T [+ causal mask]) V for each batch and query head. Q and O are
// [batch * heads * seq_q, head_dim], K and V [batch * kv_heads * seq_kv, head_dim] (b, h, s, d order); query
// head h reads kv head h / (heads / kv_heads): MHA (kv_heads = heads), GQA, MQA (kv_heads = 1). Causal with
// seq_q < seq_kv: the queries are the last seq_q positions (decode, chunked prefill), so query i sees keys
// 0 .. i + seq_kv - seq_q. scale 0 (the default) means 1 / sqrt(head_dim).
//
// The KV cache (`kv_cache: {layout, block_tokens, order}`): contiguous, K and V as above (order bhsd) or with
// a sequence's kv heads interleaved per token (bshd: row (b * seq_kv + s) * kv_heads + h); or paged, as
// vLLM's paged attention keeps it: each sequence's tokens in blocks of block_tokens scattered over a pool of
// `blocks` physical blocks (by default batch * ceil(seq_kv / block_tokens), the ones in use) by a block table
// BT [batch, blocks per sequence] (an int32 input: distinct pseudorandom blocks of the pool, the first
// entries of ops/input_generator.hpp's index permutation), and inside a block the kv heads' rows in `order`
// (bhsd: [head][token], bshd: [token][head]). A last block's tokens past seq_kv are padding that nothing
// reads.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "ops/op_kind.hpp"

namespace tessera::ops {

enum class AttentionMask : uint8_t { none, causal };  // in the order of their names: false, true
enum class KvLayout : uint8_t { contiguous, paged };
enum class KvOrder : uint8_t { bhsd, bshd };

struct KvCache {
  KvLayout layout = KvLayout::contiguous;
  int64_t block_tokens = 16;
  KvOrder order = KvOrder::bhsd;
  int64_t blocks = 0;  // paged: the pool's physical blocks (0: exactly batch x blocks per sequence)
};

struct AttentionShape {
  int64_t batch = 1, heads = 0, kv_heads = 0, seq_q = 0, seq_kv = 0, head_dim = 0;
  AttentionMask mask = AttentionMask::none;
  double scale = 0;  // 0: 1 / sqrt(head_dim)
  KvCache kv_cache;
  bool paged() const { return kv_cache.layout == KvLayout::paged; }
  int64_t blocks_per_sequence() const { return (seq_kv + kv_cache.block_tokens - 1) / kv_cache.block_tokens; }
  // The paged pool's blocks: as given, or just the ones the sequences use.
  int64_t pool_blocks() const {
    return kv_cache.blocks > 0 ? kv_cache.blocks : batch * blocks_per_sequence();
  }
  int64_t kv_rows() const;  // rows of K and V (paged: the whole pool of blocks)
  // The K/V row of token s of kv head h of sequence b; `table` is the paged block table (unused otherwise).
  int64_t kv_row(int64_t b, int64_t h, int64_t s, const int32_t* table) const;
  double effective_scale() const;
  int64_t group() const { return heads / kv_heads; }  // query heads per kv head
  // Keys query i (0-based among the seq_q) sees: all, or 0 .. i + seq_kv - seq_q when causal.
  int64_t visible_keys(int64_t query) const;
};

std::unique_ptr<OpKind> make_attention_kind();

}  // namespace tessera::ops
