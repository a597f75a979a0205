// Passkey retrieval as an evaluation: Landmark's answer check, the
// retrieval check on logits and on generated ids, the evaluation grid
// against greedy decoding, byte results against the byte-only scoring, and
// the grid in other tokenizers' tokens.
#include "train/eval/passkey_eval.h"

#include <gtest/gtest.h>

#include <string>

#include "core/autograd.h"
#include "tests/test_util.h"
#include "tests/train/data/prompt_tokenizers.h"
#include "tests/train/train_test_util.h"
#include "train/eval/generate.h"
#include "train/tokenizer/byte_tokenizer.h"

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

const ByteTokenizer kBytes;

TEST(PasskeyEval, RetrievedOnlyWhenEveryAnswerDigitIsTheArgmax) {
  Rng rng(5);
  const PasskeyExample example = PasskeyMaker(kBytes, 150).Make(150, 0.5, rng);
  const int64_t vocab = 257;
  std::vector<float> logits(example.tokens.size() * vocab, 0.0f);
  for (int i = 0; i < 5; ++i) {
    const int64_t row = example.answer.first + i - 1;
    logits[row * vocab + example.tokens[row + 1]] = 3.0f;
  }
  EXPECT_TRUE(PasskeyRetrieved(logits.data(), vocab, example));
  EXPECT_EQ(PasskeyDigitsRight(logits.data(), vocab, example, kBytes), 5);
  // A wrong last digit fails the whole key.
  const int64_t last = example.answer.first + 3;
  logits[last * vocab + (example.tokens[last + 1] == '0' ? '1' : '0')] = 5.0f;
  EXPECT_FALSE(PasskeyRetrieved(logits.data(), vocab, example));
  EXPECT_EQ(PasskeyDigitsRight(logits.data(), vocab, example, kBytes), 4);
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
  const std::vector<PasskeyCell> cells =
      EvaluatePasskey(model, kBytes, options);
  ASSERT_EQ(cells.size(), 4u);
  EXPECT_EQ(cells[0].length, 120);
  EXPECT_EQ(cells[1].depth, 1.0);
  EXPECT_EQ(cells[3].length, 160);
  for (const PasskeyCell& cell : cells) EXPECT_EQ(cell.trials, 3);
  // Deterministic and model-independent questions: the same grid twice
  // gives the same counts.
  const std::vector<PasskeyCell> again =
      EvaluatePasskey(model, kBytes, options);
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
    const PasskeyExample example =
        PasskeyMaker(kBytes, 130).Make(130, 0.5, rng);
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
        example.tokens.begin(), example.tokens.begin() + example.answer.first);
    const std::vector<TokenId> generated =
        GenerateTokens(model, ByteTokenizer(), prompt, greedy);
    const std::string answer = ByteTokenizer::Decode(generated);
    EXPECT_EQ(retrieved, answer == example.key) << answer;
  }
}

// No depths: no examples and no cells (the batch size is clamped to the
// examples' count, which must then not be reached).
TEST(PasskeyEval, NoDepthsGiveNoCells) {
  nn::Transformer model(TinyConfig(), 11);
  PasskeyEvalOptions options;
  options.lengths = {120};
  options.depths = {};
  options.trials = 3;
  EXPECT_TRUE(EvaluatePasskey(model, kBytes, options).empty());
}

// Byte results equal the byte-only scoring rotor had before: one batched
// forward per cell, a key retrieved when the argmax predicts each digit.
TEST(PasskeyEval, ByteResultsEqualTheByteOnlyScoring) {
  nn::Transformer model(TinyConfig(), 3);
  PasskeyEvalOptions options;
  options.lengths = {110, 127};
  options.depths = {0.0, 0.5, 1.0};
  options.trials = 4;
  options.num_digits = 2;
  const std::vector<PasskeyCell> cells =
      EvaluatePasskey(model, kBytes, options);
  NoGradGuard no_grad;
  size_t index = 0;
  for (const int64_t length : options.lengths) {
    model.SetSequenceLength(length);
    for (size_t d = 0; d < options.depths.size(); ++d, ++index) {
      Rng rng = PasskeyItemRng(options.seed,
                               static_cast<uint64_t>(length) * 1000 + d);
      int64_t correct = 0, digits_right = 0;
      for (int64_t trial = 0; trial < options.trials; ++trial) {
        const PasskeyExample example =
            PasskeyMaker(kBytes, length + 1)
                .Make(length + 1, options.depths[d], rng, options.num_digits);
        const std::vector<TokenId> inputs(example.tokens.begin(),
                                          example.tokens.end() - 1);
        const Tensor logits = model.Logits(inputs, 1, length);
        int64_t right = 0;
        for (int i = 0; i < options.num_digits; ++i) {
          const int64_t position = example.answer.first + i;
          const float* row = logits.data() + (position - 1) * 257;
          right +=
              std::max_element(row, row + 257) - row == example.tokens[position]
                  ? 1
                  : 0;
        }
        digits_right += right;
        correct += right == options.num_digits ? 1 : 0;
      }
      EXPECT_EQ(cells[index].correct, correct) << index;
      EXPECT_EQ(cells[index].digits_right, digits_right) << index;
    }
  }
}

