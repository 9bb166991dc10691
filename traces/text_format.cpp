#include "traces/text_format.hpp"

#include <fmt/format.h>

namespace tessera::traces {

std::string grouped(int64_t value) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(static_cast<size_t>(i), ",");
  return value < 0 ? "-" + digits : digits;
}

std::string megabytes(int64_t bytes) {
  return fmt::format("{:.2f}", bytes / 1e6);
}

}  // namespace tessera::traces
