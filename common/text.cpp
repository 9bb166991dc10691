#include "common/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>

namespace tessera {

int edit_distance(const std::string& a, const std::string& b) {
  std::vector<int> previous(b.size() + 1), current(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) previous[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    current[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      const int substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitution});
    }
    std::swap(previous, current);
  }
  return previous[b.size()];
}

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  int best_distance = 0;
  for (const auto& candidate : candidates) {
    const int distance = edit_distance(word, candidate);
    if (best.empty() || distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  // A typo changes a few characters; beyond a third of the word it is a different word.
  const int limit = std::max<int>(2, static_cast<int>(word.size()) / 3);
  if (!best.empty() && best_distance <= limit) return best;
  // Keys carry their unit in the name (bank_width_bytes): a key written without it is a prefix of the real
  // one.
  if (word.size() >= 3)
    for (const auto& candidate : candidates)
      if (candidate.size() > word.size() && candidate.compare(0, word.size(), word) == 0) return candidate;
  return std::string();
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  const std::string match = closest_match(word, candidates);
  return match.empty() ? std::string() : "; did you mean '" + match + "'?";
}

std::string join_alternatives(const std::vector<std::string>& words) {
  std::string text;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i > 0) text += (i + 1 == words.size()) ? " or " : ", ";
    text += words[i];
  }
  return text;
}

std::optional<uint64_t> parse_count(std::string_view text) {
  if (text.empty() || text.size() > 18 || text.find_first_not_of("0123456789") != std::string_view::npos)
    return std::nullopt;
  uint64_t value = 0;
  for (const char digit : text) value = value * 10 + static_cast<uint64_t>(digit - '0');
  return value;
}

std::string wide_encoding_of(std::string_view text) {
  auto starts = [&](std::initializer_list<int> bytes) {
    if (text.size() < bytes.size()) return false;
    size_t at = 0;
    for (int byte : bytes) {
      const auto c = static_cast<unsigned char>(text[at++]);
      if (byte >= 0 ? c != byte : c == 0) return false;  // -1: any byte but NUL
    }
    return true;
  };
  if (starts({0, 0, 0xFE, 0xFF}) || starts({0, 0, 0, -1})) return "UTF-32BE";
  if (starts({0xFF, 0xFE, 0, 0}) || starts({-1, 0, 0, 0})) return "UTF-32LE";
  if (starts({0xFE, 0xFF}) || starts({0, -1})) return "UTF-16BE";
  if (starts({0xFF, 0xFE}) || starts({-1, 0})) return "UTF-16LE";
  return "";
}

size_t invalid_utf8_at(std::string_view text) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  const size_t size = text.size();
  for (size_t i = 0; i < size;) {
    const unsigned char lead = bytes[i];
    if (lead < 0x80) {
      ++i;
      continue;
    }
    // The sequence's length and the smallest code point it may encode (RFC 3629, section 4).
    size_t length = 0;
    uint32_t code = 0, smallest = 0;
    if ((lead & 0xE0) == 0xC0)
      length = 2, code = lead & 0x1F, smallest = 0x80;
    else if ((lead & 0xF0) == 0xE0)
      length = 3, code = lead & 0x0F, smallest = 0x800;
    else if ((lead & 0xF8) == 0xF0)
      length = 4, code = lead & 0x07, smallest = 0x10000;
    else
      return i;
    if (size - i < length) return i;
    for (size_t k = 1; k < length; ++k) {
      if ((bytes[i + k] & 0xC0) != 0x80) return i;
      code = (code << 6) | (bytes[i + k] & 0x3F);
    }
    if (code < smallest || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return i;
    i += length;
  }
  return std::string_view::npos;
}

std::string path_name_problem(const std::string& name) {
  if (name.empty()) return "is empty";
  if (name == "." || name == "..") return fmt::format("'{}' names a folder, not a file", name);
  if (name.size() > kMaxPathNameBytes)
    return fmt::format("is {} bytes long, more than {}", name.size(), kMaxPathNameBytes);
  if (!is_valid_utf8(name)) return "is not valid UTF-8";
  for (const char c : name) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '/') return "holds a '/'";
    if (byte < 0x20 || byte == 0x7F) return fmt::format("holds a control character (byte 0x{:02x})", byte);
  }
  return "";
}

}  // namespace tessera
