// softmax: O = softmax(scale * X) along each row of a rows x cols tile, the row's maximum subtracted first;
// causal: row i sees columns 0 .. i + cols - rows (the queries are the last rows), the others are 0.
#pragma once

#include <cstdint>
#include <memory>

#include "ops/op_kind.hpp"

namespace tessera::ops {

enum class Causal : uint8_t { no, yes };  // in the order of their names: false, true

struct SoftmaxShape {
  int64_t rows = 0, cols = 0;
  double scale = 1.0;
  Causal causal = Causal::no;
};

std::unique_ptr<OpKind> make_softmax_kind();

}  // namespace tessera::ops
