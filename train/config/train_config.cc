#include "train/config/train_config.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/error.h"
#include "train/data/passkey.h"

namespace rotor::train {

namespace {

// Reads one section (a YAML map) strictly: every key must be known, every
// value of the right type; errors say "file:line:column: path.key: problem".
class SectionReader {
 public:
  SectionReader(const YAML::Node& node, std::string path,
                const std::string& file,
                const std::set<std::string>& overridden)
      : node_(node),
        path_(std::move(path)),
        file_(file),
        overridden_(overridden) {
    if (node_ && !node_.IsNull() && !node_.IsMap()) {
      Fail(node_, path_, "expected a map of settings");
    }
  }

  // Rejects keys not in `known`.
  void RequireKnownKeys(const std::set<std::string>& known) const {
    if (!node_ || node_.IsNull()) return;
    for (const auto& entry : node_) {
      const std::string key = entry.first.Scalar();
      if (known.count(key)) continue;
      std::string list;
      for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
      Fail(entry.first, Join(key), "unknown key (known keys: " + list + ")");
    }
  }

  void Read(const char* key, int64_t& out, int64_t min_value) const {
    const YAML::Node value = Get(key);
    if (!value) return;
    int64_t parsed;
    if (!YAML::convert<int64_t>::decode(value, parsed)) {
      Fail(value, Join(key), "expected an integer, got " + Describe(value));
    }
    if (parsed < min_value) {
      Fail(value, Join(key),
           StrCat("must be >= ", min_value, ", got ", parsed));
    }
    out = parsed;
  }

  void Read(const char* key, uint64_t& out) const {
    const YAML::Node value = Get(key);
    if (!value) return;
    uint64_t parsed;
    if (!YAML::convert<uint64_t>::decode(value, parsed) ||
        value.Scalar().find('-') != std::string::npos) {
      Fail(value, Join(key),
           "expected a non-negative integer, got " + Describe(value));
    }
    out = parsed;
  }

  void Read(const char* key, double& out, double min_value,
            double max_value) const {
    const YAML::Node value = Get(key);
    if (!value) return;
    double parsed;
    if (!YAML::convert<double>::decode(value, parsed) ||
        !std::isfinite(parsed)) {
      Fail(value, Join(key), "expected a number, got " + Describe(value));
    }
    if (parsed < min_value || parsed > max_value) {
      Fail(value, Join(key),
           StrCat("must be in [", min_value, ", ", max_value, "], got ",
                  parsed));
    }
    out = parsed;
  }

  void Read(const char* key, bool& out) const {
    const YAML::Node value = Get(key);
    if (!value) return;
    bool parsed;
    if (!YAML::convert<bool>::decode(value, parsed)) {
      Fail(value, Join(key), "expected true or false, got " + Describe(value));
    }
    out = parsed;
  }

  void Read(const char* key, std::string& out) const {
    const YAML::Node value = Get(key);
    if (!value) return;
    if (!value.IsScalar() || value.Scalar().empty()) {
      Fail(value, Join(key),
           "expected a non-empty string, got " + Describe(value));
    }
    out = value.Scalar();
  }

  // A two-element list of numbers in [0, 1), e.g. AdamW's betas.
  void ReadPair(const char* key, double& first, double& second) const {
    const YAML::Node value = Get(key);
    if (!value) return;
    if (!value.IsSequence() || value.size() != 2) {
      Fail(value, Join(key),
           "expected a list of two numbers, got " + Describe(value));
    }
    double parsed[2];
    for (int i = 0; i < 2; ++i) {
      if (!YAML::convert<double>::decode(value[i], parsed[i]) ||
          !(parsed[i] >= 0.0 && parsed[i] < 1.0)) {
        Fail(value[i], Join(key),
             "expected numbers in [0, 1), got " + Describe(value[i]));
      }
    }
    first = parsed[0];
    second = parsed[1];
  }

  [[noreturn]] void Fail(const YAML::Node& at, const std::string& key_path,
                         const std::string& message) const {
    std::string where = file_;
    if (overridden_.count(key_path)) {
      where = "command-line override " + key_path;
    } else if (at.Mark().line >= 0) {
      where += StrCat(":", at.Mark().line + 1, ":", at.Mark().column + 1);
    }
    throw Error(StrCat(where, ": ", key_path, ": ", message));
  }

