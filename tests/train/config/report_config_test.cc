// The report config (configs/extend/report.yaml) is parsed strictly, with
// defaults, and its checks' thresholds are read from it.
#include "train/config/report_config.h"

#include <gtest/gtest.h>

#include "nn/rope_methods.h"
#include "tests/test_util.h"

namespace rotor::train {
namespace {

TEST(ExtendReportConfig, ParsesDefaultsAndRejectsMistakes) {
  const ExtendReportConfig config = ParseExtendReportConfig(
      "base: {config: b.yaml}\nfactor: 8\n", "r.yaml", {"finetune.steps=50"});
  EXPECT_EQ(config.base_config, "b.yaml");
  EXPECT_EQ(config.factor, 8.0);
  EXPECT_EQ(config.finetune_steps, 50);
  EXPECT_EQ(config.methods, RopeTypes());  // every method, in display order
  EXPECT_EQ(config.finetune_skip, std::vector<RopeType>{RopeType::kDynamic});

  ROTOR_EXPECT_ERROR(ParseExtendReportConfig("factor: 4\n", "r.yaml"),
                     "base.config", "is required");
  ROTOR_EXPECT_ERROR(
      ParseExtendReportConfig("base: {config: b.yaml}\nmethods: [yarn, "
                              "rope9]\n",
                              "r.yaml"),
      "r.yaml:2:", "methods", "unknown method 'rope9'");
  ROTOR_EXPECT_ERROR(
      ParseExtendReportConfig("base: {config: b.yaml}\nfinetune: {skip: []}\n",
                              "r.yaml"),
      "finetune.skip", "must list dynamic");
  // Each method the report cannot fine-tune is named by its record, and so
  // is what it does.
  for (const RopeMethod& method : RopeMethods()) {
    if (!method.scales_only_past_max_positions()) continue;
    ROTOR_EXPECT_ERROR(
        ParseExtendReportConfig(
            StrCat("base: {config: b.yaml}\nmethods: [", method.name,
                   "]\nfinetune: {skip: []}\n"),
            "r.yaml"),
        "finetune.skip",
        StrCat("must list ", method.name, ": rope_type '", method.name,
               "' reads its original length L0 from max_position_embeddings "
               "and scales only sequences longer than it, so it cannot be "
               "fine-tuned at a longer seq_len"));
  }
  ROTOR_EXPECT_ERROR(
      ParseExtendReportConfig("base: {config: b.yaml}\nfactor: 1\n", "r.yaml"),
      "r.yaml:2:", "factor", "(1, 64]");
  ROTOR_EXPECT_ERROR(
      ParseExtendReportConfig("base: {config: b.yaml}\nfactor: 4\nfactor: 8\n",
                              "r.yaml"),
      "r.yaml:3:", "factor: duplicate key");
  ROTOR_EXPECT_ERROR(
      ParseExtendReportConfig("base: {config: b.yaml}\neval: {lenghts: []}\n",
                              "r.yaml"),
      "eval.lenghts", "unknown key");
  // A base you already have: base.config is optional, then base.data is
  // required, and base.overrides need a config to override.
  const ExtendReportConfig existing = ParseExtendReportConfig(
      "base: {init_from: hf/model, data: texts}\nexport: hf\n", "r.yaml");
  EXPECT_EQ(existing.base_init_from, "hf/model");
  EXPECT_EQ(existing.base_data, "texts");
  EXPECT_EQ(existing.export_format, ReportExport::kHf);
  ROTOR_EXPECT_ERROR(
      ParseExtendReportConfig("base: {init_from: hf/model}\n", "r.yaml"),
      "base.data", "is required with base.init_from and no base.config");
  ROTOR_EXPECT_ERROR(
      ParseExtendReportConfig(
          "base: {init_from: hf/model, data: t, overrides: [a.b=1]}\n",
          "r.yaml"),
      "base.overrides", "need base.config");
  ROTOR_EXPECT_ERROR(ParseExtendReportConfig(
                         "base: {config: b.yaml}\nexport: gguf\n", "r.yaml"),
                     "r.yaml:2:", "export",
                     "must be 'none' or 'hf', got 'gguf'");
  ROTOR_EXPECT_ERROR(
      ParseExtendReportConfig("base: {config: b.yaml, practice: {steps: 10}}\n",
                              "r.yaml"),
      "base.practice.output_dir", "is required");
  // An empty output_dir would put the report's folders at /logs, /results.
  ROTOR_EXPECT_ERROR(ParseExtendReportConfig(
                         "base: {config: b.yaml}\noutput_dir: ''\n", "r.yaml"),
                     "r.yaml:2:13: output_dir: expected a non-empty string");
  ROTOR_EXPECT_ERROR(
      ParseExtendReportConfig("base: {config: b.yaml, practice: {steps: 10,\n"
                              "  output_dir: p, passkey_fraction: 0}}\n",
                              "r.yaml"),
      "r.yaml:2:", "base.practice.passkey_fraction", "(0, 1]");
  ROTOR_EXPECT_ERROR(
      ParseExtendReportConfig("base: {config: b.yaml, practice: {stesp: 10}}\n",
                              "r.yaml"),
      "base.practice.stesp", "unknown key");
  ROTOR_EXPECT_ERROR(
      ParseExtendReportConfig(
          "base: {config: b.yaml}\nfinetune: {passkey_fraction: 2}\n",
          "r.yaml"),
      "r.yaml:2:", "finetune.passkey_fraction", "[0, 1]");
  // Passkey and retrieval rows of practice fit in the rows, drawn from a
  // task.
  ROTOR_EXPECT_ERROR(
      ParseExtendReportConfig("base: {config: b.yaml, practice: {steps: 10,\n"
                              "  output_dir: p, passkey_fraction: 0.75,\n"
                              "  retrieval_fraction: 0.5}}\n",
                              "r.yaml"),
      "r.yaml:", "base.practice.retrieval_fraction",
      "must be at most 1 - base.practice.passkey_fraction (0.75)", "got 0.5");
  ROTOR_EXPECT_ERROR(
      ParseExtendReportConfig("base: {config: b.yaml, practice: {steps: 10,\n"
                              "  output_dir: p, retrieval_fraction: 0.2,\n"
                              "  retrieval_tasks: []}}\n",
                              "r.yaml"),
      "r.yaml:", "base.practice.retrieval_tasks", "must name a task");
  ROTOR_EXPECT_ERROR(
      ParseExtendReportConfig("base: {config: b.yaml, practice: {steps: 10,\n"
                              "  output_dir: p, examples_only_steps: -1}}\n",
                              "r.yaml"),
      "r.yaml:", "base.practice.examples_only_steps", "-1");
  ROTOR_EXPECT_ERROR(
      ParseExtendReportConfig(
          "base: {config: b.yaml}\nfinetune: {retrieval_fraction: 2}\n",
          "r.yaml"),
      "r.yaml:2:", "finetune.retrieval_fraction", "[0, 1]");
  // The fine-tunes' shares too, when both are given: refused here, not
  // after the base run, the practice and the zero-shot evaluations.
  ROTOR_EXPECT_ERROR(
      ParseExtendReportConfig("base: {config: b.yaml}\nfinetune: "
                              "{passkey_fraction: 0.75, retrieval_fraction: "
                              "0.5}\n",
                              "r.yaml"),
      "r.yaml:", "finetune.retrieval_fraction",
      "must be at most 1 - finetune.passkey_fraction (0.75)", "got 0.5");
  ROTOR_EXPECT_ERROR(
      ParseExtendReportConfig(
          "base: {config: b.yaml}\nfinetune: {lr: 1e-4, min_lr: 1e-3}\n",
          "r.yaml"),
      "r.yaml:2:", "finetune.min_lr", "must not exceed finetune.lr");
  // The shipped report config parses.
  const ExtendReportConfig shipped = LoadExtendReportConfig(
      std::string(ROTOR_SOURCE_DIR) + "/configs/extend/report.yaml");
  EXPECT_EQ(shipped.base_config, "configs/default.yaml");
  EXPECT_EQ(shipped.finetune_steps, 200);
  EXPECT_GT(shipped.practice_steps, 0);
}

// Sizes beyond rotor's limits (core/limits.h) name the key.
// finetune.lora asks for a LoRA fine-tune of each method beside the full
// one: the training config's finetune.lora keys, trainable, and lr.
TEST(ExtendReportConfig, ReadsTheLoraComparison) {
  const std::string base = "base: {config: b.yaml}\n";
  const ExtendReportConfig off = ParseExtendReportConfig(base, "r.yaml");
  EXPECT_FALSE(off.lora_finetune.lora.enabled);
  const ExtendReportConfig on = ParseExtendReportConfig(
      base +
          "finetune:\n  lora: {r: 4, alpha: 8, target_modules: [q_proj, "
          "k_proj], trainable: [embed_tokens, norm], lr: 1.0e-3}\n",
      "r.yaml");
  const FinetuneSection& f = on.lora_finetune;
  EXPECT_TRUE(f.lora.enabled);
  EXPECT_EQ(f.lora.r, 4);
  EXPECT_EQ(f.lora.alpha, 8.0);
  EXPECT_EQ(f.lora.target_modules,
            (std::vector<std::string>{"q_proj", "k_proj"}));
  EXPECT_EQ(f.trainable, (std::vector<std::string>{"embed_tokens", "norm"}));
  EXPECT_EQ(on.lora_lr, 1e-3);
  const ExtendReportConfig defaults =
      ParseExtendReportConfig(base, "r.yaml", {"finetune.lora={}"});
  EXPECT_TRUE(defaults.lora_finetune.lora.enabled);
  EXPECT_EQ(defaults.lora_finetune.lora.r, 8);
  EXPECT_EQ(defaults.lora_lr, 0.0);

  ROTOR_EXPECT_ERROR(ParseExtendReportConfig(
                         base + "finetune:\n  lora: {rank: 4}\n", "r.yaml"),
                     "r.yaml:3:", "finetune.lora.rank: unknown key",
                     "alpha, dropout, lr, r, target_modules, trainable");
  ROTOR_EXPECT_ERROR(
      ParseExtendReportConfig(
          base + "finetune:\n  lora: {target_modules: [wq]}\n", "r.yaml"),
      "r.yaml:3:", "finetune.lora.target_modules: unknown name 'wq'");
  ROTOR_EXPECT_ERROR(
      ParseExtendReportConfig(
          base + "finetune:\n  lora: {trainable: [norm, norm]}\n", "r.yaml"),
      "r.yaml:3:", "finetune.lora.trainable: 'norm' is listed twice");
}

TEST(ExtendReportConfig, SizesAreBoundedByRotorsLimits) {
  const std::string base = "base: {config: b.yaml}\n";
  for (const auto& [yaml, key] :
       {std::pair{"eval: {lengths: [64, 4611686018427387904]}",
                  "eval.lengths: must be in [1, 16777216] (rotor's limit), "
                  "got 4611686018427387904"},
        std::pair{"eval: {passkey_lengths: [68719476736]}",
                  "eval.passkey_lengths: must be in [1, 16777216]"},
        std::pair{"finetune: {steps: 4611686018427387904}",
                  "finetune.steps: must be <= 1099511627776"},
        std::pair{"finetune: {tokens_per_step: 4611686018427387904}",
                  "finetune.tokens_per_step: must be <= 17592186044416"},
        std::pair{"threads: 4294967296", "threads: must be <= 4096"}}) {
    ROTOR_EXPECT_ERROR(ParseExtendReportConfig(base + yaml + "\n", "r.yaml"),
                       key);
  }
}

// Every count the evaluation takes has a bound (core/limits.h), refused
// naming the key: 2^63-1 trials reached a raw vector::reserve, 2^31
// retrieval trials ran without end.
TEST(ExtendReportConfig, EvaluationCountsAreBounded) {
  const std::string base = "base: {config: b.yaml}\n";
  std::string depths = "[0";
  for (int i = 0; i < 1024; ++i) depths += ", 1";
  std::string lengths = "[64";
  for (int i = 0; i < 1024; ++i) lengths += ", 64";
  for (const auto& [yaml, key] :
       std::vector<std::pair<std::string, std::string>>{
           {"eval: {trials: 9223372036854775807}",
            "r.yaml:2:16: eval.trials: must be <= 16384 (rotor's limit), got "
            "9223372036854775807"},
           {"eval: {trials: 4294967297}", "eval.trials: must be <= 16384"},
           {"eval: {retrieval_trials: 2147483648}",
            "eval.retrieval_trials: must be <= 16384 (rotor's limit)"},
           {"eval: {documents: 4294967296}",
            "eval.documents: must be <= 1048576 (rotor's limit)"},
           {"eval: {stride: 4294967296}",
            "eval.stride: must be <= 16777216 (rotor's limit)"},
           {"eval: {depths: " + depths + "]}",
            "eval.depths: lists 1025 items, more than rotor's limit of 1024"},
           {"eval: {lengths: " + lengths + "]}",
            "eval.lengths: lists 1025 items, more than rotor's limit of 1024"},
           {"eval: {passkey_lengths: " + lengths + "]}",
            "eval.passkey_lengths: lists 1025 items"},
           {"eval: {retrieval_lengths: " + lengths + "]}",
            "eval.retrieval_lengths: lists 1025 items"},
       }) {
    SCOPED_TRACE(key);
    ROTOR_EXPECT_ERROR(ParseExtendReportConfig(base + yaml + "\n", "r.yaml"),
                       key);
  }
  // The bounds themselves are accepted, and named by an override too.
  const ExtendReportConfig at_bounds = ParseExtendReportConfig(
      base +
          "eval: {trials: 16384, retrieval_trials: 16384, documents: "
          "1048576}\n",
      "r.yaml");
  EXPECT_EQ(at_bounds.trials, 16384);
  ROTOR_EXPECT_ERROR(
      ParseExtendReportConfig(base, "r.yaml", {"eval.trials=16385"}),
      "override 'eval.trials=16385': eval.trials: must be <= 16384");
}

TEST(ExtendReportConfig, ReadsTheChecksThresholds) {
  const ExtendReportConfig defaults =
      ParseExtendReportConfig("base: {config: b.yaml}\n", "r.yaml");
  EXPECT_EQ(defaults.checks.zeroshot_ppl_ratio_min, 1.5);
  EXPECT_EQ(defaults.checks.finetuned_ppl_ratio_max, 1.1);
  EXPECT_EQ(defaults.checks.max_seconds, 3600.0);
  const ExtendReportConfig config = ParseExtendReportConfig(
      "base: {config: b.yaml}\n"
      "checks: {finetuned_passkey_min: 0.8, max_seconds: 1800}\n",
      "r.yaml", {"checks.base_passkey_min=0.9"});
  EXPECT_EQ(config.checks.finetuned_passkey_min, 0.8);
  EXPECT_EQ(config.checks.base_passkey_min, 0.9);
  EXPECT_EQ(config.checks.max_seconds, 1800.0);
  EXPECT_EQ(config.checks.zeroshot_ppl_ratio_min, 1.5);
  ROTOR_EXPECT_ERROR(
      ParseExtendReportConfig(
          "base: {config: b.yaml}\nchecks: {finetuned_passkey_min: 90}\n",
          "r.yaml"),
      "r.yaml:2:", "checks.finetuned_passkey_min");
  ROTOR_EXPECT_ERROR(
      ParseExtendReportConfig("base: {config: b.yaml}\nchecks: {max_secs: 1}\n",
                              "r.yaml"),
      "checks.max_secs", "unknown key");
  // The shipped config states the defaults.
  const ExtendReportConfig shipped = LoadExtendReportConfig(
      std::string(ROTOR_SOURCE_DIR) + "/configs/extend/report.yaml");
  EXPECT_EQ(shipped.checks.zeroshot_ppl_ratio_min,
            defaults.checks.zeroshot_ppl_ratio_min);
  EXPECT_EQ(shipped.checks.finetuned_ppl_ratio_max,
            defaults.checks.finetuned_ppl_ratio_max);
  EXPECT_EQ(shipped.checks.finetuned_passkey_min,
            defaults.checks.finetuned_passkey_min);
  EXPECT_EQ(shipped.checks.base_passkey_min, defaults.checks.base_passkey_min);
  EXPECT_EQ(shipped.checks.max_seconds, defaults.checks.max_seconds);
}

}  // namespace
}  // namespace rotor::train
