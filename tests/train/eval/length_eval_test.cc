// Perplexity against context length: the documents chosen, the same
// documents at every length (checked against direct loss computations on a
// tiny model), the sliding-window bookkeeping, RoPE frequencies fixed per
// window length (dynamic NTK), and errors.
#include "train/eval/length_eval.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/autograd.h"
#include "tests/temp_dir.h"
#include "tests/test_util.h"
#include "tests/train/train_test_util.h"

namespace rotor::train {
namespace {

// Documents of the given lengths (each preceded by <|endoftext|>), token
// values derived from the document and position.
std::string WriteDocuments(const test::TempDir& dir,
                           const std::vector<int>& lengths) {
  std::vector<TokenId> tokens;
  for (size_t d = 0; d < lengths.size(); ++d) {
    tokens.push_back(ByteTokenizer::kEndOfText);
    for (int t = 0; t < lengths[d]; ++t) {
      tokens.push_back(static_cast<TokenId>(32 + (d * 7 + t * 13) % 90));
    }
  }
  const std::string path = dir.Path("val.bin");
  WriteTokenFile(path, tokens,
                 {257, lengths.size(), ByteTokenizer::kEndOfText,
                  tokens.size() - lengths.size()});
  return path;
}

nn::TransformerConfig TinyConfig(RopeType type = RopeType::kDefault) {
  return test::TinyTransformerConfig(/*max_position_embeddings=*/16, type);
}

// Mean loss of predicting document[t + 1] from document[0 .. t] for t in
// [first, last), with the model seeing the window [start, start + length).
double WindowLossSum(nn::Transformer& model, const std::vector<TokenId>& doc,
                     int64_t start, int64_t length, int64_t first_scored) {
  NoGradGuard no_grad;
  model.SetSequenceLength(length);
  std::vector<int32_t> inputs(doc.begin() + start,
                              doc.begin() + start + length);
  std::vector<int32_t> targets(doc.begin() + start + 1,
                               doc.begin() + start + length + 1);
  for (int64_t t = 0; t < first_scored; ++t) targets[t] = -100;
  const double mean = model.Loss(inputs, targets, 1, length).item();
  return mean * static_cast<double>(length - first_scored);
}

TEST(LongDocuments, TakesTheFirstLongEnoughDocumentsCut) {
  test::TempDir dir;
  const TokenFile val(WriteDocuments(dir, {10, 40, 5, 50, 60}));
  const auto documents = LongDocuments(val, 33, 2);
  ASSERT_EQ(documents.size(), 2u);
  for (const auto& document : documents) {
    ASSERT_EQ(document.size(), 33u);
    EXPECT_EQ(document[0], ByteTokenizer::kEndOfText);
  }
  // Documents 1 and 3 (lengths 40 and 50), not 0 or 2.
  EXPECT_EQ(documents[0][1], 32 + 7 % 90);
  EXPECT_EQ(documents[1][1], 32 + 21 % 90);
  ROTOR_EXPECT_ERROR(LongDocuments(val, 55, 2), "only 1 documents", "55 tokens",
                     "2 are needed");
}

TEST(PerplexityByLength, TruncateScoresTheSameDocumentsAtEveryLength) {
  test::TempDir dir;
  const TokenFile val(WriteDocuments(dir, {70, 20, 80, 90}));
  nn::Transformer model(TinyConfig(), 3);
  LengthEvalOptions options;
  options.lengths = {8, 32, 64};
  options.num_documents = 3;
  const auto results = PerplexityByLength(model, val, options);
  ASSERT_EQ(results.size(), 3u);
  const auto documents = LongDocuments(val, 65, 3);
  for (const LengthPerplexity& r : results) {
    double expected = 0.0;
    for (const auto& document : documents) {
      expected += WindowLossSum(model, document, 0, r.length, 0);
    }
    EXPECT_EQ(r.tokens, 3 * r.length);
    EXPECT_NEAR(r.loss, expected / r.tokens, 1e-5) << r.length;
    EXPECT_NEAR(r.perplexity, std::exp(r.loss), 1e-9);
  }
}

TEST(PerplexityByLength, SlidingScoresEveryTargetOnceWithTheRightContext) {
  test::TempDir dir;
  const TokenFile val(WriteDocuments(dir, {40, 45}));
  nn::Transformer model(TinyConfig(), 4);
  LengthEvalOptions options;
  options.lengths = {8, 12, 20};
  options.num_documents = 2;
  options.method = LengthEvalMethod::kSliding;
  options.stride = 4;
  const auto results = PerplexityByLength(model, val, options);
  const auto documents = LongDocuments(val, 21, 2);
  for (const LengthPerplexity& r : results) {
    EXPECT_EQ(r.tokens, 2 * 20) << r.length;  // every length: 20 targets/doc
  }
  // Length 8, stride 4 over 20 targets: windows at 0 (all 8), 4 (last 4),
  // 8 (last 4), 12 (last 4); length 12: windows at 0 (12), 4 (last 4), 8
  // (last 4, aligned to the end); length 20: one window.
  const std::vector<std::vector<std::pair<int64_t, int64_t>>> windows = {
      {{0, 0}, {4, 4}, {8, 4}, {12, 4}}, {{0, 0}, {4, 8}, {8, 8}}, {{0, 0}}};
  for (size_t i = 0; i < results.size(); ++i) {
    double expected = 0.0;
    for (const auto& document : documents) {
      for (auto [start, first] : windows[i]) {
        expected +=
            WindowLossSum(model, document, start, options.lengths[i], first);
      }
    }
    EXPECT_NEAR(results[i].loss, expected / 40, 1e-5) << options.lengths[i];
  }
  // At the longest length the two methods agree.
  options.method = LengthEvalMethod::kTruncate;
  EXPECT_NEAR(PerplexityByLength(model, val, options)[2].loss, results[2].loss,
              1e-6);
}

TEST(PerplexityByLength, DynamicRopeFollowsTheWindowLength) {
  // Dynamic NTK is unscaled up to L0 = 16 and rescaled beyond it: the same
  // weights give the default model's numbers at 8 and 16 and different
  // ones at 32.
  test::TempDir dir;
  const TokenFile val(WriteDocuments(dir, {40, 40}));
  // Large initial weights make attention sharp, so positions matter.
  nn::TransformerConfig plain_config = TinyConfig();
  nn::TransformerConfig dynamic_config = TinyConfig(RopeType::kDynamic);
  plain_config.initializer_range = dynamic_config.initializer_range = 1.0;
  nn::Transformer plain(plain_config, 5);
  nn::Transformer dynamic(dynamic_config, 5);
  LengthEvalOptions options;
  options.lengths = {8, 16, 32};
  options.num_documents = 2;
  const auto a = PerplexityByLength(plain, val, options);
  const auto b = PerplexityByLength(dynamic, val, options);
  EXPECT_NEAR(a[0].loss, b[0].loss, 1e-6);
  EXPECT_NEAR(a[1].loss, b[1].loss, 1e-6);
  EXPECT_GT(std::abs(a[2].loss - b[2].loss), 1e-3);
  // At 32 it is exactly the model with its frequencies set for 32 tokens.
  const auto documents = LongDocuments(val, 33, 2);
  double expected = 0.0;
  for (const auto& document : documents) {
    expected += WindowLossSum(dynamic, document, 0, 32, 0);
  }
  EXPECT_NEAR(b[2].loss, expected / 64, 1e-5);
}

TEST(PerplexityByLength, Errors) {
  test::TempDir dir;
  const TokenFile val(WriteDocuments(dir, {40, 40}));
  nn::Transformer model(TinyConfig(), 6);
  LengthEvalOptions options;
  options.lengths = {8, 16};
  options.num_documents = 2;
  options.method = LengthEvalMethod::kSliding;
  options.stride = 9;
  ROTOR_EXPECT_ERROR(PerplexityByLength(model, val, options), "stride",
                     "[1, 8]", "9");
  options.lengths = {};
  ROTOR_EXPECT_ERROR(PerplexityByLength(model, val, options), "no lengths");
  ROTOR_EXPECT_ERROR(LengthEvalMethodFromName("last"), "'last'",
                     "truncate or sliding");
}

}  // namespace
}  // namespace rotor::train
