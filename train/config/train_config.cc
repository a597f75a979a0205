#include "train/config/train_config.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/checked_math.h"
#include "core/error.h"
#include "core/limits.h"
#include "train/config/hf_config.h"
#include "train/config/model_yaml.h"
#include "train/config/yaml.h"
#include "train/data/passkey.h"
#include "train/io/message.h"
#include "train/io/output_file.h"

namespace rotor::train {

namespace {

// The training config's own reader: model: is read first, by
// ParseTrainConfig (it may amend train.init_from's config.json).
class TrainConfigReader : public YamlTableReader {
 public:
  using YamlTableReader::YamlTableReader;
  using YamlTableReader::operator();
  using YamlTableReader::Section;
  void Section(const Key&, ModelConfig&) {}
};

}  // namespace

MatmulPrecision ParsePrecision(const std::string& name) {
  MatmulPrecision precision;
  ROTOR_CHECK(ParseMatmulPrecision(name, &precision), "unknown precision '",
              Excerpt(name), "' (known: fp32, bf16)");
  return precision;
}

void ResumeKey::Read(const SectionReader& section, const char* key,
                     const ResumeSetting& out) const {
  std::string resume = "auto";
  section.Read(key, resume);
  out.mode = resume == "auto"   ? ResumeMode::kAuto
             : resume == "none" ? ResumeMode::kNone
                                : ResumeMode::kCheckpoint;
  out.folder = out.mode == ResumeMode::kCheckpoint ? resume : "";
}

std::optional<YAML::Node> ResumeKey::Write(const ResumeSetting& value) const {
  return YAML::Node(value.mode == ResumeMode::kAuto   ? "auto"
                    : value.mode == ResumeMode::kNone ? "none"
                                                      : value.folder.c_str());
}

void ActivationCheckpointingKey::Read(const SectionReader& train,
                                      const char* key, int64_t& every) const {
  const YAML::Node value = train.Get(key);
  if (!value) return;
  const std::string path = train.Join(key);
  if (value.IsMap()) {
    const SectionReader every_k = train.Sub(key);
    every_k.RequireKnownKeys({"every_k"});
    if (!value["every_k"]) {
      train.Fail(value, path,
                 "expected none, layers or {every_k: K}, got a map without "
                 "every_k");
    }
    every_k.Read("every_k", every, 1, limits::kMaxLayers);
    return;
  }
  std::string mode;
  train.Read(key, mode);
  if (mode == "none") {
    every = 0;
  } else if (mode == "layers") {
    every = 1;
  } else {
    train.Fail(value, path,
               "expected none, layers or {every_k: K}, got '" + mode + "'");
  }
}

std::optional<YAML::Node> ActivationCheckpointingKey::Write(
    const int64_t& every) const {
  if (every == 0) return std::nullopt;
  if (every == 1) return YAML::Node("layers");
  YAML::Node map(YAML::NodeType::Map);
  map["every_k"] = every;
  return map;
}

std::optional<ConfigProblem> FindTrainConfigProblem(const TrainConfig& config) {
  const TrainSection& t = config.train;
  if (t.min_lr > t.lr) {
    return ConfigProblem{"train.min_lr", StrCat("must not exceed train.lr (",
                                                t.lr, "), got ", t.min_lr)};
  }
  const int64_t max_positions = config.model.rope.max_position_embeddings;
  if (t.seq_len > max_positions) {
    return ConfigProblem{
        "train.seq_len",
        StrCat("exceeds model.max_position_embeddings (", max_positions,
               "), got ", t.seq_len, ": set train.seq_len: ", max_positions,
               ", or model.max_position_embeddings: ", t.seq_len,
               " with a rope_scaling whose factor covers it")};
  }
  if (!RowSharesFit(config.data.passkey_fraction,
                    config.data.retrieval_fraction)) {
    return ConfigProblem{
        "data.retrieval_fraction",
        StrCat("must be at most 1 - data.passkey_fraction (",
               config.data.passkey_fraction,
               "): a row is a passkey or a retrieval example, got ",
               config.data.retrieval_fraction)};
  }
  if (config.data.retrieval_fraction > 0 &&
      config.data.retrieval_tasks.empty()) {
    return ConfigProblem{"data.retrieval_tasks",
                         "must name a task with data.retrieval_fraction > 0 "
                         "(niah_single, niah_multikey, niah_multivalue, "
                         "variable_tracking)"};
  }
  const int64_t shortest =
      PasskeyMinLength(static_cast<int>(config.data.passkey_digits));
  if (config.data.passkey_fraction > 0 && t.seq_len + 1 < shortest) {
    return ConfigProblem{
        "data.passkey_fraction",
        StrCat("needs train.seq_len >= ", shortest - 1,
               " (the shortest passkey example), got ", t.seq_len)};
  }
  const FinetuneSection& f = config.finetune;
  const auto lm_head =
      std::find(f.trainable.begin(), f.trainable.end(), "lm_head");
  if (lm_head != f.trainable.end() &&
      config.model.tie_word_embeddings.value_or(false)) {
    return ConfigProblem{"finetune.trainable",
                         "'lm_head' matches no parameter: with "
                         "model.tie_word_embeddings the output projection is "
                         "embed_tokens (list that instead)",
                         lm_head - f.trainable.begin()};
  }
  if (f.freezes_base() && t.init_from.empty()) {
    return ConfigProblem{"finetune",
                         "fine-tuning with a frozen base needs the base: set "
                         "train.init_from to a rotor checkpoint or a Hugging "
                         "Face model folder"};
  }
  return std::nullopt;
}

namespace {

// Fine-tuning a Hugging Face model (train.init_from names its folder): the
// model is config.json's, and the YAML's `model:` section, if any, only
// amends it, key by key (rope_scaling as a whole). Typically it sets
// max_position_embeddings and rope_scaling for a context extension (whose
// original_max_position_embeddings must be the folder's pre-training
// length: AmendModelConfig); keys that shape weights must stay as they are
// (CheckSameArchitecture).
ModelConfig AmendedHfModel(const std::string& folder,
                           const YAML::Node& amendments,
                           const std::string& file,
                           const OverriddenKeys& overridden) {
  const std::string config_json = folder + "/config.json";
  return AmendModelConfig(LoadHfConfig(config_json), config_json, amendments,
                          file, overridden);
}

// Why train.init_from's folder cannot be what it names: "" when it is a
// folder whose config.json, if any, is a file. Without a model: section
// the model comes from that config.json, so a mistyped or moved folder
// must be named rather than reported as a missing section.
std::string InitFromProblem(const std::string& folder) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (!fs::exists(folder, error)) return folder + " does not exist";
  if (!fs::is_directory(folder, error)) return folder + " is not a folder";
  const std::string config_json = (fs::path(folder) / "config.json").string();
  const std::string kind = NonRegularFileKind(config_json);
  if (kind.empty()) return "";
  return StrCat(config_json, " is ", kind, ", not a file");
}

}  // namespace

