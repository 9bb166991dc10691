// The vector unit's flash-attention steps (arch::VectorKind::online_softmax and scale_rows, as
// ops/vector_kernels runs them for the simulator): S = Q K^T tile by tile, one online-softmax step per K/V
// tile, the accumulator's rows rescaled by the step's correction before P V is added, and the final division
// by the running sum give softmax(scale Q K^T) V within fp32 rounding of the float64 reference, causal
// (bottom-right aligned) included; leaving out the accumulator's rescale does not. merge_partials (split-KV)
// merges ranges of the keys run so into the same result; leaving out its weights does not.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <random>
#include <vector>

#include "ops/vector_kernels.hpp"

namespace tessera::ops {

namespace {

struct Problem {
  int64_t rows = 0, keys = 0, dim = 0;
  std::vector<float> q, k, v;  // rows x dim, keys x dim, keys x dim
  float scale = 1;
  bool causal = false;
};

Problem make_problem(int64_t rows, int64_t keys, int64_t dim, bool causal, uint64_t seed) {
  Problem p{rows, keys, dim, {}, {}, {}, 1.0f / std::sqrt(static_cast<float>(dim)), causal};
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 2.0f);  // large logits: the max subtraction matters
  for (auto* tensor : {&p.q, &p.k, &p.v}) {
    tensor->resize(static_cast<size_t>((tensor == &p.q ? rows : keys) * dim));
    for (float& value : *tensor) value = normal(rng);
  }
  return p;
}

// Keys row i sees: all, or 0 .. i + keys - rows (the queries are the last rows of the sequence).
int64_t seen_keys(const Problem& p, int64_t row) {
  return p.causal ? row + p.keys - p.rows + 1 : p.keys;
}

std::vector<double> reference(const Problem& p) {
  std::vector<double> out(static_cast<size_t>(p.rows * p.dim), 0.0);
  for (int64_t i = 0; i < p.rows; ++i) {
    const int64_t seen = seen_keys(p, i);
    std::vector<double> logits(static_cast<size_t>(seen));
    double maximum = -INFINITY, sum = 0;
    for (int64_t j = 0; j < seen; ++j) {
      double dot = 0;
      for (int64_t d = 0; d < p.dim; ++d) dot += double{p.q[i * p.dim + d]} * p.k[j * p.dim + d];
      logits[j] = p.scale * dot;
      maximum = std::max(maximum, logits[j]);
    }
    for (int64_t j = 0; j < seen; ++j) sum += std::exp(logits[j] - maximum);
    for (int64_t j = 0; j < seen; ++j)
      for (int64_t d = 0; d < p.dim; ++d)
        out[i * p.dim + d] += std::exp(logits[j] - maximum) / sum * p.v[j * p.dim + d];
  }
  return out;
}

// Flash-style over the keys [begin, end) in K/V tiles of `tile_keys`, the accumulator left un-normalised:
// what one core of a split-KV mapping computes, its running statistics at `statistics`.
std::vector<float> flash_range(const Problem& p, int64_t begin, int64_t end, int64_t tile_keys,
                               bool rescale_accumulator, float* statistics) {
  std::vector<float> accumulator(static_cast<size_t>(p.rows * p.dim), 0.0f);
  for (int64_t first = begin; first < end; first += tile_keys) {
    const int64_t cols = std::min(tile_keys, end - first);
    std::vector<float> s(static_cast<size_t>(p.rows * cols)), probabilities(s.size());
    for (int64_t i = 0; i < p.rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        float dot = 0;
        for (int64_t d = 0; d < p.dim; ++d) dot += p.q[i * p.dim + d] * p.k[(first + j) * p.dim + d];
        s[i * cols + j] = dot;
      }
    // Row i sees this tile's columns 0 .. i + (keys - rows) - first.
    const std::optional<int64_t> shift =
        p.causal ? std::optional<int64_t>(p.keys - p.rows - first) : std::nullopt;
    online_softmax_rows(s.data(), probabilities.data(), statistics, p.rows, cols, p.scale, shift,
                        first == begin);
    if (first > begin && rescale_accumulator)
      scale_rows(accumulator.data(), statistics, accumulator.data(), p.rows, p.dim, false);
    for (int64_t i = 0; i < p.rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        for (int64_t d = 0; d < p.dim; ++d)
          accumulator[i * p.dim + d] += probabilities[i * cols + j] * p.v[(first + j) * p.dim + d];
  }
  return accumulator;
}

// Flash-style over K/V tiles of `tile_keys`: what a flash mapping's tile program computes on one core.
std::vector<float> flash(const Problem& p, int64_t tile_keys, bool rescale_accumulator) {
  std::vector<float> statistics(static_cast<size_t>(p.rows * 3));
  const std::vector<float> accumulator =
      flash_range(p, 0, p.keys, tile_keys, rescale_accumulator, statistics.data());
  std::vector<float> out(accumulator.size());
  scale_rows(accumulator.data(), statistics.data(), out.data(), p.rows, p.dim, true);
  return out;
}

// Split-KV: the keys in `parts` contiguous ranges, each run flash-style (its partial accumulator and
// statistics stacked as merge_partials reads them), then merged. `forget_correction`: every part's max
// replaced by 0 before the merge, so that every weight exp(m_i - m) is 1.
std::vector<float> split_kv(const Problem& p, int64_t parts, int64_t tile_keys, bool forget_correction) {
  std::vector<float> partials, statistics(static_cast<size_t>(parts * p.rows * 3));
  for (int64_t i = 0; i < parts; ++i) {
    const std::vector<float> part = flash_range(p, i * p.keys / parts, (i + 1) * p.keys / parts, tile_keys,
                                                true, statistics.data() + i * p.rows * 3);
    partials.insert(partials.end(), part.begin(), part.end());
  }
  if (forget_correction)
    for (int64_t row = 0; row < parts * p.rows; ++row) statistics[static_cast<size_t>(3 * row)] = 0;
  std::vector<float> out(static_cast<size_t>(p.rows * p.dim));
  merge_partials(partials.data(), statistics.data(), out.data(), p.rows, p.dim, parts);
  return out;
}

double relative_l2(const std::vector<float>& got, const std::vector<double>& want) {
  double error = 0, norm = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    error += (got[i] - want[i]) * (got[i] - want[i]);
    norm += want[i] * want[i];
  }
  return std::sqrt(error / norm);
}

}  // namespace

