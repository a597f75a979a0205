#include "train/config/report_config.h"

#include <algorithm>
#include <set>

#include "core/error.h"
#include "core/limits.h"
#include "train/config/yaml.h"

namespace rotor::train {

namespace {

bool Contains(const std::vector<RopeType>& list, RopeType type) {
  return std::find(list.begin(), list.end(), type) != list.end();
}

}  // namespace

std::vector<RopeType> RopeTypesNotFinetuned() {
  std::vector<RopeType> types;
  for (const RopeMethod& method : RopeMethods()) {
    if (method.scales_only_past_max_positions()) types.push_back(method.type);
  }
  return types;
}

std::string RefuseMethod(const std::string& given) {
  return StrCat("unknown method '", given, "' (", RopeTypeNames(), ")");
}

const char* ReportExportName(ReportExport format) {
  return format == ReportExport::kHf ? "hf" : "none";
}

ReportExport ParseReportExport(const std::string& name) {
  if (name == "none") return ReportExport::kNone;
  if (name == "hf") return ReportExport::kHf;
  throw Error(StrCat("export must be 'none' or 'hf', got '", name, "'"));
}

std::optional<ConfigProblem> FindReportConfigProblem(
    const ExtendReportConfig& config) {
  if (config.base_config.empty() && config.base_init_from.empty()) {
    return ConfigProblem{"base.config",
                         "is required: the training config of the base model "
                         "(or base.init_from: a model you already have)"};
  }
  if (config.base_config.empty() && !config.base_overrides.empty()) {
    return ConfigProblem{"base.overrides",
                         "need base.config: they are overrides of it"};
  }
  if (config.base_config.empty() && config.base_data.empty()) {
    return ConfigProblem{"base.data",
                         "is required with base.init_from and no base.config: "
                         "the text to fine-tune and evaluate on (a prepared "
                         "data folder or a folder of text files)"};
  }
  if (config.practice_steps > 0 && config.practice_output_dir.empty()) {
    return ConfigProblem{"base.practice.output_dir",
                         "is required with base.practice.steps > 0: the "
                         "practice run's folder"};
  }
  if (!RowSharesFit(config.practice_passkey_fraction,
                    config.practice_retrieval_fraction)) {
    return ConfigProblem{
        "base.practice.retrieval_fraction",
        StrCat("must be at most 1 - base.practice.passkey_fraction (",
               config.practice_passkey_fraction,
               "): a row is a passkey or a retrieval example, got ",
               config.practice_retrieval_fraction)};
  }
  if (config.finetune_passkey_fraction && config.finetune_retrieval_fraction &&
      !RowSharesFit(*config.finetune_passkey_fraction,
                    *config.finetune_retrieval_fraction)) {
    return ConfigProblem{
        "finetune.retrieval_fraction",
        StrCat("must be at most 1 - finetune.passkey_fraction (",
               *config.finetune_passkey_fraction,
               "): a row is a passkey or a retrieval example, got ",
               *config.finetune_retrieval_fraction)};
  }
  if (config.practice_retrieval_tasks.empty() &&
      (config.practice_retrieval_fraction > 0 ||
       config.finetune_retrieval_fraction.value_or(0.0) > 0)) {
    return ConfigProblem{"base.practice.retrieval_tasks",
                         "must name a task with retrieval rows in practice or "
                         "the fine-tunes (niah_single, niah_multikey, "
                         "niah_multivalue, variable_tracking)"};
  }
  if (config.finetune_min_lr > config.finetune_lr) {
    return ConfigProblem{
        "finetune.min_lr",
        StrCat("must not exceed finetune.lr (", config.finetune_lr, "), got ",
               config.finetune_min_lr)};
  }
  for (const RopeType type : config.methods) {
    if (config.finetune_steps > 0 &&
        RopeMethodOf(type).scales_only_past_max_positions() &&
        !Contains(config.finetune_skip, type)) {
      return ConfigProblem{
          "finetune.skip",
          StrCat("must list ", RopeTypeName(type), ": rope_type '",
                 RopeTypeName(type),
                 "' reads its original length L0 from "
                 "max_position_embeddings and scales only sequences longer "
                 "than it, so it cannot be fine-tuned at a longer seq_len (it "
                 "is meant for use without fine-tuning)")};
    }
  }
  for (int64_t length : config.lengths) {
    if (length < 1 || length > limits::kMaxPositions) {
      return ConfigProblem{"eval.lengths",
                           StrCat("must be in [1, ", limits::kMaxPositions,
                                  "] (rotor's limit), got ", length)};
    }
  }
  // The shortest passkey prompt depends on the tokenizer: PlanReport checks
  // it.
  for (int64_t length : config.passkey_lengths) {
    if (length < 1 || length > limits::kMaxPositions) {
      return ConfigProblem{"eval.passkey_lengths",
                           StrCat("must be in [1, ", limits::kMaxPositions,
                                  "] (rotor's limit), got ", length)};
    }
  }
  for (int64_t length : config.retrieval_lengths) {
    if (length < 1 || length > limits::kMaxPositions) {
      return ConfigProblem{"eval.retrieval_lengths",
                           StrCat("must be in [1, ", limits::kMaxPositions,
                                  "] (rotor's limit), got ", length)};
    }
  }
  for (double depth : config.depths) {
    if (!(depth >= 0.0 && depth <= 1.0)) {
      return ConfigProblem{"eval.depths",
                           StrCat("must be in [0, 1], got ", depth)};
    }
  }
  return std::nullopt;
}

ExtendReportConfig ParseExtendReportConfig(
    const std::string& yaml_text, const std::string& file,
    const std::vector<std::string>& overrides) {
  YAML::Node root = LoadConfigYaml(yaml_text, file);
  ROTOR_CHECK(root.IsMap(), file, ": expected a map with base:, factor:, ...");
  const OverriddenKeys overridden = ApplyYamlOverrides(root, overrides);
  ExtendReportConfig config;
  config.file = file;
  const SectionReader top(root, "", file, overridden);
  YamlTableReader(top).ReadAll(config);
  if (const std::optional<ConfigProblem> problem =
          FindReportConfigProblem(config)) {
    top.Fail(NodeOfProblem(root, *problem), problem->key, problem->message);
  }
  return config;
}

std::string ExtendReportConfigToYaml(const ExtendReportConfig& config) {
  return YamlFileText(config);
}

ExtendReportConfig LoadExtendReportConfig(
    const std::string& path, const std::vector<std::string>& overrides) {
  return ParseExtendReportConfig(ReadConfigText(path), path, overrides);
}

}  // namespace rotor::train
