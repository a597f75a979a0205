// Passkey retrieval: synthetic examples that hide a random number in filler
// text and ask for it at the end, in the style of the Landmark Attention,
// Position Interpolation and YaRN evaluations (epfml/landmark-attention
// run_test.py, jquesnelle/yarn eval/passkey.py). One example of `length`
// byte tokens reads
//
//   <|endoftext|>The grass is green. The sky is blue. ...      (prefix filler)
//   The pass key is 40517. Remember it. 40517 is the pass key.
//   The grass is green. The sky is blue. ...                   (suffix filler)
//   What is the pass key? The pass key is 40517
//
// with "\n" between the four parts. The filler is the Landmark sentence
// repeated and cut by characters; the prefix takes round(depth * F) of the F
// filler bytes that fit, so depth 0 puts the key right after the start and
// depth 1 right before the question. The Landmark task description ("There is
// an important info hidden inside ...", 148 bytes) is left out: it would fill
// most of a 256-byte context.
//
// Uses:
// - Training mix (data.passkey_fraction): a small byte-level model cannot
//   retrieve anything it never practised, so a share of the training rows is
//   replaced by passkey examples of seq_len + 1 tokens (MixPasskeyExamples).
//   By default (PasskeyLoss::kRetrieval) only the digits that can be copied
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
#include "train/tokenizer/byte_tokenizer.h"

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
  int64_t key_position = 0;     // index of "The pass key is K" in tokens
  int64_t second_mention = 0;   // index of the first digit of "K is the ..."
  int64_t answer_start = 0;     // index of the answer's first digit
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

// The fewest tokens an example with `num_digits` digits can have (no filler).
int64_t PasskeyMinLength(int num_digits = kPasskeyDefaultDigits);

// One example of exactly `length` tokens, the answer's digits last. The key
// is `num_digits` uniform random digits (leading zeros allowed) drawn from
// `rng`. Throws rotor::Error if depth is outside [0, 1], num_digits outside
// [1, 18] or length < PasskeyMinLength(num_digits).
PasskeyExample MakePasskeyExample(int64_t length, double depth, Rng& rng,
                                  int num_digits = kPasskeyDefaultDigits);

// Share of training examples with the key at the very start (depth 0). A
// uniform depth almost never puts it there at long lengths (a prefix under
// 10 bytes has probability ~1% at 1024 tokens), and right after the start
// is where a model fine-tuned to 1024 tokens failed most: 45-55% retrieved
// at depth 0 against 90-100% at the other depths.
inline constexpr double kPasskeyStartShare = 0.1;

// Replaces each row of `batch` with probability `fraction` by a passkey
// example of seq_len + 1 tokens at a random depth (0 with probability
// kPasskeyStartShare, otherwise uniform in [0, 1]; inputs = its first
// seq_len tokens, targets = the last seq_len, with the targets `loss` does
// not score set to kPasskeyIgnoredTarget). Each row's choices are a pure
// function of (seed, its index in the run's stream of rows), where the
// batch's first row has index `first_row`: a resumed run mixes exactly as
// the uninterrupted one, and two micro-batches of 4 rows mix exactly as one
// batch of 8. fraction 0 leaves the batch untouched.
inline constexpr TokenId kPasskeyIgnoredTarget = -100;  // CrossEntropy's
void MixPasskeyExamples(Batch& batch, double fraction, PasskeyLoss loss,
                        uint64_t seed, uint64_t first_row,
                        int num_digits = kPasskeyDefaultDigits);

// The random generator of item `index` (a training row, or an evaluation
// cell) of a stream seeded with `seed`: SplitMix64 of a mix of both, so
// neighbouring items get unrelated streams.
Rng PasskeyItemRng(uint64_t seed, uint64_t index);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_DATA_PASSKEY_H_
