// The vector unit's arithmetic on a tile (DESIGN.md, "The vector unit"): fp32 whatever the storage type, the
// functions the simulator's vector instructions run on SRAM tiles. The op kinds' CPU references compute the
// same functions independently in float64 (ops/kinds/); the tests compare the two.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/dtype.hpp"
#include "common/element_fn.hpp"

namespace tessera::ops {

// The columns row `row` of a causal softmax over a rows x cols tile may see: queries are the last rows of the
// key sequence (decode and chunked prefill), so row i sees columns 0 .. i + cols - rows.
inline int64_t causal_columns(int64_t row, int64_t rows, int64_t cols) {
  return row + cols - rows + 1;
}

// out = softmax(scale * x) per row, with the row's maximum subtracted before the exponentials. With a causal
// shift, row i sees columns 0 .. i + shift and the others are 0 (a whole causal softmax: shift = cols -
// rows).
void softmax_rows(const float* x, float* out, int64_t rows, int64_t cols, float scale,
                  std::optional<int64_t> causal_shift);
// One K/V tile's step of a running softmax (flash attention's): over a rows x cols tile of logits x, with
// each row's running max m, sum l and last correction a in `statistics` (3 floats a row; `first`: m = -inf,
// l = 0 before this tile, unread), per row: m' = max(m, max of the seen x*scale), p = exp(x*scale - m') (0
// for a column the causal shift hides), a = exp(m - m') (0 when m was -inf), l = a*l + sum p; p to `p`, (m',
// l, a) back to `statistics`. l sums p in fp32 before p is stored in the matmul's type, as FlashAttention
// does.
void online_softmax_rows(const float* x, float* p, float* statistics, int64_t rows, int64_t cols, float scale,
                         std::optional<int64_t> causal_shift, bool first);
// out = x times each row's correction a (by_inverse_sum: divided by its sum l; 0 for a row that saw nothing).
void scale_rows(const float* x, const float* statistics, float* out, int64_t rows, int64_t cols,
                bool by_inverse_sum);
// The merge of `parts` partial results of the same rows (split-KV decode: each part one range of the keys,
// run flash-style on its own core): part i's un-normalised accumulator x_i (rows x cols at x + i*rows*cols)
// and its statistics (max m_i, sum l_i, correction; 3 floats a row at statistics + 3*(i*rows + row)). Per row
// m = max m_i, w_i = exp(m_i - m) (0 for a part whose rows saw nothing, m_i = -inf), out = sum w_i x_i /
// sum w_i l_i (0 when that sum is 0).
void merge_partials(const float* x, const float* statistics, float* out, int64_t rows, int64_t cols,
                    int64_t parts);
// A mixture-of-experts combine: out[r] = sum over p ascending of g[r * parts + p] * x[r * parts + p] (the
// rows x cols tile's row r, its parts at rows r * parts + p of x), + y[r] when `y` is not null.
void weighted_sum(const float* x, const float* g, const float* y, float* out, int64_t rows, int64_t cols,
                  int64_t parts);
// A mixture-of-experts router's gate weights (ops/moe_routing.hpp in fp32): the rows x experts logits become
// their scores in place (softmax over the row: max, exp(x - max), sum, divide; or sigmoid per element), then
// row r's weights[r * top_k + j] = score[chosen[r * top_k + j]] / (sum over j of those scores) * scaling.
// `chosen` names top_k distinct experts in [0, experts) per row (the caller checks).
void route_weights(float* scores, const int32_t* chosen, float* weights, int64_t rows, int64_t experts,
                   int64_t top_k, bool sigmoid, float scaling);
// "" when every row of `chosen` (rows x top_k) names distinct experts in [0, experts), else the first row
// that does not, and why.
std::string route_choice_problem(const int32_t* chosen, int64_t rows, int64_t experts, int64_t top_k);
// out = (x - mean) / sqrt(var + eps) * gamma + beta per row (two passes: the mean, then the squared
// deviations).
void layernorm_rows(const float* x, const float* gamma, const float* beta, float* out, int64_t rows,
                    int64_t cols, float eps);
// out = x / sqrt(mean(x^2) + eps) * gamma per row.
void rmsnorm_rows(const float* x, const float* gamma, float* out, int64_t rows, int64_t cols, float eps);

// Rotary embedding of a rows x cols tile of heads of head_dim columns (ops/kinds/rope.hpp): each row with
// its own table row of rotary_dim floats (cos of pair i's angle at i, sin at rotary_dim/2 + i); pairs (i, i +
// rotary_dim/2) of each head (`interleaved`: (2i, 2i+1)) become (a cos - b sin, b cos + a sin); the columns
// past rotary_dim in each head are copied.
void rope_rows(const float* x, const float* table, float* out, int64_t rows, int64_t cols, int64_t head_dim,
               int64_t rotary_dim, bool interleaved);

// ---- on raw tiles, as the simulator's vector unit runs its instructions (arch::VecOp)

// A rows x cols tile of `type` at `data`, rows `pitch` bytes apart, widened to floats (row-major, packed).
std::vector<float> read_tile(DType type, const uint8_t* data, int64_t pitch, int64_t rows, int64_t cols);
// Stores floats (row-major, packed) as `type`, rounding to nearest even.
void write_tile(DType type, const std::vector<float>& values, uint8_t* data, int64_t pitch, int64_t rows,
                int64_t cols);

// x = step(x[, second tile or bias row]) for each step of an elementwise chain (common/element_fn.hpp, the
// functions of kInVectorChain and kInOutputPath) in order, in place: add, mul and swiglu read a tile, bias a
// 1 x cols row, scale multiplies by `factor`.
void apply_chain(const std::vector<ElementFn>& steps, std::vector<float>& x, const std::vector<float>& second,
                 const std::vector<float>& bias, int64_t rows, int64_t cols, float factor = 1.0f);

// out[row] = the sum (or max) of the row.
std::vector<float> reduce_rows(const std::vector<float>& x, int64_t rows, int64_t cols, bool maximum);

// A pooling tile: input ih x iw pixels of `channels`, output e x q pixels; the window r x s at stride, the
// padding (pad_top, pad_left) outside the tile takes no part in a max and counts as zero in an average
// (divided by r * s).
struct PoolTileGeometry {
  int64_t ih = 0, iw = 0, e = 0, q = 0, channels = 0, r = 1, s = 1, stride = 1, pad_top = 0, pad_left = 0;
  bool average = false;
};
std::vector<float> pool_tile(const std::vector<float>& input, const PoolTileGeometry& geometry);

}  // namespace tessera::ops
