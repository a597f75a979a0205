// RoPE scaling math (nn/rope_scaling.h) against values worked out
// independently in double (Python floats, from the formulas in
// docs/context-extension.md), and the properties every method must keep.
#include "nn/rope_scaling.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/error.h"

namespace rotor {
namespace {

constexpr double kPi = 3.14159265358979323846;

RopeScalingConfig Config(RopeType type, int64_t head_dim, double theta,
                         int64_t max_positions) {
  RopeScalingConfig config;
  config.rope_type = type;
  config.head_dim = head_dim;
  config.rope_theta = theta;
  config.max_position_embeddings = max_positions;
  return config;
}

double Theta(double base, int64_t i, int64_t r) {
  return std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(r));
}

std::vector<double> Ones(size_t n) { return std::vector<double>(n, 1.0); }

TEST(RopeScaling, DefaultIsPlainRope) {
  const RopeFrequencies f = ComputeRopeFrequencies(
      Config(RopeType::kDefault, 64, 10000.0, 2048), 2048);
  EXPECT_EQ(f.rope_type, RopeType::kDefault);
  EXPECT_EQ(f.head_dim, 64);
  EXPECT_EQ(f.rotary_dim, 64);
  ASSERT_EQ(f.inv_freq.size(), 32u);
  EXPECT_EQ(f.inv_freq[0], 1.0);
  EXPECT_NEAR(f.inv_freq[1], 0.7498942093324559, 1e-16);
  EXPECT_NEAR(f.inv_freq[31], 0.0001333521432163324, 1e-19);
  EXPECT_EQ(f.attention_factor, 1.0);
  EXPECT_EQ(f.base, 10000.0);
}

TEST(RopeScaling, PartialRotaryUsesRotaryDimInTheExponent) {
  RopeScalingConfig config = Config(RopeType::kDefault, 64, 10000.0, 2048);
  config.partial_rotary_factor = 0.5;
  const RopeFrequencies f = ComputeRopeFrequencies(config, 2048);
  EXPECT_EQ(f.head_dim, 64);
  EXPECT_EQ(f.rotary_dim, 32);
  ASSERT_EQ(f.inv_freq.size(), 16u);
  // 10000^(-2/32), not 10000^(-2/64).
  EXPECT_NEAR(f.inv_freq[1], 0.5623413251903491, 1e-15);
  // Python's int() truncation: int(80 * 0.3) = int(24.0) = 24.
  config.head_dim = 80;
  config.partial_rotary_factor = 0.3;
  EXPECT_EQ(RotaryDim(config), 24);
}

TEST(RopeScaling, LinearDividesEveryFrequency) {
  RopeScalingConfig config = Config(RopeType::kLinear, 64, 10000.0, 8192);
  config.factor = 4.0;
  const RopeFrequencies f = ComputeRopeFrequencies(config, 8192);
  for (int64_t i = 0; i < 32; ++i) {
    EXPECT_NEAR(f.inv_freq[i], Theta(1e4, i, 64) / 4.0,
                1e-15 * Theta(1e4, i, 64));
  }
  EXPECT_EQ(f.attention_factor, 1.0);
}

TEST(RopeScaling, NtkRaisesTheBase) {
  RopeScalingConfig config = Config(RopeType::kNtk, 64, 10000.0, 8192);
  config.factor = 4.0;
  const RopeFrequencies f = ComputeRopeFrequencies(config, 100);
  // b * s^(r/(r-2)) = 1e4 * 4^(64/62).
  EXPECT_NEAR(f.base, 41829.36592889948, 1e-9);
  EXPECT_EQ(f.inv_freq[0], 1.0);
  // The lowest frequency is divided by exactly s: b'^(-(r-2)/r) = theta/s.
  EXPECT_NEAR(f.inv_freq[31], Theta(1e4, 31, 64) / 4.0, 1e-18);
  EXPECT_EQ(f.attention_factor, 1.0);
}

TEST(RopeScaling, DynamicBaseBelowAtAndAboveTheOriginalLength) {
  RopeScalingConfig config = Config(RopeType::kDynamic, 64, 10000.0, 2048);
  config.factor = 4.0;
  const std::vector<double> unscaled = UnscaledInvFreq(config);
  for (int64_t length : {1, 1000, 2048}) {
    const RopeFrequencies f = ComputeRopeFrequencies(config, length);
    EXPECT_EQ(f.base, 10000.0) << "length " << length;
    EXPECT_EQ(f.inv_freq, unscaled) << "length " << length;
  }
  // L = 4096: b * (4 * 4096/2048 - 3)^(64/62) = 1e4 * 5^(64/62).
  const RopeFrequencies above = ComputeRopeFrequencies(config, 4096);
  EXPECT_NEAR(above.base, 52664.43433636452, 1e-9);
  EXPECT_NEAR(DynamicNtkBase(config, 4096), 52664.43433636452, 1e-9);
  EXPECT_NEAR(above.inv_freq[5], std::pow(52664.43433636452, -10.0 / 64),
              1e-15);
  // `factor` is a slope, not the final scale: the effective scale
  // s * L/L0 - (s - 1) reaches s = 4 already at L = (2 - 1/s) L0 = 3584,
  // where the base equals the static NTK base for s, and is 13 at L = 4 L0.
  EXPECT_NEAR(DynamicNtkBase(config, 3584), 41829.36592889948, 1e-9);
  EXPECT_NEAR(DynamicNtkBase(config, 8192),
              10000.0 * std::pow(13.0, 64.0 / 62.0), 1e-9);
  EXPECT_EQ(above.attention_factor, 1.0);
}

// The fix for transformers#25104: the base is a function of the length the
// caller fixes per sequence, with no hidden state, so one call gives the
// table for the prefill and every decode step; calling again with the same
// length gives the same frequencies bit for bit, whatever came before.
TEST(RopeScaling, DynamicIsAPureFunctionOfTheFixedLength) {
  RopeScalingConfig config = Config(RopeType::kDynamic, 64, 10000.0, 2048);
  config.factor = 4.0;
  const RopeFrequencies planned = ComputeRopeFrequencies(config, 5000);
  ComputeRopeFrequencies(config, 100000);  // a longer sequence in between
  ComputeRopeFrequencies(config, 10);      // and a short one
  EXPECT_EQ(ComputeRopeFrequencies(config, 5000).inv_freq, planned.inv_freq);
  EXPECT_TRUE(RopeDependsOnSequenceLength(RopeType::kDynamic));
  EXPECT_TRUE(RopeDependsOnSequenceLength(RopeType::kLongRope));
  EXPECT_FALSE(RopeDependsOnSequenceLength(RopeType::kYarn));
}

TEST(RopeScaling, YarnRampRunsBetweenPairIndices8And21) {
  RopeScalingConfig config = Config(RopeType::kYarn, 64, 10000.0, 8192);
  config.factor = 4.0;
  config.original_max_position_embeddings = 2048;
  // corr(32) = 8.064 -> floor 8; corr(1) = 20.105 -> ceil 21.
  const YarnRampBounds bounds = ComputeYarnRampBounds(config);
  EXPECT_EQ(bounds.low, 8.0);
  EXPECT_EQ(bounds.high, 21.0);
  const RopeFrequencies f = ComputeRopeFrequencies(config, 8192);
  for (int64_t i = 0; i <= 8; ++i) {
    // Bit-identical to the unscaled frequency (extrapolation weight 1).
    EXPECT_EQ(f.inv_freq[i], 1.0 / std::pow(1e4, 2.0 * i / 64)) << i;
  }
  for (int64_t i = 21; i < 32; ++i) {
    EXPECT_NEAR(f.inv_freq[i], Theta(1e4, i, 64) / 4.0, 1e-15 * f.inv_freq[i])
        << i;
  }
  // i = 14: ramp (14 - 8)/13, theta/s * ramp + theta * (1 - ramp).
  EXPECT_NEAR(f.inv_freq[14], 0.011627211527177573, 1e-17);
  for (int64_t i = 9; i < 21; ++i) {
    const double ratio = f.inv_freq[i] / Theta(1e4, i, 64);
    EXPECT_LT(ratio, 1.0) << i;
    EXPECT_GT(ratio, 0.25) << i;
    EXPECT_LT(f.inv_freq[i] / Theta(1e4, i + 1, 64),
              f.inv_freq[i - 1] / Theta(1e4, i, 64) + 1e-12)
        << "ratio must fall monotonically, i " << i;
  }
  // a = 0.1 ln 4 + 1.
  EXPECT_NEAR(f.attention_factor, 1.138629436111989, 1e-15);
}

TEST(RopeScaling, YarnBoundsForLlamaSizedHeads) {
  RopeScalingConfig config = Config(RopeType::kYarn, 128, 5e5, 65536);
  config.factor = 8.0;
  config.original_max_position_embeddings = 8192;
  const YarnRampBounds bounds = ComputeYarnRampBounds(config);
  EXPECT_EQ(bounds.low, 18.0);
  EXPECT_EQ(bounds.high, 35.0);
}

TEST(RopeScaling, YarnWithoutTruncateKeepsFractionalBounds) {
  RopeScalingConfig config = Config(RopeType::kYarn, 64, 1.5e5, 131072);
  config.factor = 32.0;
  config.original_max_position_embeddings = 4096;
  config.truncate = false;
  const YarnRampBounds bounds = ComputeYarnRampBounds(config);
  EXPECT_NEAR(bounds.low, 8.092779115512402, 1e-12);
  EXPECT_NEAR(bounds.high, 17.39802450158856, 1e-12);
  const RopeFrequencies f = ComputeRopeFrequencies(config, 1);
  // i = 8 is below low = 8.09: unscaled; i = 9 is on the ramp.
  EXPECT_EQ(f.inv_freq[8], 1.0 / std::pow(1.5e5, 16.0 / 64));
  const double ramp9 = (9.0 - bounds.low) / (bounds.high - bounds.low);
  EXPECT_NEAR(f.inv_freq[9],
              Theta(1.5e5, 9, 64) * (ramp9 / 32.0 + (1.0 - ramp9)), 1e-15);
}

TEST(RopeScaling, YarnAttentionFactors) {
  RopeScalingConfig config = Config(RopeType::kYarn, 64, 10000.0, 8192);
  config.factor = 40.0;
  config.original_max_position_embeddings = 4096;
  // DeepSeek-V2: g(40, 0.707) / g(40, 1).
  config.mscale = 0.707;
  config.mscale_all_dim = 1.0;
  EXPECT_NEAR(ComputeRopeFrequencies(config, 1).attention_factor,
              0.9210423553163399, 1e-15);
  // Equal mscales give exactly 1 (DeepSeek-V3).
  config.mscale = 1.0;
  EXPECT_EQ(ComputeRopeFrequencies(config, 1).attention_factor, 1.0);
  // A lone mscale is ignored, as in HF: 0.1 ln 40 + 1.
  config.mscale_all_dim.reset();
  EXPECT_NEAR(ComputeRopeFrequencies(config, 1).attention_factor,
              0.1 * std::log(40.0) + 1.0, 1e-15);
  // An explicit attention_factor wins over everything.
  config.attention_factor = 0.75;
  EXPECT_EQ(ComputeRopeFrequencies(config, 1).attention_factor, 0.75);
  // factor 1: no extension, g = 1.
  config.attention_factor.reset();
  config.factor = 1.0;
  EXPECT_EQ(ComputeRopeFrequencies(config, 1).attention_factor, 1.0);
}

TEST(RopeScaling, Llama3ThreeBands) {
  RopeScalingConfig config = Config(RopeType::kLlama3, 128, 5e5, 131072);
  config.factor = 8.0;
  config.low_freq_factor = 1.0;
  config.high_freq_factor = 4.0;
  config.original_max_position_embeddings = 8192;
  const RopeFrequencies f = ComputeRopeFrequencies(config, 131072);
  ASSERT_EQ(f.inv_freq.size(), 64u);
  for (int64_t i = 0; i <= 28; ++i) {
    EXPECT_EQ(f.inv_freq[i], 1.0 / std::pow(5e5, 2.0 * i / 128)) << i;
  }
  for (int64_t i = 29; i <= 34; ++i) {
    const double theta = Theta(5e5, i, 128);
    const double wavelength = 2.0 * kPi / theta;
    const double smooth = (8192.0 / wavelength - 1.0) / 3.0;
    EXPECT_GT(smooth, 0.0) << i;
    EXPECT_LT(smooth, 1.0) << i;
    EXPECT_NEAR(f.inv_freq[i], (1.0 - smooth) * theta / 8.0 + smooth * theta,
                1e-15 * theta)
        << i;
  }
  for (int64_t i = 35; i < 64; ++i) {
    EXPECT_NEAR(f.inv_freq[i], Theta(5e5, i, 128) / 8.0, 1e-15 * f.inv_freq[i])
        << i;
  }
  // Pair 29: wavelength 2401.738 tokens, smooth = (8192/2401.738 - 1)/3.
  EXPECT_NEAR(2.0 * kPi / Theta(5e5, 29, 128), 2401.7381221887576, 1e-9);
  EXPECT_EQ(f.attention_factor, 1.0);
}

TEST(RopeScaling, LongRopeSwitchesFactorsButNotTheAttentionFactor) {
  // Phi-3-mini-128k's shape: factor implied by 131072 / 4096 = 32.
  RopeScalingConfig config = Config(RopeType::kLongRope, 96, 10000.0, 131072);
  config.original_max_position_embeddings = 4096;
  std::vector<double> short_factor(48), long_factor(48);
  for (size_t i = 0; i < 48; ++i) {
    short_factor[i] = 1.0 + 0.01 * i;
    long_factor[i] = 1.0 + 0.5 * i;
  }
  config.short_factor = short_factor;
  config.long_factor = long_factor;
  const RopeFrequencies at_original = ComputeRopeFrequencies(config, 4096);
  const RopeFrequencies beyond = ComputeRopeFrequencies(config, 4097);
  for (int64_t i = 0; i < 48; ++i) {
    EXPECT_NEAR(at_original.inv_freq[i], Theta(1e4, i, 96) / short_factor[i],
                1e-15 * at_original.inv_freq[i]);
    EXPECT_NEAR(beyond.inv_freq[i], Theta(1e4, i, 96) / long_factor[i],
                1e-15 * beyond.inv_freq[i]);
  }
  // sqrt(1 + ln 32 / ln 4096), the same on both sides of the switch.
  EXPECT_NEAR(at_original.attention_factor, 1.1902380714238083, 1e-15);
  EXPECT_EQ(beyond.attention_factor, at_original.attention_factor);
  // An explicit factor or attention_factor is honoured.
  config.factor = 16.0;
  EXPECT_NEAR(ComputeRopeFrequencies(config, 1).attention_factor,
              std::sqrt(1.0 + std::log(16.0) / std::log(4096.0)), 1e-15);
  config.attention_factor = 1.5;
  EXPECT_EQ(ComputeRopeFrequencies(config, 1).attention_factor, 1.5);
  // No extension (max positions == original): a = 1.
  config.factor.reset();
  config.attention_factor.reset();
  config.max_position_embeddings = 4096;
  EXPECT_EQ(ComputeRopeFrequencies(config, 1).attention_factor, 1.0);
}

// Partial rotary combines with every method: r/2 frequencies from r.
TEST(RopeScaling, PartialRotaryCombinesWithEveryMethod) {
  for (RopeType type : {RopeType::kDefault, RopeType::kLinear, RopeType::kNtk,
                        RopeType::kDynamic, RopeType::kYarn, RopeType::kLlama3,
                        RopeType::kLongRope}) {
    RopeScalingConfig config = Config(type, 64, 10000.0, 4096);
    config.partial_rotary_factor = 0.25;  // r = 16
    config.factor = 4.0;
    if (type == RopeType::kLlama3) {
      config.low_freq_factor = 1.0;
      config.high_freq_factor = 4.0;
      config.original_max_position_embeddings = 1024;
    }
    if (type == RopeType::kYarn) config.original_max_position_embeddings = 1024;
    if (type == RopeType::kLongRope) {
      config.short_factor = Ones(8);
      config.long_factor = std::vector<double>(8, 4.0);
      config.original_max_position_embeddings = 1024;
    }
    const RopeFrequencies f = ComputeRopeFrequencies(config, 4096);
    EXPECT_EQ(f.rotary_dim, 16) << RopeTypeName(type);
    EXPECT_EQ(f.inv_freq.size(), 8u) << RopeTypeName(type);
    EXPECT_EQ(f.inv_freq[0], type == RopeType::kLinear     ? 0.25
                             : type == RopeType::kLongRope ? 0.25
                                                           : 1.0)
        << RopeTypeName(type);
  }
  // ntk with r = 16: base * 4^(16/14).
  RopeScalingConfig ntk = Config(RopeType::kNtk, 64, 10000.0, 4096);
  ntk.partial_rotary_factor = 0.25;
  ntk.factor = 4.0;
  EXPECT_NEAR(ComputeRopeFrequencies(ntk, 1).base,
              10000.0 * std::pow(4.0, 16.0 / 14.0), 1e-8);
}

// Rotates the first r channels of x (pairs (i, i + r/2), split-half layout)
// by p * inv_freq_i, scaled by a, and passes the rest through.
std::vector<double> Rotate(const std::vector<double>& x,
                           const RopeFrequencies& f, int64_t position) {
  std::vector<double> y = x;
  const size_t half = f.inv_freq.size();
  for (size_t i = 0; i < half; ++i) {
    const double angle = static_cast<double>(position) * f.inv_freq[i];
    const double c = f.attention_factor * std::cos(angle);
    const double s = f.attention_factor * std::sin(angle);
    y[i] = x[i] * c - x[i + half] * s;
    y[i + half] = x[i + half] * c + x[i] * s;
  }
  return y;
}

double Dot(const std::vector<double>& a, const std::vector<double>& b) {
  double sum = 0.0;
  for (size_t i = 0; i < a.size(); ++i) sum += a[i] * b[i];
  return sum;
}

// q_m . k_n depends only on m - n for every method (with partial rotary, and
// scaled by a^2 on the rotated channels).
TEST(RopeScaling, RelativePositionPropertyHoldsForEveryMethod) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  for (RopeType type : {RopeType::kDefault, RopeType::kLinear, RopeType::kNtk,
                        RopeType::kDynamic, RopeType::kYarn, RopeType::kLlama3,
                        RopeType::kLongRope}) {
    RopeScalingConfig config = Config(type, 48, 10000.0, 2048);
    config.partial_rotary_factor = 0.5;  // r = 24: channels 24..47 pass
    config.factor = 8.0;
    config.original_max_position_embeddings = 512;
    config.low_freq_factor = 1.0;
    config.high_freq_factor = 4.0;
    config.short_factor = Ones(12);
    config.long_factor = std::vector<double>(12, 3.0);
    const RopeFrequencies f = ComputeRopeFrequencies(config, 4096);
    std::vector<double> q(48), k(48);
    for (double& v : q) v = uniform(rng);
    for (double& v : k) v = uniform(rng);
    const double reference = Dot(Rotate(q, f, 7), Rotate(k, f, 3));
    for (int64_t shift : {1, 100, 3000}) {
      const double shifted =
          Dot(Rotate(q, f, 7 + shift), Rotate(k, f, 3 + shift));
      EXPECT_NEAR(shifted, reference, 1e-11)
          << RopeTypeName(type) << " shift " << shift;
    }
    // And it does depend on the distance.
    EXPECT_GT(std::abs(Dot(Rotate(q, f, 8), Rotate(k, f, 3)) - reference), 1e-6)
        << RopeTypeName(type);
  }
}

