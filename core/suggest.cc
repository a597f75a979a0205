#include "core/suggest.h"

#include <algorithm>

namespace rotor {

size_t EditDistance(const std::string& a, const std::string& b) {
  // Optimal string alignment: the Levenshtein recurrence plus a swap of
  // neighbours, over three rows of the (|a|+1) x (|b|+1) table.
  std::vector<size_t> before(b.size() + 1), previous(b.size() + 1),
      current(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t substitution = a[i - 1] == b[j - 1] ? 0 : 1;
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1,
                             previous[j - 1] + substitution});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        current[j] = std::min(current[j], before[j - 2] + 1);
      }
    }
    before.swap(previous);
    previous.swap(current);
  }
  return previous[b.size()];
}

std::string NearestName(const std::string& word,
                        const std::vector<std::string>& candidates) {
  const size_t limit = std::max<size_t>(1, word.size() / 3);
  std::string nearest;
  size_t nearest_distance = limit + 1;
  for (const std::string& candidate : candidates) {
    if (candidate == word) continue;
    // The distance is at least the difference in length: skip the table.
    const size_t gap = candidate.size() > word.size()
                           ? candidate.size() - word.size()
                           : word.size() - candidate.size();
    if (gap >= nearest_distance) continue;
    const size_t distance = EditDistance(word, candidate);
    if (distance < nearest_distance) {
      nearest = candidate;
      nearest_distance = distance;
    }
  }
  if (!nearest.empty() || word.size() < 3) return nearest;
  for (const std::string& candidate : candidates) {
    if (candidate.size() > word.size() && candidate.rfind(word, 0) == 0 &&
        (nearest.empty() || candidate.size() < nearest.size())) {
      nearest = candidate;
    }
  }
  return nearest;
}

std::string DidYouMean(const std::string& word,
                       const std::vector<std::string>& candidates) {
  const std::string nearest = NearestName(word, candidates);
  return nearest.empty() ? "" : ", did you mean '" + nearest + "'?";
}

}  // namespace rotor
