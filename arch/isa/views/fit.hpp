// What every tensor view (arch/isa/views.hpp) is checked against: its tensor's shape and its source's. A
// view's check_shape (before its fields are read) and check_fit (after) return what does not fit, for the
// text reader to point at and the program checker to report.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tessera::arch {

struct ViewFit {
  int64_t rows = 0;  // of the view tensor
  int64_t cols = 0;
  std::string_view source_name;
  int64_t source_rows = 0;
  int64_t source_cols = 0;
};

// The part of a tensor line that a mismatch is about: the text reader points at its column.
enum class ViewPart : uint8_t { source, options, shape };

struct ViewMismatch {
  ViewPart part = ViewPart::options;
  std::string message;
  std::string hint;
};

using ViewCheck = std::optional<ViewMismatch>;

}  // namespace tessera::arch
