#include "train/eval/score.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/autograd.h"
#include "core/error.h"
#include "core/limits.h"
#include "core/memory_limit.h"
#include "core/parallel.h"

namespace rotor::train {

namespace {

// log p(target) under the softmax of `row` ([vocab] floats), in double.
double LogSoftmaxAt(const float* row, int64_t vocab, TokenId target) {
  const double max = *std::max_element(row, row + vocab);
  double sum = 0.0;
  for (int64_t j = 0; j < vocab; ++j) sum += std::exp(row[j] - max);
  return (row[target] - max) - std::log(sum);
}

}  // namespace

TokenScores ScoreTokens(nn::Transformer& model, const std::vector<TokenId>& ids,
                        bool keep_logits) {
  const int64_t length = static_cast<int64_t>(ids.size());
  const int64_t vocab = model.config().vocab_size;
  ROTOR_CHECK(length > 0, "score: no tokens to score");
  ROTOR_CHECK(length <= limits::kMaxPositions, "score: ", length,
              " tokens exceed rotor's limit of ", limits::kMaxPositions,
              " positions");
  for (int64_t t = 0; t < length; ++t) {
    ROTOR_CHECK(ids[t] >= 0 && ids[t] < vocab, "score: token ", t, " is ",
                ids[t], ", outside the model's vocabulary [0, ", vocab, ")");
  }
  // The logits are the largest tensor of the forward pass: refuse now what
  // cannot fit (the layers' activations, freed as the pass goes, add a few
  // times T x (hidden + intermediate) floats).
  const double logits_bytes = static_cast<double>(sizeof(float)) *
                              static_cast<double>(length) *
                              static_cast<double>(vocab);
  const MemoryLimit limit = UsableMemory();
  ROTOR_CHECK(logits_bytes <= static_cast<double>(limit.bytes),
              "score: the logits of ", length, " tokens x ", vocab,
              " ids need ", FormatBytes(logits_bytes), ", more than the ",
              FormatBytes(limit.bytes), " left under ", limit.source);

  NoGradGuard no_grad;
  model.SetSequenceLength(length);
  Tensor logits = model.Logits(ids, 1, length);
  const float* rows = logits.data();

  TokenScores scores;
  scores.log_probs.assign(length, std::numeric_limits<double>::quiet_NaN());
  // Rows are independent: each thread fills its own entries, so this step
  // gives the same bits at any thread count.
  ParallelFor(length - 1, std::max<int64_t>(1, 65536 / vocab),
              [&](int64_t begin, int64_t end) {
                for (int64_t t = begin; t < end; ++t) {
                  scores.log_probs[t + 1] =
                      LogSoftmaxAt(rows + t * vocab, vocab, ids[t + 1]);
                }
              });
  for (int64_t t = 1; t < length; ++t) {
    scores.sum_log_prob += scores.log_probs[t];
  }
  scores.mean_nll = length > 1
                        ? -scores.sum_log_prob / static_cast<double>(length - 1)
                        : std::numeric_limits<double>::quiet_NaN();
  scores.perplexity = std::exp(scores.mean_nll);
  if (keep_logits) scores.logits = logits;
  return scores;
}

}  // namespace rotor::train