// Why the dynamic base must be fixed per sequence (transformers#25104): if
// each decode step recomputed the base from the current length, the key
// cached at step n (rotated with base(n + 1)) and the query at step m (rotated
// with base(m + 1)) would no longer give a score that depends only on m - n.
// With one table for the whole sequence, it does.
TEST(RopeScaling, DynamicWithAFixedBaseKeepsKvCacheScoresConsistent) {
  RopeScalingConfig config = Config(RopeType::kDynamic, 32, 10000.0, 64);
  config.factor = 4.0;
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<double> q(32), k(32);
  for (double& v : q) v = uniform(rng);
  for (double& v : k) v = uniform(rng);
  // Key at position n, query at position n + 10, decoded one token at a time
  // past L0 = 64.
  auto score = [&](int64_t n, bool fixed_base) {
    const int64_t m = n + 10;
    const RopeFrequencies key_table =
        ComputeRopeFrequencies(config, fixed_base ? 512 : n + 1);
    const RopeFrequencies query_table =
        ComputeRopeFrequencies(config, fixed_base ? 512 : m + 1);
    return Dot(Rotate(q, query_table, m), Rotate(k, key_table, n));
  };
  EXPECT_NEAR(score(100, true), score(300, true), 1e-12);
  EXPECT_GT(std::abs(score(100, false) - score(300, false)), 1e-3);
}

