// Exercise (rung 03, docs/tokenizers.md): one step of BPE training.
//
// `words` are pre-tokens as sequences of symbol ids, each with its count.
// Find the adjacent pair (left, right) that occurs most often, counting
// each occurrence times its word's count; among equal counts the smallest
// pair wins (lowest left id, then lowest right id). Then replace every
// occurrence in every word, left to right, by `new_id`, and return the
// pair. Return {-1, -1} and change nothing when no word has two symbols.
// Test: ctest -R Learn.BpeMerge (repeated, against rotor's TrainBpe).
#ifndef ROTOR_EXAMPLES_EXERCISES_BPE_MERGE_H_
#define ROTOR_EXAMPLES_EXERCISES_BPE_MERGE_H_

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace learn {

struct Word {
  std::vector<int> symbols;
  uint64_t count = 0;
};

inline std::pair<int, int> MergeMostFrequentPair(std::vector<Word>& words,
                                                 int new_id) {
  std::pair<int, int> best{-1, -1};
  // ---- REFERENCE SOLUTION: delete from here ...
  std::map<std::pair<int, int>, uint64_t> counts;  // ordered: ties -> first
  for (const Word& w : words) {
    for (size_t j = 0; j + 1 < w.symbols.size(); ++j) {
      counts[{w.symbols[j], w.symbols[j + 1]}] += w.count;
    }
  }
  uint64_t best_count = 0;
  for (const auto& [pair, count] : counts) {
    if (count > best_count) best = pair, best_count = count;
  }
  if (best_count == 0) return best;
  for (Word& w : words) {
    std::vector<int> merged;
    for (size_t j = 0; j < w.symbols.size(); ++j) {
      if (j + 1 < w.symbols.size() && w.symbols[j] == best.first &&
          w.symbols[j + 1] == best.second) {
        merged.push_back(new_id);
        ++j;
      } else {
        merged.push_back(w.symbols[j]);
      }
    }
    w.symbols = merged;
  }
  // ---- ... to here, and write your own. ----
  return best;
}

}  // namespace learn

#endif  // ROTOR_EXAMPLES_EXERCISES_BPE_MERGE_H_
