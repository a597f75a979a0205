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
  if (IsRopeMethod(type, "llama3")) {
    config.low_freq_factor = 1.0;
    config.high_freq_factor = 4.0;
  }
  if (IsRopeMethod(type, "longrope")) {
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
    EXPECT_EQ(&RopeMethodNamed(method.name), &method) << method.name;
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

TEST(RopeMethods, AnUnknownNameIsAProgrammingError) {
  EXPECT_THROW(RopeMethodNamed("nope"), Error);
  EXPECT_THROW(IsRopeMethod(RopeTypes()[0], "Yarn"), Error);
  EXPECT_TRUE(IsRopeMethod(RopeMethodNamed("yarn").type, "yarn"));
  EXPECT_FALSE(IsRopeMethod(RopeMethodNamed("yarn").type, "llama3"));
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
              IsRopeMethod(method.type, "dynamic") ? 256 : 640)
        << method.name;
    EXPECT_EQ(rope.factor.has_value(), method.scales()) << method.name;
    EXPECT_EQ(rope.original_max_position_embeddings.has_value(),
              method.reads_original_length())
        << method.name;
  }
  const RopeScalingConfig longrope =
      RopeSettingsAtFactor(base, RopeMethodNamed("longrope").type, 2.5, 256);
  ASSERT_TRUE(longrope.long_factor && longrope.short_factor);
  ASSERT_EQ(longrope.long_factor->size(), 12u);  // r/2 = 48 * 0.5 / 2
  EXPECT_EQ(longrope.long_factor->front(), 1.0);
  EXPECT_DOUBLE_EQ(longrope.long_factor->back(), 2.5);
  EXPECT_EQ(*longrope.short_factor, std::vector<double>(12, 1.0));
  const RopeScalingConfig llama3 =
      RopeSettingsAtFactor(base, RopeMethodNamed("llama3").type, 2.5, 256);
  EXPECT_EQ(llama3.low_freq_factor, 1.0);
  EXPECT_EQ(llama3.high_freq_factor, 4.0);
}

}  // namespace
}  // namespace rotor
