#include "train/config/report_config.h"

#include <algorithm>
#include <limits>
#include <set>

#include "core/error.h"
#include "core/limits.h"
#include "train/config/yaml.h"
#include "train/data/passkey.h"

namespace rotor::train {

namespace {

constexpr double kAnyNumber = std::numeric_limits<double>::max();

bool Contains(const std::vector<RopeType>& list, RopeType type) {
  return std::find(list.begin(), list.end(), type) != list.end();
}

// A list of rope_type names -> RopeTypes (left unchanged when absent).
void ReadMethods(const SectionReader& section, const char* key,
                 std::vector<RopeType>& out) {
  std::vector<std::string> names;
  section.ReadList(key, names, "rope_type names");
  const YAML::Node value = section.Get(key);
  if (!value) return;
  out.clear();
  for (size_t i = 0; i < names.size(); ++i) {
    const std::optional<RopeType> type = RopeTypeFromName(names[i]);
    if (!type) {
      section.Fail(
          value[i], section.Join(key),
          StrCat("unknown method '", names[i], "' (", RopeTypeNames(), ")"));
    }
    out.push_back(*type);
  }
}

void ReadBase(const SectionReader& base,
              const std::set<std::string>& overridden,
              ExtendReportConfig& config) {
  base.RequireKnownKeys({"config", "overrides", "practice"});
  base.Read("config", config.base_config);
  base.ReadList("overrides", config.base_overrides, "key.path=value strings");
  if (config.base_config.empty()) {
    base.Fail(base.node(), "base.config",
              "is required: the training config of the base model");
  }
  const SectionReader practice(base.Get("practice"), "base.practice",
                               config.file, overridden);
  practice.RequireKnownKeys(
      {"steps", "passkey_fraction", "warmup_steps", "output_dir"});
  practice.Read("steps", config.practice_steps, 0, limits::kMaxSteps);
  practice.Read("passkey_fraction", config.practice_passkey_fraction,
                -kAnyNumber, kAnyNumber);
  practice.Read("warmup_steps", config.practice_warmup_steps, 0,
                limits::kMaxSteps);
  practice.Read("output_dir", config.practice_output_dir);
  if (!(config.practice_passkey_fraction > 0.0 &&
        config.practice_passkey_fraction <= 1.0)) {
    practice.Fail(
        practice.Get("passkey_fraction"), "base.practice.passkey_fraction",
        StrCat("must be in (0, 1], got ", config.practice_passkey_fraction));
  }
  if (config.practice_steps > 0 && config.practice_output_dir.empty()) {
    practice.Fail(practice.node(), "base.practice.output_dir",
                  "is required with base.practice.steps > 0: the practice "
                  "run's folder");
  }
}

void ReadFinetune(const SectionReader& finetune, ExtendReportConfig& config) {
  finetune.RequireKnownKeys({"steps", "lr", "min_lr", "warmup_steps",
                             "tokens_per_step", "passkey_fraction", "skip",
                             "lora"});
  finetune.Read("steps", config.finetune_steps, 0, limits::kMaxSteps);
  finetune.Read("lr", config.finetune_lr, 0.0, 10.0);
  finetune.Read("min_lr", config.finetune_min_lr, 0.0, 10.0);
  if (config.finetune_min_lr > config.finetune_lr) {
    finetune.Fail(finetune.Get("min_lr"), "finetune.min_lr",
                  StrCat("must not exceed finetune.lr (", config.finetune_lr,
                         "), got ", config.finetune_min_lr));
  }
  finetune.Read("warmup_steps", config.finetune_warmup_steps, 0,
                limits::kMaxSteps);
  // At most a batch of the largest size of the longest sequences.
  finetune.Read("tokens_per_step", config.finetune_tokens_per_step, 0,
                limits::kMaxBatchSize * limits::kMaxPositions);
  finetune.Read("passkey_fraction", config.finetune_passkey_fraction, 0.0, 1.0);
  ReadMethods(finetune, "skip", config.finetune_skip);
  if (Contains(config.methods, RopeType::kDynamic) &&
      !Contains(config.finetune_skip, RopeType::kDynamic) &&
      config.finetune_steps > 0) {
    finetune.Fail(finetune.node(), "finetune.skip",
                  "must list dynamic: dynamic NTK reads its original length "
                  "L0 from max_position_embeddings, so it cannot be "
                  "fine-tuned at a longer seq_len (it is meant for use "
                  "without fine-tuning)");
  }
}

// finetune.lora: the training config's finetune.lora keys, its trainable
// list, and the adapters' learning rate.
void ReadLoraComparison(const SectionReader& lora, ExtendReportConfig& config) {
  lora.RequireKnownKeys(
      {"r", "alpha", "dropout", "target_modules", "trainable", "lr"});
  ReadLoraKeys(lora, config.lora_finetune.lora);
  ReadTrainableNames(lora, config.lora_finetune.trainable);
  lora.Read("lr", config.lora_lr, 0.0, 10.0);
}

void ReadEval(const SectionReader& eval, ExtendReportConfig& config) {
  eval.RequireKnownKeys({"lengths", "documents", "method", "stride",
                         "passkey_lengths", "depths", "trials"});
  eval.ReadList("lengths", config.lengths, "positive integers");
  eval.Read("documents", config.documents, 1);
  std::string method = LengthEvalMethodName(config.ppl_method);
  eval.Read("method", method);
  try {
    config.ppl_method = LengthEvalMethodFromName(method);
  } catch (const Error& e) {
    eval.Fail(eval.Get("method"), "eval.method", e.what());
  }
  eval.Read("stride", config.stride, 0);
  eval.ReadList("passkey_lengths", config.passkey_lengths, "positive integers");
  eval.ReadList("depths", config.depths, "numbers in [0, 1]");
  eval.Read("trials", config.trials, 1);
  for (int64_t length : config.lengths) {
    if (length < 1 || length > limits::kMaxPositions) {
      eval.Fail(eval.Get("lengths"), "eval.lengths",
                StrCat("must be in [1, ", limits::kMaxPositions,
                       "] (rotor's limit), got ", length));
    }
  }
  for (int64_t length : config.passkey_lengths) {
    if (length > limits::kMaxPositions) {
      eval.Fail(eval.Get("passkey_lengths"), "eval.passkey_lengths",
                StrCat("must be <= ", limits::kMaxPositions,
                       " (rotor's limit), got ", length));
    }
    if (length < PasskeyMinLength()) {
      eval.Fail(eval.Get("passkey_lengths"), "eval.passkey_lengths",
                StrCat("must be >= ", PasskeyMinLength(),
                       " (the shortest passkey prompt), got ", length));
    }
  }
  for (double depth : config.depths) {
    if (!(depth >= 0.0 && depth <= 1.0)) {
      eval.Fail(eval.Get("depths"), "eval.depths",
                StrCat("must be in [0, 1], got ", depth));
    }
  }
}

void ReadChecks(const SectionReader& checks, ExtendReportChecks& out) {
  checks.RequireKnownKeys({"zeroshot_ppl_ratio_min", "finetuned_ppl_ratio_max",
                           "finetuned_passkey_min", "base_passkey_min",
                           "max_seconds"});
  checks.Read("zeroshot_ppl_ratio_min", out.zeroshot_ppl_ratio_min, 0.0,
              kAnyNumber);
  checks.Read("finetuned_ppl_ratio_max", out.finetuned_ppl_ratio_max, 0.0,
              kAnyNumber);
  checks.Read("finetuned_passkey_min", out.finetuned_passkey_min, 0.0, 1.0);
  checks.Read("base_passkey_min", out.base_passkey_min, 0.0, 1.0);
  checks.Read("max_seconds", out.max_seconds, 0.0, kAnyNumber);
}

}  // namespace

ExtendReportConfig ParseExtendReportConfig(
    const std::string& yaml_text, const std::string& file,
    const std::vector<std::string>& overrides) {
  YAML::Node root = LoadConfigYaml(yaml_text, file);
  ROTOR_CHECK(root.IsMap(), file, ": expected a map with base:, factor:, ...");
  const std::set<std::string> overridden = ApplyYamlOverrides(root, overrides);
  ExtendReportConfig config;
  config.file = file;
  const SectionReader top(root, "", file, overridden);
  top.RequireKnownKeys({"base", "output_dir", "factor", "methods", "finetune",
                        "eval", "checks", "threads"});
  ReadBase(SectionReader(root["base"], "base", file, overridden), overridden,
           config);
  top.Read("output_dir", config.output_dir);
  top.Read("factor", config.factor, -kAnyNumber, kAnyNumber);
  if (!(config.factor > 1.0 && config.factor <= 64.0)) {
    top.Fail(top.Get("factor"), "factor",
             StrCat("must be in (1, 64], got ", config.factor));
  }
  ReadMethods(top, "methods", config.methods);
  top.Read("threads", config.threads, 0, limits::kMaxThreads);
  ReadFinetune(SectionReader(root["finetune"], "finetune", file, overridden),
               config);
  const YAML::Node finetune = root["finetune"];
  if (finetune && finetune.IsMap() && finetune["lora"]) {
    ReadLoraComparison(
        SectionReader(finetune["lora"], "finetune.lora", file, overridden),
        config);
  }
  ReadEval(SectionReader(root["eval"], "eval", file, overridden), config);
  ReadChecks(SectionReader(root["checks"], "checks", file, overridden),
             config.checks);
  return config;
}

ExtendReportConfig LoadExtendReportConfig(
    const std::string& path, const std::vector<std::string>& overrides) {
  return ParseExtendReportConfig(ReadConfigText(path), path, overrides);
}

}  // namespace rotor::train
