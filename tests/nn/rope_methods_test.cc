// The method records (nn/rope_methods.h): every method once, in display
// order, and each trait held to what the method's frequencies and keys do,
// so a record cannot claim a trait its math does not have.
#include "nn/rope_methods.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"

namespace rotor {
namespace {

constexpr int64_t kOriginal = 512;  // L0
constexpr double kFactor = 4.0;     // s

// A usable config of `type`: L0 512 for the methods that read it, s = 4,
// max_position_embeddings s * L0 (L0 for dynamic), Llama 3.1's bands, long
// factors 2 (not s, so longrope does not look like a stretch by s).
RopeScalingConfig Valid(RopeType type) {
  RopeScalingConfig config;
  config.rope_type = type;
  config.head_dim = 64;
  config.rope_theta = 10000.0;
  const RopeMethod& method = RopeMethodOf(type);
  config.max_position_embeddings =
      method.original_length_from == OriginalLengthFrom::kMaxPositions
          ? kOriginal
          : static_cast<int64_t>(kFactor) * kOriginal;
  if (method.scales()) config.factor = kFactor;
  if (method.reads_original_length()) {
    config.original_max_position_embeddings = kOriginal;
  }
  if (type == RopeType::kLlama3) {
    config.low_freq_factor = 1.0;
    config.high_freq_factor = 4.0;
  }
  if (type == RopeType::kLongRope) {
    config.short_factor = std::vector<double>(32, 1.0);
    config.long_factor = std::vector<double>(32, 2.0);
  }
  EXPECT_FALSE(FindRopeConfigProblem(config)) << method.name;
  return config;
}

bool SameTables(const RopeFrequencies& a, const RopeFrequencies& b) {
  return a.inv_freq == b.inv_freq && a.attention_factor == b.attention_factor;
}

bool HasKey(RopeType type, const std::string& key) {
  const std::vector<std::string> keys = RopeScalingKeys(type);
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

TEST(RopeMethods, EveryMethodOnceInDisplayOrder) {
  std::vector<std::string> names;
  for (const RopeMethod& method : RopeMethods()) {
    names.push_back(method.name);
    EXPECT_EQ(&RopeMethodOf(method.type), &method) << method.name;
    EXPECT_EQ(RopeTypeName(method.type), std::string(method.name));
    EXPECT_EQ(RopeTypeFromName(method.name), method.type) << method.name;
  }
  EXPECT_EQ(names,
            (std::vector<std::string>{"default", "linear", "ntk", "dynamic",
                                      "yarn", "llama3", "longrope"}));
  EXPECT_EQ(RopeTypeNames(),
            "default, linear, ntk, dynamic, yarn, llama3, longrope");
  ASSERT_EQ(RopeTypes().size(), RopeMethods().size());
  for (size_t i = 0; i < RopeTypes().size(); ++i) {
    EXPECT_EQ(RopeTypes()[i], RopeMethods()[i].type);
  }
}

// What HF's configs say of each method and its math does not show: which
// methods require `factor` (longrope defaults it to M / L0), and where each
// finds L0 (linear and ntk have no key for it).
TEST(RopeMethods, FactorAndOriginalLengthAsHfConfigsGiveThem) {
  using L0 = OriginalLengthFrom;
  const std::vector<std::pair<FactorUse, L0>> expected = {
      {FactorUse::kNone, L0::kNone},
      {FactorUse::kRequired, L0::kMaxPositionsOverFactor},
      {FactorUse::kRequired, L0::kMaxPositionsOverFactor},
      {FactorUse::kRequired, L0::kMaxPositions},
      {FactorUse::kRequired, L0::kOriginalKey},
      {FactorUse::kRequired, L0::kOriginalKey},
      {FactorUse::kOptional, L0::kOriginalKey}};
  ASSERT_EQ(RopeMethods().size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const RopeMethod& method = RopeMethods()[i];
    EXPECT_EQ(method.factor_use, expected[i].first) << method.name;
    EXPECT_EQ(method.original_length_from, expected[i].second) << method.name;
  }
}

// Only the methods that say so change with the sequence length: at L0 and
// at twice max_position_embeddings their tables differ, the others' do not.
TEST(RopeMethods, DependsOnSequenceLengthIsWhatTheFrequenciesDo) {
  for (const RopeMethod& method : RopeMethods()) {
    const RopeScalingConfig config = Valid(method.type);
    const bool changes = !SameTables(
        ComputeRopeFrequencies(config, kOriginal),
        ComputeRopeFrequencies(config, 2 * config.max_position_embeddings));
    EXPECT_EQ(changes, method.depends_on_sequence_length) << method.name;
    EXPECT_EQ(RopeDependsOnSequenceLength(method.type),
              method.depends_on_sequence_length);
  }
}

// The methods that read original_max_position_embeddings take the key and
// change with it; the others do not take it.
TEST(RopeMethods, ReadsOriginalLengthIsWhatTheKeysAndFrequenciesDo) {
  for (const RopeMethod& method : RopeMethods()) {
    EXPECT_EQ(HasKey(method.type, "original_max_position_embeddings"),
              method.reads_original_length())
        << method.name;
    if (!method.reads_original_length()) continue;
    RopeScalingConfig config = Valid(method.type);
    const int64_t length = config.max_position_embeddings;
    const RopeFrequencies before = ComputeRopeFrequencies(config, length);
    config.original_max_position_embeddings = 2 * kOriginal;
    EXPECT_FALSE(SameTables(before, ComputeRopeFrequencies(config, length)))
        << method.name;
  }
}

// A method that scales takes `factor` (required unless it has a default),
// and the one that does not scale leaves every frequency unscaled.
TEST(RopeMethods, FactorUseIsWhatTheCheckAndFrequenciesDo) {
  for (const RopeMethod& method : RopeMethods()) {
    EXPECT_EQ(HasKey(method.type, "factor"), method.scales()) << method.name;
    RopeScalingConfig config = Valid(method.type);
    config.factor.reset();
    const std::optional<RopeConfigProblem> problem =
        FindRopeConfigProblem(config);
    EXPECT_EQ(problem && problem->key == "rope_scaling.factor",
              method.factor_use == FactorUse::kRequired)
        << method.name;
    // Past max_position_embeddings, where dynamic scales too.
    const RopeScalingConfig valid = Valid(method.type);
    const RopeFrequencies f =
        ComputeRopeFrequencies(valid, 2 * valid.max_position_embeddings);
    const bool unscaled =
        f.inv_freq == UnscaledInvFreq(valid) && f.attention_factor == 1.0;
    EXPECT_EQ(unscaled, !method.scales()) << method.name;
  }
}

// The slowest pair of a method that stretches by s turns s times slower
// (theta / s) for a sequence of L0 tokens.
TEST(RopeMethods, StretchesByFactorIsWhatTheSlowestPairDoes) {
  for (const RopeMethod& method : RopeMethods()) {
    const RopeScalingConfig config = Valid(method.type);
    const double slowest =
        ComputeRopeFrequencies(config, kOriginal).inv_freq.back();
    const double stretched = UnscaledInvFreq(config).back() / kFactor;
    EXPECT_EQ(std::fabs(slowest - stretched) <= 1e-12 * stretched,
              method.stretches_by_factor)
        << method.name << ": " << slowest << " vs " << stretched;
  }
}

// Where L0 is max_position_embeddings and the method scales, a sequence up
// to it runs unscaled (so a fine-tune there trains plain RoPE) and a longer
// one does not; every other scaling method scales at max_position_embeddings.
TEST(RopeMethods, ScalesOnlyPastMaxPositionsIsWhatTheFrequenciesDo) {
  for (const RopeMethod& method : RopeMethods()) {
    if (!method.scales()) {
      EXPECT_FALSE(method.scales_only_past_max_positions()) << method.name;
      continue;
    }
    const RopeScalingConfig config = Valid(method.type);
    const int64_t m = config.max_position_embeddings;
    const bool unscaled_up_to_m =
        ComputeRopeFrequencies(config, m).inv_freq == UnscaledInvFreq(config);
    EXPECT_EQ(unscaled_up_to_m, method.scales_only_past_max_positions())
        << method.name;
    EXPECT_NE(ComputeRopeFrequencies(config, m + 1).inv_freq,
              UnscaledInvFreq(config))
        << method.name;
  }
}

// What factor_is_length_ratio claims, held to the settings and the
// frequencies: at factor s the method's settings (RopeSettingsAtFactor)
// declare M = s * L0 positions, and those are the positions the scaling
// maps into the pre-trained range: the slowest pair (which pre-training saw
// turn least) turns as far within M as it did within L0 unscaled. Where the
// factor is optional (longrope) its absence means M / L0. The two scaling
// methods without the trait fail the claim as their records say: dynamic
// keeps M = L0, and Llama 3.1's published llama3 settings (M 131072, s 8,
// L0 8192) declare positions whose slowest pair turns twice as far.
TEST(RopeMethods, FactorIsLengthRatioIsWhatTheSettingsAndFrequenciesDo) {
  // The slowest pair's angle over M scaled, over its angle over L0
  // unscaled.
  const auto slowest_stretch = [](const RopeScalingConfig& rope,
                                  int64_t original) {
    const int64_t m = rope.max_position_embeddings;
    return ComputeRopeFrequencies(rope, m).inv_freq.back() *
           static_cast<double>(m) /
           (UnscaledInvFreq(rope).back() * static_cast<double>(original));
  };
  RopeScalingConfig base;
  base.head_dim = 64;
  base.rope_theta = 10000.0;
  base.max_position_embeddings = kOriginal;
  for (const RopeMethod& method : RopeMethods()) {
    if (!method.scales()) {
      EXPECT_FALSE(method.factor_is_length_ratio) << method.name;
      continue;
    }
    const RopeScalingConfig rope =
        RopeSettingsAtFactor(base, method.type, kFactor, kOriginal);
    ASSERT_FALSE(FindRopeConfigProblem(rope)) << method.name;
    const bool declares_ratio = rope.max_position_embeddings ==
                                static_cast<int64_t>(kFactor) * kOriginal;
    if (!method.factor_is_length_ratio) {
      // Llama 3.1's declares more: below.
      EXPECT_TRUE(!declares_ratio || method.type == RopeType::kLlama3)
          << method.name;
      continue;
    }
    EXPECT_TRUE(declares_ratio) << method.name;
    EXPECT_NEAR(slowest_stretch(rope, kOriginal), 1.0, 1e-12) << method.name;
    if (method.factor_use == FactorUse::kOptional) {
      RopeScalingConfig without = rope;
      without.factor.reset();
      const int64_t m = rope.max_position_embeddings;
      EXPECT_TRUE(SameTables(ComputeRopeFrequencies(rope, m),
                             ComputeRopeFrequencies(without, m)))
          << method.name;
    }
  }
  RopeScalingConfig llama31;
  llama31.rope_type = RopeType::kLlama3;
  llama31.head_dim = 128;
  llama31.rope_theta = 500000.0;
  llama31.max_position_embeddings = 131072;
  llama31.factor = 8.0;
  llama31.original_max_position_embeddings = 8192;
  llama31.low_freq_factor = 1.0;
  llama31.high_freq_factor = 4.0;
  ASSERT_FALSE(FindRopeConfigProblem(llama31));
  EXPECT_FALSE(RopeMethodOf(RopeType::kLlama3).factor_is_length_ratio);
  EXPECT_NEAR(slowest_stretch(llama31, 8192), 2.0, 1e-12);
}

// The key list of a length switch, by the key's name.
std::vector<double>& FactorList(RopeScalingConfig& config,
                                const std::string& key) {
  if (key == "rope_scaling.short_factor") return *config.short_factor;
  EXPECT_EQ(key, "rope_scaling.long_factor");
  return *config.long_factor;
}

// A method with a length switch has one table up to L0 and another past
// it, the same at every length past L0; the first key moves only the
// first table and the second only the second. Every other method either
// keeps one table or changes it with each length past L0 (dynamic).
TEST(RopeMethods, LengthSwitchIsWhatTheFrequenciesDo) {
  for (const RopeMethod& method : RopeMethods()) {
    RopeScalingConfig config = Valid(method.type);
    const int64_t l0 = OriginalLength(config);
    const int64_t past = 2 * config.max_position_embeddings;
    const bool switches = SameTables(ComputeRopeFrequencies(config, 1),
                                     ComputeRopeFrequencies(config, l0)) &&
                          !SameTables(ComputeRopeFrequencies(config, l0),
                                      ComputeRopeFrequencies(config, l0 + 1)) &&
                          SameTables(ComputeRopeFrequencies(config, l0 + 1),
                                     ComputeRopeFrequencies(config, past));
    EXPECT_EQ(switches, method.length_switch.has_value()) << method.name;
    if (!method.length_switch) continue;
    for (const char* key : {method.length_switch->up_to_original,
                            method.length_switch->past_original}) {
      ASSERT_EQ(std::string(key).rfind("rope_scaling.", 0), 0u) << key;
      EXPECT_TRUE(HasKey(method.type, std::string(key).substr(13))) << key;
    }
    const RopeScalingConfig before = config;
    FactorList(config, method.length_switch->up_to_original).back() = 3.0;
    EXPECT_FALSE(SameTables(ComputeRopeFrequencies(before, l0),
                            ComputeRopeFrequencies(config, l0)));
    EXPECT_TRUE(SameTables(ComputeRopeFrequencies(before, l0 + 1),
                           ComputeRopeFrequencies(config, l0 + 1)));
    config = before;
    FactorList(config, method.length_switch->past_original).back() = 3.0;
    EXPECT_TRUE(SameTables(ComputeRopeFrequencies(before, l0),
                           ComputeRopeFrequencies(config, l0)));
    EXPECT_FALSE(SameTables(ComputeRopeFrequencies(before, l0 + 1),
                            ComputeRopeFrequencies(config, l0 + 1)));
  }
}

// A method that ramps by turns reads beta_fast and beta_slow, and a
// beta_fast below the slowest pair's turns within L0 leaves every pair
// unscaled though the factor is 4.
TEST(RopeMethods, RampsByTurnsIsWhatBetaFastDoes) {
  for (const RopeMethod& method : RopeMethods()) {
    EXPECT_EQ(
        HasKey(method.type, "beta_fast") && HasKey(method.type, "beta_slow"),
        method.ramps_by_turns)
        << method.name;
    if (!method.ramps_by_turns) continue;
    RopeScalingConfig config = Valid(method.type);
    // The slowest pair, wavelength 2 pi 10000^(62/64) ~ 4.6e4 tokens, turns
    // 512 / 4.6e4 ~ 0.011 times within L0.
    config.beta_fast = 0.01;
    config.beta_slow = 0.005;
    ASSERT_FALSE(FindRopeConfigProblem(config)) << method.name;
    EXPECT_EQ(ComputeRopeFrequencies(config, kOriginal).inv_freq,
              UnscaledInvFreq(config))
        << method.name;
  }
}

// The notes are the settings each method's frequencies use: YaRN's ramp
// bounds, Llama 3's band wavelengths L0 / high and L0 / low, and the
// LongRoPE factor list in use, which turns long past L0.
TEST(RopeMethods, NotesAreTheSettingsTheFrequenciesUse) {
  for (const RopeMethod& method : RopeMethods()) {
    const RopeScalingConfig config = Valid(method.type);
    const std::vector<RopeNote> notes = RopeNotes(config, kOriginal);
    EXPECT_EQ(notes.empty(), method.notes == nullptr) << method.name;
    if (method.type == RopeType::kYarn) {
      const YarnRampBounds bounds = ComputeYarnRampBounds(config);
      ASSERT_EQ(notes.size(), 3u);
      EXPECT_EQ(notes[0].label, "beta_fast, beta_slow");
      EXPECT_EQ(notes[0].value, "32, 1");
      EXPECT_EQ(notes[1].value, "true");
      EXPECT_EQ(notes[2].curve_key, "yarn_ramp");
      EXPECT_EQ(notes[2].curve_numbers,
                (std::vector<double>{bounds.low, bounds.high}));
      EXPECT_EQ(notes[2].value, StrCat(FullDigits(bounds.low), " .. ",
                                       FullDigits(bounds.high)));
    }
    if (method.type == RopeType::kLlama3) {
      ASSERT_EQ(notes.size(), 3u);
      EXPECT_EQ(notes[2].curve_key, "llama3_bands");
      EXPECT_EQ(notes[2].curve_numbers, (std::vector<double>{128, 512}));
      EXPECT_EQ(notes[2].value, "< 128 unchanged, > 512 divided by factor");
    }
    if (method.type == RopeType::kLongRope) {
      ASSERT_EQ(notes.size(), 1u);
      EXPECT_EQ(notes[0].curve_word, "short");
      EXPECT_EQ(notes[0].value, "short_factor (length <= original)");
      const std::vector<RopeNote> beyond = RopeNotes(config, kOriginal + 1);
      EXPECT_EQ(beyond[0].curve_word, "long");
      EXPECT_EQ(beyond[0].value, "long_factor (length > original)");
    }
  }
  RopeScalingConfig yarn = Valid(RopeType::kYarn);
  yarn.mscale = 0.5;
  yarn.mscale_all_dim = 0.25;
  const std::vector<RopeNote> notes = RopeNotes(yarn, kOriginal);
  ASSERT_EQ(notes.size(), 5u);
  EXPECT_EQ(notes[3].label + " " + notes[3].value, "mscale 0.5");
  EXPECT_EQ(notes[4].label + " " + notes[4].value, "mscale_all_dim 0.25");
}

// The keys a method names for its attention factor are the ones that move
// it: yarn's mscale and mscale_all_dim when both are set, else the factor;
// longrope's max_position_embeddings and L0 when it has no factor.
TEST(RopeMethods, AttentionFactorKeysMoveTheAttentionFactor) {
  RopeScalingConfig yarn = Valid(RopeType::kYarn);
  const RopeMethod& method = RopeMethodOf(RopeType::kYarn);
  ASSERT_NE(method.attention_factor_keys, nullptr);
  EXPECT_TRUE(method.attention_factor_keys(yarn).empty());
  yarn.mscale = 1.0;
  yarn.mscale_all_dim = 0.5;
  EXPECT_EQ(method.attention_factor_keys(yarn),
            (std::vector<std::string>{"rope_scaling.mscale",
                                      "rope_scaling.mscale_all_dim"}));
  const double a = ComputeRopeFrequencies(yarn, kOriginal).attention_factor;
  yarn.mscale = 2.0;
  EXPECT_NE(ComputeRopeFrequencies(yarn, kOriginal).attention_factor, a);

  // longrope without a factor: s = max_position_embeddings / L0, so those
  // two move it; with a factor, the factor alone.
  RopeScalingConfig longrope = Valid(RopeType::kLongRope);
  const RopeMethod& longrope_method = RopeMethodOf(RopeType::kLongRope);
  ASSERT_NE(longrope_method.attention_factor_keys, nullptr);
  EXPECT_TRUE(longrope_method.attention_factor_keys(longrope).empty());
  const auto attention = [](const RopeScalingConfig& config) {
    return ComputeRopeFrequencies(config, kOriginal).attention_factor;
  };
  RopeScalingConfig longer = longrope;
  longer.max_position_embeddings *= 2;
  EXPECT_EQ(attention(longer), attention(longrope));
  longrope.factor.reset();
  longer.factor.reset();
  EXPECT_EQ(longrope_method.attention_factor_keys(longrope),
            (std::vector<std::string>{
                "max_position_embeddings",
                "rope_scaling.original_max_position_embeddings"}));
  EXPECT_NE(attention(longer), attention(longrope));
  RopeScalingConfig later = longrope;
  later.original_max_position_embeddings = 2 * kOriginal;
  EXPECT_NE(attention(later), attention(longrope));
}

// A raised base is the base in force, and its exponent r/(r-2) is refused
// for r = 2; the other methods keep rope_theta and take r = 2.
TEST(RopeMethods, RaisedBaseIsTheBaseInForce) {
  for (const RopeMethod& method : RopeMethods()) {
    RopeScalingConfig config = Valid(method.type);
    const int64_t length = 2 * config.max_position_embeddings;
    const double base = ComputeRopeFrequencies(config, length).base;
    EXPECT_EQ(base, method.raised_base ? method.raised_base(config, length)
                                       : config.rope_theta)
        << method.name;
    config.head_dim = 2;
    if (config.short_factor) config.short_factor->resize(1);
    if (config.long_factor) config.long_factor->resize(1);
    const std::optional<RopeConfigProblem> problem =
        FindRopeConfigProblem(config);
    EXPECT_EQ(problem.has_value(), method.raised_base != nullptr)
        << method.name << ": " << (problem ? problem->message : "");
  }
}

// The settings at a factor are usable, stretch a model pre-trained at L0 to
// s * L0 (dynamic keeps L0 as max_position_embeddings) and keep the base
// model's rotary settings.
TEST(RopeMethods, SettingsAtFactorAreUsable) {
  RopeScalingConfig base;
  base.head_dim = 48;
  base.rope_theta = 5e5;
  base.partial_rotary_factor = 0.5;
  base.max_position_embeddings = 256;
  for (const RopeMethod& method : RopeMethods()) {
    const RopeScalingConfig rope =
        RopeSettingsAtFactor(base, method.type, 2.5, 256);
    const std::optional<RopeConfigProblem> problem =
        FindRopeConfigProblem(rope);
    EXPECT_FALSE(problem) << method.name << ": " << problem->key << " "
                          << problem->message;
    EXPECT_EQ(rope.rope_type, method.type);
    EXPECT_EQ(rope.head_dim, 48);
    EXPECT_EQ(rope.rope_theta, 5e5);
    EXPECT_EQ(rope.partial_rotary_factor, 0.5);
    EXPECT_EQ(rope.max_position_embeddings,
              method.type == RopeType::kDynamic ? 256 : 640)
        << method.name;
    EXPECT_EQ(rope.factor.has_value(), method.scales()) << method.name;
    EXPECT_EQ(rope.original_max_position_embeddings.has_value(),
              method.reads_original_length())
        << method.name;
  }
  const RopeScalingConfig longrope =
      RopeSettingsAtFactor(base, RopeType::kLongRope, 2.5, 256);
  ASSERT_TRUE(longrope.long_factor && longrope.short_factor);
  ASSERT_EQ(longrope.long_factor->size(), 12u);  // r/2 = 48 * 0.5 / 2
  EXPECT_EQ(longrope.long_factor->front(), 1.0);
  EXPECT_DOUBLE_EQ(longrope.long_factor->back(), 2.5);
  EXPECT_EQ(*longrope.short_factor, std::vector<double>(12, 1.0));
  const RopeScalingConfig llama3 =
      RopeSettingsAtFactor(base, RopeType::kLlama3, 2.5, 256);
  EXPECT_EQ(llama3.low_freq_factor, 1.0);
  EXPECT_EQ(llama3.high_freq_factor, 4.0);
}

}  // namespace
}  // namespace rotor
