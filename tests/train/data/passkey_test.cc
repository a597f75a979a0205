// The passkey generator (format, exact length, depth placement,
// determinism) and the training mix (share, resumable choices, shifted
// targets).
#include "train/data/passkey.h"

#include <gtest/gtest.h>

#include <string>

#include "core/autograd.h"
#include "tests/temp_dir.h"
#include "tests/test_util.h"

namespace rotor::train {
namespace {

std::string Text(const std::vector<TokenId>& tokens, size_t from = 0) {
  return ByteTokenizer::Decode(
      std::vector<TokenId>(tokens.begin() + from, tokens.end()));
}

std::string KeyLine(const std::string& key) {
  return "The pass key is " + key + ". Remember it. " + key +
         " is the pass key.";
}

TEST(Passkey, ExampleHasTheLandmarkLayoutAndExactLength) {
  Rng rng(7);
  for (int64_t length : {PasskeyMinLength(), int64_t{200}, int64_t{1025}}) {
    const PasskeyExample example = MakePasskeyExample(length, 0.5, rng);
    ASSERT_EQ(static_cast<int64_t>(example.tokens.size()), length);
    EXPECT_EQ(example.tokens[0], ByteTokenizer::kEndOfText);
    ASSERT_EQ(example.key.size(), 5u);
    for (char c : example.key) EXPECT_TRUE(c >= '0' && c <= '9') << c;
    const std::string text = Text(example.tokens, 1);
    // prefix \n key line \n suffix \n question answer
    const std::string tail =
        "\nWhat is the pass key? The pass key is " + example.key;
    ASSERT_GE(text.size(), tail.size());
    EXPECT_EQ(text.substr(text.size() - tail.size()), tail);
    EXPECT_EQ(Text(example.tokens, example.key_position)
                  .substr(0, KeyLine(example.key).size() + 1),
              KeyLine(example.key) + "\n");
    EXPECT_EQ(example.tokens[example.key_position - 1], '\n');
    EXPECT_EQ(example.answer_start, length - 5);
    // The filler is the Landmark sentence, cut by characters.
    const std::string filler(kPasskeyFiller);
    const std::string prefix = text.substr(0, example.key_position - 2);
    EXPECT_EQ(prefix, (filler + filler + filler + filler + filler + filler +
                       filler + filler + filler + filler)
                          .substr(0, prefix.size()));
  }
}

TEST(Passkey, DepthPlacesTheKeyFromStartToJustBeforeTheQuestion) {
  const int64_t length = 600;
  const int64_t filler = length - PasskeyMinLength();
  Rng rng(1);
  const PasskeyExample start = MakePasskeyExample(length, 0.0, rng);
  EXPECT_EQ(start.key_position, 2);  // BOS, "\n", then the key line
  const PasskeyExample end = MakePasskeyExample(length, 1.0, rng);
  // Nothing between the key line and the question but two newlines.
  const std::string after_key =
      Text(end.tokens, end.key_position + KeyLine(end.key).size());
  EXPECT_EQ(after_key.substr(0, 24), "\n\nWhat is the pass key? ");
  EXPECT_EQ(end.key_position, 2 + filler);
  int64_t previous = -1;
  for (double depth : {0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0}) {
    const PasskeyExample example = MakePasskeyExample(length, depth, rng);
    EXPECT_EQ(example.key_position,
              2 + static_cast<int64_t>(std::llround(depth * filler)))
        << depth;
    EXPECT_GT(example.key_position, previous);
    previous = example.key_position;
  }
}

TEST(Passkey, SameGeneratorStateSameExample) {
  Rng a(99), b(99), c(100);
  const PasskeyExample x = MakePasskeyExample(300, 0.3, a);
  const PasskeyExample y = MakePasskeyExample(300, 0.3, b);
  EXPECT_EQ(x.tokens, y.tokens);
  EXPECT_EQ(x.key, y.key);
  // Another seed draws other keys (5 digits: a collision in all of 5 draws
  // would be a broken generator).
  bool any_different = false;
  for (int i = 0; i < 5; ++i) {
    any_different |= MakePasskeyExample(300, 0.3, a).key !=
                     MakePasskeyExample(300, 0.3, c).key;
  }
  EXPECT_TRUE(any_different);
}

TEST(Passkey, DigitCountAndErrors) {
  Rng rng(3);
  const PasskeyExample three = MakePasskeyExample(150, 0.5, rng, 3);
  EXPECT_EQ(three.key.size(), 3u);
  EXPECT_EQ(PasskeyMinLength(3), PasskeyMinLength(5) - 6);  // key 3 times
  ROTOR_EXPECT_ERROR(MakePasskeyExample(PasskeyMinLength() - 1, 0.5, rng),
                     "at least", std::to_string(PasskeyMinLength()));
  ROTOR_EXPECT_ERROR(MakePasskeyExample(300, 1.5, rng), "depth", "[0, 1]",
                     "1.5");
  ROTOR_EXPECT_ERROR(MakePasskeyExample(300, 0.5, rng, 0), "num_digits");
}

TEST(PasskeyMix, ReplacesTheRequestedShareDeterministically) {
  const int64_t rows = 8, seq = 160;
  auto text_batch = [&] {
    Batch batch;
    batch.batch_size = rows;
    batch.seq_len = seq;
    batch.inputs.assign(rows * seq, 'x');
    batch.targets.assign(rows * seq, 'y');
    return batch;
  };
  Batch untouched = text_batch();
  MixPasskeyExamples(untouched, 0.0, PasskeyLoss::kAll, 1, 0);
  EXPECT_EQ(untouched.inputs, text_batch().inputs);

  int64_t replaced = 0;
  for (uint64_t index = 0; index < 250; ++index) {
    Batch a = text_batch(), b = text_batch();
    MixPasskeyExamples(a, 0.25, PasskeyLoss::kAll, 42, index * rows);
    MixPasskeyExamples(b, 0.25, PasskeyLoss::kAll, 42,
                       index * rows);  // same (seed, rows): same mix
    ASSERT_EQ(a.inputs, b.inputs);
    ASSERT_EQ(a.targets, b.targets);
    for (int64_t row = 0; row < rows; ++row) {
      if (a.inputs[row * seq] == 'x') continue;
      ++replaced;
      EXPECT_EQ(a.inputs[row * seq], ByteTokenizer::kEndOfText);
      // Targets are the inputs shifted by one; the last target ends the key.
      for (int64_t t = 0; t + 1 < seq; ++t) {
        ASSERT_EQ(a.targets[row * seq + t], a.inputs[row * seq + t + 1]);
      }
      const std::string tail =
          Text(std::vector<TokenId>(a.targets.begin() + row * seq + seq - 44,
                                    a.targets.begin() + (row + 1) * seq));
      EXPECT_EQ(tail.substr(0, 39), "\nWhat is the pass key? The pass key is ");
    }
  }
  EXPECT_NEAR(static_cast<double>(replaced) / (250 * rows), 0.25, 0.04);
  // kPasskeyStartShare of the examples put the key at the very start, right
  // after "<|endoftext|>\n" (a uniform depth alone would almost never).
  int64_t at_start = 0, examples = 0;
  for (uint64_t index = 0; index < 500; ++index) {
    Batch batch = text_batch();
    MixPasskeyExamples(batch, 1.0, PasskeyLoss::kAll, 9, index * rows);
    for (int64_t row = 0; row < rows; ++row, ++examples) {
      const std::string text =
          Text(std::vector<TokenId>(batch.inputs.begin() + row * seq + 1,
                                    batch.inputs.begin() + (row + 1) * seq));
      at_start += text.rfind("\nThe pass key is ", 0) == 0 ? 1 : 0;
    }
  }
  EXPECT_NEAR(static_cast<double>(at_start) / examples, kPasskeyStartShare,
              0.02);

  Batch other = text_batch(), again = text_batch();
  MixPasskeyExamples(other, 1.0, PasskeyLoss::kAll, 42, rows);
  MixPasskeyExamples(again, 1.0, PasskeyLoss::kAll, 42, 2 * rows);
  EXPECT_NE(other.inputs, again.inputs);  // batches differ from each other
  ROTOR_EXPECT_ERROR(MixPasskeyExamples(other, 1.5, PasskeyLoss::kAll, 1, 0),
                     "fraction");

  // Each row's mix depends on its index in the run's stream of rows only:
  // two halves mix exactly as the whole batch.
  Batch whole = text_batch();
  MixPasskeyExamples(whole, 0.5, PasskeyLoss::kRetrieval, 5, 40);
  for (int64_t half = 0; half < 2; ++half) {
    Batch part = text_batch();
    part.batch_size = rows / 2;
    part.inputs.resize(rows / 2 * seq);
    part.targets.resize(rows / 2 * seq);
    MixPasskeyExamples(part, 0.5, PasskeyLoss::kRetrieval, 5,
                       40 + half * rows / 2);
    const int64_t offset = half * rows / 2 * seq;
    EXPECT_TRUE(std::equal(part.inputs.begin(), part.inputs.end(),
                           whole.inputs.begin() + offset));
    EXPECT_TRUE(std::equal(part.targets.begin(), part.targets.end(),
                           whole.targets.begin() + offset));
  }
}

// With the retrieval loss, a passkey row scores exactly the key's second
// mention and the answer: the same rows and inputs as with kAll, and the
// scored targets equal kAll's.
TEST(PasskeyMix, RetrievalLossScoresOnlyTheCopiedKey) {
  const int64_t rows = 4, seq = 200;
  Batch all, retrieval;
  for (Batch* batch : {&all, &retrieval}) {
    batch->batch_size = rows;
    batch->seq_len = seq;
    batch->inputs.assign(rows * seq, 'x');
    batch->targets.assign(rows * seq, 'y');
  }
  MixPasskeyExamples(all, 1.0, PasskeyLoss::kAll, 7, 3);
  MixPasskeyExamples(retrieval, 1.0, PasskeyLoss::kRetrieval, 7, 3);
  EXPECT_EQ(retrieval.inputs, all.inputs);
  for (int64_t row = 0; row < rows; ++row) {
    std::string scored;
    for (int64_t t = 0; t < seq; ++t) {
      const TokenId target = retrieval.targets[row * seq + t];
      if (target == kPasskeyIgnoredTarget) continue;
      EXPECT_EQ(target, all.targets[row * seq + t]);
      scored.push_back(static_cast<char>(target));
    }
    // The second mention "K is the pass key." and the answer K, where K is
    // the 5 digits that end the row.
    const std::string key =
        Text(std::vector<TokenId>(all.targets.begin() + row * seq + seq - 5,
                                  all.targets.begin() + (row + 1) * seq));
    EXPECT_EQ(scored, key + key) << "row " << row;
    const std::string text = Text(std::vector<TokenId>(
        all.inputs.begin() + row * seq, all.inputs.begin() + (row + 1) * seq));
    EXPECT_NE(text.find(". Remember it. " + key + " is the pass key."),
              std::string::npos);
  }
  EXPECT_EQ(ParsePasskeyLoss("retrieval"), PasskeyLoss::kRetrieval);
  EXPECT_EQ(ParsePasskeyLoss("all"), PasskeyLoss::kAll);
  EXPECT_STREQ(PasskeyLossName(PasskeyLoss::kRetrieval), "retrieval");
  ROTOR_EXPECT_ERROR(ParsePasskeyLoss("answers"), "'retrieval' or 'all'");
}

}  // namespace
}  // namespace rotor::train
