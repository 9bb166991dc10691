// rope: rotary position embedding (Su et al., "RoFormer", 2021) of X [batch*seq rows, heads*head_dim cols]:
// in each head, the first rotary_dim columns are rotated in pairs by the angle p*theta_i of the row's token
// (p = position + its index in the sequence, theta_i = base^(-2i/rotary_dim)), the rest pass through (partial
// rotary, as GPT-NeoX). `half` pairs (i, i + rotary_dim/2), rotate_half as HF Llama and NeoX do;
// `interleaved` pairs (2i, 2i+1), as GPT-J and Meta's complex form. The cos/sin table T [seq rows,
// rotary_dim cols] fp32 — cos(p*theta_i) in its first rotary_dim/2 columns, sin in the last — is an input
// computed by the generator (input_generator.hpp, rope_table_fp32), read as vLLM reads its cos_sin_cache; the
// reference computes the angles in float64 itself, so the table's rounding shows as error.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ops/op_kind.hpp"

namespace tessera::ops {

enum class RopeStyle : uint8_t { half, interleaved };  // in the order of their names
const std::vector<std::string>& rope_style_names();    // "half", "interleaved"

struct RopeShape {
  int64_t batch = 1, seq = 0, heads = 0, head_dim = 0;
  int64_t rotary_dim = 0;  // 0: head_dim (the field's default)
  int64_t position = 0;    // of each sequence's first token
  double base = 10000;
  RopeStyle style = RopeStyle::half;
  int64_t rotary() const { return rotary_dim == 0 ? head_dim : rotary_dim; }
  int64_t rows() const { return batch * seq; }
  int64_t cols() const { return heads * head_dim; }
};

std::unique_ptr<OpKind> make_rope_kind();

}  // namespace tessera::ops
