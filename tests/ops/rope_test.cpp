// kind: rope (ops/kinds/rope.hpp): the float64 reference against an independent complex-number form of the
// rotation for both pairings, partial rotary and a position offset; the generated cos/sin table; the vector
// unit's fp32 kernel within the fp32 tolerance — and the other pairing failing the numerics check; every bad
// field a located error.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstring>

#include "common/config.hpp"
#include "ops/kinds/rope.hpp"
#include "ops/numerics.hpp"
#include "ops/op.hpp"
#include "ops/reference.hpp"
#include "ops/vector_kernels.hpp"
#include "ops/workload.hpp"

namespace tessera::ops {
namespace {

Workload parse(const std::string& text) {
  return workload_from_yaml(config::load_text(text, "w.yaml"));
}

std::string error_of(const std::string& op) {
  try {
    parse("name: w\nseed: 1\nops:\n  - " + op + "\n");
  } catch (const InputError& error) {
    return error.what();
  }
  return "no error";
}

const std::string kRopes = R"(name: w
seed: 4
ops:
  - {name: half, kind: rope, seq: 6, heads: 3, head_dim: 16, dtype: fp32}
  - {name: interleaved, kind: rope, batch: 2, seq: 5, heads: 2, head_dim: 16, position: 7, base: 500000, style: interleaved, dtype: fp32}
  - {name: partial, kind: rope, batch: 3, seq: 4, heads: 2, head_dim: 32, rotary_dim: 8, position: 8191, dtype: bf16}
  - {name: partial_interleaved, kind: rope, seq: 9, heads: 1, head_dim: 24, rotary_dim: 12, position: 3, style: interleaved, dtype: fp16}
)";

// O from X by the rotation written as complex multiplication, (a + ib) e^{i p theta_k}, theta_k =
// 1 / base^(2k / rotary_dim): RoFormer's eq. 13 (interleaved pairs) and rotate_half's pairs (k, k + d/2).
std::vector<double> complex_rotation(const RopeShape& rope, const HostTensor& x) {
  const int64_t cols = rope.heads * rope.head_dim, d = rope.rotary();
  std::vector<double> out(static_cast<size_t>(x.elements()));
  for (int64_t i = 0; i < x.elements(); ++i) out[static_cast<size_t>(i)] = x.value(i);
  for (int64_t row = 0; row < rope.batch * rope.seq; ++row) {
    const double p = static_cast<double>(rope.position + row % rope.seq);
    for (int64_t head = 0; head < rope.heads; ++head)
      for (int64_t k = 0; k < d / 2; ++k) {
        const int64_t base_col = row * cols + head * rope.head_dim;
        const int64_t a = base_col + (rope.style == RopeStyle::half ? k : 2 * k);
        const int64_t b = base_col + (rope.style == RopeStyle::half ? k + d / 2 : 2 * k + 1);
        const double theta = 1.0 / std::pow(rope.base, static_cast<double>(2 * k) / static_cast<double>(d));
        const std::complex<double> z =
            std::complex<double>(x.value(a), x.value(b)) * std::polar(1.0, p * theta);
        out[static_cast<size_t>(a)] = z.real();
        out[static_cast<size_t>(b)] = z.imag();
      }
  }
  return out;
}

// The fp32 kernel, each row of X with its token's table row.
HostTensor kernel_output(const RopeShape& rope, const std::vector<HostTensor>& inputs, bool interleaved) {
  const HostTensor &x = inputs.at(0), &table = inputs.at(1);
  const int64_t rows = rope.batch * rope.seq, cols = rope.heads * rope.head_dim, d = rope.rotary();
  std::vector<float> values(static_cast<size_t>(x.elements())), out(values.size());
  widen_to_float(x.dtype, x.bytes.data(), x.elements(), values.data());
  std::vector<float> rows_table(static_cast<size_t>(rows * d));
  for (int64_t row = 0; row < rows; ++row)
    std::memcpy(&rows_table[static_cast<size_t>(row * d)],
                table.bytes.data() + (row % rope.seq) * d * sizeof(float),
                static_cast<size_t>(d) * sizeof(float));
  rope_rows(values.data(), rows_table.data(), out.data(), rows, cols, rope.head_dim, d, interleaved);
  HostTensor result(DType::fp32, rows, cols);
  std::memcpy(result.bytes.data(), out.data(), out.size() * sizeof(float));
  return result;
}

}  // namespace

TEST(Rope, TheReferenceIsTheComplexRotationForBothPairingsPartialRotaryAndAPositionOffset) {
  const Workload workload = parse(kRopes);
  for (const Op& op : workload.ops) {
    SCOPED_TRACE(op.name);
    const RopeShape& rope = *op.as<RopeShape>();
    const std::vector<HostTensor> inputs = generate_inputs(op, workload.seed);
    const std::vector<double> expected = complex_rotation(rope, inputs[0]);
    const std::vector<double> got = reference_output(op, inputs, 1);
    ASSERT_EQ(got.size(), expected.size());
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(got[i] - expected[i]));
    EXPECT_LT(worst, 1e-12);
    // The columns past rotary_dim pass through unchanged; the rotated ones change.
    int64_t changed = 0;
    for (int64_t i = 0; i < inputs[0].elements(); ++i) {
      const int64_t col = i % rope.head_dim;
      if (col >= rope.rotary()) {
        EXPECT_EQ(got[static_cast<size_t>(i)], inputs[0].value(i));
      }
      changed += got[static_cast<size_t>(i)] != inputs[0].value(i);
    }
    EXPECT_GT(changed, inputs[0].elements() * rope.rotary() / rope.head_dim / 2);
  }
}

