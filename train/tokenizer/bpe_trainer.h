// Byte-level BPE training, as Hugging Face's `BpeTrainer` does it behind a
// ByteLevel pre-tokenizer (GPT-2, Llama 3), written out as a tokenizer.json
// that HF's tokenizers, transformers.js and rotor's LoadTokenizer read
// unchanged. docs/tokenizers.md ("Training a BPE tokenizer") teaches the
// algorithm step by step; in short:
//
//   1. CountWords: every document is split by the pre-tokenizer regex
//      (default: Llama 3's) into pre-tokens ("words"), counted in a hash
//      map (documents spread over the thread pool; counts are sums, so the
//      thread count changes nothing).
//   2. The vocabulary starts with the special tokens (ids 0..k-1, as HF's
//      trainer puts them), then the 256 bytes as GPT-2's printable
//      characters (ByteLevelChars, train/tokenizer/pre_tokenizers.h), sorted by
//      code point as HF sorts its initial alphabet: id k is "!" (byte 33), k +
//      187 is "ÿ" (byte 255), k + 188 is "Ā" (byte 0), k + 220 is "Ġ" (space).
//   3. TrainBpe: repeatedly merges the most frequent adjacent pair of
//      symbols (counted over all words, weighted by their counts) into a
//      new symbol, until the vocabulary has vocab_size tokens, no pair is
//      left, or the best pair is rarer than min_frequency.
//
// The tie rule (HF's): among pairs with the same count, the pair (left id,
// right id) that is smallest wins - lowest left id, then lowest right id.
// Ids grow in the order tokens were made, so older and shorter symbols go
// first. Nothing depends on hash order or threads: the same input gives
// bitwise the same tokenizer.json at any thread count.
#ifndef ROTOR_TRAIN_TOKENIZER_BPE_TRAINER_H_
#define ROTOR_TRAIN_TOKENIZER_BPE_TRAINER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "train/tokenizer/tokenizer.h"

namespace rotor::train {

// Llama 3's pre-tokenizer regex (also GPT-4's cl100k_base): contractions,
// letters with one leading non-letter, numbers of 1-3 digits, punctuation
// runs with one leading space, newlines, and spaces.
inline constexpr char kLlama3SplitPattern[] =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// The largest vocabulary TrainBpe makes (docs/limits.md): model.vocab_size's
// limit, kMaxVocabSize.
int64_t MaxBpeVocabSize();

struct BpeTrainerOptions {
  // Tokens in the result, special tokens and the 256 bytes included; at
  // least 256 + special_tokens.size().
  int64_t vocab_size = 8192;
  // Added tokens, ids 0..k-1 in this order; none may repeat or be empty.
  std::vector<std::string> special_tokens = {"<|endoftext|>"};
  // Training stops when the most frequent pair occurs fewer times.
  uint64_t min_frequency = 0;
  // The pre-tokenizer regex (PCRE2 syntax, Unicode), written into the
  // tokenizer.json's Split pre-tokenizer.
  std::string split_pattern = kLlama3SplitPattern;
};

// A pre-token (its UTF-8 bytes) and how often it occurs.
struct WordCount {
  std::string word;
  uint64_t count = 0;
};

// A trained byte-level BPE model.
struct BpeModel {
  // Token strings by id, in GPT-2's byte-level alphabet (special tokens as
  // given): the specials, the 256 bytes, then one token per new merge.
  std::vector<std::string> vocab;
  // The merges in the order learned (rank 0 first), as pairs of ids.
  std::vector<std::pair<TokenId, TokenId>> merges;
  // vocab[0 .. special_token_count) are the special tokens.
  int64_t special_token_count = 0;
};

// Splits each document with `split_pattern` and counts the pre-tokens.
// Documents are spread over rotor's thread pool. The result is sorted by
// word (bytewise), so it is the same at any thread count. O(total bytes).
// Throws rotor::Error naming the pattern if it does not compile.
std::vector<WordCount> CountWords(
    const std::vector<std::string_view>& documents,
    const std::string& split_pattern);

// Called every 256 merges and after the last, with merges done so far and
// the vocabulary size so far.
using BpeProgress = std::function<void(int64_t merges, int64_t vocab_size)>;

// Learns merges from counted words (see the top of this file). Checks the
// options first: throws rotor::Error naming the option (vocab_size outside
// [256 + specials, MaxBpeVocabSize()], an empty or repeated special token).
// O(pairs in all words + sum over merges of the words holding the pair).
BpeModel TrainBpe(const std::vector<WordCount>& words,
                  const BpeTrainerOptions& options,
                  const BpeProgress& progress = {});

// The tokenizer.json text of `model` (byte_level_bpe_json.h): HF's layout
// (version "1.0", added_tokens, Split + ByteLevel pre-tokenizer, ByteLevel
// post-processor and decoder, a BPE model with ignore_merges false and
// merges as "a b" strings), 2-space indented, ending in a newline.
std::string BpeTokenizerJson(const BpeModel& model,
                             const BpeTrainerOptions& options);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_TOKENIZER_BPE_TRAINER_H_
