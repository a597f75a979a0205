// Regex: the patterns of tokenizer.json files (Split pre-tokenizers,
// Replace normalizers and decoders), on PCRE2 with its JIT compiler.
//
// HF's tokenizers compiles these patterns with Oniguruma; PCRE2 reads the
// same syntax for everything these files use (\p{L}, \p{N}, (?i:...),
// lookahead, possessive and lazy quantifiers). Patterns run in UTF mode with
// PCRE2_UCP, so \s, \d, \w and case folding are Unicode's, as in Oniguruma
// (\s is White_Space: "\u3000" and "\u2028" are spaces). Compiled once at
// load; matching is const and thread-safe (each thread keeps its own match
// data and JIT stack).
#ifndef ROTOR_TRAIN_TOKENIZER_REGEX_H_
#define ROTOR_TRAIN_TOKENIZER_REGEX_H_

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace rotor::train {

class Regex {
 public:
  // One match: bytes [start, end) of the subject.
  struct Match {
    size_t start;
    size_t end;
  };

  // Compiles `pattern` (UTF-8), or matches it as plain text when `literal`
  // (a {"String": ...} pattern). Throws rotor::Error with PCRE2's message and
  // the offset of the problem.
  Regex(std::string_view pattern, bool literal);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Every non-overlapping match in `subject` (valid UTF-8), left to right,
  // appended to `out`. An empty match is reported, and the search goes on
  // one character later, as Oniguruma's find_iter does.
  void FindAll(std::string_view subject, std::vector<Match>& out) const;

  // The pattern as given.
  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
  struct Compiled;
  std::unique_ptr<Compiled> compiled_;
};

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_TOKENIZER_REGEX_H_
