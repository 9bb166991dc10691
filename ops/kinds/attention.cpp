#include "ops/kinds/attention.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "ops/input_generator.hpp"
#include "ops/kinds/vector_shape.hpp"
#include "ops/op.hpp"
#include "ops/reference.hpp"
#include "ops/reference_kernels.hpp"

namespace tessera::ops {

namespace {

const std::vector<std::string>& layout_names() {
  static const std::vector<std::string> names = {"contiguous", "paged"};
  return names;
}
const std::vector<std::string>& order_names() {
  static const std::vector<std::string> names = {"bhsd", "bshd"};
  return names;
}

// Sizes past which the float64 reference's work (batch * heads * seq_q * seq_kv * head_dim) is not worth
// checking element by element, and a tensor's rows overflow the simulator's limits.
constexpr int64_t kMaxDimension = int64_t{1} << 24;
// The most (batch, head) pairs: a decode batch of 1,024 sequences over 128 heads (the most any published
// model has); the mapper scores, and the lowering writes, a few instructions per pair.
constexpr int64_t kMaxBatchHeads = int64_t{1} << 17;

class AttentionKind : public OpKindOf<AttentionShape> {
 public:
  const char* name() const override { return "attention"; }
  const std::vector<std::string>& dtype_names() const override { return float_dtype_names(); }

  std::vector<TensorDesc> tensors(const Op& op) const override {
    const AttentionShape& a = *op.as<AttentionShape>();
    const auto index = static_cast<uint32_t>(op.index);
    const int64_t q_rows = a.batch * a.heads * a.seq_q, kv_rows = a.kv_rows();
    std::vector<TensorDesc> tensors = {{"Q", op.dtype, q_rows, a.head_dim, tensor_id(index, 0), false},
                                       {"K", op.dtype, kv_rows, a.head_dim, tensor_id(index, 1), false},
                                       {"V", op.dtype, kv_rows, a.head_dim, tensor_id(index, 2), false}};
    if (a.paged())  // the block table: an index table, a permutation of the pool's blocks
      tensors.push_back({"BT", DType::int32, a.batch, a.blocks_per_sequence(), tensor_id(index, 3), false,
                         std::nullopt, a.pool_blocks()});
    tensors.push_back({"O", op.dtype, q_rows, a.head_dim, 0, true});
    return tensors;
  }

  // Q and K and V of the seq_kv tokens read once, O written once: not a paged pool's padding, nor the block
  // table (the DMA descriptors follow it).
  int64_t minimum_dram_bytes(const Op& op) const override {
    const AttentionShape& a = *op.as<AttentionShape>();
    const int64_t element = size_bytes(op.dtype);
    return (2 * a.batch * a.heads * a.seq_q + 2 * a.batch * a.kv_heads * a.seq_kv) * a.head_dim * element;
  }

  // In float64: each query's scores, their softmax (the row max subtracted), the weighted sum of V; rows of
  // O dealt to threads (each row computed alone, so the result does not depend on their number).
  std::vector<double> reference(const Op& op, const std::vector<HostTensor>& inputs,
                                int threads) const override {
    const AttentionShape& a = *op.as<AttentionShape>();
    const Operands operands(a, inputs);
    const int64_t rows = a.batch * a.heads * a.seq_q, d = a.head_dim;
    std::vector<double> out(static_cast<size_t>(rows * d), 0.0);
    for_each_row(rows, threads, [&](int64_t row, std::vector<double>& scores) {
      operands.row(row, out.data() + row * d, scores);
    });
    return out;
  }

  // The rows holding the positions, each computed once.
  bool has_sampled_reference() const override { return true; }
  std::vector<double> reference_at(const Op& op, uint64_t seed,
                                   const std::vector<int64_t>& positions) const override {
    const AttentionShape& a = *op.as<AttentionShape>();
    const Operands operands(a, generate_inputs(op, seed));
    const int64_t d = a.head_dim;
    std::map<int64_t, std::vector<double>> rows;
    std::vector<double> scores;
    std::vector<double> values;
    for (const int64_t position : positions) {
      const int64_t row = position / d;
      auto found = rows.find(row);
      if (found == rows.end()) {
        found = rows.emplace(row, std::vector<double>(static_cast<size_t>(d), 0.0)).first;
        operands.row(row, found->second.data(), scores);
      }
      values.push_back(found->second[static_cast<size_t>(position % d)]);
    }
    return values;
  }

