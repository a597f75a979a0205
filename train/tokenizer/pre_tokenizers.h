// Pre-tokenizers: the second step of HF's pipeline, cutting normalized text
// into pieces ("words") that the model tokenizes one by one, so no token
// crosses a piece boundary (tokenizer.json's "pre_tokenizer").
//
//   Split            cuts at the matches of a regex or a string, keeping or
//                    dropping them as its `behavior` says (Llama 3, Qwen2)
//   ByteLevel        optionally a space in front, optionally GPT-2's regex
//                    split, then every byte as one printable character
//                    (GPT-2's byte-to-unicode table) so BPE sees no raw bytes
//   Metaspace        spaces become "▁" (optionally one in front), and the text
//                    is cut before each "▁" (SentencePiece style)
//   Digits           cuts around digits (each digit alone, or runs)
//   Whitespace       runs of word characters and runs of other non-space
//                    characters; spaces dropped
//   WhitespaceSplit  cuts at whitespace, dropped
//   Punctuation      cuts around punctuation
//   Sequence         each of a list in turn, on every piece
//
// A piece is a view into the normalized text or into strings a step made
// (kept in a PreTokenArena while the pieces live). Empty pieces are dropped,
// as in HF.
#ifndef ROTOR_TRAIN_TOKENIZER_PRE_TOKENIZERS_H_
#define ROTOR_TRAIN_TOKENIZER_PRE_TOKENIZERS_H_

#include <array>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "train/tokenizer/regex.h"

namespace rotor::train {

// One piece of text; at_start: it begins where the input text begins (the
// Metaspace prepend_scheme "first" adds its "▁" only there).
struct PreToken {
  std::string_view text;
  bool at_start;
};

// Owns the strings pre-tokenizers make, so PreTokens can view them.
class PreTokenArena {
 public:
  // Keeps `text` and returns a view of it, valid while the arena lives.
  std::string_view Keep(std::string text) {
    strings_.push_back(std::move(text));
    return strings_.back();
  }

 private:
  std::deque<std::string> strings_;  // never moves its elements
};

// What a split does with the delimiters it finds (HF's
// SplitDelimiterBehavior), e.g. for "a-b" cut at "-":
//   Removed ["a", "b"]  Isolated ["a", "-", "b"]  MergedWithPrevious
//   ["a-", "b"]  MergedWithNext ["a", "-b"]  Contiguous: like Isolated, with
//   runs of delimiters kept together.
enum class SplitBehavior {
  kRemoved,
  kIsolated,
  kMergedWithPrevious,
  kMergedWithNext,
  kContiguous
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces every piece of `pieces` by the pieces it splits into.
  virtual void PreTokenize(std::vector<PreToken>& pieces,
                           PreTokenArena& arena) const;

 protected:
  // Appends the non-empty pieces `piece` splits into to `out`.
  virtual void SplitPiece(const PreToken& piece, PreTokenArena& arena,
                          std::vector<PreToken>& out) const = 0;
};

// Split: at the matches of `pattern` (a regex, or a string matched as
// written); with `invert`, the matches are the pieces and what lies between
// them the delimiters.
class SplitPreTokenizer : public PreTokenizer {
 public:
  SplitPreTokenizer(std::unique_ptr<Regex> pattern, SplitBehavior behavior,
                    bool invert)
      : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}

 protected:
  void SplitPiece(const PreToken& piece, PreTokenArena& arena,
                  std::vector<PreToken>& out) const override;

 private:
  std::unique_ptr<Regex> pattern_;
  SplitBehavior behavior_;
  bool invert_;
};

