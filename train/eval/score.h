// Scoring a token sequence: the log-probability the model gives each token
// after the tokens before it, so rotor can be checked against another
// implementation of the same model (Hugging Face transformers, llama.cpp)
// token by token. `rotor score` prints it; tests and programs call it.
//
// For ids x_0 .. x_{T-1}, one forward pass over the whole sequence (no
// cache, RoPE set for length T) gives float32 logits z_t = logits(x_0..x_t)
// [T, vocab]; the score of token t >= 1 is
//
//   log p(x_t | x_<t) = z_{t-1}[x_t] - logsumexp(z_{t-1})
//   logsumexp(z) = m + log(sum_j exp(z_j - m)),  m = max_j z_j
//
// in double from the float logits: subtracting the row's maximum first keeps
// every exp in (0, 1] and the sum in [1, vocab], so nothing overflows and the
// log loses no digits. Token 0 has no score (nothing precedes it): it is
// only context, as in HF's `labels = input_ids` loss.
#ifndef ROTOR_TRAIN_EVAL_SCORE_H_
#define ROTOR_TRAIN_EVAL_SCORE_H_

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "nn/transformer.h"
#include "train/tokenizer/tokenizer.h"

namespace rotor::train {

struct TokenScores {
  // log_probs[t] = log p(ids[t] | ids[<t]) in nats; log_probs[0] is NaN.
  std::vector<double> log_probs;
  double sum_log_prob = 0.0;  // over t >= 1 (0 for a single token)
  // -sum_log_prob / (T - 1), the loss HF reports for labels = input_ids;
  // NaN for a single token (nothing is scored).
  double mean_nll = 0.0;
  double perplexity = 0.0;  // exp(mean_nll)
  // The float32 logits [T, vocab] when asked for (keep_logits), else an
  // undefined tensor. Row t scores the token after position t.
  Tensor logits;
};

// Scores `ids` (at least one, each in [0, model vocab_size), at most
// limits::kMaxPositions) as described above, without gradients. Throws
// rotor::Error naming the position of a bad id, or the sizes when the
// logits would not fit in the memory left (core/memory_limit.h).
TokenScores ScoreTokens(nn::Transformer& model, const std::vector<TokenId>& ids,
                        bool keep_logits);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_EVAL_SCORE_H_
