// Integer arithmetic of tile counts, bursts and folds, used at every layer.
#pragma once

#include <cstdint>

namespace tessera {

// ⌈a / b⌉ for a >= 0 and b > 0: the tiles, bursts or folds that cover a elements, b at a time.
constexpr int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace tessera
