// TrainBpe against the naive reference trainer (naive_bpe_trainer.h), its
// vocabulary layout, its option checks and the
// tokenizer.json it writes.
#include "train/tokenizer/bpe_trainer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "tests/temp_dir.h"
#include "tests/test_util.h"
#include "tests/train/tokenizer/naive_bpe_trainer.h"
#include "train/io/atomic_file.h"
#include "train/io/json.h"
#include "train/tokenizer/tokenizer.h"

namespace rotor::train {
namespace {

using test::NaiveTrain;

// Words over a small alphabet with skewed counts: many equal counts (the
// tie rule decides often), repeated letters ("aaaa", overlapping pairs),
// and a few bytes outside ASCII.
std::vector<WordCount> RandomWords(uint32_t seed, int word_count) {
  std::mt19937 rng(seed);
  const std::string letters = "aabbbcd \n\xC3\xA9\xFF";
  std::vector<WordCount> words;
  std::set<std::string> seen;
  while (static_cast<int>(words.size()) < word_count) {
    std::string word;
    const int length = 1 + static_cast<int>(rng() % 7);
    for (int i = 0; i < length; ++i) word += letters[rng() % letters.size()];
    if (!seen.insert(word).second) continue;
    words.push_back({word, 1 + (rng() % 4) * (rng() % 5)});
  }
  return words;
}

void ExpectSameModel(const BpeModel& got, const BpeModel& want) {
  ASSERT_EQ(got.merges.size(), want.merges.size());
  for (size_t i = 0; i < want.merges.size(); ++i) {
    ASSERT_EQ(got.merges[i], want.merges[i]) << "merge " << i;
  }
  EXPECT_EQ(got.vocab, want.vocab);
  EXPECT_EQ(got.special_token_count, want.special_token_count);
}

TEST(BpeTrainer, MergesEqualTheNaiveReference) {
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    const std::vector<WordCount> words = RandomWords(seed, 60 + 10 * seed);
    BpeTrainerOptions options;
    options.vocab_size = 256 + 1 + 40 + 20 * seed;
    const BpeModel model = TrainBpe(words, options);
    const BpeModel reference =
        NaiveTrain(words, options.vocab_size, options.special_tokens, 0);
    SCOPED_TRACE(seed);
    ExpectSameModel(model, reference);
  }
}

TEST(BpeTrainer, RunsOutOfPairsBeforeTheVocabularyIsFull) {
  const std::vector<WordCount> words = {{"ab", 3}, {"abc", 1}, {"x", 9}};
  BpeTrainerOptions options;
  options.vocab_size = 1000;
  const BpeModel model = TrainBpe(words, options);
  ExpectSameModel(model, NaiveTrain(words, 1000, options.special_tokens, 0));
  EXPECT_EQ(model.merges.size(), 2u);  // ab, then abc
  EXPECT_EQ(model.vocab.back(), "abc");
}

TEST(BpeTrainer, MinFrequencyStopsAtRarePairs) {
  const std::vector<WordCount> words = RandomWords(7, 120);
  BpeTrainerOptions options;
  options.vocab_size = 2000;
  options.min_frequency = 5;
  const BpeModel model = TrainBpe(words, options);
  ExpectSameModel(model, NaiveTrain(words, 2000, options.special_tokens, 5));
  EXPECT_LT(model.vocab.size(), 2000u);
}

TEST(BpeTrainer, TiesGoToTheSmallestPairOfIds) {
  // (a, b) and (c, d) both occur twice: 'a' has the smaller id.
  BpeTrainerOptions options;
  options.special_tokens = {};
  options.vocab_size = 257;
  const BpeModel model = TrainBpe({{"cd", 2}, {"ab", 2}}, options);
  ASSERT_EQ(model.merges.size(), 1u);
  EXPECT_EQ(model.vocab.back(), "ab");
  // (a, b) and (b, a) both occur twice ("abab" and "ba"): (a, b) first;
  // then (ab, ab) and (b, a) tie at 1, and 'b' is older than "ab".
  options.vocab_size = 258;
  const BpeModel overlapping = TrainBpe({{"abab", 1}, {"ba", 1}}, options);
  EXPECT_EQ(overlapping.vocab[256], "ab");
  EXPECT_EQ(overlapping.vocab[257], "ba");
}

TEST(BpeTrainer, VocabularyIsSpecialsThenBytesByCodePointThenMerges) {
  BpeTrainerOptions options;
  options.special_tokens = {"<|endoftext|>", "<pad>"};
  options.vocab_size = 259;
  const BpeModel model = TrainBpe({{"hello", 1}}, options);
  ASSERT_EQ(model.vocab.size(), 259u);
  EXPECT_EQ(model.special_token_count, 2);
  EXPECT_EQ(model.vocab[0], "<|endoftext|>");
  EXPECT_EQ(model.vocab[1], "<pad>");
  EXPECT_EQ(model.vocab[2], "!");                    // byte 33, code point 33
  EXPECT_EQ(model.vocab[2 + 93], "~");               // byte 126
  EXPECT_EQ(model.vocab[2 + 94], "\xC2\xA1");        // byte 161, U+00A1
  EXPECT_EQ(model.vocab[2 + 188], "\xC4\x80");       // byte 0, U+0100
  EXPECT_EQ(model.vocab[2 + 188 + 32], "\xC4\xA0");  // space, U+0120 'Ġ'
  EXPECT_EQ(model.vocab[2 + 255], "\xC5\x83");       // byte 173, U+0143
  // (h, e), (e, l), (l, l), (l, o) occur once each: 'e' has the smallest id.
  EXPECT_EQ(model.vocab[258], "el");
}

TEST(BpeTrainer, RefusesBadOptionsNamingThem) {
  BpeTrainerOptions options;
  options.vocab_size = 256;
  ROTOR_EXPECT_ERROR(TrainBpe({}, options), "vocab_size", "[257, 1048576]",
                     "got 256");
  options.vocab_size = MaxBpeVocabSize() + 1;
  ROTOR_EXPECT_ERROR(TrainBpe({}, options), "vocab_size", "got 1048577");
  options.vocab_size = 300;
  options.special_tokens = {"<a>", "<a>"};
  ROTOR_EXPECT_ERROR(TrainBpe({}, options), "'<a>' is given twice");
  options.special_tokens = {""};
  ROTOR_EXPECT_ERROR(TrainBpe({}, options), "empty special token");
}

TEST(BpeTrainer, TokenizerJsonHasHuggingFacesLayout) {
  BpeTrainerOptions options;
  options.vocab_size = 262;
  const BpeModel model =
      TrainBpe({{" the", 5}, {" then", 2}, {"\n\n", 3}}, options);
  const Json json = ParseJson(BpeTokenizerJson(model, options), "test");
  std::vector<std::string> keys;
  for (const auto& [key, value] : json.items()) keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"version", "truncation", "padding",
                                            "added_tokens", "normalizer",
                                            "pre_tokenizer", "post_processor",
                                            "decoder", "model"}));
  EXPECT_EQ(json["version"], "1.0");
  EXPECT_TRUE(json["truncation"].is_null());
  EXPECT_TRUE(json["normalizer"].is_null());
  EXPECT_EQ(json["added_tokens"].size(), 1u);
  EXPECT_EQ(json["added_tokens"][0]["content"], "<|endoftext|>");
  EXPECT_EQ(json["added_tokens"][0]["id"], 0);
  EXPECT_EQ(json["added_tokens"][0]["special"], true);
  EXPECT_EQ(json["added_tokens"][0]["normalized"], false);
  const Json& split = json["pre_tokenizer"]["pretokenizers"][0];
  EXPECT_EQ(split["type"], "Split");
  EXPECT_EQ(split["pattern"]["Regex"], kLlama3SplitPattern);
  EXPECT_EQ(split["behavior"], "Isolated");
  EXPECT_EQ(json["pre_tokenizer"]["pretokenizers"][1]["use_regex"], false);
  EXPECT_EQ(json["decoder"]["type"], "ByteLevel");
  const Json& bpe = json["model"];
  EXPECT_EQ(bpe["type"], "BPE");
  EXPECT_TRUE(bpe["unk_token"].is_null());
  EXPECT_EQ(bpe["ignore_merges"], false);
  EXPECT_EQ(bpe["vocab"].size(), 262u);
  EXPECT_EQ(bpe["vocab"]["<|endoftext|>"], 0);
  EXPECT_EQ(bpe["vocab"]["\xC4\xA0"], 1 + 188 + 32);
  // (Ġ, t), (t, h), (h, e) occur 7 times: 'h' has the smallest id.
  ASSERT_EQ(bpe["merges"].size(), 5u);
  EXPECT_EQ(bpe["merges"][0], "h e");
  EXPECT_EQ(bpe["merges"][1], "t he");
  EXPECT_EQ(bpe["merges"][2], "\xC4\xA0 the");
  EXPECT_EQ(bpe["merges"][3], "\xC4\x8A \xC4\x8A");  // "Ċ Ċ", 3 times
  EXPECT_EQ(bpe["vocab"]["\xC4\xA0the"], 259);
}

