#include "ops/numerics.hpp"

#include <cmath>

#include "common/error.hpp"

namespace tessera::ops {

Tolerance tolerance_for(DType operand) {
  switch (operand) {
    case DType::int8:
      return Tolerance{0.0, true};
    case DType::fp32:
      return Tolerance{1e-5, false};
    case DType::bf16:
    case DType::fp16:
      return Tolerance{1e-2, false};
    case DType::int32:
      break;
  }
  TESSERA_ASSERT(false, "tolerances exist for every operand dtype");
}

namespace {
// `value(i)` and `expected(i)` for i in [0, count): one comparison for whole tensors and for samples.
template <class Got, class Expected>
NumericsResult compare(int64_t count, Got&& value_at, Expected&& expected_at, DType operand,
                       const std::string& reference) {
  const Tolerance tolerance = tolerance_for(operand);
  NumericsResult result;
  result.reference = reference;
  double error_squares = 0;
  double reference_squares = 0;
  int64_t first_non_finite = -1;
  for (int64_t i = 0; i < count; ++i) {
    const double value = value_at(i);
    const double expected = expected_at(i);
    if (!std::isfinite(value)) {
      ++result.mismatched_elements;
      if (first_non_finite < 0) first_non_finite = i;
      continue;
    }
    const double difference = std::abs(value - expected);
    if (tolerance.exact && difference != 0) ++result.mismatched_elements;
    if (difference > result.max_abs_err) {
      result.max_abs_err = difference;
      result.worst_index = i;
    }
    error_squares += difference * difference;
    reference_squares += expected * expected;
  }
  if (first_non_finite >= 0) {
    result.max_abs_err = INFINITY;
    result.rel_l2_err = INFINITY;
    result.worst_index = first_non_finite;
    return result;  // pass stays false
  }
  result.rel_l2_err =
      reference_squares > 0 ? std::sqrt(error_squares / reference_squares) : std::sqrt(error_squares);
  result.pass = tolerance.exact ? result.mismatched_elements == 0 : result.rel_l2_err <= tolerance.rel_l2;
  return result;
}
}  // namespace

NumericsResult compare_output(const HostTensor& got, const std::vector<double>& expected, DType operand,
                              const std::string& reference) {
  TESSERA_ASSERT(static_cast<int64_t>(expected.size()) == got.elements(),
                 "reference and output have one size");
  return compare(
      got.elements(), [&](int64_t i) { return got.value(i); }, [&](int64_t i) { return expected[i]; },
      operand, reference);
}

NumericsResult compare_at(const HostTensor& got, const std::vector<int64_t>& positions,
                          const std::vector<double>& expected, DType operand, const std::string& reference) {
  TESSERA_ASSERT(positions.size() == expected.size(), "one expected value per position");
  for (int64_t position : positions)
    TESSERA_ASSERT(position >= 0 && position < got.elements(), "sampled positions lie inside the output");
  NumericsResult result = compare(
      static_cast<int64_t>(positions.size()), [&](int64_t i) { return got.value(positions[i]); },
      [&](int64_t i) { return expected[i]; }, operand, reference);
  if (result.worst_index >= 0) result.worst_index = positions[result.worst_index];
  return result;
}

}  // namespace tessera::ops