TEST(RopeScaling, ProblemsNameTheKey) {
  auto key_of = [](const RopeScalingConfig& config) {
    const std::optional<RopeConfigProblem> problem =
        FindRopeConfigProblem(config);
    return problem ? problem->key : std::string("none");
  };
  RopeScalingConfig config = Config(RopeType::kLinear, 64, 10000.0, 2048);
  EXPECT_EQ(key_of(config), "rope_scaling.factor");  // missing
  config.factor = 0.5;
  EXPECT_EQ(key_of(config), "rope_scaling.factor");  // < 1
  config.factor = 2.0;
  EXPECT_EQ(key_of(config), "none");
  config.head_dim = 63;
  EXPECT_EQ(key_of(config), "head_dim");  // odd r
  config.head_dim = 64;
  config.partial_rotary_factor = 0.3;  // int(19.2) = 19
  EXPECT_EQ(key_of(config), "partial_rotary_factor");
  config.partial_rotary_factor = 1.0;
  config.rope_type = RopeType::kLongRope;
  EXPECT_EQ(key_of(config), "rope_scaling.short_factor");
  config.short_factor = Ones(32);
  config.long_factor = Ones(31);
  EXPECT_EQ(key_of(config), "rope_scaling.long_factor");
  config.rope_type = RopeType::kLlama3;
  EXPECT_EQ(key_of(config), "rope_scaling.original_max_position_embeddings");

  RopeScalingConfig bad = Config(RopeType::kDefault, 64, 10000.0, 2048);
  bad.head_dim = 63;
  try {
    ComputeRopeFrequencies(bad, 1);
    FAIL() << "expected rotor::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("head_dim"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("= 63 must be even"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(
      ComputeRopeFrequencies(Config(RopeType::kDefault, 64, 1e4, 2048), 0),
      Error);
}

}  // namespace
}  // namespace rotor
