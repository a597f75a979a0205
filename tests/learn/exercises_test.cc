// The exercises of docs/learn.md (examples/exercises/): each learner's
// function against rotor's own code. They pass with the reference
// solutions shipped in the headers; a learner deletes a solution, writes
// their own and runs e.g. `ctest -R Learn.YarnRamp`.
#include <cmath>
#include <string_view>
#include <vector>

#include "core/ops/attention.h"
#include "core/ops/rope.h"
#include "examples/exercises/bpe_merge.h"
#include "examples/exercises/causal_attention.h"
#include "examples/exercises/dynamic_ntk.h"
#include "examples/exercises/rope_rotate.h"
#include "examples/exercises/yarn_ramp.h"
#include "nn/rope_scaling.h"
#include "tests/test_util.h"
#include "train/tokenizer/bpe_trainer.h"
#include "train/tokenizer/pre_tokenizers.h"

namespace rotor {
namespace {

TEST(Learn, RopeRotate) {
  constexpr int64_t kT = 40, kD = 12;
  std::mt19937 rng(1);
  const std::vector<float> x = test::RandomVector(kT * kD, rng);
  RopeTable table = RopeTable::Default(kD, 10000.0);
  for (RopeLayout layout : {RopeLayout::kSplitHalf, RopeLayout::kInterleaved}) {
    const std::vector<float> want = Rope(Tensor::FromVector({1, 1, kT, kD}, x),
                                         table, RopePositions{0}, layout)
                                        .ToVector();
    for (int64_t t = 0; t < kT; ++t) {
      const std::vector<double> row(x.begin() + t * kD,
                                    x.begin() + (t + 1) * kD);
      const std::vector<double> got =
          learn::RotateRow(row, t, 10000.0, layout == RopeLayout::kInterleaved);
      ASSERT_EQ(got.size(), static_cast<size_t>(kD));
      for (int64_t d = 0; d < kD; ++d) {
        EXPECT_NEAR(got[d], want[t * kD + d], 1e-5)
            << RopeLayoutName(layout) << " position " << t << " channel " << d;
      }
    }
  }
}

TEST(Learn, CausalAttention) {
  constexpr int64_t kT = 9, kD = 8;
  std::mt19937 rng(2);
  std::vector<float> q = test::RandomVector(kT * kD, rng);
  const std::vector<float> k = test::RandomVector(kT * kD, rng);
  const std::vector<float> v = test::RandomVector(kT * kD, rng);
  for (float& x : q) x *= 4.0f;  // sharp rows: the max subtraction matters
  const std::vector<float> want =
      CausalAttention(Tensor::FromVector({1, 1, kT, kD}, q),
                      Tensor::FromVector({1, 1, kT, kD}, k),
                      Tensor::FromVector({1, 1, kT, kD}, v))
          .ToVector();
  const auto as_double = [](const std::vector<float>& f) {
    return std::vector<double>(f.begin(), f.end());
  };
  const std::vector<double> got =
      learn::CausalAttention(as_double(q), as_double(k), as_double(v), kT, kD);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 1e-5) << "query " << i / kD;
  }
}

TEST(Learn, BpeMerge) {
  const std::string_view text =
      "the cat sat on the mat; the cat ate the rat and then the cat sat.";
  const std::vector<train::WordCount> counts =
      train::CountWords({text}, train::kLlama3SplitPattern);
  constexpr int kMerges = 15;
  train::BpeTrainerOptions options;
  options.special_tokens = {};
  options.vocab_size = 256 + kMerges;
  const train::BpeModel model = train::TrainBpe(counts, options);
  ASSERT_EQ(model.merges.size(), static_cast<size_t>(kMerges));
  // The learner's words in rotor's ids: byte b is the id of its byte-level
  // character in rotor's vocabulary.
  const auto& chars = train::ByteLevelChars();
  std::vector<learn::Word> words;
  for (const train::WordCount& w : counts) {
    learn::Word word{{}, w.count};
    for (unsigned char c : w.word) {
      for (size_t id = 0; id < 256; ++id) {
        if (model.vocab[id] == chars[c])
          word.symbols.push_back(static_cast<int>(id));
      }
    }
    words.push_back(word);
  }
  for (int m = 0; m < kMerges; ++m) {
    const std::pair<int, int> got =
        learn::MergeMostFrequentPair(words, 256 + m);
    EXPECT_EQ(got.first, model.merges[m].first) << "merge " << m;
    EXPECT_EQ(got.second, model.merges[m].second) << "merge " << m;
  }
  std::vector<learn::Word> single = {{{7}, 3}};
  EXPECT_EQ(learn::MergeMostFrequentPair(single, 300), std::make_pair(-1, -1));
}

TEST(Learn, YarnRamp) {
  struct Case {
    int64_t r;
    double base, s;
    int64_t l0;
    double beta_fast, beta_slow;
  };
  for (const Case& c :
       {Case{64, 10000, 4, 2048, 32, 1}, Case{128, 500000, 8, 8192, 32, 1},
        Case{32, 10000, 4, 128, 32, 1}, Case{16, 10000, 16, 64, 8, 2}}) {
    RopeScalingConfig config;
    config.rope_type = RopeType::kYarn;
    config.head_dim = c.r;
    config.rope_theta = c.base;
    config.factor = c.s;
    config.max_position_embeddings = c.l0 * 4;
    config.original_max_position_embeddings = c.l0;
    config.beta_fast = c.beta_fast;
    config.beta_slow = c.beta_slow;
    const std::vector<double> want =
        ComputeRopeFrequencies(config, c.l0).inv_freq;
    const std::vector<double> got = learn::YarnInvFreq(
        c.r, c.base, c.s, static_cast<double>(c.l0), c.beta_fast, c.beta_slow);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i] / want[i], 1.0, 1e-12) << "r " << c.r << " pair " << i;
    }
  }
}

TEST(Learn, DynamicNtkBase) {
  RopeScalingConfig config;
  config.rope_type = RopeType::kDynamic;
  config.head_dim = 32;
  config.rope_theta = 10000.0;
  config.factor = 4.0;
  config.max_position_embeddings = 128;
  for (int64_t length : {1, 64, 128, 129, 200, 512, 4096}) {
    EXPECT_NEAR(learn::DynamicNtkBase(10000.0, 32, 4.0, 128, length) /
                    rotor::DynamicNtkBase(config, length),
                1.0, 1e-12)
        << "length " << length;
  }
}

}  // namespace
}  // namespace rotor
