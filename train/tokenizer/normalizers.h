// Normalizers: the first step of HF's pipeline, rewriting the text between
// added tokens before it is pre-tokenized (tokenizer.json's "normalizer").
//
//   NFC, NFD, NFKC, NFKD   Unicode normalization (utf8proc)
//   Lowercase              Unicode lowercase, code point by code point
//   Strip                  removes leading and/or trailing whitespace
//   Prepend                puts a string in front of non-empty text
//                          (Llama 2: "▁")
//   Replace                replaces every match of a string or regex
//                          (Llama 2: " " -> "▁")
//   Sequence               each of a list in turn
//
// Each works on valid UTF-8 and returns valid UTF-8. Offsets are not kept:
// rotor needs ids, not alignments.
#ifndef ROTOR_TRAIN_TOKENIZER_NORMALIZERS_H_
#define ROTOR_TRAIN_TOKENIZER_NORMALIZERS_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "train/tokenizer/regex.h"
#include "train/tokenizer/unicode.h"

namespace rotor::train {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // Rewrites `text` in place.
  virtual void Normalize(std::string& text) const = 0;
};

// NFC, NFD, NFKC or NFKD.
class UnicodeNormalizer : public Normalizer {
 public:
  explicit UnicodeNormalizer(unicode::NormalizationForm form) : form_(form) {}
  void Normalize(std::string& text) const override;

 private:
  unicode::NormalizationForm form_;
};

// Lowercase.
class LowercaseNormalizer : public Normalizer {
 public:
  void Normalize(std::string& text) const override;
};

// Strip: whitespace (White_Space) off the left and/or right end.
class StripNormalizer : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  void Normalize(std::string& text) const override;

 private:
  bool left_;
  bool right_;
};

// Prepend: `prefix` before the text, unless the text is empty.
class PrependNormalizer : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
  void Normalize(std::string& text) const override;

 private:
  std::string prefix_;
};

// Replace: every non-overlapping match of `pattern` becomes `content`.
class ReplaceNormalizer : public Normalizer {
 public:
  ReplaceNormalizer(std::unique_ptr<Regex> pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void Normalize(std::string& text) const override;

 private:
  std::unique_ptr<Regex> pattern_;
  std::string content_;
};

// Sequence: each normalizer in turn.
class SequenceNormalizer : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> steps)
      : steps_(std::move(steps)) {}
  void Normalize(std::string& text) const override;

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

// `text` with every match of `pattern` replaced by `content` (the Replace
// normalizer, and the Replace decoder on each token).
std::string ReplaceAll(const Regex& pattern, std::string_view text,
                       std::string_view content);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_TOKENIZER_NORMALIZERS_H_
