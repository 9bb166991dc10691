#include "ops/vector_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tessera::ops {

namespace {

template <class T>
T activate_as(Activation activation, T x) {
  const T half = T(0.5), one = T(1);
  switch (activation) {
    case Activation::relu:
      return std::max(x, T(0));
    case Activation::gelu:
      return half * x * (one + std::erf(x / std::sqrt(T(2))));
    case Activation::gelu_tanh: {
      const T k = std::sqrt(T(2) / T(3.14159265358979323846));
      return half * x * (one + std::tanh(k * (x + T(0.044715) * x * x * x)));
    }
    case Activation::silu:
      return x / (one + std::exp(-x));
  }
  return x;
}

}  // namespace

const std::vector<std::string>& activation_names() {
  static const std::vector<std::string> names = {"relu", "gelu", "gelu_tanh", "silu"};
  return names;
}

float activate(Activation activation, float x) {
  return activate_as<float>(activation, x);
}
double activate(Activation activation, double x) {
  return activate_as<double>(activation, x);
}

void softmax_rows(const float* x, float* out, int64_t rows, int64_t cols, float scale, bool causal) {
  for (int64_t row = 0; row < rows; ++row) {
    const float* in = x + row * cols;
    float* result = out + row * cols;
    const int64_t seen = causal ? std::clamp<int64_t>(causal_columns(row, rows, cols), 0, cols) : cols;
    float maximum = -std::numeric_limits<float>::infinity();
    for (int64_t col = 0; col < seen; ++col) maximum = std::max(maximum, scale * in[col]);
    float sum = 0;
    for (int64_t col = 0; col < seen; ++col) {
      result[col] = std::exp(scale * in[col] - maximum);
      sum += result[col];
    }
    const float inverse = 1.0f / sum;
    for (int64_t col = 0; col < seen; ++col) result[col] *= inverse;
    for (int64_t col = seen; col < cols; ++col) result[col] = 0;
  }
}

void layernorm_rows(const float* x, const float* gamma, const float* beta, float* out, int64_t rows,
                    int64_t cols, float eps) {
  for (int64_t row = 0; row < rows; ++row) {
    const float* in = x + row * cols;
    float sum = 0;
    for (int64_t col = 0; col < cols; ++col) sum += in[col];
    const float mean = sum / static_cast<float>(cols);
    float squares = 0;
    for (int64_t col = 0; col < cols; ++col) squares += (in[col] - mean) * (in[col] - mean);
    const float rstd = 1.0f / std::sqrt(squares / static_cast<float>(cols) + eps);
    for (int64_t col = 0; col < cols; ++col)
      out[row * cols + col] = (in[col] - mean) * rstd * gamma[col] + beta[col];
  }
}

void rmsnorm_rows(const float* x, const float* gamma, float* out, int64_t rows, int64_t cols, float eps) {
  for (int64_t row = 0; row < rows; ++row) {
    const float* in = x + row * cols;
    float squares = 0;
    for (int64_t col = 0; col < cols; ++col) squares += in[col] * in[col];
    const float rstd = 1.0f / std::sqrt(squares / static_cast<float>(cols) + eps);
    for (int64_t col = 0; col < cols; ++col) out[row * cols + col] = in[col] * rstd * gamma[col];
  }
}

}  // namespace tessera::ops