 private:
  // Q, K and V as float64 arrays of their exact values, and one row of O from them.
  struct Operands {
    const AttentionShape& a;
    std::vector<double> q, k, v;
    std::vector<int32_t> table;
    Operands(const AttentionShape& shape, const std::vector<HostTensor>& inputs) : a(shape) {
      auto widen = [](const HostTensor& tensor) {
        std::vector<double> values(static_cast<size_t>(tensor.elements()));
        for (int64_t i = 0; i < tensor.elements(); ++i) values[static_cast<size_t>(i)] = tensor.value(i);
        return values;
      };
      q = widen(inputs.at(0));
      k = widen(inputs.at(1));
      v = widen(inputs.at(2));
      if (a.paged()) {
        const auto* entries = reinterpret_cast<const int32_t*>(inputs.at(3).bytes.data());
        table.assign(entries, entries + inputs.at(3).elements());
      }
    }
    // Row `row` of O (row = (b * heads + h) * seq_q + i) into `out` (zeroed, head_dim values).
    void row(int64_t row, double* out, std::vector<double>& scores) const {
      const int64_t d = a.head_dim, i = row % a.seq_q, h = (row / a.seq_q) % a.heads,
                    b = row / (a.seq_q * a.heads), kv_head = h / a.group();
      const int32_t* entries = table.empty() ? nullptr : table.data();
      const double scale = a.effective_scale();
      const int64_t seen = a.visible_keys(i);
      scores.resize(static_cast<size_t>(seen));
      const double* query = q.data() + row * d;
      double maximum = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < seen; ++j) {
        const double* key = k.data() + a.kv_row(b, kv_head, j, entries) * d;
        double dot = 0;
        for (int64_t c = 0; c < d; ++c) dot += query[c] * key[c];
        scores[static_cast<size_t>(j)] = scale * dot;
        maximum = std::max(maximum, scale * dot);
      }
      double sum = 0;
      for (int64_t j = 0; j < seen; ++j) {
        scores[static_cast<size_t>(j)] = std::exp(scores[static_cast<size_t>(j)] - maximum);
        sum += scores[static_cast<size_t>(j)];
      }
      for (int64_t j = 0; j < seen; ++j) {
        const double weight = scores[static_cast<size_t>(j)] / sum;
        const double* value = v.data() + a.kv_row(b, kv_head, j, entries) * d;
        for (int64_t c = 0; c < d; ++c) out[c] += weight * value[c];
      }
    }
  };

