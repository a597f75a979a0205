// Passkey retrieval as an evaluation: Landmark's answer check, the
// retrieval check on logits and the evaluation grid against greedy decoding.
#include "train/eval/passkey_eval.h"

#include <gtest/gtest.h>

#include <string>

#include "core/autograd.h"
#include "tests/test_util.h"
#include "train/tokenizer/byte_tokenizer.h"
#include "tests/train/train_test_util.h"
#include "train/eval/generate.h"

namespace rotor::train {
namespace {

TEST(PasskeyEval, AnswerCheckTakesTheFirstRunOfDigits) {
  EXPECT_TRUE(PasskeyAnswerMatches("40517", "40517"));
  EXPECT_TRUE(PasskeyAnswerMatches(" 40517. Remember", "40517"));
  EXPECT_TRUE(PasskeyAnswerMatches("is 40517 is the 123", "40517"));
  EXPECT_FALSE(PasskeyAnswerMatches("4051", "40517"));
  EXPECT_FALSE(PasskeyAnswerMatches("405170", "40517"));
  EXPECT_FALSE(PasskeyAnswerMatches("no idea", "40517"));
  EXPECT_FALSE(PasskeyAnswerMatches("12 40517", "40517"));
  EXPECT_TRUE(PasskeyAnswerMatches("00042", "00042"));
}

TEST(PasskeyEval, RetrievedOnlyWhenEveryAnswerDigitIsTheArgmax) {
  Rng rng(5);
  const PasskeyExample example = MakePasskeyExample(150, 0.5, rng);
  const int64_t vocab = 257;
  std::vector<float> logits(example.tokens.size() * vocab, 0.0f);
  for (int i = 0; i < 5; ++i) {
    const int64_t row = example.answer_start + i - 1;
    logits[row * vocab + example.tokens[row + 1]] = 3.0f;
  }
  EXPECT_TRUE(PasskeyRetrieved(logits.data(), vocab, example));
  EXPECT_EQ(PasskeyDigitsRight(logits.data(), vocab, example), 5);
  // A wrong last digit fails the whole key.
  const int64_t last = example.answer_start + 3;
  logits[last * vocab + (example.tokens[last + 1] == '0' ? '1' : '0')] = 5.0f;
  EXPECT_FALSE(PasskeyRetrieved(logits.data(), vocab, example));
  EXPECT_EQ(PasskeyDigitsRight(logits.data(), vocab, example), 4);
}

nn::TransformerConfig TinyConfig() {
  return test::TinyTransformerConfig(/*max_position_embeddings=*/128);
}

TEST(PasskeyEval, GridMatchesGreedyDecodingOfTheSameExamples) {
  nn::Transformer model(TinyConfig(), 11);
  PasskeyEvalOptions options;
  options.lengths = {120, 160};
  options.depths = {0.0, 1.0};
  options.trials = 3;
  const std::vector<PasskeyCell> cells = EvaluatePasskey(model, options);
  ASSERT_EQ(cells.size(), 4u);
  EXPECT_EQ(cells[0].length, 120);
  EXPECT_EQ(cells[1].depth, 1.0);
  EXPECT_EQ(cells[3].length, 160);
  for (const PasskeyCell& cell : cells) EXPECT_EQ(cell.trials, 3);
  // Deterministic and model-independent questions: the same grid twice
  // gives the same counts.
  const std::vector<PasskeyCell> again = EvaluatePasskey(model, options);
  for (size_t i = 0; i < cells.size(); ++i) {
    EXPECT_EQ(cells[i].correct, again[i].correct);
  }
  EXPECT_DOUBLE_EQ(PasskeyAccuracyAt(cells, 120),
                   (cells[0].correct + cells[1].correct) / 6.0);
  EXPECT_DOUBLE_EQ(PasskeyDigitAccuracyAt(cells, 160),
                   (cells[2].digits_right + cells[3].digits_right) / 30.0);
  for (const PasskeyCell& cell : cells) {
    EXPECT_GE(cell.digits_right, 5 * cell.correct);
    EXPECT_LE(cell.digits_right, 5 * cell.trials);
  }
  ROTOR_EXPECT_ERROR(PasskeyAccuracyAt(cells, 999), "999");

  // The teacher-forced check equals greedy decoding: for each example,
  // PasskeyRetrieved on the full-sequence logits agrees with generating 5
  // tokens greedily from the prompt and checking them with the Landmark
  // parser.
  Rng rng(8);
  for (int i = 0; i < 4; ++i) {
    const PasskeyExample example = MakePasskeyExample(130, 0.5, rng);
    model.SetSequenceLength(129);
    const std::vector<TokenId> inputs(example.tokens.begin(),
                                      example.tokens.end() - 1);
    bool retrieved;
    {
      NoGradGuard no_grad;
      const Tensor logits = model.Logits(inputs, 1, 129);
      retrieved = PasskeyRetrieved(logits.data(), 257, example);
    }
    SamplingOptions greedy;
    greedy.temperature = 0.0;
    greedy.max_new_tokens = 5;
    greedy.stop_at_end_of_text = false;
    const std::vector<TokenId> prompt(
        example.tokens.begin(), example.tokens.begin() + example.answer_start);
    const std::vector<TokenId> generated =
        GenerateTokens(model, ByteTokenizer(), prompt, greedy);
    const std::string answer = ByteTokenizer::Decode(generated);
    EXPECT_EQ(retrieved, answer == example.key) << answer;
  }
}

}  // namespace
}  // namespace rotor::train
