// The attention op kind (issue "Attention: flash-style prefill, paged KV-cache decode with GQA"): its
// spelling with defaults, every bad field a located error, and its float64 reference against what attention
// is — a softmax over each query's visible keys, GQA's query heads sharing their kv head, causal queries as
// the last positions of the keys.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "common/config.hpp"
#include "ops/kinds/attention.hpp"
#include "ops/op.hpp"
#include "ops/reference.hpp"
#include "ops/workload.hpp"

namespace tessera::ops {
namespace {

Workload parse(const std::string& ops) {
  return workload_from_yaml(config::load_text("name: a\nseed: 9\nops:\n" + ops, "a.yaml"));
}

std::string error_of(const std::string& ops) {
  try {
    parse(ops);
  } catch (const InputError& error) {
    return error.what();
  }
  return "no error";
}

// Rows [first, first + count) of a tensor, as a tensor of their own.
HostTensor rows_of(const HostTensor& tensor, int64_t first, int64_t count) {
  HostTensor slice(tensor.dtype, count, tensor.cols);
  const int64_t row_bytes = tensor.cols * size_bytes(tensor.dtype);
  std::memcpy(slice.bytes.data(), tensor.bytes.data() + first * row_bytes,
              static_cast<size_t>(count * row_bytes));
  return slice;
}

TEST(Attention, TheSpellingParsesWithItsDefaultsAndItsShapeAndWork) {
  const Workload workload = parse(
      "  - {name: p, kind: attention, heads: 8, kv_heads: 2, seq_q: 64, seq_kv: 64, head_dim: 32, causal: "
      "true, dtype: bf16}\n"
      "  - {name: d, kind: attention, batch: 4, heads: 32, kv_heads: 8, seq_q: 1, seq_kv: 4096, head_dim: "
      "128, scale: 0.05, dtype: fp16}\n");
  const AttentionShape& prefill = *workload.ops[0].as<AttentionShape>();
  EXPECT_EQ(prefill.batch, 1);
  EXPECT_EQ(prefill.group(), 4);
  EXPECT_DOUBLE_EQ(prefill.effective_scale(), 1 / std::sqrt(32.0));
  EXPECT_EQ(workload.ops[0].shape_text(), "b1 h8/2 q64 kv64 d32 causal");
  // Causal 64 x 64: query i sees i + 1 keys, 64 * 65 / 2 pairs; QK^T and PV each a MAC per element of d.
  EXPECT_EQ(workload.ops[0].macs(), 2 * 8 * (64 * 65 / 2) * 32);
  const AttentionShape& decode = *workload.ops[1].as<AttentionShape>();
  EXPECT_EQ(decode.effective_scale(), 0.05);
  EXPECT_EQ(workload.ops[1].shape_text(), "b4 h32/8 q1 kv4096 d128 scale 0.05");
  const std::vector<TensorDesc> tensors = tensors_of(workload.ops[1]);
  ASSERT_EQ(tensors.size(), 4u);
  EXPECT_EQ(tensors[0].rows, 4 * 32 * 1);    // Q
  EXPECT_EQ(tensors[1].rows, 4 * 8 * 4096);  // K
  EXPECT_EQ(tensors[3].cols, 128);           // O
}

TEST(Attention, BadFieldsAreLocatedErrorsThatSayWhatIsExpected) {
  EXPECT_EQ(
      error_of("  - {name: x, kind: attention, heads: 6, kv_heads: 4, seq_q: 8, seq_kv: 8, head_dim: 16, "
               "dtype: bf16}\n"),
      "a.yaml:4:52: ops[0].kv_heads: 6 query heads cannot share 4 kv heads evenly\n  hint: kv_heads "
      "divides heads: equal for MHA, fewer for GQA, 1 for MQA");
  EXPECT_EQ(
      error_of("  - {name: x, kind: attention, heads: 4, kv_heads: 4, seq_q: 9, seq_kv: 8, head_dim: 16, "
               "causal: true, dtype: bf16}\n"),
      "a.yaml:4:62: ops[0].seq_q: a causal attention of 9 queries over 8 keys leaves its first queries no "
      "key\n  hint: the queries are the last seq_q positions of the keys: seq_q may not exceed seq_kv");
  EXPECT_EQ(
      error_of("  - {name: x, kind: attention, heads: 4, kv_heads: 4, seq_q: 8, seq_kv: 8, head_dim: 16, "
               "scale: -1, dtype: bf16}\n"),
      "a.yaml:4:97: ops[0].scale: scale must be a positive number, got -1\n  hint: leave it out for "
      "1/sqrt(head_dim)");
  EXPECT_NE(
      error_of("  - {name: x, kind: attention, heads: 4, kv_heads: 4, seq_q: 8, seq_kv: 8, dtype: bf16}\n")
          .find("head_dim"),
      std::string::npos);  // a required field missing names it
  EXPECT_NE(
      error_of("  - {name: x, kind: attention, heads: 4, kv_heads: 4, seq_q: 8, seq_kv: 8, head_dim: 16, "
               "dtype: int8}\n")
          .find("int8"),
      std::string::npos);
  EXPECT_NE(error_of("  - {name: x, kind: attention, batch: 1, heads: 1024, kv_heads: 1024, seq_q: 16777216, "
                     "seq_kv: 16777216, head_dim: 128, dtype: bf16}\n")
                .find("more than 2^40 elements"),
            std::string::npos);
  // More (batch, head) pairs than tessera models: refused before their sizes are multiplied.
  EXPECT_NE(
      error_of("  - {name: x, kind: attention, batch: 4096, heads: 4096, kv_heads: 4096, seq_q: 16777216, "
               "seq_kv: 16777216, head_dim: 128, dtype: bf16}\n")
          .find("batch x heads = 4096 x 4096 = 16777216 (batch, head) pairs, more than tessera models "
                "(131072)"),
      std::string::npos);
}

TEST(Attention, OneQueryOverTwoKeysIsTheSoftmaxWeightedSumOfTheirValues) {
  const Workload workload = parse(
      "  - {name: x, kind: attention, heads: 1, kv_heads: 1, seq_q: 1, seq_kv: 2, head_dim: 3, scale: 0.5, "
      "dtype: "
      "fp32}\n");
  const Op& op = workload.ops[0];
  const auto inputs = generate_inputs(op, 9);
  const HostTensor &q = inputs[0], &k = inputs[1], &v = inputs[2];
  double s[2];
  for (int j = 0; j < 2; ++j) {
    s[j] = 0;
    for (int c = 0; c < 3; ++c) s[j] += 0.5 * q.value(c) * k.value(j * 3 + c);
  }
  const double p0 = 1 / (1 + std::exp(s[1] - s[0])), p1 = 1 - p0;
  const std::vector<double> out = reference_output(op, inputs, 1);
  ASSERT_EQ(out.size(), 3u);
  for (int c = 0; c < 3; ++c) EXPECT_NEAR(out[c], p0 * v.value(c) + p1 * v.value(3 + c), 1e-12) << c;
}

TEST(Attention, GqaQueryHeadsShareTheirKvHeadAndCausalQueriesAreTheLastPositions) {
  // 4 query heads over 2 kv heads, 3 causal queries over 5 keys: query i sees keys 0 .. i + 2.
  const Workload gqa = parse(
      "  - {name: g, kind: attention, batch: 2, heads: 4, kv_heads: 2, seq_q: 3, seq_kv: 5, head_dim: 8, "
      "causal: "
      "true, dtype: fp32}\n");
  const Op& op = gqa.ops[0];
  const auto inputs = generate_inputs(op, 9);
  const std::vector<double> out = reference_output(op, inputs, 2);
  const Workload one = parse(
      "  - {name: o, kind: attention, heads: 1, kv_heads: 1, seq_q: 3, seq_kv: 5, head_dim: 8, causal: true, "
      "dtype: fp32}\n");
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < 4; ++h) {
      const int64_t kv = h / 2;
      const std::vector<HostTensor> head = {rows_of(inputs[0], (b * 4 + h) * 3, 3),
                                            rows_of(inputs[1], (b * 2 + kv) * 5, 5),
                                            rows_of(inputs[2], (b * 2 + kv) * 5, 5)};
      const std::vector<double> single = reference_output(one.ops[0], head, 1);
      for (int64_t i = 0; i < 3 * 8; ++i)
        EXPECT_DOUBLE_EQ(out[static_cast<size_t>((b * 4 + h) * 3 * 8 + i)], single[static_cast<size_t>(i)])
            << "batch " << b << " head " << h;
    }
  // Causal over as many queries as keys: the first query sees only the first key, so its output is V's row 0.
  const Workload square = parse(
      "  - {name: s, kind: attention, heads: 2, kv_heads: 1, seq_q: 4, seq_kv: 4, head_dim: 8, causal: true, "
      "dtype: "
      "fp32}\n");
  const auto square_inputs = generate_inputs(square.ops[0], 9);
  const std::vector<double> square_out = reference_output(square.ops[0], square_inputs, 1);
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t c = 0; c < 8; ++c)
      EXPECT_DOUBLE_EQ(square_out[static_cast<size_t>(h * 4 * 8 + c)], square_inputs[2].value(c));
  // A decode query (seq_q 1) sees every key whether causal or not.
  const Workload decode = parse(
      "  - {name: c, kind: attention, heads: 2, kv_heads: 2, seq_q: 1, seq_kv: 7, head_dim: 4, causal: true, "
      "dtype: "
      "fp32}\n  - {name: n, kind: attention, heads: 2, kv_heads: 2, seq_q: 1, seq_kv: 7, head_dim: 4, dtype: "
      "fp32}\n");
  const auto decode_inputs = generate_inputs(decode.ops[0], 9);
  EXPECT_EQ(reference_output(decode.ops[0], decode_inputs, 1),
            reference_output(decode.ops[1], decode_inputs, 1));
}

