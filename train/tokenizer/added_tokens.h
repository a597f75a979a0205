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
#include <cstdint>
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

  // The matcher reads a text this many bytes at a time (or the longest
  // token's length, if more), so that what it keeps of a 1 GiB document is
  // one chunk's token starts (at most 16 bytes a byte: 1 MiB).
  static constexpr size_t kSplitChunkBytes = size_t{1} << 16;

  // Cuts `text` at the tokens of step 1 (raw) or step 2 (normalized). The
  // segments do not depend on `chunk_bytes` (tests make it small).
  void SplitRaw(std::string_view text, std::vector<Segment>& out,
                size_t chunk_bytes = kSplitChunkBytes) const {
    raw_.Split(text, tokens_, chunk_bytes, out);
  }
  void SplitNormalized(std::string_view text, std::vector<Segment>& out,
                       size_t chunk_bytes = kSplitChunkBytes) const {
    normalized_.Split(text, tokens_, chunk_bytes, out);
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
  // Leftmost-longest search for a set of tokens: an Aho-Corasick automaton
  // over the tokens' bytes reversed. Run over a chunk of the text from its
  // end, it finds the longest token starting at each position; Split then
  // walks those starts left to right, chunk after chunk. Building costs
  // O(total token bytes), a Split O(text bytes), whatever the number of
  // tokens.
  class Matcher {
   public:
    // Adds the token tokens[index], matched by `text` (not empty). Of two
    // tokens with the same text, the one added first is matched.
    void Add(size_t index, const std::string& text);
    // After the last Add: the failure links.
    void Finish();
    bool empty() const { return nodes_.size() <= 1; }
    // HF's find_matches: the segments of `text`, covering it, found
    // max(chunk_bytes, longest token) bytes at a time.
    void Split(std::string_view text, const std::vector<AddedToken>& tokens,
               size_t chunk_bytes, std::vector<Segment>& out) const;

   private:
    static constexpr uint32_t kNone = static_cast<uint32_t>(-1);
    // A node of the trie of reversed texts: the bytes on its path are the
    // last `depth` bytes of a token, read backwards.
    struct Node {
      uint32_t parent = 0;
      uint32_t depth = 0;
      uint32_t fail = 0;       // the longest proper suffix that is a node
      uint32_t token = kNone;  // the token whose whole text ends here
      uint32_t longest = 0;    // the deepest node on the fail chain (self
                               // included) that has a token; 0: none
      unsigned char byte = 0;  // the byte from parent to here
    };
    // The child of `node` by `byte`, or 0 (the root is no node's child).
    uint32_t Child(uint32_t node, unsigned char byte) const;
    // The state after reading `byte` in `node`.
    uint32_t Step(uint32_t node, unsigned char byte) const;

    std::vector<Node> nodes_ = std::vector<Node>(1);  // nodes_[0]: the root
    // The root's children by byte, in a table: most bytes of a text end no
    // token and leave the automaton at the root, at the cost of one load.
    std::array<uint32_t, 256> root_children_{};
    // The other nodes' children, by node << 8 | byte.
    std::unordered_map<uint64_t, uint32_t> children_;
    uint32_t max_depth_ = 0;  // the longest token's length
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
