// What a list of integers in the program text must hold (docs/tile-program.md, "Lists"): a row-gather view's
// rows, a values-filled input's values. LineReader::read_integer_list reads one.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tessera::arch {

// The most elements a list in the program text states: a row-gather view's rows, a values-filled input's
// values (docs/tile-program.md, "Limits"). Checked before anything is allocated.
constexpr int64_t kMaxListedElements = int64_t{1} << 26;

struct IntegerListRule {
  std::string_view key;   // "rows": messages say "rows= lists ..."
  std::string_view item;  // "row", "value": what one value is
  std::string_view noun;  // "rows", "values": what the tensor has `count` of
  int64_t count = 0;      // exactly this many values; at most kMaxListedElements (the caller checks)
  int64_t minimum = 0;    // every value in [minimum, maximum]
  int64_t maximum = 0;
  std::string range_hint;  // why those bounds
  std::string count_hint;  // why `count`
};

}  // namespace tessera::arch