// The KV cache's layouts hold the same logical K and V: a paged pool gathered through its block table, or a
// bshd cache read token-major, gives the contiguous bhsd attention's output on the gathered tensors.
TEST(Attention, APagedOrBshdCacheIsTheContiguousAttentionOfItsGatheredKeysAndValues) {
  const std::string shape =
      "heads: 4, kv_heads: 2, seq_q: 3, seq_kv: 37, head_dim: 8, causal: true, dtype: fp32";
  const Workload workload =
      parse("  - {name: contiguous, kind: attention, batch: 3, " + shape + "}\n" +
            "  - {name: paged, kind: attention, batch: 3, " + shape +
            ", kv_cache: {layout: paged, block_tokens: 16}}\n" +
            "  - {name: paged_bshd, kind: attention, batch: 3, " + shape +
            ", kv_cache: {layout: paged, block_tokens: 5, order: bshd}}\n" +
            "  - {name: bshd, kind: attention, batch: 3, " + shape + ", kv_cache: {order: bshd}}\n");
  const Op& contiguous = workload.ops[0];
  for (size_t o = 1; o < workload.ops.size(); ++o) {
    const Op& op = workload.ops[o];
    const AttentionShape& a = *op.as<AttentionShape>();
    const auto inputs = generate_inputs(op, 9);
    const int32_t* table = a.paged() ? reinterpret_cast<const int32_t*>(inputs.at(3).bytes.data())
                                     : static_cast<const int32_t*>(nullptr);
    if (a.paged()) {  // the table is a permutation of the pool's blocks
      const int64_t blocks = a.batch * a.blocks_per_sequence();
      ASSERT_EQ(inputs.at(3).elements(), blocks);
      std::vector<bool> used(static_cast<size_t>(blocks), false);
      for (int64_t i = 0; i < blocks; ++i) {
        ASSERT_GE(table[i], 0);
        ASSERT_LT(table[i], blocks);
        EXPECT_FALSE(used[static_cast<size_t>(table[i])]);
        used[static_cast<size_t>(table[i])] = true;
      }
      EXPECT_EQ(inputs.at(1).rows,
                blocks * a.kv_cache.block_tokens * a.kv_heads);  // the pool, padding included
    }
    // K and V gathered into bhsd order.
    std::vector<HostTensor> gathered = {inputs[0], HostTensor(DType::fp32, 3 * 2 * 37, 8),
                                        HostTensor(DType::fp32, 3 * 2 * 37, 8)};
    for (int t = 1; t <= 2; ++t)
      for (int64_t b = 0; b < 3; ++b)
        for (int64_t h = 0; h < 2; ++h)
          for (int64_t s = 0; s < 37; ++s)
            std::memcpy(gathered[t].bytes.data() + ((b * 2 + h) * 37 + s) * 8 * 4,
                        inputs[t].bytes.data() + a.kv_row(b, h, s, table) * 8 * 4, 8 * 4);
    EXPECT_EQ(reference_output(op, inputs, 1), reference_output(contiguous, gathered, 1)) << op.name;
  }
  EXPECT_EQ(workload.ops[2].shape_text(), "b3 h4/2 q3 kv37 d8 causal paged 5 bshd");
  // The fields read back from the resolved form, and a bad one inside the group is located there.
  EXPECT_EQ(to_yaml(workload.ops[1])["kv_cache"]["layout"].as<std::string>(), "paged");
  EXPECT_EQ(
      error_of("  - {name: x, kind: attention, heads: 4, kv_heads: 4, seq_q: 8, seq_kv: 8, head_dim: 16, "
               "kv_cache: {layout: pagd}, dtype: bf16}\n"),
      "a.yaml:4:109: ops[0].kv_cache.layout: 'pagd' is not one of contiguous or paged; did you mean "
      "'paged'?"
      "\n  hint: names are case-sensitive; pick one of those listed");
}

}  // namespace
}  // namespace tessera::ops
