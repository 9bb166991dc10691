// A named value a report carries as it is: a dotted name for a nested key ("tile.m") and an integer, a
// number, a flag or a text. Library code that knows no report format (a mapped form describing its own
// choices) speaks in them; the report's writers turn them into JSON keys.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace tessera {

struct NamedValue {
  std::string name;
  std::variant<int64_t, double, bool, std::string> value;
};
using NamedValues = std::vector<NamedValue>;

}  // namespace tessera
