// Small text helpers used by every reader: edit distance for did-you-mean hints, number formatting.
#pragma once

#include <string>
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

}  // namespace tessera
