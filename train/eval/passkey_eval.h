// Passkey retrieval as an evaluation (the examples: train/data/passkey.h):
// accuracy over a grid of context lengths x depths. An example of L + 1
// tokens gives L inputs; it counts as retrieved when the argmax of the
// logits predicts every answer digit, given the true digits before it. That
// is exactly "greedy decoding writes the key" (by induction over the
// digits), computed in one forward pass for a whole batch of examples.
#ifndef ROTOR_TRAIN_EVAL_PASSKEY_EVAL_H_
#define ROTOR_TRAIN_EVAL_PASSKEY_EVAL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "nn/transformer.h"
#include "train/data/passkey.h"

namespace rotor::train {

// Landmark's answer check for generated text: the first run of digits in
// `generated` must equal `key` exactly ("40517." and " 40517 is" match,
// "4051", "405170" and "no idea" do not).
bool PasskeyAnswerMatches(const std::string& generated, const std::string& key);

// How many of an example's answer digits the logits of its inputs
// ([rows >= answer_start + num_digits - 1, vocab], row t predicting token
// t + 1) get right: the argmax at answer position i is the key's digit i
// (given the true digits before it). The key is retrieved when all are.
int64_t PasskeyDigitsRight(const float* logits, int64_t vocab,
                           const PasskeyExample& example);
bool PasskeyRetrieved(const float* logits, int64_t vocab,
                      const PasskeyExample& example);

// Accuracy over a grid of context lengths x depths.
struct PasskeyEvalOptions {
  std::vector<int64_t> lengths;  // input tokens per example (L)
  std::vector<double> depths = {0.0, 0.25, 0.5, 0.75, 1.0};
  int64_t trials = 10;  // examples per (length, depth)
  uint64_t seed = 1;    // the same keys for every model
  int num_digits = kPasskeyDefaultDigits;
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

// One cell per (length, depth), lengths outer. Each cell runs its trials as
// one batch with the RoPE frequencies fixed for length L
// (Transformer::SetSequenceLength). Examples depend only on the options, not
// on the model, so different models answer the same questions.
std::vector<PasskeyCell> EvaluatePasskey(nn::Transformer& model,
                                         const PasskeyEvalOptions& options);

// The mean accuracy (whole keys) and digit accuracy over the cells of one
// length.
double PasskeyAccuracyAt(const std::vector<PasskeyCell>& cells, int64_t length);
double PasskeyDigitAccuracyAt(const std::vector<PasskeyCell>& cells,
                              int64_t length);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_EVAL_PASSKEY_EVAL_H_
