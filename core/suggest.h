// "Did you mean": the known name nearest to a mistyped one, for the errors
// of unknown config keys (train/config/yaml.h) and of unknown commands and
// flags (tools/main.cc).
#ifndef ROTOR_CORE_SUGGEST_H_
#define ROTOR_CORE_SUGGEST_H_

#include <cstddef>
#include <string>
#include <vector>

namespace rotor {

// The edit distance between `a` and `b`: the fewest insertions, deletions,
// substitutions and swaps of two neighbouring characters that turn one
// into the other ("lrr" -> "lr": 1, "chekpoint" -> "checkpoint": 1).
size_t EditDistance(const std::string& a, const std::string& b);

// The candidate nearest to `word`: the one at the smallest edit distance,
// if that is at most a third of `word`'s length (at least 1), else the
// shortest candidate that starts with `word` (of 3 or more characters:
// "warmup" -> "warmup_steps"); "" when none is that close. Ties go to the
// first candidate.
std::string NearestName(const std::string& word,
                        const std::vector<std::string>& candidates);

// ", did you mean 'NAME'?" for NearestName, or "" when nothing is near.
std::string DidYouMean(const std::string& word,
                       const std::vector<std::string>& candidates);

}  // namespace rotor

#endif  // ROTOR_CORE_SUGGEST_H_
