// Passkey retrieval: synthetic examples that hide a random number in filler
// text and ask for it at the end, in the style of the Landmark Attention,
// Position Interpolation and YaRN evaluations (epfml/landmark-attention
// run_test.py, jquesnelle/yarn eval/passkey.py), in the tokens of any
// tokenizer (bytes, byte-level BPE as Llama 3's or rotor's own, or
// SentencePiece-style BPE as Llama 2's). One example of `length` tokens
// reads
//
//   <|endoftext|>The grass is green. The sky is blue. ...      (prefix filler)
//   The pass key is 40517. Remember it. 40517 is the pass key.
//   The grass is green. The sky is blue. ...                   (suffix filler)
//   What is the pass key? The pass key is 40517
//
// with "\n" between the four parts. It is built as tokens: the tokenizer's
// document separator (its BOS), prefix filler, the piece "\n<key line>\n",
// suffix filler, then "\n<question> <key>", each piece encoded as in the
// middle of a text (train/data/prompt_tokens.h). The answer's leading space
// goes where the tokenizer puts it: with the question for Llama 3 and bytes
// ("is", " ", "405", "17"), with the digits for GPT-2 ("is", " 40517").
// The filler is a token stream cut by tokens: by default the Landmark
// sentence repeated and encoded as one long text, or any other stream (the
// data's validation tokens, TokenFileFiller); the prefix takes the first
// round(depth * F) of the F filler tokens that fit the length, and the
// suffix the rest, starting the stream over. So depth 0 puts the key right
// after the start and depth 1 right before the question; lengths and depths
// count the model's tokens. The Landmark task description ("There is an
// important info hidden inside ...", 148 bytes) is left out: it would fill
// most of a 256-byte context. With the byte tokenizer every example is the
// one rotor built before it supported other tokenizers, byte for byte.
//
// Uses:
// - Training mix (data.passkey_fraction): a small model cannot retrieve
//   anything it never practised, so a share of the training rows is
//   replaced by passkey examples of seq_len + 1 tokens (MixPasskeyExamples).
//   By default (PasskeyLoss::kRetrieval) only the tokens that can be copied
//   from the context are scored: the key's second mention and the answer.
//   The filler is trivially predictable and the key's first mention is
//   random; scoring them (kAll) buries the few retrieval targets, and
//   measured on the default model, 600 steps of pure passkey rows then
//   taught no retrieval at all (digit accuracy at chance), while scoring
//   only the copies reached 76% of the digits.
// - Evaluation over context lengths x depths: train/eval/passkey_eval.h.
#ifndef ROTOR_TRAIN_DATA_PASSKEY_H_
#define ROTOR_TRAIN_DATA_PASSKEY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/random.h"
#include "train/data/batches.h"
#include "train/data/prompt_tokens.h"
#include "train/tokenizer/tokenizer.h"

namespace rotor::train {

// The fixed pieces of the prompt.
inline constexpr char kPasskeyFiller[] =
    "The grass is green. The sky is blue. The sun is yellow. Here we go. "
    "There and back again. ";
inline constexpr char kPasskeyQuestion[] =
    "What is the pass key? The pass key is ";

inline constexpr int kPasskeyDefaultDigits = 5;
inline constexpr int kPasskeyMaxDigits = 18;  // a key fits in a uint64_t

struct PasskeyExample {
  std::vector<TokenId> tokens;  // exactly `length` tokens; tokens[0] is BOS
  std::string key;              // the digits, e.g. "40517"
  int64_t key_position = 0;     // first token of "The pass key is K ..."
  TokenSpan second_mention;     // the tokens of K in "K is the pass key."
  TokenSpan answer;             // the answer's tokens, the last of `tokens`
};

// Which tokens of a passkey training row are scored by the loss.
enum class PasskeyLoss {
  kRetrieval,  // the key's second mention and the answer (the copies)
  kAll,        // every token, like text
};

// "retrieval" / "all" <-> PasskeyLoss; ParsePasskeyLoss throws rotor::Error
// naming the accepted values.
PasskeyLoss ParsePasskeyLoss(const std::string& name);
const char* PasskeyLossName(PasskeyLoss loss);

// The fewest tokens that hold an example with `num_digits` digits (no
// filler), for every key and every tokenizer: the prompt's bytes without
// filler. It is exact for the byte tokenizer and a safe bound for the
// others, since each token of a piece carries at least one of its
// characters (all ASCII) and the pieces are encoded apart; Llama 3, for
// one, needs 36 tokens for a 5-digit key where this says 105.
int64_t PasskeyMinLength(int num_digits = kPasskeyDefaultDigits);

// The Landmark filler (kPasskeyFiller repeated) as `min_tokens` tokens.
std::vector<TokenId> LandmarkFiller(const Tokenizer& tokenizer,
                                    int64_t min_tokens);

// Makes passkey examples in one tokenizer's tokens (kept by reference).
class PasskeyMaker {
 public:
  // Filler from the Landmark passage, for examples of up to `max_length`
  // tokens.
  PasskeyMaker(const Tokenizer& tokenizer, int64_t max_length);
  // Filler cut from `filler` (e.g. TokenFileFiller of val.bin), which must
  // hold as many tokens as the longest example's filler.
  PasskeyMaker(const Tokenizer& tokenizer, std::vector<TokenId> filler);

  // One example of exactly `length` tokens, the answer's tokens last. The
  // key is `num_digits` uniform random digits (leading zeros allowed) drawn
  // from `rng`. Throws rotor::Error if depth is outside [0, 1], num_digits
  // outside [1, 18], or length is too short for this key or longer than
  // the filler allows (naming the key and the lengths).
  PasskeyExample Make(int64_t length, double depth, Rng& rng,
                      int num_digits = kPasskeyDefaultDigits) const;

  const Tokenizer& tokenizer() const { return parts_.tokenizer; }

 private:
  PromptParts parts_;
};

// Share of training examples with the key at the very start (depth 0). A
// uniform depth almost never puts it there at long lengths (a prefix under
// 10 bytes has probability ~1% at 1024 tokens), and right after the start
// is where a model fine-tuned to 1024 tokens failed most: 45-55% retrieved
// at depth 0 against 90-100% at the other depths.
inline constexpr double kPasskeyStartShare = 0.1;

// Replaces each row of `batch` with probability `fraction` by a passkey
// example of seq_len + 1 tokens from `maker` at a random depth (0 with
// probability kPasskeyStartShare, otherwise uniform in [0, 1]; inputs = its
// first seq_len tokens, targets = the last seq_len, with the targets `loss`
// does not score set to kPasskeyIgnoredTarget). Each row's choices are a
// pure function of (seed, its index in the run's stream of rows), where the
// batch's first row has index `first_row`: a resumed run mixes exactly as
// the uninterrupted one, and two micro-batches of 4 rows mix exactly as one
// batch of 8. fraction 0 leaves the batch untouched.
inline constexpr TokenId kPasskeyIgnoredTarget = -100;  // CrossEntropy's
void MixPasskeyExamples(Batch& batch, const PasskeyMaker& maker,
                        double fraction, PasskeyLoss loss, uint64_t seed,
                        uint64_t first_row,
                        int num_digits = kPasskeyDefaultDigits);

// The random generator of item `index` (a training row, or an evaluation
// cell) of a stream seeded with `seed`: SplitMix64 of a mix of both, so
// neighbouring items get unrelated streams.
Rng PasskeyItemRng(uint64_t seed, uint64_t index);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_DATA_PASSKEY_H_
