// The passkey generator (format, exact length, depth placement,
// determinism) in the tokens of bytes, Llama 3, a SentencePiece-style BPE
// and a rotor-trained BPE; the byte examples and mix against the byte-only
// construction rotor had before; and the training mix (share, resumable
// choices, shifted targets).
#include "train/data/passkey.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/autograd.h"
#include "tests/temp_dir.h"
#include "tests/test_util.h"
#include "tests/train/data/prompt_tokenizers.h"
#include "train/data/token_file.h"
#include "train/tokenizer/byte_tokenizer.h"

namespace rotor::train {
namespace {

const ByteTokenizer kBytes;

// A byte example as MakePasskeyExample made it before other tokenizers.
PasskeyExample MakeByteExample(int64_t length, double depth, Rng& rng,
                               int num_digits = kPasskeyDefaultDigits) {
  return PasskeyMaker(kBytes, length).Make(length, depth, rng, num_digits);
}

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
    const PasskeyExample example = MakeByteExample(length, 0.5, rng);
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
    EXPECT_EQ(example.answer.first, length - 5);
    EXPECT_EQ(example.answer.count, 5);
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
  const PasskeyExample start = MakeByteExample(length, 0.0, rng);
  EXPECT_EQ(start.key_position, 2);  // BOS, "\n", then the key line
  const PasskeyExample end = MakeByteExample(length, 1.0, rng);
  // Nothing between the key line and the question but two newlines.
  const std::string after_key =
      Text(end.tokens, end.key_position + KeyLine(end.key).size());
  EXPECT_EQ(after_key.substr(0, 24), "\n\nWhat is the pass key? ");
  EXPECT_EQ(end.key_position, 2 + filler);
  int64_t previous = -1;
  for (double depth : {0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0}) {
    const PasskeyExample example = MakeByteExample(length, depth, rng);
    EXPECT_EQ(example.key_position,
              2 + static_cast<int64_t>(std::llround(depth * filler)))
        << depth;
    EXPECT_GT(example.key_position, previous);
    previous = example.key_position;
  }
}

TEST(Passkey, SameGeneratorStateSameExample) {
  Rng a(99), b(99), c(100);
  const PasskeyExample x = MakeByteExample(300, 0.3, a);
  const PasskeyExample y = MakeByteExample(300, 0.3, b);
  EXPECT_EQ(x.tokens, y.tokens);
  EXPECT_EQ(x.key, y.key);
  // Another seed draws other keys (5 digits: a collision in all of 5 draws
  // would be a broken generator).
  bool any_different = false;
  for (int i = 0; i < 5; ++i) {
    any_different |=
        MakeByteExample(300, 0.3, a).key != MakeByteExample(300, 0.3, c).key;
  }
  EXPECT_TRUE(any_different);
}

TEST(Passkey, DigitCountAndErrors) {
  Rng rng(3);
  const PasskeyExample three = MakeByteExample(150, 0.5, rng, 3);
  EXPECT_EQ(three.key.size(), 3u);
  EXPECT_EQ(PasskeyMinLength(3), PasskeyMinLength(5) - 6);  // key 3 times
  ROTOR_EXPECT_ERROR(MakeByteExample(PasskeyMinLength() - 1, 0.5, rng),
                     "at least", std::to_string(PasskeyMinLength()));
  ROTOR_EXPECT_ERROR(MakeByteExample(300, 1.5, rng), "depth", "[0, 1]", "1.5");
  ROTOR_EXPECT_ERROR(MakeByteExample(300, 0.5, rng, 0), "num_digits");
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
  const PasskeyMaker maker(kBytes, seq + 1);
  Batch untouched = text_batch();
  MixPasskeyExamples(untouched, maker, 0.0, PasskeyLoss::kAll, 1, 0);
  EXPECT_EQ(untouched.inputs, text_batch().inputs);

  int64_t replaced = 0;
  for (uint64_t index = 0; index < 250; ++index) {
    Batch a = text_batch(), b = text_batch();
    MixPasskeyExamples(a, maker, 0.25, PasskeyLoss::kAll, 42, index * rows);
    MixPasskeyExamples(b, maker, 0.25, PasskeyLoss::kAll, 42,
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
    MixPasskeyExamples(batch, maker, 1.0, PasskeyLoss::kAll, 9, index * rows);
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
  MixPasskeyExamples(other, maker, 1.0, PasskeyLoss::kAll, 42, rows);
  MixPasskeyExamples(again, maker, 1.0, PasskeyLoss::kAll, 42, 2 * rows);
  EXPECT_NE(other.inputs, again.inputs);  // batches differ from each other
  ROTOR_EXPECT_ERROR(
      MixPasskeyExamples(other, maker, 1.5, PasskeyLoss::kAll, 1, 0),
      "fraction");

  // Each row's mix depends on its index in the run's stream of rows only:
  // two halves mix exactly as the whole batch.
  Batch whole = text_batch();
  MixPasskeyExamples(whole, maker, 0.5, PasskeyLoss::kRetrieval, 5, 40);
  for (int64_t half = 0; half < 2; ++half) {
    Batch part = text_batch();
    part.batch_size = rows / 2;
    part.inputs.resize(rows / 2 * seq);
    part.targets.resize(rows / 2 * seq);
    MixPasskeyExamples(part, maker, 0.5, PasskeyLoss::kRetrieval, 5,
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
  const PasskeyMaker maker(kBytes, seq + 1);
  MixPasskeyExamples(all, maker, 1.0, PasskeyLoss::kAll, 7, 3);
  MixPasskeyExamples(retrieval, maker, 1.0, PasskeyLoss::kRetrieval, 7, 3);
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

// The byte-only construction rotor had before PasskeyMaker, kept as the
// reference that byte examples must equal token for token.
struct ReferenceExample {
  std::vector<TokenId> tokens;
  std::string key;
  int64_t key_position = 0, second_mention = 0, answer_start = 0;
};

ReferenceExample ReferenceByteExample(int64_t length, double depth, Rng& rng,
                                      int num_digits) {
  const std::string filler(kPasskeyFiller);
  const auto append_filler = [&](int64_t count, std::vector<TokenId>& out) {
    for (int64_t i = 0; i < count; ++i) {
      out.push_back(static_cast<unsigned char>(filler[i % filler.size()]));
    }
  };
  ReferenceExample example;
  for (int i = 0; i < num_digits; ++i) {
    example.key.push_back(static_cast<char>('0' + rng.Below(10)));
  }
  const std::string line = KeyLine(example.key);
  const int64_t min_length =
      1 + 1 + static_cast<int64_t>(line.size()) + 1 + 1 + 38 + num_digits;
  const int64_t free = length - min_length;
  const int64_t prefix =
      static_cast<int64_t>(std::llround(depth * static_cast<double>(free)));
  std::vector<TokenId>& tokens = example.tokens;
  tokens.push_back(ByteTokenizer::kEndOfText);
  append_filler(prefix, tokens);
  tokens.push_back('\n');
  example.key_position = static_cast<int64_t>(tokens.size());
  ByteTokenizer::EncodeAppend(line, tokens);
  example.second_mention =
      static_cast<int64_t>(tokens.size() - example.key.size() -
                           std::string(" is the pass key.").size());
  tokens.push_back('\n');
  append_filler(free - prefix, tokens);
  tokens.push_back('\n');
  ByteTokenizer::EncodeAppend("What is the pass key? The pass key is ", tokens);
  example.answer_start = static_cast<int64_t>(tokens.size());
  ByteTokenizer::EncodeAppend(example.key, tokens);
  return example;
}

TEST(Passkey, ByteExamplesAndMixEqualTheByteOnlyConstruction) {
  EXPECT_EQ(PasskeyMinLength(5), 105);
  EXPECT_EQ(PasskeyMinLength(2), 96);
  const PasskeyMaker maker(kBytes, 2049);
  for (const int digits : {1, 2, 5, 18}) {
    Rng rng(static_cast<uint64_t>(digits)), reference_rng(rng);
    for (const int64_t length : {PasskeyMinLength(digits), int64_t{200},
                                 int64_t{777}, int64_t{2049}}) {
      for (const double depth : {0.0, 0.1, 0.25, 0.5, 0.77, 1.0}) {
        const PasskeyExample example = maker.Make(length, depth, rng, digits);
        const ReferenceExample reference =
            ReferenceByteExample(length, depth, reference_rng, digits);
        ASSERT_EQ(example.tokens, reference.tokens) << length << " " << depth;
        EXPECT_EQ(example.key, reference.key);
        EXPECT_EQ(example.key_position, reference.key_position);
        EXPECT_EQ(example.second_mention.first, reference.second_mention);
        EXPECT_EQ(example.second_mention.count, digits);
        EXPECT_EQ(example.answer.first, reference.answer_start);
        EXPECT_EQ(example.answer.count, digits);
      }
    }
  }
  // The mix: the rows and scored targets the byte-only code chose (row
  // choices from PasskeyItemRng, as before).
  const int64_t rows = 6, seq = 300;
  for (const PasskeyLoss loss : {PasskeyLoss::kRetrieval, PasskeyLoss::kAll}) {
    Batch batch;
    batch.batch_size = rows;
    batch.seq_len = seq;
    batch.inputs.assign(rows * seq, 'x');
    batch.targets.assign(rows * seq, 'y');
    Batch expected = batch;
    MixPasskeyExamples(batch, PasskeyMaker(kBytes, seq + 1), 0.5, loss, 3, 12);
    for (int64_t row = 0; row < rows; ++row) {
      Rng rng = PasskeyItemRng(3, 12 + static_cast<uint64_t>(row));
      if (rng.Uniform() >= 0.5) continue;
      const double depth =
          rng.Uniform() < kPasskeyStartShare ? 0.0 : rng.Uniform();
      const ReferenceExample example =
          ReferenceByteExample(seq + 1, depth, rng, 5);
      for (int64_t t = 0; t < seq; ++t) {
        const int64_t next = t + 1;
        const bool copied = (next >= example.second_mention &&
                             next < example.second_mention + 5) ||
                            next >= example.answer_start;
        expected.inputs[row * seq + t] = example.tokens[t];
        expected.targets[row * seq + t] = loss == PasskeyLoss::kAll || copied
                                              ? example.tokens[next]
                                              : kPasskeyIgnoredTarget;
      }
    }
    EXPECT_EQ(batch.inputs, expected.inputs);
    EXPECT_EQ(batch.targets, expected.targets);
  }
}

// `text` without the spaces and newlines at its ends.
std::string Trimmed(const std::string& text) {
  const size_t begin = text.find_first_not_of(" \n");
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(" \n") - begin + 1);
}

// `count` characters of the Landmark filler repeated.
std::string FillerText(size_t count) {
  std::string text;
  while (text.size() < count) text += kPasskeyFiller;
  return text.substr(0, count);
}

TEST(Passkey, EveryTokenizerGetsTheExactLengthDepthAndKey) {
  const test::TempDir dir;
  for (const auto& tokenizer : test::PromptTokenizers(dir)) {
    SCOPED_TRACE(tokenizer->Name());
    const PasskeyMaker maker(*tokenizer, 1025);
    Rng rng(21);
    for (const int64_t length : {int64_t{128}, int64_t{300}, int64_t{1025}}) {
      for (const double depth : {0.0, 0.3, 0.5, 1.0}) {
        SCOPED_TRACE(testing::Message() << length << " " << depth);
        const PasskeyExample example = maker.Make(length, depth, rng);
        ASSERT_EQ(static_cast<int64_t>(example.tokens.size()), length);
        EXPECT_EQ(example.tokens[0], DocumentSeparator(*tokenizer));
        // The key line's tokens right after round(depth * F) filler tokens.
        const std::vector<TokenId> key_piece =
            EncodeInText(*tokenizer, "\n" + KeyLine(example.key) + "\n");
        const std::vector<TokenId> question_piece = EncodeInText(
            *tokenizer,
            "\nWhat is the pass key? The pass key is " + example.key);
        const int64_t filler = length - 1 -
                               static_cast<int64_t>(key_piece.size()) -
                               static_cast<int64_t>(question_piece.size());
        const int64_t prefix =
            std::llround(depth * static_cast<double>(filler));
        const std::vector<TokenId> stream = LandmarkFiller(*tokenizer, filler);
        EXPECT_TRUE(std::equal(stream.begin(), stream.begin() + prefix,
                               example.tokens.begin() + 1));
        EXPECT_TRUE(std::equal(key_piece.begin(), key_piece.end(),
                               example.tokens.begin() + 1 + prefix));
        EXPECT_TRUE(std::equal(stream.begin(),
                               stream.begin() + (filler - prefix),
                               example.tokens.begin() + 1 + prefix +
                                   static_cast<int64_t>(key_piece.size())));
        EXPECT_EQ(test::SpanText(*tokenizer, example.tokens,
                                 {example.key_position, 4})
                      .substr(0, 3),
                  "The");
        // Both copies of the key decode back to it, and the answer is last.
        EXPECT_EQ(Trimmed(test::SpanText(*tokenizer, example.tokens,
                                         example.second_mention)),
                  example.key);
        EXPECT_EQ(
            Trimmed(test::SpanText(*tokenizer, example.tokens, example.answer)),
            example.key);
        EXPECT_EQ(example.answer.first + example.answer.count, length);
        // The whole prompt reads as the Landmark layout.
        const std::string text =
            tokenizer->Decode(std::vector<TokenId>(example.tokens.begin() + 1,
                                                   example.tokens.end()),
                              false);
        const std::string line = "\n" + KeyLine(example.key) + "\n";
        const size_t line_at = text.find(line);
        ASSERT_NE(line_at, std::string::npos) << text;
        EXPECT_EQ(text.substr(0, line_at), FillerText(line_at));
        const std::string question =
            "\nWhat is the pass key? The pass key is " + example.key;
        ASSERT_GE(text.size(), line_at + line.size() + question.size());
        const size_t suffix =
            text.size() - question.size() - line_at - line.size();
        EXPECT_EQ(text.substr(line_at + line.size(), suffix),
                  FillerText(suffix));
        EXPECT_EQ(text.substr(text.size() - question.size()), question);
      }
    }
  }
}

TEST(Passkey, FillerFromAPreparedSplit) {
  test::TempDir dir;
  const std::vector<TokenId> document =
      ByteTokenizer::Encode("The quick brown fox jumps over the lazy dog. ");
  std::vector<TokenId> stream;
  for (int d = 0; d < 3; ++d) {
    stream.push_back(ByteTokenizer::kEndOfText);
    stream.insert(stream.end(), document.begin(), document.end());
  }
  WriteTokenFile(dir.Path("val.bin"), stream,
                 {ByteTokenizer::kVocabSize, 3, ByteTokenizer::kEndOfText,
                  stream.size() - 3});
  const TokenFile val(dir.Path("val.bin"));
  // The documents' text without separators, repeated past the file's end.
  const std::vector<TokenId> filler = TokenFileFiller(val, 400);
  ASSERT_EQ(filler.size(), 400u);
  for (size_t i = 0; i < filler.size(); ++i) {
    ASSERT_EQ(filler[i], document[i % document.size()]) << i;
  }
  const PasskeyMaker maker(kBytes, filler);
  Rng rng(4);
  const PasskeyExample example = maker.Make(300, 0.5, rng);
  EXPECT_EQ(Text(example.tokens, 1).substr(0, 20), "The quick brown fox ");
  ROTOR_EXPECT_ERROR(maker.Make(600, 0.5, rng), "filler holds 400");
}

TEST(PasskeyMix, AnyTokenizerScoresTheSecondMentionAndTheAnswer) {
  const test::TempDir dir;
  for (const auto& tokenizer : test::PromptTokenizers(dir)) {
    SCOPED_TRACE(tokenizer->Name());
    const int64_t rows = 4, seq = 256;
    const PasskeyMaker maker(*tokenizer, seq + 1);
    Batch batch;
    batch.batch_size = rows;
    batch.seq_len = seq;
    batch.inputs.assign(rows * seq, 1);
    batch.targets.assign(rows * seq, 1);
    Batch again = batch;
    MixPasskeyExamples(batch, maker, 1.0, PasskeyLoss::kRetrieval, 8, 100);
    // A resumed run: rows 102 and 103 alone mix as in the whole batch.
    again.batch_size = 2;
    again.inputs.resize(2 * seq);
    again.targets.resize(2 * seq);
    MixPasskeyExamples(again, maker, 1.0, PasskeyLoss::kRetrieval, 8, 102);
    EXPECT_TRUE(std::equal(again.inputs.begin(), again.inputs.end(),
                           batch.inputs.begin() + 2 * seq));
    EXPECT_TRUE(std::equal(again.targets.begin(), again.targets.end(),
                           batch.targets.begin() + 2 * seq));
    for (int64_t row = 0; row < rows; ++row) {
      std::vector<TokenId> scored;
      for (int64_t t = 0; t < seq; ++t) {
        const TokenId target = batch.targets[row * seq + t];
        if (target != kPasskeyIgnoredTarget) scored.push_back(target);
      }
      // The two copies of the key, each decoding to its digits.
      const std::string text = tokenizer->Decode(scored, false);
      const std::string input_text = tokenizer->Decode(
          std::vector<TokenId>(batch.inputs.begin() + row * seq + 1,
                               batch.inputs.begin() + (row + 1) * seq),
          false);
      const size_t at = input_text.find("The pass key is ");
      ASSERT_NE(at, std::string::npos);
      const std::string key = input_text.substr(at + 16, 5);
      std::string digits;
      for (char c : text) {
        if (c != ' ') digits.push_back(c);
      }
      EXPECT_EQ(digits, key + key) << text;
    }
  }
}

}  // namespace
}  // namespace rotor::train
