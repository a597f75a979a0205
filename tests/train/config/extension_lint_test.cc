// The context-extension lint (train/config/extension_lint.h): one test per
// check, each on a config that trips it and one that does not, with the
// message checked for the keys it names and the value it says to set; and
// the two checks that live in the readers (a legacy `type` against
// rope_type, train.seq_len against max_position_embeddings).
#include "train/config/extension_lint.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "nn/rope_scaling.h"
#include "tests/test_util.h"
#include "train/config/model_config.h"
#include "train/config/train_config.h"

namespace rotor::train {
namespace {

constexpr char kOriginal[] =
    "model.rope_scaling.original_max_position_embeddings";

// A model: section with `rope_scaling` (a YAML flow map).
ModelConfig Model(int64_t max_positions, const std::string& rope_scaling,
                  int64_t head_dim = 64, double rope_theta = 10000) {
  return ParseModelConfigText(
      StrCat("model:\n  head_dim: ", head_dim, "\n  rope_theta: ", rope_theta,
             "\n  max_position_embeddings: ", max_positions,
             "\n  rope_scaling: ", rope_scaling, "\n"),
      "cfg.yaml");
}

ExtensionLengths Training(int64_t seq_len) {
  ExtensionLengths lengths;
  lengths.train_seq_len = seq_len;
  return lengths;
}

ExtensionLengths Evaluating(const std::vector<int64_t>& eval_lengths) {
  ExtensionLengths lengths;
  lengths.eval_lengths = eval_lengths;
  return lengths;
}

// The findings' messages, for failure output.
std::string Messages(const std::vector<LintFinding>& findings) {
  std::string text;
  for (const LintFinding& f : findings) text += FormatLintFinding(f) + "\n";
  return text;
}

TEST(ExtensionLint, AConsistentExtensionHasNoFindings) {
  // configs/extend/yarn-4x.yaml: 4 x 256 = 1024, trained at 1024.
  const ModelConfig yarn =
      Model(1024,
            "{rope_type: yarn, factor: 4, original_max_position_embeddings: "
            "256}",
            32);
  ExtensionLengths lengths = Training(1024);
  lengths.pretraining = PretrainingLengthOf(Model(256, "null", 32), "base");
  lengths.eval_lengths = {256, 512, 1024};
  EXPECT_EQ(Messages(LintContextExtension(yarn, lengths)), "");
}

TEST(ExtensionLint, AnOriginalLengthThatIsNotTheBasesIsAnError) {
  const ModelConfig yarn = Model(
      2048,
      "{rope_type: yarn, factor: 8, original_max_position_embeddings: 256}");
  ExtensionLengths lengths;
  lengths.pretraining =
      PretrainingLengthOf(Model(512, "null"), "base/config.json");
  const std::vector<LintFinding> findings = LintContextExtension(yarn, lengths);
  ASSERT_EQ(findings.size(), 1u) << Messages(findings);
  EXPECT_EQ(findings[0].severity, LintSeverity::kError);
  EXPECT_EQ(findings[0].keys, std::vector<std::string>{kOriginal});
  EXPECT_EQ(findings[0].message,
            std::string(kOriginal) +
                ": 256, but base/config.json says the model was pre-trained "
                "at 512 tokens (its max_position_embeddings); set 512");
  EXPECT_TRUE(HasLintErrors(findings));
  // A base that is itself scaled (Llama 3.1) was pre-trained at its
  // original length.
  const PretrainingLength scaled = PretrainingLengthOf(
      Model(2048,
            "{rope_type: yarn, factor: 4, original_max_position_embeddings: "
            "512}"),
      "scaled/config.json");
  EXPECT_EQ(scaled.tokens, 512);
  EXPECT_CONTAINS(scaled.statement,
                  "(its rope_scaling.original_max_position_embeddings)");
  // linear does not read the key.
  lengths.pretraining->tokens = 1024;
  EXPECT_FALSE(HasLintErrors(LintContextExtension(
      Model(2048, "{rope_type: linear, factor: 2}"), lengths)));
}

TEST(ExtensionLint, AFactorThatIsNotTheRatioOfTheLengthsWarns) {
  const ModelConfig yarn = Model(
      4096,
      "{rope_type: yarn, factor: 4, original_max_position_embeddings: 512}");
  const std::vector<LintFinding> findings = LintContextExtension(yarn, {});
  ASSERT_EQ(findings.size(), 1u) << Messages(findings);
  EXPECT_EQ(findings[0].severity, LintSeverity::kWarning);
  EXPECT_EQ(findings[0].keys, (std::vector<std::string>{
                                  "model.rope_scaling.factor",
                                  "model.max_position_embeddings", kOriginal}));
  EXPECT_EQ(findings[0].message,
            "model.rope_scaling.factor 4 disagrees with "
            "model.max_position_embeddings / " +
                std::string(kOriginal) +
                " = 4096 / 512 = 8: the scaling covers 4 x 512 = 2048 "
                "positions but the model declares 4096, and transformers "
                "4.51-4.55 replace a yarn factor by that ratio; set "
                "model.max_position_embeddings: 2048, or "
                "model.rope_scaling.factor: 8");
  // Llama 3.1's own config: 131072 positions, factor 8 of 8192.
  EXPECT_EQ(Messages(LintContextExtension(
                Model(131072,
                      "{rope_type: llama3, factor: 8, low_freq_factor: 1, "
                      "high_freq_factor: 4, original_max_position_embeddings: "
                      "8192}",
                      128, 500000),
                Training(131072))),
            "");
}

TEST(ExtensionLint, TrainingPastWhatTheFactorCoversIsAnError) {
  const ModelConfig yarn = Model(
      4096,
      "{rope_type: yarn, factor: 4, original_max_position_embeddings: 512}");
  std::vector<LintFinding> findings =
      LintContextExtension(yarn, Training(4096));
  ASSERT_EQ(findings.size(), 2u) << Messages(findings);
  EXPECT_EQ(findings[0].severity, LintSeverity::kError);  // errors first
  EXPECT_EQ(
      findings[0].keys,
      (std::vector<std::string>{"train.seq_len", "model.rope_scaling.factor"}));
  EXPECT_CONTAINS(findings[0].message,
                  "train.seq_len 4096 is beyond the 2048 positions "
                  "model.rope_scaling.factor 4 x " +
                      std::string(kOriginal) + " 512 covers");
  EXPECT_CONTAINS(findings[0].message,
                  "set model.rope_scaling.factor: 8 (train.seq_len / 512), "
                  "or train.seq_len: 2048");
  EXPECT_FALSE(HasLintErrors(LintContextExtension(yarn, Training(2048))));

  // linear measures from the base model's length, when known.
  const ModelConfig linear = Model(1024, "{rope_type: linear, factor: 2}");
  ExtensionLengths lengths = Training(1024);
  EXPECT_EQ(Messages(LintContextExtension(linear, lengths)), "");
  lengths.pretraining = PretrainingLengthOf(Model(256, "null"), "base");
  findings = LintContextExtension(linear, lengths);
  ASSERT_TRUE(HasLintErrors(findings)) << Messages(findings);
  EXPECT_CONTAINS(findings[0].message,
                  "train.seq_len 1024 is beyond the 512 positions "
                  "model.rope_scaling.factor 2 x the pre-training length "
                  "(base says the model was pre-trained at 256 tokens");
  EXPECT_CONTAINS(findings[0].message, "set model.rope_scaling.factor: 4");
}

TEST(ExtensionLint, AFactorMuchLargerThanTheTrainingLengthNeedsWarns) {
  const std::string yarn16 =
      "{rope_type: yarn, factor: 16, original_max_position_embeddings: 256}";
  std::vector<LintFinding> findings =
      LintContextExtension(Model(4096, yarn16), Training(1024));
  ASSERT_EQ(findings.size(), 1u) << Messages(findings);
  EXPECT_EQ(findings[0].severity, LintSeverity::kWarning);
  EXPECT_EQ(
      findings[0].keys,
      (std::vector<std::string>{"model.rope_scaling.factor", "train.seq_len"}));
  EXPECT_CONTAINS(findings[0].message,
                  "model.rope_scaling.factor 16 makes room for 16 x 256 = "
                  "4096 positions, more than twice train.seq_len 1024");
  EXPECT_CONTAINS(findings[0].message,
                  "set model.rope_scaling.factor: 4 (train.seq_len / 256, "
                  "with model.max_position_embeddings: 1024), or "
                  "train.seq_len: 4096");
  // Twice is the YaRN paper's s = 32 at 64k of 4k: no warning.
  EXPECT_EQ(Messages(LintContextExtension(
                Model(2048,
                      "{rope_type: yarn, factor: 8, "
                      "original_max_position_embeddings: 256}"),
                Training(1024))),
            "");
  // A fine-tune at the pre-training length keeps the model's scaling.
  EXPECT_EQ(Messages(LintContextExtension(Model(4096, yarn16), Training(256))),
            "");
}

TEST(ExtensionLint, FactorOneIsDefaultRope) {
  const std::vector<LintFinding> findings = LintContextExtension(
      Model(512,
            "{rope_type: yarn, factor: 1, original_max_position_embeddings: "
            "512}"),
      {});
  ASSERT_EQ(findings.size(), 1u) << Messages(findings);
  EXPECT_EQ(findings[0].keys,
            std::vector<std::string>{"model.rope_scaling.factor"});
  EXPECT_EQ(findings[0].message,
            "model.rope_scaling.factor 1 leaves every frequency of rope_type "
            "'yarn' as it is (attention factor 1): the model is default RoPE; "
            "set model.rope_scaling.factor to the new length over the "
            "pre-training length");
  // With room for more positions, the message gives the ratio.
  const std::vector<LintFinding> longer = LintContextExtension(
      Model(2048,
            "{rope_type: yarn, factor: 1, original_max_position_embeddings: "
            "512}"),
      {});
  ASSERT_EQ(longer.size(), 2u) << Messages(longer);
  EXPECT_CONTAINS(longer[1].message, " = 2048 / 512 = 4)");
  // It is what ComputeRopeFrequencies gives.
  const RopeFrequencies f = ComputeRopeFrequencies(
      Model(512,
            "{rope_type: yarn, factor: 1, original_max_position_embeddings: "
            "512}")
          .rope,
      512);
  EXPECT_EQ(f.attention_factor, 1.0);
}

TEST(ExtensionLint, AYarnRampThatInterpolatesNoPairWarns) {
  // r = 8: the slowest pair (i = 3) has wavelength 2 pi 100^(6/8) = 198.7
  // tokens and turns 82.5 times within 16384 >= beta_fast 32.
  const auto yarn = [](double beta_fast) {
    return Model(32768,
                 StrCat("{rope_type: yarn, factor: 2, "
                        "original_max_position_embeddings: 16384, beta_fast: ",
                        beta_fast, "}"),
                 8, 100);
  };
  const std::vector<LintFinding> findings = LintContextExtension(yarn(32), {});
  ASSERT_EQ(findings.size(), 1u) << Messages(findings);
  EXPECT_EQ(findings[0].severity, LintSeverity::kWarning);
  EXPECT_EQ(findings[0].keys, (std::vector<std::string>{
                                  "model.rope_scaling.beta_fast", kOriginal}));
  EXPECT_CONTAINS(findings[0].message,
                  "rope_type yarn interpolates no pair: a pair is divided by "
                  "the factor only when it turns fewer than "
                  "model.rope_scaling.beta_fast 32 times within " +
                      std::string(kOriginal) + " 16384");
  EXPECT_CONTAINS(findings[0].message, "the slowest pair (i = 3, wavelength");
  // Really no pair: every frequency is the unscaled one.
  EXPECT_EQ(ComputeRopeFrequencies(yarn(32).rope, 32768).inv_freq,
            UnscaledInvFreq(yarn(32).rope));
  // The value the message says to set interpolates the slowest pair.
  const double turns =
      16384.0 / (2.0 * 3.14159265358979323846 * std::pow(100.0, 6.0 / 8.0));
  const double suggested = std::floor(turns) + 1.0;
  EXPECT_CONTAINS(findings[0].message,
                  StrCat("set model.rope_scaling.beta_fast: ",
                         static_cast<int64_t>(suggested)));
  EXPECT_EQ(Messages(LintContextExtension(yarn(suggested), {})), "");
  EXPECT_LT(ComputeRopeFrequencies(yarn(suggested).rope, 32768).inv_freq[3],
            UnscaledInvFreq(yarn(suggested).rope)[3]);
  EXPECT_EQ(LintContextExtension(yarn(std::floor(turns)), {}).size(), 1u);
}

TEST(ExtensionLint, LongRopeUsedOnlyUpToTheOriginalLengthWarns) {
  const ModelConfig longrope =
      Model(1024,
            "{rope_type: longrope, original_max_position_embeddings: 256, "
            "short_factor: [1, 1, 1, 1], long_factor: [1, 2, 3, 4]}",
            8);
  std::vector<LintFinding> findings =
      LintContextExtension(longrope, Training(256));
  ASSERT_EQ(findings.size(), 1u) << Messages(findings);
  EXPECT_EQ(findings[0].keys,
            (std::vector<std::string>{"model.rope_scaling.long_factor",
                                      kOriginal, "train.seq_len"}));
  EXPECT_EQ(findings[0].message,
            "every length used (train.seq_len 256) is at most " +
                std::string(kOriginal) +
                " 256, where rope_type 'longrope' uses "
                "model.rope_scaling.short_factor: "
                "model.rope_scaling.long_factor is never used; set "
                "train.seq_len between 257 and 1024 "
                "(model.max_position_embeddings) to use it");
  findings = LintContextExtension(longrope, Evaluating({128, 256}));
  ASSERT_EQ(findings.size(), 1u) << Messages(findings);
  EXPECT_CONTAINS(findings[0].message,
                  "every length used (--lengths 128, 256)");
  EXPECT_CONTAINS(findings[0].message, "set --lengths between 257 and 1024");
  EXPECT_EQ(Messages(LintContextExtension(longrope, Training(257))), "");
  EXPECT_EQ(Messages(LintContextExtension(longrope, Evaluating({256, 1024}))),
            "");
  EXPECT_EQ(Messages(LintContextExtension(longrope, {})), "");
}

TEST(ExtensionLint, DynamicScalingInTrainingWarnsThatItTrainsPlainRope) {
  const ModelConfig dynamic = Model(256, "{rope_type: dynamic, factor: 4}");
  const std::vector<LintFinding> findings =
      LintContextExtension(dynamic, Training(256));
  ASSERT_EQ(findings.size(), 1u) << Messages(findings);
  EXPECT_EQ(findings[0].severity, LintSeverity::kWarning);
  EXPECT_EQ(findings[0].keys,
            (std::vector<std::string>{"model.rope_scaling.rope_type",
                                      "train.seq_len"}));
  EXPECT_CONTAINS(findings[0].message,
                  "model.rope_scaling.rope_type dynamic scales only sequences "
                  "longer than model.max_position_embeddings 256 (its L0), and "
                  "train.seq_len 256 cannot exceed it, so this run trains "
                  "plain RoPE");
  EXPECT_CONTAINS(findings[0].message, "A warning, not an error");
  EXPECT_CONTAINS(findings[0].message,
                  "set model.rope_scaling.rope_type: ntk or yarn, with "
                  "model.max_position_embeddings: the new length");
  // What it says: at L0 the frequencies are the unscaled ones.
  EXPECT_EQ(ComputeRopeFrequencies(dynamic.rope, 256).inv_freq,
            UnscaledInvFreq(dynamic.rope));
  // Evaluating with it past L0 is what it is for.
  EXPECT_EQ(Messages(LintContextExtension(dynamic, Evaluating({256, 1024}))),
            "");
}

TEST(ExtensionLint, EvaluatingPastMaxPositionsWarnsOfExtrapolation) {
  ExtensionLengths lengths = Evaluating({256, 512, 1024});
  const std::vector<LintFinding> findings =
      LintContextExtension(Model(256, "null"), lengths);
  ASSERT_EQ(findings.size(), 1u) << Messages(findings);
  EXPECT_EQ(
      findings[0].keys,
      (std::vector<std::string>{"model.max_position_embeddings", "--lengths"}));
  EXPECT_EQ(findings[0].message,
            "--lengths 512, 1024 are beyond model.max_position_embeddings "
            "256: positions past it are extrapolation with rope_type "
            "'default' (expect the perplexity to rise there); to cover 1024, "
            "set model.max_position_embeddings: 1024 with a rope_scaling "
            "that stretches the positions that far");
  lengths.eval_lengths = {257};
  lengths.eval_lengths_key = "--seq-len";
  EXPECT_CONTAINS(
      Messages(LintContextExtension(Model(256, "null"), lengths)),
      "warning: --seq-len 257 is beyond model.max_position_embeddings 256");
}

// Checked by the reader, where the line is known: a legacy `type` that
// contradicts rope_type (readers differ in which they take).
// Settings that leave float32 (RoPE's tables and GGUF's keys) or rotor's
// 2^24 positions, or an attention factor whose square overflows float32:
// each an error stating the bound (all three passed without a finding).
TEST(ExtensionLint, ScalingsBeyondFloat32OrThePositionsAreErrors) {
  const auto errors = [](const ModelConfig& model) {
    std::vector<LintFinding> findings = LintContextExtension(model, {});
    findings.erase(std::remove_if(findings.begin(), findings.end(),
                                  [](const LintFinding& f) {
                                    return f.severity != LintSeverity::kError;
                                  }),
                   findings.end());
    return findings;
  };
  std::vector<LintFinding> found = errors(Model(256, "null", 64, 1e300));
  ASSERT_EQ(found.size(), 1u) << Messages(found);
  EXPECT_EQ(found[0].keys, std::vector<std::string>{"model.rope_theta"});
  EXPECT_EQ(found[0].message,
            "model.rope_theta 1e+300 is beyond float32's largest value "
            "3.40282e+38: RoPE's tables are float32 (and GGUF stores the "
            "value as one), so it cannot be computed with");
  EXPECT_TRUE(errors(Model(256, "null", 64, 3e38)).empty());

  found = errors(Model(
      256,
      "{rope_type: yarn, factor: 1.0e+30, original_max_position_embeddings: "
      "64}"));
  ASSERT_EQ(found.size(), 1u) << Messages(found);
  EXPECT_EQ(found[0].message,
            "model.rope_scaling.factor 1e+30 x " + std::string(kOriginal) +
                " 64 = 6.4e+31 positions, beyond rotor's longest sequence of "
                "16777216 positions (2^24): the scaling stretches the "
                "positions past any length rotor runs; set "
                "model.rope_scaling.factor to the new length over 64 (at most "
                "262144)");
  // Alone: the factor-vs-ratio warning would say to set 6.4e+31 positions.
  EXPECT_EQ(LintContextExtension(Model(256,
                                       "{rope_type: yarn, factor: 1.0e+30, "
                                       "original_max_position_embeddings: 64}"),
                                 {})
                .size(),
            1u);
  EXPECT_TRUE(errors(Model(256,
                           "{rope_type: yarn, factor: 262144, "
                           "original_max_position_embeddings: 64}"))
                  .empty());
  // Dynamic stretches max_position_embeddings.
  found = errors(Model(4096, "{rope_type: dynamic, factor: 8192}"));
  ASSERT_EQ(found.size(), 1u) << Messages(found);
  EXPECT_NE(found[0].message.find("x model.max_position_embeddings 4096 = "
                                  "33554432 positions"),
            std::string::npos);

  found = errors(Model(256,
                       "{rope_type: yarn, factor: 4, mscale: 1.0e+30, "
                       "mscale_all_dim: 1, original_max_position_embeddings: "
                       "64}"));
  ASSERT_EQ(found.size(), 1u) << Messages(found);
  EXPECT_EQ(found[0].keys,
            (std::vector<std::string>{"model.rope_scaling.mscale",
                                      "model.rope_scaling.mscale_all_dim"}));
  EXPECT_NE(found[0].message.find("gives is beyond 2^64 = 1.84467e+19, the "
                                  "square root of float32's largest value"),
            std::string::npos)
      << found[0].message;
  found =
      errors(Model(256,
                   "{rope_type: yarn, factor: 4, attention_factor: 1.0e+20, "
                   "original_max_position_embeddings: 64}"));
  ASSERT_EQ(found.size(), 1u) << Messages(found);
  EXPECT_EQ(found[0].keys,
            std::vector<std::string>{"model.rope_scaling.attention_factor"});
  EXPECT_TRUE(errors(Model(256,
                           "{rope_type: yarn, factor: 4, attention_factor: "
                           "1.0e+19, original_max_position_embeddings: 64}"))
                  .empty());
}

TEST(ExtensionLint, ALegacyTypeThatContradictsRopeTypeIsRefused) {
  ROTOR_EXPECT_ERROR(
      Model(2048, "{rope_type: yarn, type: linear, factor: 4}"), "cfg.yaml:",
      "model.rope_scaling.type: 'linear' contradicts rope_type 'yarn'",
      "delete one, or give both the same method");
  EXPECT_EQ(Model(2048, "{type: linear, factor: 4}").rope.rope_type,
            RopeType::kLinear);
}

// Checked by FindTrainConfigProblem, at the key's line.
TEST(ExtensionLint, ASeqLenPastMaxPositionsIsRefused) {
  ROTOR_EXPECT_ERROR(
      ParseTrainConfig("model:\n  head_dim: 8\n  max_position_embeddings: 64\n"
                       "data:\n  path: brown\ntrain:\n  seq_len: 128\n",
                       "cfg.yaml"),
      "cfg.yaml:7:",
      "train.seq_len: exceeds model.max_position_embeddings "
      "(64), got 128: set train.seq_len: 64, or "
      "model.max_position_embeddings: 128 with a rope_scaling whose factor "
      "covers it");
}

}  // namespace
}  // namespace rotor::train
