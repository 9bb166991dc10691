// An input holding the values the program lists: `fill=values values=<list>` (docs/tile-program.md).
#pragma once

#include <fmt/format.h>

#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "arch/isa/fields.hpp"
#include "arch/isa/integer_list.hpp"
#include "common/dtype.hpp"

namespace tessera::arch {

// Row-major, rows*cols of them, each fitting the dtype (int8, int32): an MoE routing's expert indices,
// decided when the program is written. The input's seed and id are still written (every input line has them)
// and mean nothing to the fill.
struct ValuesFill {
  static constexpr const char* kKeyword = "values";

  std::vector<int64_t> values;

  template <class Visit>
  static void fields(Visit&& visit) {
    visit("values", &ValuesFill::values);
  }
  bool operator==(const ValuesFill& other) const { return equal_fields(*this, other); }

  // What the text reader checks as it reads the list, for a fill built in memory: the input's dtype, the
  // count and each value's range. Empty when the values fit a rows x cols input of `dtype`.
  std::optional<std::string> check_fit(DType dtype, int64_t rows, int64_t cols) const {
    if (dtype != DType::int32 && dtype != DType::int8)
      return fmt::format("fill=values fills int8 and int32 inputs, not {}", name_of(dtype));
    if (rows > kMaxListedElements / cols || static_cast<int64_t>(values.size()) != rows * cols)
      return fmt::format("lists {} values for a {}x{} tensor (at most {})", values.size(), rows, cols,
                         kMaxListedElements);
    const int64_t minimum = dtype == DType::int8 ? INT8_MIN : INT32_MIN;
    const int64_t maximum = dtype == DType::int8 ? INT8_MAX : INT32_MAX;
    for (size_t i = 0; i < values.size(); ++i)
      if (values[i] < minimum || values[i] > maximum)
        return fmt::format("value {} (element {}) does not fit {}", values[i], i, name_of(dtype));
    return std::nullopt;
  }
};

}  // namespace tessera::arch