TrainConfig ParseTrainConfig(const std::string& yaml_text,
                             const std::string& file,
                             const std::vector<std::string>& overrides) {
  YAML::Node root = LoadConfigYaml(yaml_text, file);
  ROTOR_CHECK(root.IsMap(), file,
              ": expected a map with sections model:, data:, train:, ...");
  const OverriddenKeys overridden = ApplyYamlOverrides(root, overrides);

  TrainConfig config;
  config.file = file;
  const SectionReader top(root, "", file, overridden);
  const std::vector<std::string> sections = KeyNamesOf<TrainConfig>();
  top.RequireKnownKeys({sections.begin(), sections.end()});

  const YAML::Node init_from = root["train"] && root["train"].IsMap()
                                   ? root["train"]["init_from"]
                                   : YAML::Node();
  const YAML::Node given_model = root["model"];
  const bool amends_hf_folder =
      init_from && init_from.IsScalar() &&
      IsHfModelFolder(init_from.Scalar()) &&
      (!given_model || given_model.IsNull() || given_model.IsMap());
  const std::string init_from_problem =
      init_from && init_from.IsScalar() ? InitFromProblem(init_from.Scalar())
                                        : "";
  const auto fail_init_from = [&](const std::string& consequence) {
    SectionReader(root["train"], "train", file, overridden)
        .Fail(init_from, "train.init_from",
              StrCat(init_from_problem, " (", consequence, ")"));
  };
  if (amends_hf_folder) {
    config.model =
        AmendedHfModel(init_from.Scalar(), given_model, file, overridden);
  } else {
    if (!given_model || given_model.IsNull()) {
      if (!init_from_problem.empty()) {
        fail_init_from(
            "with no model: section, the model comes from its config.json");
      }
      throw Error(StrCat(file, ": the model: section is missing"));
    }
    if (!given_model.IsMap()) {
      const std::string got = given_model.IsSequence() ? "a list" : "a value";
      top.Fail(given_model, "model",
               "expected a map of model settings (vocab_size, hidden_size, "
               "...), got " +
                   got);
    }
    try {
      config.model = ParseModelConfig(given_model, file, overridden);
    } catch (const Error& e) {
      // A model: section that only amends the folder's config.json fails
      // without it: the folder is the problem.
      if (!init_from_problem.empty()) {
        fail_init_from(StrCat("the model: section alone fails: ", e.what()));
      }
      throw;
    }
  }

  TrainConfigReader reader(top);
  VisitFields(reader, config);
  ROTOR_CHECK(!config.data.path.empty(), file,
              ": data.path is required (a folder written by rotor prepare, "
              "or 'brown')");

  // The trainer counts the tokens of the run in int64_t.
  const TrainSection& t = config.train;
  const std::string run_tokens =
      StrCat("the tokens of the run of ", file,
             " (train.batch_size * train.seq_len * "
             "train.gradient_accumulation_steps * train.max_steps)");
  CheckedMul(CheckedMul(CheckedMul(t.batch_size, t.seq_len, run_tokens),
                        t.gradient_accumulation_steps, run_tokens),
             t.max_steps, run_tokens);
  if (const std::optional<ConfigProblem> problem =
          FindTrainConfigProblem(config)) {
    top.Fail(NodeOfProblem(root, *problem), problem->key, problem->message);
  }
  return config;
}

