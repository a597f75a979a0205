// AddedVocabulary: the "added_tokens" of a tokenizer.json (special tokens
// such as <|begin_of_text|> or </s>, and any other token added after
// training), found in the text before anything else runs, as HF's
// AddedVocabulary does:
//
//   1. tokens with normalized: false (all special tokens of Llama 2 and 3)
//      are found in the raw text;
//   2. the text between them is normalized, and tokens with normalized:
//      true are found in that (by their own normalized form);
//   3. only the text between all of these is pre-tokenized and given to the
//      model.
//
// Matching is leftmost-longest. A match of a single_word token with a word
// character right before or after it is skipped; lstrip / rstrip make the
// token also take the whitespace on its left / right.
#ifndef ROTOR_TRAIN_TOKENIZER_ADDED_TOKENS_H_
#define ROTOR_TRAIN_TOKENIZER_ADDED_TOKENS_H_

#include <array>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "train/tokenizer/normalizers.h"
#include "train/tokenizer/tokenizer.h"

namespace rotor::train {

struct AddedToken {
  std::string content;
  TokenId id = 0;
  bool special = false;
  bool normalized = true;
  bool lstrip = false;
  bool rstrip = false;
  bool single_word = false;
};

class AddedVocabulary {
 public:
  // A part of a text: bytes [start, end), an added token's id or -1 for
  // text between added tokens.
  struct Segment {
    size_t start;
    size_t end;
    TokenId id;
  };

  // Adds `token` (the loader has checked its id and content). A content
  // given twice keeps the later token, as HF does.
  void Add(AddedToken token);
  // After the last Add: computes each normalized token's normalized form
  // (with `normalizer`, which may be null) and the matchers.
  void Build(const Normalizer* normalizer);

  // Cuts `text` at the tokens of step 1 (raw) or step 2 (normalized).
  void SplitRaw(std::string_view text, std::vector<Segment>& out) const {
    raw_.Split(text, tokens_, out);
  }
  void SplitNormalized(std::string_view text, std::vector<Segment>& out) const {
    normalized_.Split(text, tokens_, out);
  }
  bool has_normalized_tokens() const { return !normalized_.empty(); }

  // The id of the added token with this content, or -1.
  TokenId Find(std::string_view content) const;
  // The text decoding shows for `id` (its normalized form for a normalized
  // token, as HF's simple_id_to_token), or nullptr if `id` is no added
  // token.
  const std::string* DecodeText(TokenId id) const;
  // Whether `token` is the content of a special added token.
  bool IsSpecial(std::string_view token) const;
  // One more than the largest added id (0 when none).
  int64_t end_id() const { return end_id_; }
  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  // Leftmost-longest search for a set of tokens, indexed by first byte.
  class Matcher {
   public:
    // Adds the token tokens[index], matched by `text`.
    void Add(size_t index, const std::string& text);
    // Sorts each byte's candidates longest first.
    void Finish();
    bool empty() const { return texts_.empty(); }
    // HF's find_matches: the segments of `text`, covering it.
    void Split(std::string_view text, const std::vector<AddedToken>& tokens,
               std::vector<Segment>& out) const;

   private:
    std::array<std::vector<size_t>, 256> by_first_byte_;  // into texts_
    std::vector<std::pair<std::string, size_t>> texts_;   // text, token index
  };

  std::vector<AddedToken> tokens_;
  std::vector<std::string> decode_texts_;  // by index into tokens_
  std::unordered_map<TokenId, size_t> by_id_;
  std::unordered_map<std::string, size_t> by_content_;
  std::unordered_set<std::string> special_;
  Matcher raw_;
  Matcher normalized_;
  int64_t end_id_ = 0;
};

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_TOKENIZER_ADDED_TOKENS_H_
