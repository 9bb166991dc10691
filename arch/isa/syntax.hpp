// Lexical rules of the tile program's text form (docs/tile-program.md), shared by the reader and the writer
// so that whatever the writer emits reads back the same.
#pragma once

#include <algorithm>
#include <string_view>

namespace tessera::arch::syntax {

inline constexpr std::string_view kFormatMagic = "tessera-program";
inline constexpr std::string_view kFormatVersion = "1";

inline bool is_blank(char c) {
  return c == ' ' || c == '\t';
}
inline bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
inline bool is_letter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
inline bool is_word_char(char c) {
  return is_letter(c) || is_digit(c) || c == '_';
}
// A number is scanned with the characters a mistyped one tends to carry, so that "1.5" is reported whole.
inline bool is_number_char(char c) {
  return is_word_char(c) || c == '.';
}

inline bool is_name(std::string_view text) {
  return !text.empty() && !is_digit(text[0]) && std::all_of(text.begin(), text.end(), is_word_char);
}
// Names joined by '.': an op attribute of a field group (kv_cache.layout).
inline bool is_field_path(std::string_view text) {
  size_t start = 0;
  while (true) {
    const size_t dot = text.find('.', start);
    if (!is_name(text.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start)))
      return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}
inline bool is_free_text(std::string_view text) {
  return !text.empty() && std::none_of(text.begin(), text.end(), [](char c) {
    return is_blank(c) || c == '#' || c == '\n' || c == '\r';
  });
}

// What the reader makes of a semaphore written name[i][j]: the base name and decimal indices without leading
// zeros. The writer accepts only names of this form, so that reading back gives the same names.
inline bool is_semaphore_name(std::string_view text) {
  const size_t bracket = text.find('[');
  if (!is_name(text.substr(0, bracket))) return false;
  size_t position = bracket;
  while (position < text.size()) {
    const size_t close = text.find(']', position);
    if (text[position] != '[' || close == std::string_view::npos) return false;
    const std::string_view index = text.substr(position + 1, close - position - 1);
    if (index.empty() || !std::all_of(index.begin(), index.end(), is_digit)) return false;
    if (index.size() > 1 && index[0] == '0') return false;
    position = close + 1;
  }
  return true;
}

}  // namespace tessera::arch::syntax
