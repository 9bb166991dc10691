#include "ops/vector_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "common/error.hpp"
#include "ops/encodings.hpp"
#include "ops/tensor.hpp"

namespace tessera::ops {

void softmax_rows(const float* x, float* out, int64_t rows, int64_t cols, float scale,
                  std::optional<int64_t> causal_shift) {
  for (int64_t row = 0; row < rows; ++row) {
    const float* in = x + row * cols;
    float* result = out + row * cols;
    const int64_t seen = causal_shift ? std::clamp<int64_t>(row + *causal_shift + 1, 0, cols) : cols;
    float maximum = -std::numeric_limits<float>::infinity();
    for (int64_t col = 0; col < seen; ++col) maximum = std::max(maximum, scale * in[col]);
    float sum = 0;
    for (int64_t col = 0; col < seen; ++col) {
      result[col] = std::exp(scale * in[col] - maximum);
      sum += result[col];
    }
    const float inverse = seen > 0 ? 1.0f / sum : 0.0f;
    for (int64_t col = 0; col < seen; ++col) result[col] *= inverse;
    for (int64_t col = seen; col < cols; ++col) result[col] = 0;
  }
}

void online_softmax_rows(const float* x, float* p, float* statistics, int64_t rows, int64_t cols, float scale,
                         std::optional<int64_t> causal_shift, bool first) {
  constexpr float kNone = -std::numeric_limits<float>::infinity();
  for (int64_t row = 0; row < rows; ++row) {
    const float* in = x + row * cols;
    float* out = p + row * cols;
    float* stats = statistics + 3 * row;
    const float old_max = first ? kNone : stats[0], old_sum = first ? 0.0f : stats[1];
    const int64_t seen = causal_shift ? std::clamp<int64_t>(row + *causal_shift + 1, 0, cols) : cols;
    float maximum = old_max;
    for (int64_t col = 0; col < seen; ++col) maximum = std::max(maximum, scale * in[col]);
    float sum = 0;
    for (int64_t col = 0; col < seen; ++col) {
      out[col] = std::exp(scale * in[col] - maximum);
      sum += out[col];
    }
    for (int64_t col = seen; col < cols; ++col) out[col] = 0;
    const float correction = old_max == kNone ? 0.0f : std::exp(old_max - maximum);
    stats[0] = maximum;
    stats[1] = correction * old_sum + sum;
    stats[2] = correction;
  }
}

void scale_rows(const float* x, const float* statistics, float* out, int64_t rows, int64_t cols,
                bool by_inverse_sum) {
  for (int64_t row = 0; row < rows; ++row) {
    const float sum = statistics[3 * row + 1];
    const float factor = by_inverse_sum ? (sum > 0 ? 1.0f / sum : 0.0f) : statistics[3 * row + 2];
    for (int64_t col = 0; col < cols; ++col) out[row * cols + col] = x[row * cols + col] * factor;
  }
}

void merge_partials(const float* x, const float* statistics, float* out, int64_t rows, int64_t cols,
                    int64_t parts) {
  constexpr float kNone = -std::numeric_limits<float>::infinity();
  std::vector<float> weights(static_cast<size_t>(parts));
  for (int64_t row = 0; row < rows; ++row) {
    float maximum = kNone;
    for (int64_t i = 0; i < parts; ++i) maximum = std::max(maximum, statistics[3 * (i * rows + row)]);
    float sum = 0;
    for (int64_t i = 0; i < parts; ++i) {
      const float part_max = statistics[3 * (i * rows + row)];
      weights[static_cast<size_t>(i)] = part_max == kNone ? 0.0f : std::exp(part_max - maximum);
      sum += weights[static_cast<size_t>(i)] * statistics[3 * (i * rows + row) + 1];
    }
    const float inverse = sum > 0 ? 1.0f / sum : 0.0f;
    float* result = out + row * cols;
    for (int64_t col = 0; col < cols; ++col) {
      float total = 0;
      for (int64_t i = 0; i < parts; ++i)
        total += weights[static_cast<size_t>(i)] * x[(i * rows + row) * cols + col];
      result[col] = total * inverse;
    }
  }
}

void weighted_sum(const float* x, const float* g, const float* y, float* out, int64_t rows, int64_t cols,
                  int64_t parts) {
  for (int64_t row = 0; row < rows; ++row) {
    const float* weights = g + row * parts;
    for (int64_t col = 0; col < cols; ++col) {
      float sum = 0;
      for (int64_t part = 0; part < parts; ++part)
        sum += weights[part] * x[(row * parts + part) * cols + col];
      if (y) sum += y[row * cols + col];
      out[row * cols + col] = sum;
    }
  }
}

// The unit's passes (docs/vector-unit.md, "route"): softmax as softmax_rows (the sum's reciprocal, then a
// multiply), the weights as the chosen scores times scaling / their sum.
void route_weights(float* scores, const int32_t* chosen, float* weights, int64_t rows, int64_t experts,
                   int64_t top_k, bool sigmoid, float scaling) {
  for (int64_t row = 0; row < rows; ++row) {
    float* score = scores + row * experts;
    if (sigmoid) {
      for (int64_t e = 0; e < experts; ++e) score[e] = 1.0f / (1.0f + std::exp(-score[e]));
    } else {
      float maximum = score[0];
      for (int64_t e = 1; e < experts; ++e) maximum = std::max(maximum, score[e]);
      float sum = 0;
      for (int64_t e = 0; e < experts; ++e) sum += score[e] = std::exp(score[e] - maximum);
      const float inverse = 1.0f / sum;
      for (int64_t e = 0; e < experts; ++e) score[e] *= inverse;
    }
    const int32_t* experts_of_row = chosen + row * top_k;
    float* weight = weights + row * top_k;
    float sum = 0;
    for (int64_t j = 0; j < top_k; ++j) sum += weight[j] = score[experts_of_row[j]];
    const float factor = scaling / sum;
    for (int64_t j = 0; j < top_k; ++j) weight[j] *= factor;
  }
}

std::string route_choice_problem(const int32_t* chosen, int64_t rows, int64_t experts, int64_t top_k) {
  // Per expert, the last row that chose it and in which column: one look-up per entry, not top_k^2.
  std::vector<int64_t> chosen_in_row(static_cast<size_t>(experts), -1),
      chosen_at(static_cast<size_t>(experts));
  for (int64_t row = 0; row < rows; ++row) {
    const int32_t* of_row = chosen + row * top_k;
    for (int64_t j = 0; j < top_k; ++j) {
      const int32_t expert = of_row[j];
      if (expert < 0 || expert >= experts)
        return "row " + std::to_string(row) + "'s chosen expert " + std::to_string(expert) + " (column " +
               std::to_string(j) + ") is outside [0, " + std::to_string(experts) + ")";
      const auto e = static_cast<size_t>(expert);
      if (chosen_in_row[e] == row)
        return "row " + std::to_string(row) + " chooses expert " + std::to_string(expert) +
               " twice (columns " + std::to_string(chosen_at[e]) + " and " + std::to_string(j) + ")";
      chosen_in_row[e] = row;
      chosen_at[e] = j;
    }
  }
  return "";
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

std::vector<float> read_tile(DType type, const uint8_t* data, int64_t pitch, int64_t rows, int64_t cols) {
  std::vector<float> values(static_cast<size_t>(rows * cols));
  for (int64_t row = 0; row < rows; ++row)
    widen_to_float(type, data + row * pitch, cols, values.data() + row * cols);
  return values;
}

void write_tile(DType type, const std::vector<float>& values, uint8_t* data, int64_t pitch, int64_t rows,
                int64_t cols) {
  for (int64_t row = 0; row < rows; ++row) {
    uint8_t* out = data + row * pitch;
    for (int64_t col = 0; col < cols; ++col) {
      const float value = values[static_cast<size_t>(row * cols + col)];
      if (type == DType::fp32) {
        std::memcpy(out + 4 * col, &value, 4);
      } else {
        const uint16_t bits = type == DType::bf16 ? float_to_bf16(value) : float_to_fp16(value);
        std::memcpy(out + 2 * col, &bits, 2);
      }
    }
  }
}

void apply_chain(const std::vector<ElementFn>& steps, std::vector<float>& x, const std::vector<float>& second,
                 const std::vector<float>& bias, int64_t rows, int64_t cols, float factor) {
  for (ElementFn step : steps) {
    for (int64_t i = 0; i < rows * cols; ++i) {
      float& value = x[static_cast<size_t>(i)];
      switch (step) {
        case ElementFn::add:
          value += second[static_cast<size_t>(i)];
          break;
        case ElementFn::mul:
          value *= second[static_cast<size_t>(i)];
          break;
        case ElementFn::bias:
          value += bias[static_cast<size_t>(i % cols)];
          break;
        case ElementFn::swiglu:
          value = activate(ElementFn::silu, value) * second[static_cast<size_t>(i)];
          break;
        case ElementFn::scale:
          value *= factor;
          break;
        default:
          TESSERA_ASSERT(is_activation(step), "a chain's step is a vector chain's function");
          value = activate(step, value);
          break;
      }
    }
  }
}

std::vector<float> reduce_rows(const std::vector<float>& x, int64_t rows, int64_t cols, bool maximum) {
  std::vector<float> out(static_cast<size_t>(rows));
  for (int64_t row = 0; row < rows; ++row) {
    float result = maximum ? -std::numeric_limits<float>::infinity() : 0.0f;
    for (int64_t col = 0; col < cols; ++col) {
      const float value = x[static_cast<size_t>(row * cols + col)];
      result = maximum ? std::max(result, value) : result + value;
    }
    out[static_cast<size_t>(row)] = result;
  }
  return out;
}

std::vector<float> pool_tile(const std::vector<float>& input, const PoolTileGeometry& g) {
  std::vector<float> out(static_cast<size_t>(g.e * g.q * g.channels));
  for (int64_t y = 0; y < g.e; ++y)
    for (int64_t z = 0; z < g.q; ++z)
      for (int64_t channel = 0; channel < g.channels; ++channel) {
        float best = -std::numeric_limits<float>::infinity(), sum = 0;
        for (int64_t fr = 0; fr < g.r; ++fr)
          for (int64_t fs = 0; fs < g.s; ++fs) {
            const int64_t iy = y * g.stride + fr - g.pad_top, ix = z * g.stride + fs - g.pad_left;
            if (iy < 0 || iy >= g.ih || ix < 0 || ix >= g.iw) continue;
            const float value = input[static_cast<size_t>((iy * g.iw + ix) * g.channels + channel)];
            best = std::max(best, value);
            sum += value;
          }
        out[static_cast<size_t>((y * g.q + z) * g.channels + channel)] =
            g.average ? sum / static_cast<float>(g.r * g.s) : best;
      }
  return out;
}

void rope_rows(const float* x, const float* table, float* out, int64_t rows, int64_t cols, int64_t head_dim,
               int64_t rotary_dim, bool interleaved) {
  const int64_t half = rotary_dim / 2;
  for (int64_t row = 0; row < rows; ++row) {
    const float* in = x + row * cols;
    float* result = out + row * cols;
    const float* cos_sin = table + row * rotary_dim;
    for (int64_t head = 0; head < cols; head += head_dim) {
      for (int64_t pair = 0; pair < half; ++pair) {
        const int64_t first = head + (interleaved ? 2 * pair : pair);
        const int64_t second = head + (interleaved ? 2 * pair + 1 : pair + half);
        const float c = cos_sin[pair], s = cos_sin[half + pair];
        const float a = in[first], b = in[second];
        result[first] = a * c - b * s;
        result[second] = b * c + a * s;
      }
      for (int64_t col = head + rotary_dim; col < head + head_dim; ++col) result[col] = in[col];
    }
  }
}

}  // namespace tessera::ops