TrainConfig LoadTrainConfig(const std::string& path,
                            const std::vector<std::string>& overrides) {
  return ParseTrainConfig(ReadConfigText(path), path, overrides);
}

ModelConfig LoadConfigFileModel(const std::string& path,
                                const std::vector<std::string>& overrides,
                                std::optional<TrainConfig>* training) {
  const std::string text = ReadConfigText(path);
  const YAML::Node root = LoadConfigYaml(text, path);
  bool model_only = root.IsMap();
  for (const auto& entry : model_only ? root : YAML::Node()) {
    if (entry.first.Scalar() != "model") model_only = false;
  }
  if (!model_only) {
    TrainConfig config = ParseTrainConfig(text, path, overrides);
    if (training != nullptr) *training = config;
    return config.model;
  }
  const ModelConfig model = ParseModelConfigText(text, path);
  return overrides.empty() ? model
                           : OverrideModelConfig(model, overrides, path);
}

std::string TrainConfigToYaml(const TrainConfig& config) {
  return YamlFileText(config);
}

TrainConfig ParseCheckpointTrainConfig(const std::string& yaml_text,
                                       const std::string& file) {
  TrainConfig config = ParseTrainConfig(yaml_text, file);
  const YAML::Node data = LoadConfigYaml(yaml_text, file)["data"];
  if (!(data && data["passkey_loss"]) && config.data.passkey_fraction > 0) {
    config.data.passkey_loss = PasskeyLoss::kAll;
  }
  return config;
}