// ByteLevel. With map_bytes false, the last step (bytes -> characters) is
// left to the BPE model, which then reads raw bytes (BpeModel's byte_level
// option): same ids, and its cache is keyed on the raw piece.
class ByteLevelPreTokenizer : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex, bool map_bytes);

  // Whether this step maps bytes itself (set at load: see above).
  void set_map_bytes(bool map_bytes) { map_bytes_ = map_bytes; }
  // Skips the pieces' copy when there is nothing to do (Llama 3: no prefix,
  // no regex, bytes mapped by the model).
  void PreTokenize(std::vector<PreToken>& pieces,
                   PreTokenArena& arena) const override;

 protected:
  void SplitPiece(const PreToken& piece, PreTokenArena& arena,
                  std::vector<PreToken>& out) const override;

 private:
  bool add_prefix_space_;
  std::unique_ptr<Regex> gpt2_regex_;  // when use_regex
  bool map_bytes_;
};

// Where Metaspace puts a "▁" in front of a piece that lacks one: always,
// only at the start of the input ("first"), or never.
enum class PrependScheme { kAlways, kFirst, kNever };

// Metaspace: ' ' -> `replacement`, the prepend scheme, then (with `split`)
// a cut before each `replacement`, which stays with the text after it.
class MetaspacePreTokenizer : public PreTokenizer {
 public:
  MetaspacePreTokenizer(std::string replacement, PrependScheme scheme,
                        bool split)
      : replacement_(std::move(replacement)), scheme_(scheme), split_(split) {}

 protected:
  void SplitPiece(const PreToken& piece, PreTokenArena& arena,
                  std::vector<PreToken>& out) const override;

 private:
  std::string replacement_;  // one character, UTF-8
  PrependScheme scheme_;
  bool split_;
};

// Digits: each digit alone (individual_digits) or runs of digits.
class DigitsPreTokenizer : public PreTokenizer {
 public:
  explicit DigitsPreTokenizer(bool individual_digits)
      : individual_digits_(individual_digits) {}

 protected:
  void SplitPiece(const PreToken& piece, PreTokenArena& arena,
                  std::vector<PreToken>& out) const override;

 private:
  bool individual_digits_;
};

// Whitespace: the matches of \w+|[^\w\s]+.
class WhitespacePreTokenizer : public PreTokenizer {
 protected:
  void SplitPiece(const PreToken& piece, PreTokenArena& arena,
                  std::vector<PreToken>& out) const override;
};

// WhitespaceSplit: cut at whitespace, which is dropped.
class WhitespaceSplitPreTokenizer : public PreTokenizer {
 protected:
  void SplitPiece(const PreToken& piece, PreTokenArena& arena,
                  std::vector<PreToken>& out) const override;
};

// Punctuation: each punctuation character is a delimiter.
class PunctuationPreTokenizer : public PreTokenizer {
 public:
  explicit PunctuationPreTokenizer(SplitBehavior behavior)
      : behavior_(behavior) {}

 protected:
  void SplitPiece(const PreToken& piece, PreTokenArena& arena,
                  std::vector<PreToken>& out) const override;

 private:
  SplitBehavior behavior_;
};

// Sequence: each step over all pieces, in turn.
class SequencePreTokenizer : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(
      std::vector<std::unique_ptr<PreTokenizer>> steps)
      : steps_(std::move(steps)) {}
  void PreTokenize(std::vector<PreToken>& pieces,
                   PreTokenArena& arena) const override;
  // The steps, for the loader (which looks for a final ByteLevel).
  const std::vector<std::unique_ptr<PreTokenizer>>& steps() const {
    return steps_;
  }

 protected:
  void SplitPiece(const PreToken& piece, PreTokenArena& arena,
                  std::vector<PreToken>& out) const override;

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

// GPT-2's byte-to-unicode table: byte b is shown as the character
// ByteLevelChars()[b] (UTF-8): printable Latin-1 bytes as themselves, the
// other 68 as U+0100.. in order. The ByteLevel pre-tokenizer and decoder
// use it.
const std::array<std::string, 256>& ByteLevelChars();
// Appends the ByteLevel form of `bytes` to `out`.
void AppendByteLevel(std::string_view bytes, std::string& out);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_TOKENIZER_PRE_TOKENIZERS_H_
