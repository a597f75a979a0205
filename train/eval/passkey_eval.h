// Passkey retrieval as an evaluation (the examples: train/data/passkey.h),
// in any tokenizer's tokens: accuracy over a grid of context lengths x
// depths. An example of L + 1 tokens gives L inputs; it counts as retrieved
// when greedy decoding writes the key: the first run of digits of the
// decoded continuation is the key (PasskeyAnswerMatches).
//
// That is computed exactly and mostly in batched forward passes: when the
// argmax of the logits predicts every answer token, given the true tokens
// before it, greedy decoding writes exactly those tokens (by induction), so
// the key is retrieved. Otherwise a BPE model may still write the digits
// with other tokens ("4", "0517" for "405", "17"), so the example is
// decoded greedily from its prompt: on from the KV cache the teacher-forced
// pass filled, rewound to the prompt's end (DecodeFromCache), so no prompt
// runs twice. With the byte tokenizer a digit is a token, so the fallback
// could only agree and is skipped. Digit accuracy
// (partial credit) counts the digits carried by the answer tokens whose
// teacher-forced argmax is right.
#ifndef ROTOR_TRAIN_EVAL_PASSKEY_EVAL_H_
#define ROTOR_TRAIN_EVAL_PASSKEY_EVAL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/fields.h"
#include "core/limits.h"
#include "nn/transformer.h"
#include "train/data/passkey.h"
#include "train/tokenizer/tokenizer.h"

namespace rotor::train {

// Landmark's answer check for generated text: the first run of digits in
// `generated` must equal `key` exactly ("40517." and " 40517 is" match,
// "4051", "405170" and "no idea" do not).
bool PasskeyAnswerMatches(const std::string& generated, const std::string& key);

// How many of an example's answer digits the logits of its inputs from
// position first_row on get right (row r predicting token first_row + r +
// 1; rows up to the one of position answer.first + answer.count - 2, and
// first_row <= answer.first - 1, checked): the digits of each answer token
// that is the argmax (given the true tokens before it). The key is
// retrieved when all are.
int64_t PasskeyDigitsRight(const float* logits, int64_t vocab,
                           const PasskeyExample& example,
                           const Tokenizer& tokenizer, int64_t first_row = 0);
bool PasskeyRetrieved(const float* logits, int64_t vocab,
                      const PasskeyExample& example, int64_t first_row = 0);

// Whether generated ids write the key: cut after the token that completes
// as many digits as the key has (what follows is past the answer, as for
// the teacher-forced check), decoded, then PasskeyAnswerMatches.
bool GeneratedAnswerMatches(const Tokenizer& tokenizer,
                            std::vector<TokenId> generated,
                            const std::string& key);

// Whether greedy decoding from each example's prompt (its tokens before the
// answer) writes the key: num_digits + 1 new tokens at most (a space, then
// at least one digit a token), checked by GeneratedAnswerMatches. The
// prompts of one length decode as a batch (GenerateTokensInBatches).
// Leaves the model's sequence length at a prompt's plus the new tokens.
std::vector<bool> GreedyAnswersMatch(
    nn::Transformer& model, const Tokenizer& tokenizer,
    const std::vector<PasskeyExample>& examples);
// The same for one example, alone: what the tests compare a grid with.
bool GreedyAnswerMatches(nn::Transformer& model, const Tokenizer& tokenizer,
                         const PasskeyExample& example);

// Accuracy over a grid of context lengths x depths.
struct PasskeyEvalOptions {
  std::vector<int64_t> lengths;  // input tokens per example (L)
  std::vector<double> depths = {0.0, 0.25, 0.5, 0.75, 1.0};
  int64_t trials = 10;  // examples per (length, depth)
  uint64_t seed = 1;    // the same keys for every model
  int num_digits = kPasskeyDefaultDigits;
  // The token stream filler is cut from (e.g. TokenFileFiller of the data's
  // val.bin, at least max(lengths) + 1 tokens); empty: the Landmark passage.
  std::vector<TokenId> filler;
};

struct PasskeyCell {
  int64_t length = 0;
  double depth = 0.0;
  int64_t correct = 0;       // examples whose whole key was retrieved
  int64_t digits_right = 0;  // answer digits right, over all examples
  int64_t trials = 0;
  int num_digits = kPasskeyDefaultDigits;
  double accuracy() const {
    return trials > 0 ? static_cast<double>(correct) / trials : 0.0;
  }
  // Partial credit: chance level is 10%. Shows progress before whole keys
  // are retrieved.
  double digit_accuracy() const {
    return trials > 0 ? static_cast<double>(digits_right) /
                            static_cast<double>(trials * num_digits)
                      : 0.0;
  }
};

// Its JSON keys (train/io/json.h, RecordJson): the report's results files
// store the counts, rotor eval --json shows the accuracies.
template <typename Visitor>
void VisitFields(Visitor& v, PasskeyCell& c) {
  v(Key{"length", "context length L: the input tokens of each example"},
    c.length, field::Int{1, limits::kMaxPositions});
  v(Key{"depth", "where the key sits in the filler (0 = start, 1 = end)"},
    c.depth, field::Real{0.0, 1.0});
  v(Key{"trials", "examples"}, c.trials, field::Int{1, limits::kMaxEvalTrials},
    StoredLast{});
  v(Key{"correct", "examples whose whole key was retrieved"}, c.correct,
    field::Int{0, limits::kMaxEvalTrials});
  v(Key{"digits_right", "answer digits right, over all examples"},
    c.digits_right, field::Int{0}, StoredOnly{});
  v(Key{"num_digits", "digits of each key"}, c.num_digits,
    field::Int{1, kPasskeyMaxDigits}, StoredOnly{});
  v(Key{"accuracy", "correct / trials"}, c.accuracy(), field::Real{0.0, 1.0},
    ShownOnly{});
  v(Key{"digit_accuracy",
        "digits_right / (trials x num_digits); chance is 10%"},
    c.digit_accuracy(), field::Real{0.0, 1.0}, ShownOnly{});
}

// One cell per (length, depth), lengths outer, with examples in
// `tokenizer`'s tokens (the model's). The examples of one length (every
// depth) whose answers take as many tokens (so share the prompt length P =
// L + 1 - answer tokens) run teacher-forced in batches of at most
// kMaxBatchPromptTokens input tokens with the RoPE frequencies fixed for
// length L (Transformer::SetSequenceLength), through one KV cache, the
// output head on the answer's rows only (Transformer::LastLogits). When
// they take more than one batch, the filler they share before their keys
// runs once (train/eval/shared_prefix.h: logits to rounding). A batch with
// a
// miss then rewinds the cache to P and decodes greedily from there, the
// first new token the argmax of the logits at P - 1 (DecodeFromCache: the
// ids GreedyAnswersMatch gives, to rounding, without prefilling the prompt
// again). Where
// greedy decoding of the prompt alone would rotate with other frequencies
// (dynamic NTK or LongRoPE, whose frequencies at P + new tokens differ from
// those at L), the misses decode as GreedyAnswersMatch instead. Examples
// depend only on the options and the tokenizer, not on the model, so
// different models with one tokenizer answer the same questions.
std::vector<PasskeyCell> EvaluatePasskey(nn::Transformer& model,
                                         const Tokenizer& tokenizer,
                                         const PasskeyEvalOptions& options);

// The mean accuracy (whole keys) and digit accuracy over the cells of one
// length.
double PasskeyAccuracyAt(const std::vector<PasskeyCell>& cells, int64_t length);
double PasskeyDigitAccuracyAt(const std::vector<PasskeyCell>& cells,
                              int64_t length);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_EVAL_PASSKEY_EVAL_H_