 private:
  YAML::Node Get(const char* key) const {
    if (!node_ || node_.IsNull()) return YAML::Node(YAML::NodeType::Undefined);
    const YAML::Node value = node_[key];
    if (!value || value.IsNull()) {
      return YAML::Node(YAML::NodeType::Undefined);
    }
    return value;
  }

  std::string Join(const std::string& key) const {
    return path_.empty() ? key : path_ + "." + key;
  }

  static std::string Describe(const YAML::Node& node) {
    if (node.IsMap()) return "a map";
    if (node.IsSequence()) return "a list";
    return "'" + node.Scalar() + "'";
  }

  YAML::Node node_;
  std::string path_;
  const std::string& file_;
  const std::set<std::string>& overridden_;
};

// yaml-cpp keeps both entries of a repeated key (node[key] finds the first,
// a loop over the map sees both), so one of the two values would be lost
// without a word: reject repeated keys anywhere in the file.
void RejectDuplicateKeys(const YAML::Node& node, const std::string& path,
                         const std::string& file) {
  if (node.IsSequence()) {
    for (const YAML::Node& item : node) RejectDuplicateKeys(item, path, file);
    return;
  }
  if (!node.IsMap()) return;
  std::map<std::string, int> first_line;
  for (const auto& entry : node) {
    const std::string key = entry.first.Scalar();
    const std::string key_path = path.empty() ? key : path + "." + key;
    const YAML::Mark mark = entry.first.Mark();
    const auto [first, inserted] = first_line.emplace(key, mark.line + 1);
    ROTOR_CHECK(inserted, file, ":", mark.line + 1, ":", mark.column + 1, ": ",
                key_path, ": duplicate key (first given on line ",
                first->second, ")");
    RejectDuplicateKeys(entry.second, key_path, file);
  }
}

}  // namespace

std::string ApplyYamlOverride(YAML::Node& root, const std::string& assignment) {
  const size_t equals = assignment.find('=');
  ROTOR_CHECK(equals != std::string::npos && equals > 0, "override '",
              assignment,
              "' is not of the form key.path=value (e.g. train.lr=3e-4)");
  const std::string path = assignment.substr(0, equals);
  const std::string text = assignment.substr(equals + 1);
  ROTOR_CHECK(!text.empty(), "override '", assignment,
              "' has no value (key.path=null resets a key to its default)");
  std::vector<std::string> keys;
  std::stringstream stream(path);
  for (std::string key; std::getline(stream, key, '.');) {
    ROTOR_CHECK(!key.empty(), "override '", assignment,
                "' has an empty key in its path");
    keys.push_back(key);
  }
  YAML::Node value;
  try {
    value = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw Error(StrCat("override '", assignment,
                       "': the value is not valid YAML: ", e.msg));
  }
  // Walk (creating maps on the way) to the parent of the last key. Nodes are
  // handles, so assigning through `node` edits the tree.
  YAML::Node node = root;
  for (size_t i = 0; i + 1 < keys.size(); ++i) {
    YAML::Node child = node[keys[i]];
    if (!child || child.IsNull()) {
      node[keys[i]] = YAML::Node(YAML::NodeType::Map);
      child = node[keys[i]];
    }
    ROTOR_CHECK(child.IsMap(), "override '", assignment, "': ", keys[i],
                " is not a section");
    node.reset(child);
  }
  node[keys.back()] = value;
  return path;
}

namespace {

const std::set<std::string> kTopLevelKeys = {
    "output_dir", "model", "data", "train", "eval", "checkpoint", "logging"};

}  // namespace

YAML::Node LoadConfigYaml(const std::string& yaml_text,
                          const std::string& file) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw Error(StrCat(file, ":", e.mark.line + 1, ":", e.mark.column + 1,
                       ": not valid YAML: ", e.msg));
  }
  if (!root || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  RejectDuplicateKeys(root, "", file);
  return root;
}