TEST(Rope, TheTableHoldsCosThenSinOfEachTokensAnglesRoundedToFp32) {
  const Workload workload = parse(kRopes);
  const Op& op = workload.ops[2];  // position 8191, rotary_dim 8
  const RopeShape& rope = *op.as<RopeShape>();
  const HostTensor table = generate_inputs(op, workload.seed).at(1);
  ASSERT_EQ(table.dtype, DType::fp32);
  ASSERT_EQ(table.rows, rope.seq);  // one row per token of a sequence, shared by the batch
  ASSERT_EQ(table.cols, 8);
  for (int64_t token = 0; token < rope.seq; ++token)
    for (int64_t k = 0; k < 4; ++k) {
      const double angle = static_cast<double>(8191 + token) / std::pow(10000.0, 2.0 * k / 8.0);
      EXPECT_EQ(table.value(token * 8 + k), static_cast<double>(static_cast<float>(std::cos(angle))));
      EXPECT_EQ(table.value(token * 8 + 4 + k), static_cast<double>(static_cast<float>(std::sin(angle))));
    }
  // Not the generator's random values: another seed gives the same table.
  EXPECT_EQ(generate_inputs(op, 99).at(1).bytes, table.bytes);
}

TEST(Rope, TheFp32KernelPassesTheNumericsCheckAndTheOtherPairingFailsIt) {
  const Workload workload = parse(kRopes);
  for (const Op& op : workload.ops) {
    SCOPED_TRACE(op.name);
    const RopeShape& rope = *op.as<RopeShape>();
    const std::vector<HostTensor> inputs = generate_inputs(op, workload.seed);
    const std::vector<double> expected = reference_output(op, inputs, 1);
    const bool interleaved = rope.style == RopeStyle::interleaved;
    const NumericsResult right =
        compare_output(kernel_output(rope, inputs, interleaved), expected, op.dtype, "cpu");
    EXPECT_TRUE(right.pass) << right.rel_l2_err;
    // From the same (rounded) inputs, the kernel's fp32 arithmetic and the table's rounding stay near fp32.
    EXPECT_LT(right.rel_l2_err, 1e-6);
    const NumericsResult swapped =
        compare_output(kernel_output(rope, inputs, !interleaved), expected, op.dtype, "cpu");
    EXPECT_FALSE(swapped.pass) << swapped.rel_l2_err;
    EXPECT_GT(swapped.rel_l2_err, 0.1);
  }
}

TEST(Rope, TheWorkloadSpellingTakesItsDefaultsAndCountsNoMacs) {
  const Workload workload = parse(
      "name: w\nseed: 1\nops:\n  - {name: q, kind: rope, seq: 2048, heads: 32, head_dim: 128, dtype: "
      "bf16}\n");
  const Op& op = workload.ops.at(0);
  const RopeShape& rope = *op.as<RopeShape>();
  EXPECT_EQ(rope.batch, 1);
  EXPECT_EQ(rope.rotary(), 128);
  EXPECT_EQ(rope.position, 0);
  EXPECT_EQ(rope.base, 10000.0);
  EXPECT_EQ(rope.style, RopeStyle::half);
  EXPECT_EQ(op.macs(), 0);
  // X and O of 2048 x 4096 in bf16 and the 2048 x 128 fp32 table, each once.
  EXPECT_EQ(op.minimum_dram_bytes(), 2 * 2048 * 4096 * 2 + 2048 * 128 * 4);
}

TEST(Rope, BadFieldsAreLocatedErrorsThatSayWhatIsExpected) {
  EXPECT_EQ(error_of("{name: r, kind: rope, seq: 4, heads: 2, head_dim: 63, dtype: bf16}"),
            "w.yaml:4:55: ops[0].head_dim: head_dim must be even (the rotation takes pairs), got 63\n"
            "  hint: heads of rotary embeddings have an even size: 64, 128");
  EXPECT_EQ(error_of("{name: r, kind: rope, seq: 4, heads: 2, head_dim: 64, rotary_dim: 31, dtype: bf16}"),
            "w.yaml:4:71: ops[0].rotary_dim: rotary_dim must be even and at most head_dim (64), got 31\n"
            "  hint: leave it out to rotate the whole head; GPT-NeoX rotates head_dim/4");
  EXPECT_EQ(error_of("{name: r, kind: rope, seq: 4, heads: 2, head_dim: 64, rotary_dim: 128, dtype: bf16}"),
            "w.yaml:4:71: ops[0].rotary_dim: rotary_dim must be even and at most head_dim (64), got 128\n"
            "  hint: leave it out to rotate the whole head; GPT-NeoX rotates head_dim/4");
  EXPECT_EQ(error_of("{name: r, kind: rope, seq: 4, heads: 2, head_dim: 64, base: 1, dtype: bf16}"),
            "w.yaml:4:65: ops[0].base: base must be a number greater than 1, got 1\n"
            "  hint: theta is 10000 for Llama-2, 500000 for Llama-3");
  EXPECT_EQ(error_of("{name: r, kind: rope, seq: 4, heads: 2, head_dim: 64, position: -1, dtype: bf16}"),
            "w.yaml:4:69: ops[0].position: expected an integer >= 0, got -1"
            "\n  hint: this field is a count or an offset: 0 or more");
  EXPECT_EQ(error_of("{name: r, kind: rope, batch: 4096, seq: 65536, heads: 64, head_dim: 128, dtype: bf16}"),
            "w.yaml:4:45: ops[0].seq: X has more than 2^40 elements\n"
            "  hint: model fewer tokens, heads or sequences");
  EXPECT_EQ(error_of("{name: r, kind: rope, seq: 4, heads: 2, head_dim: 64, style: complex, dtype: bf16}"),
            "w.yaml:4:66: ops[0].style: 'complex' is not one of half or interleaved"
            "\n  hint: names are case-sensitive; pick one of those listed");
}

}  // namespace tessera::ops