namespace {

// Appends "KEY BEFORE (checkpoint) vs AFTER (config)" to `differences` when
// the values differ.
template <typename T>
void CompareSetting(std::string& differences, const char* key, const T& before,
                    const T& after) {
  if (before == after) return;
  differences += StrCat(differences.empty() ? "" : ", ", key, " ", before,
                        " (checkpoint) vs ", after, " (config)");
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string text = "[";
  for (const std::string& name : names) {
    text += (text.size() > 1 ? ", " : "") + name;
  }
  return text + "]";
}

}  // namespace

std::string FinetuneDifferences(const TrainConfig& saved,
                                const TrainConfig& now) {
  std::string differences;
  const FinetuneSection& a = saved.finetune;
  const FinetuneSection& b = now.finetune;
  CompareSetting(differences, "finetune.lora",
                 std::string(a.lora.enabled ? "on" : "off"),
                 std::string(b.lora.enabled ? "on" : "off"));
  if (a.lora.enabled && b.lora.enabled) {
    CompareSetting(differences, "finetune.lora.r", a.lora.r, b.lora.r);
    CompareSetting(differences, "finetune.lora.alpha", a.lora.alpha,
                   b.lora.alpha);
    CompareSetting(differences, "finetune.lora.dropout", a.lora.dropout,
                   b.lora.dropout);
    CompareSetting(differences, "finetune.lora.target_modules",
                   JoinNames(a.lora.target_modules),
                   JoinNames(b.lora.target_modules));
  }
  CompareSetting(differences, "finetune.trainable", JoinNames(a.trainable),
                 JoinNames(b.trainable));
  return differences;
}

std::string DataStreamDifferences(const TrainConfig& saved,
                                  const TrainConfig& now) {
  std::string differences;
  const auto compare = [&differences](const char* key, const auto& before,
                                      const auto& after) {
    CompareSetting(differences, key, before, after);
  };
  compare("train.batch_size", saved.train.batch_size, now.train.batch_size);
  compare("train.seq_len", saved.train.seq_len, now.train.seq_len);
  compare("train.gradient_accumulation_steps",
          saved.train.gradient_accumulation_steps,
          now.train.gradient_accumulation_steps);
  compare("train.seed", saved.train.seed, now.train.seed);
  compare("data.passkey_fraction", saved.data.passkey_fraction,
          now.data.passkey_fraction);
  compare("data.passkey_digits", saved.data.passkey_digits,
          now.data.passkey_digits);
  compare("data.passkey_loss",
          std::string(PasskeyLossName(saved.data.passkey_loss)),
          std::string(PasskeyLossName(now.data.passkey_loss)));
  compare("data.retrieval_fraction", saved.data.retrieval_fraction,
          now.data.retrieval_fraction);
  if (saved.data.retrieval_fraction > 0 || now.data.retrieval_fraction > 0) {
    // Without retrieval rows the tasks draw nothing.
    const auto names = [](const std::vector<RetrievalTask>& tasks) {
      std::vector<std::string> list;
      for (RetrievalTask task : tasks) list.push_back(RetrievalTaskName(task));
      return JoinNames(list);
    };
    compare("data.retrieval_tasks", names(saved.data.retrieval_tasks),
            names(now.data.retrieval_tasks));
  }
  return differences;
}

nn::FinetuneSettings FinetuneSettingsOf(const FinetuneSection& finetune) {
  nn::FinetuneSettings settings;
  settings.lora = finetune.lora.enabled;
  settings.lora_settings = {finetune.lora.r, finetune.lora.alpha,
                            finetune.lora.dropout};
  settings.target_modules = finetune.lora.target_modules;
  settings.trainable = finetune.trainable;
  return settings;
}

}  // namespace rotor::train