TrainConfig ParseTrainConfig(const std::string& yaml_text,
                             const std::string& file,
                             const std::vector<std::string>& overrides) {
  YAML::Node root = LoadConfigYaml(yaml_text, file);
  ROTOR_CHECK(root.IsMap(), file,
              ": expected a map with sections model:, data:, train:, ...");
  std::set<std::string> overridden;
  for (const std::string& assignment : overrides) {
    overridden.insert(ApplyYamlOverride(root, assignment));
  }

  TrainConfig config;
  config.file = file;
  const SectionReader top(root, "", file, overridden);
  top.RequireKnownKeys(kTopLevelKeys);
  top.Read("output_dir", config.output_dir);

  ROTOR_CHECK(root["model"] && !root["model"].IsNull(), file,
              ": the model: section is missing");
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
    std::string model_overrides;
    for (const std::string& key : overridden) {
      if (key.rfind("model.", 0) == 0) model_overrides += " " + key;
    }
    if (model_overrides.empty()) throw;
    throw Error(StrCat(
        e.what(), " (after command-line overrides:", model_overrides, ")"));
  }

  const SectionReader data(root["data"], "data", file, overridden);
  data.RequireKnownKeys({"path", "passkey_fraction", "passkey_loss"});
  data.Read("path", config.data.path);
  data.Read("passkey_fraction", config.data.passkey_fraction, 0.0, 1.0);
  data.Read("passkey_loss", config.data.passkey_loss);
  try {
    ParsePasskeyLoss(config.data.passkey_loss);
  } catch (const Error& e) {
    data.Fail(root["data"]["passkey_loss"], "data.passkey_loss", e.what());
  }
  ROTOR_CHECK(!config.data.path.empty(), file,
              ": data.path is required (a folder written by rotor prepare, "
              "or 'brown')");

  TrainSection& t = config.train;
  const SectionReader train(root["train"], "train", file, overridden);
  train.RequireKnownKeys({"batch_size", "seq_len",
                          "gradient_accumulation_steps", "max_steps", "lr",
                          "min_lr", "warmup_steps", "weight_decay", "betas",
                          "eps", "clip_grad_norm", "seed", "threads",
                          "loss_explosion_ratio", "resume", "init_from"});
  train.Read("batch_size", t.batch_size, 1);
  train.Read("seq_len", t.seq_len, 1);
  train.Read("gradient_accumulation_steps", t.gradient_accumulation_steps, 1);
  train.Read("max_steps", t.max_steps, 1);
  train.Read("lr", t.lr, 0.0, 10.0);
  train.Read("min_lr", t.min_lr, 0.0, 10.0);
  train.Read("warmup_steps", t.warmup_steps, 0);
  train.Read("weight_decay", t.weight_decay, 0.0, 10.0);
  train.ReadPair("betas", t.beta1, t.beta2);
  train.Read("eps", t.eps, 1e-30, 1.0);
  train.Read("clip_grad_norm", t.clip_grad_norm, 0.0, 1e30);
  train.Read("seed", t.seed);
  train.Read("threads", t.threads, 0);
  train.Read("loss_explosion_ratio", t.loss_explosion_ratio, 0.0, 1e30);
  train.Read("resume", t.resume);
  train.Read("init_from", t.init_from);
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

  if (config.data.passkey_fraction > 0 && t.seq_len + 1 < PasskeyMinLength()) {
    data.Fail(root["data"]["passkey_fraction"], "data.passkey_fraction",
              StrCat("needs train.seq_len >= ", PasskeyMinLength() - 1,
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
  return config;
}

TrainConfig LoadTrainConfig(const std::string& path,
                            const std::vector<std::string>& overrides) {
  std::ifstream in(path);
  ROTOR_CHECK(in.good(), "cannot read config file ", path);
  std::stringstream text;
  text << in.rdbuf();
  return ParseTrainConfig(text.str(), path, overrides);
}

namespace {

YAML::Node ModelToYaml(const ModelConfig& model) {
  YAML::Node node(YAML::NodeType::Map);
  auto put = [&](const char* key, const auto& value) {
    if (value.has_value()) node[key] = *value;
  };
  put("vocab_size", model.vocab_size);
  put("hidden_size", model.hidden_size);
  put("intermediate_size", model.intermediate_size);
  put("num_hidden_layers", model.num_hidden_layers);
  put("num_attention_heads", model.num_attention_heads);
  put("num_key_value_heads", model.num_key_value_heads);
  node["head_dim"] = model.rope.head_dim;
  put("rms_norm_eps", model.rms_norm_eps);
  put("tie_word_embeddings", model.tie_word_embeddings);
  const RopeScalingConfig& rope = model.rope;
  node["max_position_embeddings"] = rope.max_position_embeddings;
  node["rope_theta"] = rope.rope_theta;
  node["partial_rotary_factor"] = rope.partial_rotary_factor;
  if (rope.rope_type == RopeType::kDefault) {
    node["rope_scaling"] = YAML::Node(YAML::NodeType::Null);
    return node;
  }
  YAML::Node scaling(YAML::NodeType::Map);
  scaling["rope_type"] = RopeTypeName(rope.rope_type);
  const std::vector<std::string> keys = RopeScalingKeys(rope.rope_type);
  auto applies = [&](const std::string& key) {
    for (const std::string& k : keys) {
      if (k == key) return true;
    }
    return false;
  };
  auto put_scaling = [&](const char* key, const auto& value) {
    if (value.has_value() && applies(key)) scaling[key] = *value;
  };
  put_scaling("factor", rope.factor);
  put_scaling("original_max_position_embeddings",
              rope.original_max_position_embeddings);
  put_scaling("attention_factor", rope.attention_factor);
  if (applies("beta_fast")) scaling["beta_fast"] = rope.beta_fast;
  if (applies("beta_slow")) scaling["beta_slow"] = rope.beta_slow;
  put_scaling("mscale", rope.mscale);
  put_scaling("mscale_all_dim", rope.mscale_all_dim);
  if (applies("truncate")) scaling["truncate"] = rope.truncate;
  put_scaling("low_freq_factor", rope.low_freq_factor);
  put_scaling("high_freq_factor", rope.high_freq_factor);
  for (auto [key, list] : {std::pair{"short_factor", &rope.short_factor},
                           std::pair{"long_factor", &rope.long_factor}}) {
    if (!list->has_value() || !applies(key)) continue;
    YAML::Node values(YAML::NodeType::Sequence);
    values.SetStyle(YAML::EmitterStyle::Flow);
    for (double v : **list) values.push_back(v);
    scaling[key] = values;
  }
  node["rope_scaling"] = scaling;
  return node;
}

}  // namespace

std::string TrainConfigToYaml(const TrainConfig& config) {
  YAML::Node root(YAML::NodeType::Map);
  root["output_dir"] = config.output_dir;
  root["model"] = ModelToYaml(config.model);
  root["data"]["path"] = config.data.path;
  root["data"]["passkey_fraction"] = config.data.passkey_fraction;
  root["data"]["passkey_loss"] = config.data.passkey_loss;
  const TrainSection& t = config.train;
  YAML::Node train(YAML::NodeType::Map);
  train["batch_size"] = t.batch_size;
  train["seq_len"] = t.seq_len;
  train["gradient_accumulation_steps"] = t.gradient_accumulation_steps;
  train["max_steps"] = t.max_steps;
  train["lr"] = t.lr;
  train["min_lr"] = t.min_lr;
  train["warmup_steps"] = t.warmup_steps;
  train["weight_decay"] = t.weight_decay;
  YAML::Node betas(YAML::NodeType::Sequence);
  betas.SetStyle(YAML::EmitterStyle::Flow);
  betas.push_back(t.beta1);
  betas.push_back(t.beta2);
  train["betas"] = betas;
  train["eps"] = t.eps;
  train["clip_grad_norm"] = t.clip_grad_norm;
  train["seed"] = t.seed;
  train["threads"] = t.threads;
  train["loss_explosion_ratio"] = t.loss_explosion_ratio;
  train["resume"] = t.resume;
  if (!t.init_from.empty()) train["init_from"] = t.init_from;
  root["train"] = train;
  root["eval"]["every_n_steps"] = config.eval.every_n_steps;
  root["eval"]["max_batches"] = config.eval.max_batches;
  root["checkpoint"]["every_n_steps"] = config.checkpoint.every_n_steps;
  root["checkpoint"]["keep_last_n"] = config.checkpoint.keep_last_n;
  root["logging"]["log_every_n_steps"] = config.logging.log_every_n_steps;
  root["logging"]["progress"] = config.logging.progress;
  YAML::Emitter out;
  out.SetDoublePrecision(17);
  out << root;
  return std::string(out.c_str()) + "\n";
}

}  // namespace rotor::train