// A BPE can write the key with other tokens than the prompt's: the
// generated ids are checked by their decoded digits.
TEST(PasskeyEval, GeneratedDigitsCountWhateverTheirTokens) {
  const auto tokenizer = LoadTokenizer(test::Llama3Reference().TokenizerJson());
  const auto ids = [&](const std::vector<std::string>& pieces) {
    std::vector<TokenId> out;
    for (const std::string& piece : pieces) {
      const std::vector<TokenId> piece_ids = EncodeInText(*tokenizer, piece);
      EXPECT_EQ(piece_ids.size(), 1u) << piece;
      out.insert(out.end(), piece_ids.begin(), piece_ids.end());
    }
    return out;
  };
  EXPECT_TRUE(GeneratedAnswerMatches(*tokenizer, ids({"405", "17"}), "40517"));
  EXPECT_TRUE(GeneratedAnswerMatches(*tokenizer, ids({"40", "517"}), "40517"));
  EXPECT_TRUE(
      GeneratedAnswerMatches(*tokenizer, ids({" ", "4", "051", "7"}), "40517"));
  // What comes after the key's digits is past the answer.
  EXPECT_TRUE(
      GeneratedAnswerMatches(*tokenizer, ids({"405", "17", "."}), "40517"));
  // A token that carries the last digit and more makes another number.
  EXPECT_FALSE(
      GeneratedAnswerMatches(*tokenizer, ids({"405", "170"}), "40517"));
  EXPECT_FALSE(GeneratedAnswerMatches(*tokenizer, ids({"405", "."}), "40517"));
  EXPECT_FALSE(GeneratedAnswerMatches(*tokenizer, {}, "40517"));

  // The teacher-forced check fails on logits that predict "40" for "405",
  // while greedy decoding may still write the key as "40" "517".
  Rng rng(2);
  const PasskeyExample example =
      PasskeyMaker(*tokenizer, 200).Make(200, 0.5, rng);
  const int64_t vocab = tokenizer->VocabSize();
  std::vector<float> logits(static_cast<size_t>(example.answer.count) * vocab);
  const int64_t first = example.answer.first;
  // Only the rows that predict the answer's tokens, shifted to row 0.
  PasskeyExample shifted = example;
  shifted.tokens.erase(shifted.tokens.begin(),
                       shifted.tokens.begin() + first - 1);
  shifted.answer.first = 1;
  for (int64_t i = 0; i < example.answer.count; ++i) {
    logits[i * vocab + example.tokens[first + i]] = 1.0f;
  }
  EXPECT_TRUE(PasskeyRetrieved(logits.data(), vocab, shifted));
  EXPECT_EQ(PasskeyDigitsRight(logits.data(), vocab, shifted, *tokenizer), 5);
  logits[example.tokens[first]] = 0.0f;
  logits[ids({"7"})[0]] = 1.0f;
  EXPECT_FALSE(PasskeyRetrieved(logits.data(), vocab, shifted));
  EXPECT_EQ(PasskeyDigitsRight(logits.data(), vocab, shifted, *tokenizer),
            5 - DigitsInToken(*tokenizer, example.tokens[first]));
}

// In other tokenizers' tokens the grid runs on a random model, and a key
// counts as retrieved exactly when greedy decoding writes it.
TEST(PasskeyEval, GridInAnyTokenizerMatchesGreedyDecoding) {
  const test::TempDir dir;
  for (const auto& tokenizer : test::PromptTokenizers(dir)) {
    if (tokenizer->VocabSize() > 40000) continue;  // Llama 3: the CLI test
    SCOPED_TRACE(tokenizer->Name());
    nn::TransformerConfig config = TinyConfig();
    config.vocab_size = tokenizer->VocabSize();
    nn::Transformer model(config, 5);
    PasskeyEvalOptions options;
    options.lengths = {120};
    options.depths = {0.0, 1.0};
    options.trials = 2;
    const std::vector<PasskeyCell> cells =
        EvaluatePasskey(model, *tokenizer, options);
    ASSERT_EQ(cells.size(), 2u);
    const PasskeyMaker maker(*tokenizer, 121);
    for (size_t d = 0; d < 2; ++d) {
      Rng rng = PasskeyItemRng(options.seed, 120 * 1000 + d);
      int64_t greedy_right = 0;
      for (int64_t trial = 0; trial < options.trials; ++trial) {
        const PasskeyExample example =
            maker.Make(121, options.depths[d], rng, options.num_digits);
        greedy_right += GreedyAnswerMatches(model, *tokenizer, example) ? 1 : 0;
      }
      EXPECT_EQ(cells[d].correct, greedy_right);
      EXPECT_LE(cells[d].digits_right, 10);
    }
  }
}

}  // namespace
}  // namespace rotor::train
