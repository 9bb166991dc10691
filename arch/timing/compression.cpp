#include "arch/timing/compression.hpp"

#include <algorithm>
#include <cmath>

namespace tessera::arch {

double coded_fraction(const std::optional<RlcSpec>& rlc, double density, DType dtype) {
  if (!rlc || density >= 1.0) return 1.0;
  const int value_bits = 8 * size_bytes(dtype);
  if (rlc->pairs_per_word * (rlc->run_bits + value_bits) > 8 * rlc->word_bytes) return 1.0;
  const double zero = 1.0 - density;
  const double pairs_per_value = density / (1.0 - std::pow(zero, std::ldexp(1.0, rlc->run_bits)));
  const double bytes_per_value =
      pairs_per_value * static_cast<double>(rlc->word_bytes) / static_cast<double>(rlc->pairs_per_word);
  return std::min(1.0, bytes_per_value / static_cast<double>(size_bytes(dtype)));
}

}  // namespace tessera::arch