TEST(OnlineSoftmax, TileByTileEqualsTheWholeSoftmaxTimesV) {
  for (bool causal : {false, true})
    for (int64_t tile : {8, 13, 64, 200}) {
      const Problem p = make_problem(24, 150, 16, causal, 7 + tile);
      EXPECT_LT(relative_l2(flash(p, tile, true), reference(p)), 1e-5)
          << (causal ? "causal" : "full") << ", tiles of " << tile;
    }
}

TEST(OnlineSoftmax, LeavingOutTheAccumulatorsRescaleFailsTheCheck) {
  const Problem p = make_problem(24, 150, 16, false, 3);
  EXPECT_GT(relative_l2(flash(p, 32, false), reference(p)), 1e-2);
  // One tile has nothing to rescale: the same result either way.
  EXPECT_LT(relative_l2(flash(p, 150, false), reference(p)), 1e-5);
}

// Split-KV's merge: each range's un-normalised accumulator weighted by exp(m_i - m) and the sum of the
// weighted sums dividing, equals the whole softmax(scale Q K^T) V; causal, a late range that the early rows
// do not see at all (their part's max -inf, its weight 0) included. Without the weights it does not.
TEST(MergePartials, TheMergedRangesEqualTheWholeAttentionAndForgettingTheCorrectionFails) {
  for (bool causal : {false, true})
    for (int64_t parts : {1, 2, 3, 8}) {
      const Problem p = make_problem(24, 150, 16, causal, 11 + parts);
      EXPECT_LT(relative_l2(split_kv(p, parts, 16, false), reference(p)), 1e-5)
          << (causal ? "causal" : "full") << ", " << parts << " parts";
      if (parts > 1) {
        EXPECT_GT(relative_l2(split_kv(p, parts, 16, true), reference(p)), 1e-2)
            << (causal ? "causal" : "full") << ", " << parts << " parts";
      }
    }
}

// A row that sees nothing of a tile (causal, the early rows against a late tile) keeps its statistics; a row
// of a first tile that sees nothing starts with a zero sum and no correction.
TEST(OnlineSoftmax, AMaskedOutRowKeepsItsStatistics) {
  const std::vector<float> s = {1, 2, 3, 4};  // 2 rows x 2 cols
  std::vector<float> probabilities(4), statistics = {0.5f, 2.0f, 9.0f, 0.25f, 3.0f, 9.0f};
  // shift -2: row 0 sees nothing, row 1 column 0 only.
  online_softmax_rows(s.data(), probabilities.data(), statistics.data(), 2, 2, 1.0f, -2, false);
  EXPECT_EQ(probabilities, (std::vector<float>{0, 0, 0, 0}));
  EXPECT_EQ(statistics[0], 0.5f);
  EXPECT_EQ(statistics[1], 2.0f);
  EXPECT_EQ(statistics[2], 1.0f);  // exp(0)
  online_softmax_rows(s.data(), probabilities.data(), statistics.data(), 2, 2, 1.0f, -1, true);
  EXPECT_EQ(probabilities[0], 0.0f);
  EXPECT_EQ(statistics[1], 0.0f);  // row 0: nothing seen yet
  EXPECT_EQ(statistics[2], 0.0f);
  EXPECT_EQ(statistics[3], 3.0f);  // row 1: column 0 seen, max 3
  EXPECT_EQ(statistics[4], 1.0f);
  std::vector<float> out(4);
  scale_rows(std::vector<float>{1, 1, 1, 1}.data(), statistics.data(), out.data(), 2, 2, true);
  EXPECT_EQ(out, (std::vector<float>{0, 0, 1, 1}));  // a zero sum divides to 0, not a NaN
}

}  // namespace tessera::ops
