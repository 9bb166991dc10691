#include "common/text.hpp"

#include <algorithm>

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

}  // namespace tessera
