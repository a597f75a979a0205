// Building synthetic long-context prompts (passkey retrieval,
// train/data/passkey.h; the RULER-style tasks, train/eval/retrieval.h) in
// the tokens of any tokenizer: the prompt is a document separator followed
// by pieces of text, each encoded as it reads in the middle of a text, and
// filler cut by tokens from a token stream.
//
// Mid-text encoding matters for SentencePiece-style tokenizers, which put a
// "▁" (a space) in front of a text's first word: "The" at the start of a
// text is "▁The", in the middle of one "The". EncodeInText encodes an
// anchor followed by the piece and drops the anchor's ids, after checking
// that they are the ids of the anchor alone (so no token crosses the
// boundary).
#ifndef ROTOR_TRAIN_DATA_PROMPT_TOKENS_H_
#define ROTOR_TRAIN_DATA_PROMPT_TOKENS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "train/data/token_file.h"
#include "train/tokenizer/tokenizer.h"

namespace rotor::train {

// The ids of `piece` as they read in the middle of a text (see above).
// Throws rotor::Error naming the tokenizer when no anchor splits off
// cleanly.
std::vector<TokenId> EncodeInText(const Tokenizer& tokenizer,
                                  std::string_view piece);

// A token stream to cut filler from, at least `min_tokens` long: `text`
// repeated and encoded in text as one long text, so every repetition
// tokenizes as it does among the others.
std::vector<TokenId> RepeatedTextTokens(const Tokenizer& tokenizer,
                                        std::string_view text,
                                        int64_t min_tokens);

// The same from a prepared split (e.g. val.bin): its tokens from the start
// without the document separators, repeated from the start when the file
// holds fewer than `min_tokens`. Throws rotor::Error naming the file when
// it holds no text token.
std::vector<TokenId> TokenFileFiller(const TokenFile& file, int64_t min_tokens);

// What a prompt maker builds from: a tokenizer (kept by reference), its
// document separator (the prompt's first token) and the filler stream.
struct PromptParts {
  PromptParts(const Tokenizer& tokenizer, std::vector<TokenId> filler);
  // Throws rotor::Error unless the stream holds `count` tokens, the filler
  // of an example of `length` tokens (`what`: "passkey", ... for messages).
  void CheckFiller(int64_t count, int64_t length, const char* what) const;

  const Tokenizer& tokenizer;
  TokenId separator;
  std::vector<TokenId> filler;
};

// A run of consecutive tokens: [first, first + count).
struct TokenSpan {
  int64_t first = 0;
  int64_t count = 0;
};

// The maximal runs of tokens of `ids` whose own text holds a digit (a
// number is one run however a tokenizer splits it: "405" "17", or "▁4" "0"
// "5" ...), and how many digits each token holds.
std::vector<TokenSpan> DigitRuns(const Tokenizer& tokenizer,
                                 const std::vector<TokenId>& ids);
int DigitsInToken(const Tokenizer& tokenizer, TokenId id);

// The index of the first token of `ids` whose own text is not only
// whitespace (ids.size() when there is none).
int64_t FirstNonBlankToken(const Tokenizer& tokenizer,
                           const std::vector<TokenId>& ids);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_DATA_PROMPT_TOKENS_H_
