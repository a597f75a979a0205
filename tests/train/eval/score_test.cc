// Scoring a token sequence (train/eval/score.h): each log-probability equals
// log(softmax) of the model's logits computed directly in double, the sum,
// mean and perplexity follow from them, the logits are kept when asked for,
// and bad ids are errors naming their position.
#include "train/eval/score.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/autograd.h"
#include "core/limits.h"
#include "tests/test_util.h"
#include "tests/train/train_test_util.h"

namespace rotor::train {
namespace {

constexpr int64_t kVocab = 257;

nn::TransformerConfig TinyConfig() {
  nn::TransformerConfig config = test::TinyTransformerConfig(64);
  config.initializer_range = 0.3;  // logits far from uniform
  return config;
}

// log p(ids[t] | ids[<t]) straight from the definition, exp and sum in
// double without the max shift (the logits are small, so nothing
// overflows): an independent check of ScoreTokens's careful form.
std::vector<double> DirectLogProbs(nn::Transformer& model,
                                   const std::vector<TokenId>& ids) {
  NoGradGuard no_grad;
  const int64_t length = static_cast<int64_t>(ids.size());
  model.SetSequenceLength(length);
  const Tensor logits = model.Logits(ids, 1, length);
  std::vector<double> log_probs(length, std::nan(""));
  for (int64_t t = 1; t < length; ++t) {
    const float* row = logits.data() + (t - 1) * kVocab;
    double sum = 0.0;
    for (int64_t j = 0; j < kVocab; ++j) sum += std::exp(double{row[j]});
    log_probs[t] = std::log(std::exp(double{row[ids[t]]}) / sum);
  }
  return log_probs;
}

TEST(ScoreTokens, LogProbsAreTheLogSoftmaxOfTheLogits) {
  nn::Transformer model(TinyConfig(), 3);
  const std::vector<TokenId> ids = {256, 'T', 'h', 'e', ' ', 'c', 'a',
                                    't', '.', 0,   255, 256, 'a'};
  const TokenScores scores = ScoreTokens(model, ids, /*keep_logits=*/false);
  const std::vector<double> direct = DirectLogProbs(model, ids);
  ASSERT_EQ(scores.log_probs.size(), ids.size());
  EXPECT_TRUE(std::isnan(scores.log_probs[0]));
  double sum = 0.0;
  for (size_t t = 1; t < ids.size(); ++t) {
    EXPECT_NEAR(scores.log_probs[t], direct[t], 1e-12) << "token " << t;
    EXPECT_LT(scores.log_probs[t], 0.0);
    sum += direct[t];
  }
  EXPECT_NEAR(scores.sum_log_prob, sum, 1e-11);
  const double mean_nll = -sum / static_cast<double>(ids.size() - 1);
  EXPECT_NEAR(scores.mean_nll, mean_nll, 1e-12);
  EXPECT_NEAR(scores.perplexity, std::exp(mean_nll), 1e-9);
  EXPECT_FALSE(scores.logits.defined());
}

// The loss the model trains on is the same mean, in float.
TEST(ScoreTokens, MeanNllIsTheModelsLoss) {
  nn::Transformer model(TinyConfig(), 3);
  const std::vector<TokenId> ids = {256, 'a', 'b', 'c', 'a', 'b', 'c', 'd'};
  const TokenScores scores = ScoreTokens(model, ids, false);
  NoGradGuard no_grad;
  const std::vector<TokenId> inputs(ids.begin(), ids.end() - 1);
  const std::vector<TokenId> targets(ids.begin() + 1, ids.end());
  const int64_t n = static_cast<int64_t>(inputs.size());
  EXPECT_NEAR(scores.mean_nll, model.Loss(inputs, targets, 1, n).item(), 1e-5);
}

TEST(ScoreTokens, KeepsTheLogitsWhenAsked) {
  nn::Transformer model(TinyConfig(), 3);
  const std::vector<TokenId> ids = {256, 'x', 'y'};
  const TokenScores scores = ScoreTokens(model, ids, /*keep_logits=*/true);
  ASSERT_TRUE(scores.logits.defined());
  EXPECT_EQ(scores.logits.shape(), (std::vector<int64_t>{3, kVocab}));
  NoGradGuard no_grad;
  const Tensor logits = model.Logits(ids, 1, 3);
  for (int64_t i = 0; i < 3 * kVocab; ++i) {
    ASSERT_EQ(scores.logits.data()[i], logits.data()[i]) << "element " << i;
  }
}

// A single token is only context: nothing is scored.
TEST(ScoreTokens, OneTokenScoresNothing) {
  nn::Transformer model(TinyConfig(), 3);
  const TokenScores scores = ScoreTokens(model, {256}, true);
  ASSERT_EQ(scores.log_probs.size(), 1u);
  EXPECT_EQ(scores.sum_log_prob, 0.0);
  EXPECT_TRUE(std::isnan(scores.mean_nll));
  EXPECT_EQ(scores.logits.shape(), (std::vector<int64_t>{1, kVocab}));
}

TEST(ScoreTokens, BadIdsAreErrorsNamingTheirPosition) {
  nn::Transformer model(TinyConfig(), 3);
  ROTOR_EXPECT_ERROR(ScoreTokens(model, {}, false), "score: no tokens");
  ROTOR_EXPECT_ERROR(ScoreTokens(model, {256, 'a', 257}, false),
                     "score: token 2 is 257, outside the model's vocabulary "
                     "[0, 257)");
  ROTOR_EXPECT_ERROR(ScoreTokens(model, {-1}, false), "token 0 is -1");
  ROTOR_EXPECT_ERROR(
      ScoreTokens(model, std::vector<TokenId>(limits::kMaxPositions + 1, 0),
                  false),
      "16777217 tokens exceed rotor's limit of 16777216 positions");
}

}  // namespace
}  // namespace rotor::train
