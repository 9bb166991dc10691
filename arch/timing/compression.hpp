// What a run-length coded DRAM transfer moves (dram.rlc, arch::RlcSpec): the simulator scales a coded
// transfer's bursts by it, the mapper's cost model its DRAM bytes; both take it from here.
#pragma once

#include <optional>

#include "arch/spec.hpp"
#include "common/dtype.hpp"

namespace tessera::arch {

// The bytes a coded tensor of `dtype` values moves per byte of its raw form, for a `density` of non-zero
// values spread at random: each pair codes one value (a non-zero, or the zero that ends a run of 2^run_bits -
// 1) and the run of zeros before it, so a value costs density / (1 - (1 - density)^(2^run_bits)) pairs, each
// word_bytes / pairs_per_word bytes. 1 when there is no coder, the tensor is dense, its values do not fit a
// pair, or the coded form would be larger (a coder moves such a tensor raw).
double coded_fraction(const std::optional<RlcSpec>& rlc, double density, DType dtype);

// `bytes` of a raw region as coded: ceil(bytes * fraction).
inline int64_t coded_bytes(int64_t bytes, double fraction) {
  if (fraction >= 1.0) return bytes;
  const double coded = static_cast<double>(bytes) * fraction;
  const auto whole = static_cast<int64_t>(coded);
  return whole + (static_cast<double>(whole) < coded ? 1 : 0);
}

}  // namespace tessera::arch