 protected:
  void visit_fields(AttentionShape& a, FieldVisitor& visitor) const override {
    visitor.integer("batch", a.batch, IntegerRule::positive, 1);
    visitor.integer("heads", a.heads, IntegerRule::positive, std::nullopt);
    visitor.integer("kv_heads", a.kv_heads, IntegerRule::positive, std::nullopt);
    visitor.integer("seq_q", a.seq_q, IntegerRule::positive, std::nullopt);
    visitor.integer("seq_kv", a.seq_kv, IntegerRule::positive, std::nullopt);
    visitor.integer("head_dim", a.head_dim, IntegerRule::positive, std::nullopt);
    visit_choice(visitor, "causal", a.mask, boolean_names(),
                 std::optional<AttentionMask>(AttentionMask::none));
    visitor.real("scale", a.scale, RealRule::any, 0.0);
    visitor.group("kv_cache", [&](FieldVisitor& cache) {
      visit_choice(cache, "layout", a.kv_cache.layout, layout_names(),
                   std::optional<KvLayout>(KvLayout::contiguous));
      cache.integer("block_tokens", a.kv_cache.block_tokens, IntegerRule::positive, 16);
      visit_choice(cache, "order", a.kv_cache.order, order_names(), std::optional<KvOrder>(KvOrder::bhsd));
      cache.integer("blocks", a.kv_cache.blocks, IntegerRule::nonnegative, 0);
    });
  }
  void check_fields(const AttentionShape& a, const FieldChecks& checks) const override {
    for (const auto& [field, value] : {std::pair<const char*, int64_t>{"batch", a.batch},
                                       {"heads", a.heads},
                                       {"seq_q", a.seq_q},
                                       {"seq_kv", a.seq_kv},
                                       {"head_dim", a.head_dim}})
      if (value > kMaxDimension)
        checks.fail(field,
                    fmt::format("{} {} is more than tessera models ({})", field, value, kMaxDimension));
    // batch and heads are at most 2^24 (checked above): their product fits int64.
    if (a.batch * a.heads > kMaxBatchHeads)
      checks.fail(
          "heads",
          fmt::format("batch x heads = {} x {} = {} (batch, head) pairs, more than tessera models ({})",
                      a.batch, a.heads, a.batch * a.heads, kMaxBatchHeads),
          "simulate fewer sequences or heads");
    if (a.kv_heads > a.heads || a.heads % a.kv_heads != 0)
      checks.fail("kv_heads",
                  fmt::format("{} query heads cannot share {} kv heads evenly", a.heads, a.kv_heads),
                  "kv_heads divides heads: equal for MHA, fewer for GQA, 1 for MQA");
    if (a.mask == AttentionMask::causal && a.seq_q > a.seq_kv)
      checks.fail("seq_q",
                  fmt::format("a causal attention of {} queries over {} keys leaves its first queries no key",
                              a.seq_q, a.seq_kv),
                  "the queries are the last seq_q positions of the keys: seq_q may not exceed seq_kv");
    if (a.kv_cache.block_tokens > kMaxDimension)
      checks.fail("kv_cache", fmt::format("block_tokens {} is more than tessera models ({})",
                                          a.kv_cache.block_tokens, kMaxDimension));
    if (!a.paged() && a.kv_cache.blocks != 0)
      checks.fail("kv_cache.blocks",
                  fmt::format("blocks: {} sizes a paged pool; this cache is contiguous", a.kv_cache.blocks),
                  "add layout: paged, or leave blocks out");
    // batch and seq_kv are at most 2^24 (checked above), so the blocks in use fit int64.
    const int64_t needed = a.batch * a.blocks_per_sequence();
    if (a.paged() && a.kv_cache.blocks != 0 && a.kv_cache.blocks < needed)
      checks.fail(
          "kv_cache.blocks",
          fmt::format("a pool of {} blocks of {} tokens cannot hold batch x seq_kv = {} x {} tokens: it "
                      "takes {} blocks",
                      a.kv_cache.blocks, a.kv_cache.block_tokens, a.batch, a.seq_kv, needed),
          fmt::format("give the cache at least {} blocks (batch x ceil(seq_kv / block_tokens)), or "
                      "shorten seq_kv",
                      needed));
    if (a.paged() && std::max(needed, a.kv_cache.blocks) > (int64_t{1} << 31))
      checks.fail("kv_cache", "the paged pool holds more than 2^31 blocks",
                  "use larger blocks (block_tokens)");
    if (!(a.scale >= 0) || !std::isfinite(a.scale))
      checks.fail("scale", fmt::format("scale must be a positive number, got {}", a.scale),
                  "leave it out for 1/sqrt(head_dim)");
    // The rows of Q, K, V and O, and the reference's work, fit int64 by the limits above only if the
    // products do: check them in steps.
    const double rows =
        static_cast<double>(a.batch) * static_cast<double>(a.heads) * static_cast<double>(a.seq_q);
    const double kv_rows =
        a.paged()
            ? static_cast<double>(std::max(needed, a.kv_cache.blocks)) *
                  static_cast<double>(a.kv_cache.block_tokens) * static_cast<double>(a.kv_heads)
            : static_cast<double>(a.batch) * static_cast<double>(a.kv_heads) * static_cast<double>(a.seq_kv);
    if (std::max(rows, kv_rows) * static_cast<double>(a.head_dim) > static_cast<double>(int64_t{1} << 40))
      checks.fail("seq_kv", "the Q, K, V or O tensor has more than 2^40 elements",
                  "model fewer heads, a shorter sequence or a smaller batch");
    if (2 * rows * static_cast<double>(a.seq_kv) * static_cast<double>(a.head_dim) > 0x1p62)
      checks.fail("seq_kv", "the attention has more than 2^62 multiply-accumulates",
                  "model fewer heads, a shorter sequence or a smaller batch");
  }
  std::string text_of(const AttentionShape& a) const override {
    std::string cache;
    if (a.paged()) cache = fmt::format(" paged {}", a.kv_cache.block_tokens);
    if (a.paged() && a.kv_cache.blocks != 0) cache += fmt::format(" pool {}", a.kv_cache.blocks);
    if (a.kv_cache.order == KvOrder::bshd) cache += " bshd";
    return fmt::format("b{} h{}/{} q{} kv{} d{}{}{}{}", a.batch, a.heads, a.kv_heads, a.seq_q, a.seq_kv,
                       a.head_dim, a.mask == AttentionMask::causal ? " causal" : "",
                       a.scale != 0 ? fmt::format(" scale {}", a.scale) : std::string(), cache);
  }
  // QK^T and PV over the visible keys, each a multiply-accumulate per head_dim element.
  int64_t macs_of(const AttentionShape& a) const override {
    int64_t pairs = 0;
    for (int64_t i = 0; i < a.seq_q; ++i) pairs += a.visible_keys(i);
    return 2 * a.batch * a.heads * pairs * a.head_dim;
  }
};

}  // namespace

double AttentionShape::effective_scale() const {
  return scale != 0 ? scale : 1.0 / std::sqrt(static_cast<double>(head_dim));
}

int64_t AttentionShape::kv_rows() const {
  return paged() ? pool_blocks() * kv_cache.block_tokens * kv_heads : batch * kv_heads * seq_kv;
}

int64_t AttentionShape::kv_row(int64_t b, int64_t h, int64_t s, const int32_t* table) const {
  if (!paged())
    return kv_cache.order == KvOrder::bhsd ? (b * kv_heads + h) * seq_kv + s
                                           : (b * seq_kv + s) * kv_heads + h;
  const int64_t tokens = kv_cache.block_tokens;
  const int64_t block = table[b * blocks_per_sequence() + s / tokens], t = s % tokens;
  return kv_cache.order == KvOrder::bhsd ? (block * kv_heads + h) * tokens + t
                                         : (block * tokens + t) * kv_heads + h;
}

int64_t AttentionShape::visible_keys(int64_t query) const {
  return mask == AttentionMask::causal ? std::min(seq_kv, query + seq_kv - seq_q + 1) : seq_kv;
}

std::unique_ptr<OpKind> make_attention_kind() {
  return std::make_unique<AttentionKind>();
}

}  // namespace tessera::ops
