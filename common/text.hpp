// Small text helpers used by every reader: edit distance for did-you-mean hints, number formatting.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

// Levenshtein distance between two strings.
int edit_distance(const std::string& a, const std::string& b);

// The candidate closest to `word` if it is close enough to be a plausible typo, else "".
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

// " ; did you mean 'x'?" or "" — appended to "unknown key" style messages.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

// "a, b or c"
std::string join_alternatives(const std::vector<std::string>& words);

// A count written in decimal digits alone ("0", "42"), or nothing when the text is empty, holds anything else
// or has more than 18 digits (past any list, point or index tessera reads, and inside uint64).
std::optional<uint64_t> parse_count(std::string_view text);

// The offset of the first byte of `text` that is not well-formed UTF-8 (an overlong form, a surrogate, a
// code point past U+10FFFF, a cut sequence), or npos.
size_t invalid_utf8_at(std::string_view text);
inline bool is_valid_utf8(std::string_view text) {
  return invalid_utf8_at(text) == std::string_view::npos;
}

// "UTF-16LE", "UTF-16BE", "UTF-32LE" or "UTF-32BE" (as iconv names them) when the text begins as UTF-16 or
// UTF-32 text does (a byte-order mark, or the NUL bytes of an ASCII first character, as YAML 1.2 section 5.2
// detects them); "" otherwise.
std::string wide_encoding_of(std::string_view text);

// Names that become a file or folder name (a workload's records folder, an op's record and tile programs):
// at most this many bytes, so that a name plus what is appended to it (".ws-direct.tprog") stays within
// the file systems' 255.
constexpr size_t kMaxPathNameBytes = 200;
// Why `name` cannot be one component of a path, or "" when it can: empty, "." or "..", a '/', a control
// character, invalid UTF-8 or more than kMaxPathNameBytes bytes.
std::string path_name_problem(const std::string& name);

}  // namespace tessera
