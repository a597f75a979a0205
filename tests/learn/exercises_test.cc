// The exercises of docs/learn.md (examples/exercises/): each learner's
// function against rotor's own code. They pass with the reference
// solutions shipped in the headers; a learner deletes a solution, writes
// their own and runs e.g. `ctest -R Learn.YarnRamp`.
#include <cmath>
#include <string_view>
#include <vector>

#include "core/ops/attention.h"
#include "core/ops/ops.h"
#include "core/ops/rope.h"
#include "examples/exercises/bpe_merge.h"
#include "examples/exercises/causal_attention.h"
#include "examples/exercises/cosine_schedule.h"
#include "examples/exercises/cross_entropy_grad.h"
#include "examples/exercises/dynamic_ntk.h"
#include "examples/exercises/linear_ntk.h"
#include "examples/exercises/lora_merge.h"
#include "examples/exercises/rope_rotate.h"
#include "examples/exercises/softmax_backward.h"
#include "examples/exercises/yarn_ramp.h"
#include "nn/layers.h"
#include "nn/rope_scaling.h"
#include "tests/test_util.h"
#include "train/optim/lr_schedule.h"
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

std::vector<double> AsDouble(const std::vector<float>& f) {
  return std::vector<double>(f.begin(), f.end());
}

// Rung 01: softmax's backward by hand against y.Backward(dy), for rows
// whose softmax is spread out and one that is nearly one-hot.
TEST(Learn, SoftmaxBackward) {
  constexpr int64_t kV = 7;
  std::mt19937 rng(3);
  for (float sharpness : {1.0f, 8.0f}) {
    std::vector<float> x = test::RandomVector(kV, rng);
    for (float& v : x) v *= sharpness;
    const std::vector<float> dy = test::RandomVector(kV, rng);
    const Tensor xt = Tensor::FromVector({1, kV}, x, /*requires_grad=*/true);
    const Tensor y = Softmax(xt);
    y.Backward(Tensor::FromVector({1, kV}, dy));
    const std::vector<float> want = xt.grad().ToVector();
    const std::vector<double> got =
        learn::SoftmaxBackward(AsDouble(y.ToVector()), AsDouble(dy));
    ASSERT_EQ(got.size(), want.size());
    for (int64_t i = 0; i < kV; ++i) {
      EXPECT_NEAR(got[i], want[i], 1e-6)
          << "sharpness " << sharpness << " x_" << i;
    }
  }
}

// Rung 02: dL/dlogits of the mean cross-entropy against CrossEntropy's
// backward, with one row of logits from 700 to 800, where exp without the
// row maximum subtracted overflows even in double.
TEST(Learn, CrossEntropyGrad) {
  constexpr int64_t kN = 5, kV = 11;
  std::mt19937 rng(4);
  std::vector<float> logits = test::RandomVector(kN * kV, rng);
  for (int64_t v = 0; v < kV; ++v) logits[2 * kV + v] = 700.0f + 10.0f * v;
  const std::vector<int32_t> targets = {0, 3, 10, 7, 3};
  const Tensor z = Tensor::FromVector({kN, kV}, logits, true);
  CrossEntropy(z, targets).Backward();
  const std::vector<float> want = z.grad().ToVector();
  const std::vector<double> got = learn::CrossEntropyGrad(
      AsDouble(logits), std::vector<int>(targets.begin(), targets.end()), kV);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    // rotor works in float32, whose spacing near 800 is 6e-5: row 2 agrees
    // to about that share of its probabilities (/ N), the others to 1e-6.
    const double tolerance = i / kV == 2 ? 2e-5 : 1e-6;
    EXPECT_NEAR(got[i], want[i], tolerance)
        << "row " << i / kV << " logit " << i % kV;
  }
}

