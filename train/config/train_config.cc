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
#include "train/config/yaml.h"
#include "train/data/passkey.h"
#include "train/io/output_file.h"

namespace rotor::train {

namespace {

const std::set<std::string> kTopLevelKeys = {
    "output_dir", "model",      "data",    "train",
    "eval",       "checkpoint", "logging", "finetune"};

// Each entry of list `key`, `names` as read, once and one of `allowed`.
void CheckNameList(const SectionReader& section, const char* key,
                   const std::vector<std::string>& names,
                   const std::vector<std::string>& allowed) {
  std::string allowed_list;
  for (const std::string& name : allowed) {
    allowed_list += (allowed_list.empty() ? "" : ", ") + name;
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < names.size(); ++i) {
    const YAML::Node at = section.Get(key)[i];
    if (std::find(allowed.begin(), allowed.end(), names[i]) == allowed.end()) {
      section.Fail(at, section.Join(key),
                   StrCat("unknown name '", names[i], "' (expected some of ",
                          allowed_list, ")"));
    }
    if (!seen.insert(names[i]).second) {
      section.Fail(at, section.Join(key),
                   StrCat("'", names[i], "' is listed twice"));
    }
  }
}

}  // namespace

void ReadLoraKeys(const SectionReader& lora, LoraConfig& out) {
  out.enabled = true;
  lora.Read("r", out.r, 1, limits::kMaxHiddenSize);
  lora.Read("alpha", out.alpha, 1e-6, 1e6);
  lora.Read("dropout", out.dropout, 0.0, 0.999);
  lora.ReadList("target_modules", out.target_modules, "module names");
  if (out.target_modules.empty()) {
    lora.Fail(lora.Get("target_modules"), lora.Join("target_modules"),
              "is empty: name at least one projection to adapt");
  }
  CheckNameList(lora, "target_modules", out.target_modules,
                LoraTargetModuleNames());
}

void ReadTrainableNames(const SectionReader& section,
                        std::vector<std::string>& out) {
  section.ReadList("trainable", out, "parameter group names");
  CheckNameList(section, "trainable", out, {"embed_tokens", "norm", "lm_head"});
}

namespace {

// finetune: {lora: {r, alpha, dropout, target_modules}, trainable: [...]}.
// Reads after model: and train:, which it is checked against.
void ReadFinetune(const YAML::Node& root, const std::string& file,
                  const std::set<std::string>& overridden,
                  TrainConfig& config) {
  const YAML::Node node = root["finetune"];
  const SectionReader finetune(node, "finetune", file, overridden);
  finetune.RequireKnownKeys({"lora", "trainable"});
  FinetuneSection& f = config.finetune;
  // `lora:` alone (null) or a map turns LoRA on, with PEFT's defaults for
  // what it leaves out.
  const bool has_lora = node && node.IsMap() && node["lora"];
  if (has_lora) {
    const SectionReader lora(node["lora"], "finetune.lora", file, overridden);
    lora.RequireKnownKeys({"r", "alpha", "dropout", "target_modules"});
    ReadLoraKeys(lora, f.lora);
  }
  ReadTrainableNames(finetune, f.trainable);
  const auto lm_head =
      std::find(f.trainable.begin(), f.trainable.end(), "lm_head");
  if (lm_head != f.trainable.end() &&
      config.model.tie_word_embeddings.value_or(false)) {
    finetune.Fail(finetune.Get("trainable")[lm_head - f.trainable.begin()],
                  "finetune.trainable",
                  "'lm_head' matches no parameter: with "
                  "model.tie_word_embeddings the output projection is "
                  "embed_tokens (list that instead)");
  }
  if (f.freezes_base() && config.train.init_from.empty()) {
    finetune.Fail(node, "finetune",
                  "fine-tuning with a frozen base needs the base: set "
                  "train.init_from to a rotor checkpoint or a Hugging Face "
                  "model folder");
  }
}

// A context extension of a Hugging Face folder measures its scaling from
// the length the folder was pre-trained at: a rope_scaling that reads
// original_max_position_embeddings (yarn, llama3, longrope) gets the
// folder's when it leaves the key out (as axolotl does), and a different
// value is refused, naming both: YaRN's ramp and attention factor, and
// what an export writes, would be those of another model.
void InheritPretrainedLength(const SectionReader& model_section,
                             const std::string& folder, const ModelConfig& base,
                             YAML::Node& model) {
  const YAML::Node scaling = model_section.Get("rope_scaling");
  if (!scaling || !scaling.IsMap()) return;
  const YAML::Node type =
      scaling["rope_type"] ? scaling["rope_type"] : scaling["type"];
  const std::optional<RopeType> rope_type =
      type && type.IsScalar() ? RopeTypeFromName(type.Scalar()) : std::nullopt;
  if (!rope_type) return;  // the model parser names the problem
  const std::vector<std::string> keys = RopeScalingKeys(*rope_type);
  if (std::find(keys.begin(), keys.end(), "original_max_position_embeddings") ==
      keys.end()) {
    return;
  }
  const int64_t pretrained = PretrainedLength(base);
  const bool nested =
      static_cast<bool>(scaling["original_max_position_embeddings"]);
  const YAML::Node given =
      nested ? scaling["original_max_position_embeddings"]
             : model_section.Get("original_max_position_embeddings");
  if (!given) {
    model["rope_scaling"]["original_max_position_embeddings"] = pretrained;
    return;
  }
  const std::optional<int64_t> value = DecodeScalar<int64_t>(given);
  if (!value || *value == pretrained) return;  // the parser checks the type
  model_section.Fail(
      given,
      model_section.Join(nested
                             ? "rope_scaling.original_max_position_embeddings"
                             : "original_max_position_embeddings"),
      StrCat(*value, ", but ", folder,
             "/config.json says the model was pre-trained at ", pretrained,
             " tokens (",
             pretrained == base.rope.max_position_embeddings
                 ? "its max_position_embeddings"
                 : "its rope_scaling.original_max_position_"
                   "embeddings",
             "); set ", pretrained,
             ", or leave the key out to take it from the folder"));
}

// Fine-tuning a Hugging Face model (train.init_from names its folder): the
// model is config.json's, and the YAML's `model:` section, if any, only
// amends it, key by key (rope_scaling as a whole). Typically it sets
// max_position_embeddings and rope_scaling for a context extension (whose
// original_max_position_embeddings must be the folder's pre-training
// length: InheritPretrainedLength); keys that shape weights must stay as
// they are (CheckSameArchitecture).
YAML::Node AmendedHfModelSection(const std::string& folder,
                                 const SectionReader& amendments) {
  const ModelConfig base = LoadHfConfig(folder + "/config.json");
  YAML::Node model = ModelConfigToYaml(base);
  if (amendments.node() && amendments.node().IsMap()) {
    for (const auto& entry : amendments.node()) {
      model[entry.first.Scalar()] = entry.second;
    }
    InheritPretrainedLength(amendments, folder, base, model);
  }
  return model;
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

// train.activation_checkpointing: none | layers | {every_k: K}.
void ReadActivationCheckpointing(const YAML::Node& train_node,
                                 const std::string& file,
                                 const std::set<std::string>& overridden,
                                 const SectionReader& train, int64_t& every) {
  const char* key = "activation_checkpointing";
  const YAML::Node value =
      train_node && train_node.IsMap() ? train_node[key] : YAML::Node();
  if (!value || value.IsNull()) return;
  if (value.IsMap()) {
    const SectionReader every_k(value, "train.activation_checkpointing", file,
                                overridden);
    every_k.RequireKnownKeys({"every_k"});
    if (!value["every_k"]) {
      train.Fail(value, "train.activation_checkpointing",
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
    train.Fail(value, "train.activation_checkpointing",
               "expected none, layers or {every_k: K}, got '" + mode + "'");
  }
}

}  // namespace

TrainConfig ParseTrainConfig(const std::string& yaml_text,
                             const std::string& file,
                             const std::vector<std::string>& overrides) {
  YAML::Node root = LoadConfigYaml(yaml_text, file);
  ROTOR_CHECK(root.IsMap(), file,
              ": expected a map with sections model:, data:, train:, ...");
  const std::set<std::string> overridden = ApplyYamlOverrides(root, overrides);

  TrainConfig config;
  config.file = file;
  const SectionReader top(root, "", file, overridden);
  top.RequireKnownKeys(kTopLevelKeys);
  top.Read("output_dir", config.output_dir);

  const YAML::Node init_from = root["train"] && root["train"].IsMap()
                                   ? root["train"]["init_from"]
                                   : YAML::Node();
  const YAML::Node given_model = root["model"];
  if (init_from && init_from.IsScalar() &&
      IsHfModelFolder(init_from.Scalar()) &&
      (!given_model || given_model.IsNull() || given_model.IsMap())) {
    root["model"] = AmendedHfModelSection(
        init_from.Scalar(),
        SectionReader(root["model"], "model", file, overridden));
  }
  const std::string init_from_problem =
      init_from && init_from.IsScalar() ? InitFromProblem(init_from.Scalar())
                                        : "";
  const auto fail_init_from = [&](const std::string& consequence) {
    SectionReader(root["train"], "train", file, overridden)
        .Fail(init_from, "train.init_from",
              StrCat(init_from_problem, " (", consequence, ")"));
  };
  if (!root["model"] || root["model"].IsNull()) {
    if (!init_from_problem.empty()) {
      fail_init_from(
          "with no model: section, the model comes from its config.json");
    }
    throw Error(StrCat(file, ": the model: section is missing"));
  }
  if (!root["model"].IsMap()) {
    const std::string got = root["model"].IsSequence() ? "a list" : "a value";
    top.Fail(root["model"], "model",
             "expected a map of model settings (vocab_size, hidden_size, "
             "...), got " +
                 got);
  }
  try {
    config.model = ParseModelConfig(root["model"], file);
  } catch (const Error& e) {
    // A model: section that only amends the folder's config.json fails
    // without it: the folder is the problem.
    if (!init_from_problem.empty()) {
      fail_init_from(StrCat("the model: section alone fails: ", e.what()));
    }
    std::string model_overrides;
    for (const std::string& key : overridden) {
      if (key.rfind("model.", 0) == 0) model_overrides += " " + key;
    }
    if (model_overrides.empty()) throw;
    throw Error(StrCat(
        e.what(), " (after command-line overrides:", model_overrides, ")"));
  }

  const SectionReader data(root["data"], "data", file, overridden);
  data.RequireKnownKeys({"path", "tokenizer", "passkey_fraction",
                         "passkey_loss", "passkey_digits", "document_mask",
                         "document_positions"});
  data.Read("path", config.data.path);
  data.Read("tokenizer", config.data.tokenizer);
  data.Read("passkey_fraction", config.data.passkey_fraction, 0.0, 1.0);
  std::string passkey_loss = PasskeyLossName(config.data.passkey_loss);
  data.Read("passkey_loss", passkey_loss);
  try {
    config.data.passkey_loss = ParsePasskeyLoss(passkey_loss);
  } catch (const Error& e) {
    data.Fail(root["data"]["passkey_loss"], "data.passkey_loss", e.what());
  }
  int64_t passkey_digits = config.data.passkey_digits;
  data.Read("passkey_digits", passkey_digits, 1, 18);
  config.data.passkey_digits = static_cast<int>(passkey_digits);
  data.Read("document_mask", config.data.documents.mask_attention);
  data.Read("document_positions", config.data.documents.restart_positions);
  ROTOR_CHECK(!config.data.path.empty(), file,
              ": data.path is required (a folder written by rotor prepare, "
              "or 'brown')");

  TrainSection& t = config.train;
  const SectionReader train(root["train"], "train", file, overridden);
  train.RequireKnownKeys({"batch_size",
                          "seq_len",
                          "gradient_accumulation_steps",
                          "max_steps",
                          "lr",
                          "min_lr",
                          "warmup_steps",
                          "weight_decay",
                          "betas",
                          "eps",
                          "clip_grad_norm",
                          "seed",
                          "threads",
                          "allreduce_bucket_mb",
                          "collective_timeout_seconds",
                          "zero_stage",
                          "loss_explosion_ratio",
                          "resume",
                          "init_from",
                          "activation_checkpointing",
                          "loss_chunk_rows"});
  train.Read("batch_size", t.batch_size, 1, limits::kMaxBatchSize);
  train.Read("seq_len", t.seq_len, 1, limits::kMaxPositions);
  train.Read("gradient_accumulation_steps", t.gradient_accumulation_steps, 1,
             limits::kMaxAccumulationSteps);
  train.Read("max_steps", t.max_steps, 1, limits::kMaxSteps);
  train.Read("lr", t.lr, 0.0, 10.0);
  train.Read("min_lr", t.min_lr, 0.0, 10.0);
  train.Read("warmup_steps", t.warmup_steps, 0, limits::kMaxSteps);
  train.Read("weight_decay", t.weight_decay, 0.0, 10.0);
  train.ReadPair("betas", t.beta1, t.beta2);
  train.Read("eps", t.eps, 1e-30, 1.0);
  train.Read("clip_grad_norm", t.clip_grad_norm, 0.0, 1e30);
  train.Read("seed", t.seed);
  train.Read("threads", t.threads, 0, limits::kMaxThreads);
  train.Read("allreduce_bucket_mb", t.allreduce_bucket_mb, 0.001, 4096.0);
  train.Read("collective_timeout_seconds", t.collective_timeout_seconds, 0.1,
             1e6);
  train.Read("zero_stage", t.zero_stage, 0, 1);
  train.Read("loss_explosion_ratio", t.loss_explosion_ratio, 0.0, 1e30);
  std::string resume = "auto";
  train.Read("resume", resume);
  t.resume = resume == "auto"   ? ResumeMode::kAuto
             : resume == "none" ? ResumeMode::kNone
                                : ResumeMode::kCheckpoint;
  if (t.resume == ResumeMode::kCheckpoint) t.resume_checkpoint = resume;
  train.Read("init_from", t.init_from);
  ReadActivationCheckpointing(root["train"], file, overridden, train,
                              t.activation_checkpointing_every);
  train.Read("loss_chunk_rows", t.loss_chunk_rows, 1,
             limits::kMaxBatchSize * limits::kMaxPositions);
  if (t.min_lr > t.lr) {
    train.Fail(root["train"]["min_lr"], "train.min_lr",
               StrCat("must not exceed train.lr (", t.lr, "), got ", t.min_lr));
  }
  const int64_t max_positions = config.model.rope.max_position_embeddings;
  if (t.seq_len > max_positions) {
    train.Fail(root["train"]["seq_len"], "train.seq_len",
               StrCat("exceeds model.max_position_embeddings (", max_positions,
                      "), got ", t.seq_len));
  }

  // The trainer counts the tokens of the run in int64_t.
  const std::string run_tokens =
      StrCat("the tokens of the run of ", file,
             " (train.batch_size * train.seq_len * "
             "train.gradient_accumulation_steps * train.max_steps)");
  CheckedMul(CheckedMul(CheckedMul(t.batch_size, t.seq_len, run_tokens),
                        t.gradient_accumulation_steps, run_tokens),
             t.max_steps, run_tokens);

  const int64_t passkey_length = PasskeyMinLength(config.data.passkey_digits);
  if (config.data.passkey_fraction > 0 && t.seq_len + 1 < passkey_length) {
    data.Fail(root["data"]["passkey_fraction"], "data.passkey_fraction",
              StrCat("needs train.seq_len >= ", passkey_length - 1,
                     " (the shortest passkey example), got ", t.seq_len));
  }

  const SectionReader eval(root["eval"], "eval", file, overridden);
  eval.RequireKnownKeys({"every_n_steps", "max_batches"});
  eval.Read("every_n_steps", config.eval.every_n_steps, 0);
  eval.Read("max_batches", config.eval.max_batches, 0);

  const SectionReader checkpoint(root["checkpoint"], "checkpoint", file,
                                 overridden);
  checkpoint.RequireKnownKeys({"every_n_steps", "keep_last_n"});
  checkpoint.Read("every_n_steps", config.checkpoint.every_n_steps, 0);
  checkpoint.Read("keep_last_n", config.checkpoint.keep_last_n, 1);

  const SectionReader logging(root["logging"], "logging", file, overridden);
  logging.RequireKnownKeys({"log_every_n_steps", "progress"});
  logging.Read("log_every_n_steps", config.logging.log_every_n_steps, 1);
  logging.Read("progress", config.logging.progress);

  ReadFinetune(root, file, overridden, config);
  return config;
}

TrainConfig LoadTrainConfig(const std::string& path,
                            const std::vector<std::string>& overrides) {
  return ParseTrainConfig(ReadConfigText(path), path, overrides);
}

ModelConfig LoadConfigFileModel(const std::string& path,
                                const std::vector<std::string>& overrides) {
  const std::string text = ReadConfigText(path);
  const YAML::Node root = LoadConfigYaml(text, path);
  bool model_only = root.IsMap();
  for (const auto& entry : model_only ? root : YAML::Node()) {
    if (entry.first.Scalar() != "model") model_only = false;
  }
  if (!model_only) return ParseTrainConfig(text, path, overrides).model;
  const ModelConfig model = ParseModelConfigText(text, path);
  return overrides.empty() ? model
                           : OverrideModelConfig(model, overrides, path);
}

std::string TrainConfigToYaml(const TrainConfig& config) {
  YAML::Node root(YAML::NodeType::Map);
  root["output_dir"] = config.output_dir;
  root["model"] = ModelConfigToYaml(config.model);
  root["data"]["path"] = config.data.path;
  if (!config.data.tokenizer.empty()) {
    root["data"]["tokenizer"] = config.data.tokenizer;
  }
  root["data"]["passkey_fraction"] = YamlNumber(config.data.passkey_fraction);
  root["data"]["passkey_loss"] = PasskeyLossName(config.data.passkey_loss);
  root["data"]["passkey_digits"] = config.data.passkey_digits;
  root["data"]["document_mask"] = config.data.documents.mask_attention;
  root["data"]["document_positions"] = config.data.documents.restart_positions;
  const TrainSection& t = config.train;
  YAML::Node train(YAML::NodeType::Map);
  train["batch_size"] = t.batch_size;
  train["seq_len"] = t.seq_len;
  train["gradient_accumulation_steps"] = t.gradient_accumulation_steps;
  train["max_steps"] = t.max_steps;
  train["lr"] = YamlNumber(t.lr);
  train["min_lr"] = YamlNumber(t.min_lr);
  train["warmup_steps"] = t.warmup_steps;
  train["weight_decay"] = YamlNumber(t.weight_decay);
  YAML::Node betas(YAML::NodeType::Sequence);
  betas.SetStyle(YAML::EmitterStyle::Flow);
  betas.push_back(YamlNumber(t.beta1));
  betas.push_back(YamlNumber(t.beta2));
  train["betas"] = betas;
  train["eps"] = YamlNumber(t.eps);
  train["clip_grad_norm"] = YamlNumber(t.clip_grad_norm);
  train["seed"] = t.seed;
  train["threads"] = t.threads;
  train["allreduce_bucket_mb"] = YamlNumber(t.allreduce_bucket_mb);
  train["collective_timeout_seconds"] =
      YamlNumber(t.collective_timeout_seconds);
  train["zero_stage"] = t.zero_stage;
  train["loss_explosion_ratio"] = YamlNumber(t.loss_explosion_ratio);
  train["resume"] = t.resume == ResumeMode::kAuto   ? "auto"
                    : t.resume == ResumeMode::kNone ? "none"
                                                    : t.resume_checkpoint;
  if (!t.init_from.empty()) train["init_from"] = t.init_from;
  if (t.activation_checkpointing_every == 1) {
    train["activation_checkpointing"] = "layers";
  } else if (t.activation_checkpointing_every > 1) {
    train["activation_checkpointing"]["every_k"] =
        t.activation_checkpointing_every;
  }
  train["loss_chunk_rows"] = t.loss_chunk_rows;
  root["train"] = train;
  root["eval"]["every_n_steps"] = config.eval.every_n_steps;
  root["eval"]["max_batches"] = config.eval.max_batches;
  root["checkpoint"]["every_n_steps"] = config.checkpoint.every_n_steps;
  root["checkpoint"]["keep_last_n"] = config.checkpoint.keep_last_n;
  root["logging"]["log_every_n_steps"] = config.logging.log_every_n_steps;
  root["logging"]["progress"] = config.logging.progress;
  const FinetuneSection& f = config.finetune;
  const auto flow_list = [](const std::vector<std::string>& names) {
    YAML::Node list(YAML::NodeType::Sequence);
    list.SetStyle(YAML::EmitterStyle::Flow);
    for (const std::string& name : names) list.push_back(name);
    return list;
  };
  if (f.lora.enabled) {
    root["finetune"]["lora"]["r"] = f.lora.r;
    root["finetune"]["lora"]["alpha"] = YamlNumber(f.lora.alpha);
    root["finetune"]["lora"]["dropout"] = YamlNumber(f.lora.dropout);
    root["finetune"]["lora"]["target_modules"] =
        flow_list(f.lora.target_modules);
  }
  if (!f.trainable.empty()) {
    root["finetune"]["trainable"] = flow_list(f.trainable);
  }
  YAML::Emitter out;
  out << root;
  return std::string(out.c_str()) + "\n";
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
  compare("data.passkey_loss",
          std::string(PasskeyLossName(saved.data.passkey_loss)),
          std::string(PasskeyLossName(now.data.passkey_loss)));
  compare("data.passkey_digits", saved.data.passkey_digits,
          now.data.passkey_digits);
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
