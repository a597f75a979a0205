// BpeModel: byte-pair encoding as HF's tokenizers does it (the "model" of a
// tokenizer.json whose type is "BPE"). A piece of text starts as one symbol
// per character; then, again and again, the adjacent pair whose merge comes
// first in the merge list (lowest rank; leftmost among equals) is replaced
// by the merged token, until no adjacent pair has a merge.
//
// Around that core, the options of HF's BPE:
//   unk_token, fuse_unk         a character missing from the vocabulary
//                               becomes unk_token (consecutive ones fused
//                               into one with fuse_unk), or is dropped when
//                               there is no unk_token
//   byte_fallback               ...unless its UTF-8 bytes each have a token
//                               <0xAB> (SentencePiece's byte fallback)
//   continuing_subword_prefix   put before every symbol but the first
//   end_of_word_suffix          put after the last symbol
//   ignore_merges               a piece that is itself in the vocabulary is
//                               that one token, merges or not (Llama 3)
//   byte_level                  rotor's: pieces arrive as raw bytes and are
//                               shown in GPT-2's byte alphabet first (what
//                               the ByteLevel pre-tokenizer would have done)
//
// Tokenize is const and thread-safe: each thread caches the ids of the
// pieces it has seen (a piece's ids never depend on its neighbours), in its
// own table, so threads never wait for each other.
#ifndef ROTOR_TRAIN_TOKENIZER_BPE_H_
#define ROTOR_TRAIN_TOKENIZER_BPE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "train/tokenizer/tokenizer.h"

namespace rotor::train {

// Strings <-> ids: an open-addressing hash table over the tokens, whose
// slots point into one flat array of the tokens' bytes (a lookup touches two
// cache lines), and the tokens by id. Ids may have gaps (an id no token has).
class TokenTable {
 public:
  // Adds `token` with `id` (0 <= id); false if `token` or `id` is taken.
  bool Insert(std::string_view token, TokenId id);
  // The id of `token`, or -1.
  TokenId Find(std::string_view token) const;
  // The token of `id`, or nullopt for an id no token has.
  std::optional<std::string_view> Token(TokenId id) const;
  // One more than the largest id (0 when empty).
  int64_t end_id() const { return static_cast<int64_t>(tokens_.size()); }
  // The number of tokens.
  size_t size() const { return count_; }
  // Prepares for `count` tokens.
  void Reserve(size_t count);

 private:
  struct Slot {
    uint32_t hash;
    TokenId id;       // -1: empty
    uint32_t offset;  // of the token in bytes_
    uint32_t length;
  };
  // Doubles the slots and re-inserts every token.
  void Grow();

  std::vector<Slot> slots_;
  std::string bytes_;  // every token, one after another
  struct Span {
    uint32_t offset;
    uint32_t length;
    bool present;
  };
  std::vector<Span> tokens_;  // by id
  size_t count_ = 0;
};

struct BpeOptions {
  std::optional<std::string> unk_token;
  bool fuse_unk = false;
  bool byte_fallback = false;
  std::string continuing_subword_prefix;
  std::string end_of_word_suffix;
  bool ignore_merges = false;
  bool byte_level = false;
};

class BpeModel {
 public:
  // The model over `vocab` (taken), with no merges yet.
  BpeModel(TokenTable vocab, BpeOptions options);
  BpeModel(const BpeModel&) = delete;
  BpeModel& operator=(const BpeModel&) = delete;

  // Appends the merge (left, right) -> merged with the next rank (merges
  // are added in the file's order). A pair given twice keeps the later
  // rank, as HF's map does.
  void AddMerge(TokenId left, TokenId right, TokenId merged);

  // Appends the ids of one pre-tokenized piece to `out`.
  void Tokenize(std::string_view piece, std::vector<TokenId>& out) const;

  const TokenTable& vocab() const { return vocab_; }
  const BpeOptions& options() const { return options_; }
  size_t merge_count() const { return merge_count_; }

 private:
  struct MergeSlot {
    uint64_t key;  // left << 32 | right; kEmptyKey when free
    int32_t rank;
    TokenId merged;
  };
  static constexpr uint64_t kEmptyKey = ~uint64_t{0};

  // The merge of (left, right), or nullptr.
  const MergeSlot* FindMerge(TokenId left, TokenId right) const;
  // Doubles the merge slots.
  void GrowMerges();
  // The first symbols of `word` (in the vocabulary's alphabet): one per
  // character, or its byte-fallback tokens, or the unknown token.
  void WordSymbols(std::string_view word, std::vector<TokenId>& symbols) const;
  // Applies the merges to `symbols`, appending the result to `out`.
  void MergeSymbols(const std::vector<TokenId>& symbols,
                    std::vector<TokenId>& out) const;
  // The ids of `piece` as Tokenize gives them, through the cache but
  // without the metaspace split.
  void TokenizeWord(std::string_view piece, std::vector<TokenId>& out) const;
  // The same without the cache.
  void TokenizeUncached(std::string_view piece,
                        std::vector<TokenId>& out) const;

  TokenTable vocab_;
  BpeOptions options_;
  TokenId unk_id_ = -1;
  // With byte_level and no prefix or suffix: the id of each byte's
  // character, so a piece's first symbols come from its bytes directly.
  bool byte_symbols_ = false;
  TokenId byte_symbol_ids_[256];
  TokenId byte_fallback_ids_[256];  // <0xAB> tokens, -1 when missing
  // SentencePiece-style files (Llama 2, Mistral) have no pre-tokenizer, so
  // a whole text is one piece, and BPE over it is a heap of a million
  // symbols that misses the cache at every step. When no token has a "▁"
  // right after another character, no merge can join the two sides of such
  // a spot, so the piece is cut there first: the same ids, from short
  // cached words (HF does not do this; its ids are the same by the above).
  // Only without byte_level, ignore_merges, prefix or suffix, which look at
  // a whole piece.
  bool split_at_metaspace_ = false;
  std::vector<MergeSlot> merges_;
  size_t merge_count_ = 0;
  uint64_t serial_;  // tells this model's cache from others'
};

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_TOKENIZER_BPE_H_