// Rung 06: the warm-up + cosine schedule at every step of two runs, past
// their end, and for a run shorter than its warm-up.
TEST(Learn, CosineSchedule) {
  for (const train::CosineSchedule& s :
       {train::CosineSchedule{5e-3, 5e-4, 30, 400},
        train::CosineSchedule{2e-3, 0.0, 0, 150},
        train::CosineSchedule{1e-2, 1e-3, 10, 5}}) {
    for (int64_t step = 0; step <= s.total_steps + 20; ++step) {
      EXPECT_NEAR(
          learn::CosineLr(s.lr, s.min_lr, s.warmup_steps, s.total_steps, step),
          s.At(step), 1e-15)
          << "warmup " << s.warmup_steps << " total " << s.total_steps
          << " step " << step;
    }
  }
}

// Rung 07: linear and NTK scaling of inv_freq against ComputeRopeFrequencies.
TEST(Learn, LinearNtkInvFreq) {
  struct Case {
    int64_t r;
    double base, s;
  };
  for (const Case& c : {Case{16, 10000, 4}, Case{64, 10000, 8},
                        Case{128, 500000, 16}, Case{32, 10000, 2.5}}) {
    for (RopeType type : {RopeType::kLinear, RopeType::kNtk}) {
      RopeScalingConfig config;
      config.rope_type = type;
      config.head_dim = c.r;
      config.rope_theta = c.base;
      config.factor = c.s;
      config.max_position_embeddings = 4096;
      const std::vector<double> want =
          ComputeRopeFrequencies(config, 4096).inv_freq;
      const std::vector<double> got =
          type == RopeType::kLinear ? learn::LinearInvFreq(c.r, c.base, c.s)
                                    : learn::NtkInvFreq(c.r, c.base, c.s);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_NEAR(got[i] / want[i], 1.0, 1e-12)
            << RopeTypeName(type) << " r " << c.r << " pair " << i;
      }
    }
  }
}

// Rung 09: W + (alpha/r) B A computes what the adapted Linear computes, and
// equals the weight Linear::MergeLora leaves.
TEST(Learn, LoraMerge) {
  constexpr int64_t kIn = 12, kOut = 9, kR = 3, kRows = 4;
  constexpr double kAlpha = 6.0;
  Rng init(5);
  nn::Linear layer(kIn, kOut, /*bias=*/false, 0.2, &init);
  layer.EnableLora(nn::LoraSettings{kR, kAlpha, 0.0}, init);
  // B starts at zero (the adapter starts as the base): give it values.
  std::mt19937 rng(6);
  std::vector<double> w, a, b;
  for (auto& [name, p] : layer.NamedParameters()) {
    if (name == "lora_B.weight") {
      const std::vector<float> v = test::RandomVector(p.numel(), rng);
      std::copy(v.begin(), v.end(), p.data());
    }
    const std::vector<double> values = AsDouble(p.ToVector());
    (name == "weight" ? w : name == "lora_A.weight" ? a : b) = values;
  }
  ASSERT_EQ(b.size(), static_cast<size_t>(kOut * kR));
  const std::vector<float> x = test::RandomVector(kRows * kIn, rng);
  const std::vector<float> y =
      layer.Forward(Tensor::FromVector({kRows, kIn}, x)).ToVector();
  const std::vector<double> merged =
      learn::MergeLora(w, a, b, kOut, kIn, kR, kAlpha);
  ASSERT_EQ(merged.size(), w.size());
  for (int64_t n = 0; n < kRows; ++n) {
    for (int64_t o = 0; o < kOut; ++o) {
      double sum = 0.0;
      for (int64_t i = 0; i < kIn; ++i) {
        sum += x[n * kIn + i] * merged[o * kIn + i];
      }
      EXPECT_NEAR(sum, y[n * kOut + o], 1e-5) << "row " << n << " out " << o;
    }
  }
  layer.MergeLora();
  const std::vector<float> folded = layer.weight().ToVector();
  for (size_t i = 0; i < merged.size(); ++i) {
    EXPECT_NEAR(merged[i], folded[i], 1e-6) << "weight " << i;
  }
}

}  // namespace
}  // namespace rotor