TEST(BpeTrainer, SameFileAtAnyThreadCountAndRotorEncodesAsTrained) {
  std::string corpus;
  for (const std::string& line :
       {"The jury said it didn't find any evidence. ",
        "The 1962 budget was $3,200,445.00, about 12% more!\n\n",
        "Caf\xC3\xA9s  and   na\xC3\xAFve\ttabs\r\n", "bad \xFF byte "}) {
    corpus += line;
  }
  std::vector<std::string> documents(40);
  for (size_t d = 0; d < documents.size(); ++d) {
    documents[d] = corpus.substr(d % 7) + corpus.substr(0, d % 11);
  }
  const std::vector<std::string_view> views(documents.begin(), documents.end());
  BpeTrainerOptions options;
  options.vocab_size = 330;  // the corpus runs out of pairs at 347
  std::string json_at[3];
  for (const int threads : {1, 2}) {
    json_at[threads] = test::RunAtThreads(threads, [&] {
      return BpeTokenizerJson(
          TrainBpe(CountWords(views, options.split_pattern), options), options);
    });
  }
  EXPECT_EQ(json_at[1], json_at[2]);

  // rotor's loader reads the file, and encoding a document gives the ids of
  // its pre-tokens as training left them: each word's merges in rank order.
  test::TempDir dir;
  WriteFileAtomically(dir.Path("tokenizer.json"), json_at[1]);
  const std::unique_ptr<Tokenizer> tokenizer =
      LoadTokenizer(dir.Path("tokenizer.json"));
  EXPECT_EQ(tokenizer->VocabSize(), 330);
  EXPECT_EQ(tokenizer->TokenToId("<|endoftext|>"), 0);
  const Json json = ParseJson(json_at[1], "trained");
  std::string last_token;
  for (const auto& [token, id] : json["model"]["vocab"].items()) {
    last_token = token;
  }
  EXPECT_EQ(tokenizer->TokenToId(last_token), 329);
  const std::vector<TokenId> ids = tokenizer->Encode(documents[0], true);
  EXPECT_LT(ids.size(), documents[0].size() / 2);
  EXPECT_EQ(tokenizer->Decode(ids, false),
            "The jury said it didn't find any evidence. The 1962 budget was "
            "$3,200,445.00, about 12% more!\n\nCaf\xC3\xA9s  and   "
            "na\xC3\xAFve\ttabs\r\nbad \xEF\xBF\xBD byte ");
}

}  // namespace
}  // namespace rotor::train
