// The vector unit's arithmetic on a tile (DESIGN.md, "The vector unit"): fp32 whatever the storage type, the
// functions the simulator's vector instructions run on SRAM tiles. The op kinds' CPU references compute the
// same functions independently in float64 (ops/kinds/); the tests compare the two.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::ops {

// Elementwise functions of one input.
enum class Activation : uint8_t { relu, gelu, gelu_tanh, silu };
const std::vector<std::string>& activation_names();  // "relu", "gelu", "gelu_tanh", "silu"

// gelu: x/2 (1 + erf(x/sqrt 2)); gelu_tanh: x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (Hendrycks and
// Gimpel, 2016); silu: x / (1 + e^-x).
float activate(Activation activation, float x);
double activate(Activation activation, double x);  // the same in float64, for references

// The columns row `row` of a causal softmax over a rows x cols tile may see: queries are the last rows of the
// key sequence (decode and chunked prefill), so row i sees columns 0 .. i + cols - rows.
inline int64_t causal_columns(int64_t row, int64_t rows, int64_t cols) {
  return row + cols - rows + 1;
}

// out = softmax(scale * x) per row, with the row's maximum subtracted before the exponentials; masked columns
// (causal) are 0.
void softmax_rows(const float* x, float* out, int64_t rows, int64_t cols, float scale, bool causal);
// out = (x - mean) / sqrt(var + eps) * gamma + beta per row (two passes: the mean, then the squared
// deviations).
void layernorm_rows(const float* x, const float* gamma, const float* beta, float* out, int64_t rows,
                    int64_t cols, float eps);
// out = x / sqrt(mean(x^2) + eps) * gamma per row.
void rmsnorm_rows(const float* x, const float* gamma, float* out, int64_t rows, int64_t cols, float eps);

}  // namespace tessera::ops
