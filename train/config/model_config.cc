#include "train/config/model_config.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/limits.h"
#include "train/config/yaml.h"
#include "train/io/message.h"

namespace rotor::train {
namespace {

std::string JoinKeys(const std::vector<std::string>& keys) {
  if (keys.empty()) return "none";
  std::string joined;
  for (const std::string& key : keys) {
    if (!joined.empty()) joined += ", ";
    joined += key;
  }
  return joined;
}

// Parses one `model:` map; remembers where each key's value sits so that
// problems found later (by FindRopeConfigProblem) point at the right line.
class ModelConfigParser {
 public:
  ModelConfigParser(std::string file, ModelConfigDialect dialect,
                    std::vector<std::string>* ignored)
      : file_(std::move(file)),
        dialect_(dialect),
        key_prefix_(dialect == ModelConfigDialect::kRotorYaml ? "model." : ""),
        ignored_(ignored) {}

  ModelConfig Parse(const YAML::Node& model) {
    model_mark_ = model.Mark();
    if (!model.IsMap()) {
      Fail(model_mark_, "model",
           "expected a map of model settings, got " + DescribeYaml(model));
    }
    ModelConfig config;
    PositionKeys positions;
    for (const auto& entry : model) {
      const std::string key = entry.first.Scalar();
      if (entry.second.IsNull()) continue;
      marks_[key] = entry.second.Mark();
      ReadKey(entry.first, entry.second, config, positions);
    }
    if (!positions.max_position_embeddings) {
      Fail(model_mark_, "max_position_embeddings",
           "required but missing (the context length the model was trained "
           "for)");
    }
    config.rope.max_position_embeddings = *positions.max_position_embeddings;
    const std::string head_dim_origin =
        ResolveHeadDim(positions.head_dim, config);
    if (positions.rope_scaling) {
      ParseRopeScaling(*positions.rope_scaling, &config.rope);
    }
    ApplyTopLevelOriginal(positions.top_level_original, config.rope);
    CheckKeysOfModelType(config);
    CheckTokenIdsInVocabulary(config);

    if (auto problem = FindRopeConfigProblem(config.rope)) {
      std::string message = problem->message;
      if (problem->key == "head_dim") message += head_dim_origin;
      Fail(MarkFor(problem->key), problem->key, message);
    }
    return config;
  }

 private:
  // The keys whose meaning depends on others, kept until all are read.
  struct PositionKeys {
    std::optional<int64_t> head_dim;
    std::optional<int64_t> max_position_embeddings;
    std::optional<YAML::Node> rope_scaling;  // a handle, not a copy
    std::optional<int64_t> top_level_original;
  };

  void ReadKey(const YAML::Node& key_node, const YAML::Node& value,
               ModelConfig& config, PositionKeys& positions) {
    const std::string key = key_node.Scalar();
    if (key == "vocab_size") {
      config.vocab_size = ReadInt(value, key, limits::kMaxVocabSize);
    } else if (key == "hidden_size") {
      config.hidden_size = ReadInt(value, key, limits::kMaxHiddenSize);
    } else if (key == "intermediate_size") {
      config.intermediate_size =
          ReadInt(value, key, limits::kMaxIntermediateSize);
    } else if (key == "num_hidden_layers") {
      config.num_hidden_layers = ReadInt(value, key, limits::kMaxLayers);
    } else if (key == "num_attention_heads") {
      config.num_attention_heads = ReadInt(value, key, limits::kMaxHeads);
    } else if (key == "num_key_value_heads") {
      config.num_key_value_heads = ReadInt(value, key, limits::kMaxHeads);
    } else if (key == "head_dim") {
      positions.head_dim = ReadInt(value, key, limits::kMaxHeadDim);
    } else if (key == "max_position_embeddings") {
      positions.max_position_embeddings =
          ReadInt(value, key, limits::kMaxPositions);
    } else if (key == "rms_norm_eps") {
      const double eps = ReadDouble(value, key);
      if (!(std::isfinite(eps) && eps > 0.0)) {
        Fail(value.Mark(), key,
             StrCat("must be a finite number > 0, got ", eps));
      }
      config.rms_norm_eps = eps;
    } else if (key == "tie_word_embeddings") {
      config.tie_word_embeddings = ReadBool(value, key);
    } else if (key == "rope_theta") {
      config.rope.rope_theta = ReadDouble(value, key);
    } else if (key == "partial_rotary_factor") {
      config.rope.partial_rotary_factor = ReadDouble(value, key);
    } else if (key == "rope_scaling") {
      positions.rope_scaling = value;
    } else if (key == "original_max_position_embeddings") {
      positions.top_level_original = ReadInt(value, key, limits::kMaxPositions);
    } else if (!ReadArchitectureKey(key, value, config)) {
      if (dialect_ == ModelConfigDialect::kHfConfigJson) {
        if (kHfBookkeepingKeys.count(key) == 0 && ignored_ != nullptr) {
          ignored_->push_back(key);
        }
        return;
      }
      Fail(key_node.Mark(), key,
           "unknown key (model keys: vocab_size, hidden_size, "
           "intermediate_size, num_hidden_layers, num_attention_heads, "
           "num_key_value_heads, head_dim, rms_norm_eps, "
           "tie_word_embeddings, max_position_embeddings, "
           "original_max_position_embeddings, rope_theta, "
           "partial_rotary_factor, rope_scaling, model_type, attention_bias, "
           "mlp_bias, sliding_window, use_sliding_window, max_window_layers, "
           "hidden_act, attention_dropout, initializer_range, bos_token_id, "
           "eos_token_id, pad_token_id, torch_dtype)");
    }
  }

  // The keys HF's LlamaConfig, MistralConfig and Qwen2Config add to the
  // sizes and positions above; false for a key that is none of them.
  bool ReadArchitectureKey(const std::string& key, const YAML::Node& value,
                           ModelConfig& config) {
    if (key == "model_type") {
      const std::string name = ReadString(value, key);
      const std::optional<ModelType> type = ModelTypeFromName(name);
      if (!type) {
        Fail(value.Mark(), key,
             StrCat("'", Excerpt(name),
                    "' is not supported (rotor runs llama, mistral and "
                    "qwen2)"));
      }
      config.model_type = *type;
    } else if (key == "attention_bias") {
      config.attention_bias = ReadBool(value, key);
    } else if (key == "mlp_bias") {
      config.mlp_bias = ReadBool(value, key);
    } else if (key == "sliding_window") {
      config.sliding_window = ReadInt(value, key, limits::kMaxPositions);
    } else if (key == "use_sliding_window") {
      config.use_sliding_window = ReadBool(value, key);
    } else if (key == "max_window_layers") {
      config.max_window_layers = Decode<int64_t>(value, key, "an integer");
    } else if (key == "hidden_act") {
      const std::string act = ReadString(value, key);
      // transformers maps both names to the same SiLU.
      if (act != "silu" && act != "swish") {
        Fail(value.Mark(), key,
             StrCat("'", Excerpt(act),
                    "' is not supported (rotor's feed-forward block is "
                    "SwiGLU: silu)"));
      }
    } else if (key == "attention_dropout") {
      const double dropout = ReadDouble(value, key);
      if (dropout != 0.0) {
        Fail(value.Mark(), key,
             StrCat("must be 0 (rotor has no attention dropout), got ",
                    dropout));
      }
    } else if (key == "initializer_range") {
      const double range = ReadDouble(value, key);
      if (!(std::isfinite(range) && range > 0.0)) {
        Fail(value.Mark(), key,
             StrCat("must be a finite number > 0, got ", range));
      }
      config.initializer_range = range;
    } else if (key == "bos_token_id") {
      config.bos_token_id = ReadTokenId(value, key);
    } else if (key == "pad_token_id") {
      config.pad_token_id = ReadTokenId(value, key);
    } else if (key == "eos_token_id") {
      std::vector<int64_t> ids;
      if (value.IsSequence()) {
        if (value.size() == 0) {
          Fail(value.Mark(), key,
               "expected a token id or a list of them, got an empty list");
        }
        for (size_t i = 0; i < value.size(); ++i) {
          ids.push_back(ReadTokenId(value[i], StrCat(key, "[", i, "]")));
        }
      } else {
        ids.push_back(ReadTokenId(value, key));
      }
      config.eos_token_id = ids;
    } else if (key == "torch_dtype" || key == "dtype") {
      const std::string dtype = ReadString(value, key);
      if (dtype != "float32" && dtype != "bfloat16" && dtype != "float16") {
        Fail(value.Mark(), key,
             StrCat("'", Excerpt(dtype),
                    "' is not a dtype rotor reads (float32, bfloat16, "
                    "float16)"));
      }
      config.torch_dtype = dtype;
    } else {
      return false;
    }
    return true;
  }

  // A token id: an integer >= 0 below rotor's largest vocabulary.
  int64_t ReadTokenId(const YAML::Node& value, const std::string& key) const {
    const int64_t id = Decode<int64_t>(value, key, "an integer");
    if (id < 0 || id >= limits::kMaxVocabSize) {
      Fail(value.Mark(), key,
           StrCat("must be a token id in [0, ", limits::kMaxVocabSize,
                  "), got ", id));
    }
    return id;
  }

  // bos_token_id and eos_token_id name tokens of the vocabulary: export
  // writes them back, and generation stops at an eos it can never sample.
  void CheckTokenIdsInVocabulary(const ModelConfig& config) const {
    if (!config.vocab_size) return;
    const auto check = [&](int64_t id, const std::string& key) {
      if (id < *config.vocab_size) return;
      Fail(MarkFor(key.substr(0, key.find('['))), key,
           StrCat("must be below vocab_size ", *config.vocab_size, ", got ",
                  id));
    };
    if (config.bos_token_id) check(*config.bos_token_id, "bos_token_id");
    if (config.eos_token_id) {
      const std::vector<int64_t>& ids = *config.eos_token_id;
      for (size_t i = 0; i < ids.size(); ++i) {
        check(ids[i], ids.size() == 1 ? std::string("eos_token_id")
                                      : StrCat("eos_token_id[", i, "]"));
      }
    }
  }

  // Biases and windows exist only in some architectures; a key of another
  // one is refused (it would be silently meaningless in HF too).
  void CheckKeysOfModelType(const ModelConfig& config) {
    const ModelType type = config.model_type;
    auto only_for = [&](bool present, const char* key, const char* types) {
      if (!present) return;
      Fail(MarkFor(key), key,
           StrCat("does not apply to model_type ", ModelTypeName(type),
                  " (only to ", types, ")"));
    };
    only_for(type != ModelType::kLlama && config.attention_bias.has_value(),
             "attention_bias", "llama; qwen2 always has q, k, v biases");
    only_for(type != ModelType::kLlama && config.mlp_bias.has_value(),
             "mlp_bias", "llama");
    only_for(type == ModelType::kLlama && config.sliding_window.has_value(),
             "sliding_window", "mistral, qwen2");
    only_for(
        type != ModelType::kQwen2 &&
            (config.use_sliding_window || config.max_window_layers),
        config.use_sliding_window ? "use_sliding_window" : "max_window_layers",
        "qwen2");
    // rotor rotates a leading share of the channels; HF's three classes
    // always rotate all of them (their rotate_half spans the head).
    if (dialect_ == ModelConfigDialect::kHfConfigJson &&
        config.rope.partial_rotary_factor != 1.0) {
      Fail(MarkFor("partial_rotary_factor"), "partial_rotary_factor",
           StrCat("must be 1 for model_type ", ModelTypeName(type),
                  " (HF's Llama, Mistral and Qwen2 rotate every channel), "
                  "got ",
                  config.rope.partial_rotary_factor));
    }
  }

  // head_dim as given, or hidden_size / num_attention_heads; returns how it
  // was derived, for messages about it.
  std::string ResolveHeadDim(const std::optional<int64_t>& head_dim,
                             ModelConfig& config) {
    if (head_dim) {
      config.rope.head_dim = *head_dim;
      return "";
    }
    if (!config.hidden_size || !config.num_attention_heads) {
      Fail(model_mark_, "head_dim",
           "required but missing: give head_dim, or hidden_size and "
           "num_attention_heads");
    }
    if (*config.hidden_size % *config.num_attention_heads != 0) {
      Fail(marks_["hidden_size"], "hidden_size",
           StrCat(*config.hidden_size,
                  " is not divisible by num_attention_heads ",
                  *config.num_attention_heads, "; give head_dim explicitly"));
    }
    config.rope.head_dim = *config.hidden_size / *config.num_attention_heads;
    marks_["head_dim"] = marks_["hidden_size"];
    if (config.rope.head_dim > limits::kMaxHeadDim) {
      Fail(marks_["hidden_size"], "hidden_size",
           StrCat(*config.hidden_size, " / num_attention_heads ",
                  *config.num_attention_heads, " gives head_dim ",
                  config.rope.head_dim, ", more than rotor's limit of ",
                  limits::kMaxHeadDim));
    }
    return StrCat(" (head_dim = hidden_size ", *config.hidden_size,
                  " / num_attention_heads ", *config.num_attention_heads, ")");
  }

  // Phi-3 configs give original_max_position_embeddings at the top level.
  // It sets L0 for the methods that read it (yarn, llama3, longrope; the
  // others ignore it, as HF does). HF's standardize_rope_params lets it win
  // over rope_scaling's silently; rotor refuses two different values.
  void ApplyTopLevelOriginal(const std::optional<int64_t>& top_level_original,
                             RopeScalingConfig& rope) {
    const std::vector<std::string> scaling_keys =
        RopeScalingKeys(rope.rope_type);
    if (!top_level_original ||
        std::find(scaling_keys.begin(), scaling_keys.end(),
                  "original_max_position_embeddings") == scaling_keys.end()) {
      return;
    }
    const std::optional<int64_t> nested = rope.original_max_position_embeddings;
    if (nested && *nested != *top_level_original) {
      Fail(marks_["original_max_position_embeddings"],
           "original_max_position_embeddings",
           StrCat(*top_level_original,
                  " contradicts rope_scaling.original_max_position_"
                  "embeddings ",
                  *nested, "; give one of them"));
    }
    rope.original_max_position_embeddings = *top_level_original;
    marks_["rope_scaling.original_max_position_embeddings"] =
        marks_["original_max_position_embeddings"];
  }

  [[noreturn]] void Fail(const YAML::Mark& mark, const std::string& key,
                         const std::string& message) const {
    std::string where = file_;
    if (!mark.is_null()) {
      where += StrCat(":", mark.line + 1, ":", mark.column + 1);
    }
    throw Error(StrCat(where, ": ", key_prefix_, Excerpt(key), ": ", message));
  }

  // The mark of `key`'s value; for a key that is absent, the map it is
  // missing from.
  YAML::Mark MarkFor(const std::string& key) const {
    auto it = marks_.find(key);
    if (it != marks_.end()) return it->second;
    const size_t dot = key.rfind('.');
    if (dot != std::string::npos) return MarkFor(key.substr(0, dot));
    return model_mark_;
  }

  // A scalar of type T, or an error "expected <what>, got <value>".
  template <typename T>
  T Decode(const YAML::Node& value, const std::string& key,
           const char* what) const {
    const std::optional<T> result = DecodeScalar<T>(value);
    if (!result) {
      Fail(value.Mark(), key,
           StrCat("expected ", what, ", got ", DescribeYaml(value)));
    }
    return *result;
  }

  // An integer in [1, max_value] (max_value: core/limits.h).
  int64_t ReadInt(const YAML::Node& value, const std::string& key,
                  int64_t max_value) const {
    const int64_t result = Decode<int64_t>(value, key, "an integer");
    if (result < 1) {
      Fail(value.Mark(), key, StrCat("must be >= 1, got ", result));
    }
    if (result > max_value) {
      Fail(value.Mark(), key,
           StrCat("must be <= ", max_value, " (rotor's limit), got ", result));
    }
    return result;
  }

  double ReadDouble(const YAML::Node& value, const std::string& key) const {
    return Decode<double>(value, key, "a number");
  }

  bool ReadBool(const YAML::Node& value, const std::string& key) const {
    return Decode<bool>(value, key, "true or false");
  }

  std::vector<double> ReadDoubleList(const YAML::Node& value,
                                     const std::string& key) const {
    if (!value.IsSequence()) {
      Fail(value.Mark(), key,
           StrCat("expected a list of numbers, got ", DescribeYaml(value)));
    }
    std::vector<double> list;
    list.reserve(value.size());
    for (size_t i = 0; i < value.size(); ++i) {
      list.push_back(ReadDouble(value[i], StrCat(key, "[", i, "]")));
    }
    return list;
  }

  std::string ReadString(const YAML::Node& value,
                         const std::string& key) const {
    return Decode<std::string>(value, key, "a name");
  }

  // rope_scaling.rope_type (or its legacy name `type`; both must agree).
  RopeType ReadRopeType(const YAML::Node& node, std::string* type_name) {
    // rope_type first: it decides which other keys apply.
    std::optional<YAML::Node> type_node;
    std::string type_key;
    for (const auto& entry : node) {
      const std::string key = entry.first.Scalar();
      if ((key != "rope_type" && key != "type") || entry.second.IsNull()) {
        continue;
      }
      if (type_node && ReadString(*type_node, "rope_scaling." + type_key) !=
                           ReadString(entry.second, "rope_scaling." + key)) {
        Fail(entry.second.Mark(), "rope_scaling." + key,
             StrCat("'", Excerpt(entry.second.Scalar()), "' contradicts ",
                    type_key, " '", Excerpt(type_node->Scalar()),
                    "' (type is the legacy name of rope_type; give one)"));
      }
      type_node = entry.second;
      type_key = key;
    }
    if (!type_node) {
      Fail(node.Mark(), "rope_scaling.rope_type",
           StrCat("required but missing (one of ", RopeTypeNames(), ")"));
    }
    *type_name = ReadString(*type_node, "rope_scaling." + type_key);
    const std::optional<RopeType> type = RopeTypeFromName(*type_name);
    if (!type) {
      Fail(type_node->Mark(), "rope_scaling." + type_key,
           StrCat("unknown rope_type '", Excerpt(*type_name),
                  "' (known: ", RopeTypeNames(), ")"));
    }
    return *type;
  }

  void ReadRopeScalingValue(const std::string& key, const std::string& path,
                            const YAML::Node& value, RopeScalingConfig* rope) {
    if (key == "factor") {
      rope->factor = ReadDouble(value, path);
    } else if (key == "original_max_position_embeddings") {
      rope->original_max_position_embeddings =
          ReadInt(value, path, limits::kMaxPositions);
    } else if (key == "attention_factor") {
      rope->attention_factor = ReadDouble(value, path);
    } else if (key == "beta_fast") {
      rope->beta_fast = ReadDouble(value, path);
    } else if (key == "beta_slow") {
      rope->beta_slow = ReadDouble(value, path);
    } else if (key == "mscale") {
      rope->mscale = ReadDouble(value, path);
    } else if (key == "mscale_all_dim") {
      rope->mscale_all_dim = ReadDouble(value, path);
    } else if (key == "truncate") {
      rope->truncate = ReadBool(value, path);
    } else if (key == "low_freq_factor") {
      rope->low_freq_factor = ReadDouble(value, path);
    } else if (key == "high_freq_factor") {
      rope->high_freq_factor = ReadDouble(value, path);
    } else if (key == "short_factor") {
      rope->short_factor = ReadDoubleList(value, path);
    } else if (key == "long_factor") {
      rope->long_factor = ReadDoubleList(value, path);
    }
  }

  void ParseRopeScaling(const YAML::Node& node, RopeScalingConfig* rope) {
    if (!node.IsMap()) {
      Fail(node.Mark(), "rope_scaling",
           "expected a map with rope_type and its keys, got " +
               DescribeYaml(node));
    }
    std::string type_name;
    const RopeType type = ReadRopeType(node, &type_name);
    rope->rope_type = type;

    std::set<std::string> all_keys;
    for (const char* name : {"default", "linear", "ntk", "dynamic", "yarn",
                             "llama3", "longrope"}) {
      for (const std::string& key : RopeScalingKeys(*RopeTypeFromName(name))) {
        all_keys.insert(key);
      }
    }
    const std::vector<std::string> type_keys = RopeScalingKeys(type);
    const std::set<std::string> allowed(type_keys.begin(), type_keys.end());

    for (const auto& entry : node) {
      const std::string key = entry.first.Scalar();
      const std::string path = "rope_scaling." + key;
      const YAML::Node& value = entry.second;
      if (key == "rope_type" || key == "type") continue;
      if (all_keys.count(key) == 0) {
        Fail(entry.first.Mark(), path,
             StrCat("unknown key (rope_scaling keys: rope_type, ",
                    JoinKeys({all_keys.begin(), all_keys.end()}), ")"));
      }
      if (allowed.count(key) == 0) {
        Fail(entry.first.Mark(), path,
             StrCat("does not apply to rope_type '", type_name,
                    "' (its keys: ", JoinKeys(type_keys), ")"));
      }
      if (value.IsNull()) continue;
      marks_[path] = value.Mark();
      ReadRopeScalingValue(key, path, value, rope);
    }
  }

  // The keys of config.json that describe the file rather than the model.
  inline static const std::set<std::string> kHfBookkeepingKeys = {
      "architectures",    "transformers_version",   "_name_or_path",
      "use_cache",        "pretraining_tp",         "is_llama_config",
      "rope_interleaved", "transformers.js_config", "auto_map"};

  std::string file_;
  ModelConfigDialect dialect_;
  std::string key_prefix_;
  std::vector<std::string>* ignored_;
  YAML::Mark model_mark_;
  std::map<std::string, YAML::Mark> marks_;
};

ModelConfig ParseModelSection(const YAML::Node& root, const std::string& file) {
  if (!root.IsMap() || !root["model"]) {
    throw Error(StrCat(file, ": no 'model:' section"));
  }
  return ParseModelConfig(root["model"], file);
}

}  // namespace

const char* ModelTypeName(ModelType type) {
  switch (type) {
    case ModelType::kLlama:
      return "llama";
    case ModelType::kMistral:
      return "mistral";
    case ModelType::kQwen2:
      return "qwen2";
  }
  return "?";
}

std::optional<ModelType> ModelTypeFromName(const std::string& name) {
  for (ModelType type :
       {ModelType::kLlama, ModelType::kMistral, ModelType::kQwen2}) {
    if (name == ModelTypeName(type)) return type;
  }
  return std::nullopt;
}

const char* ArchitectureName(ModelType type) {
  switch (type) {
    case ModelType::kLlama:
      return "LlamaForCausalLM";
    case ModelType::kMistral:
      return "MistralForCausalLM";
    case ModelType::kQwen2:
      return "Qwen2ForCausalLM";
  }
  return "?";
}

ModelConfig ParseModelConfig(const YAML::Node& model, const std::string& file,
                             ModelConfigDialect dialect,
                             std::vector<std::string>* ignored) {
  return ModelConfigParser(file, dialect, ignored).Parse(model);
}

ModelConfig ParseModelConfigText(const std::string& yaml_text,
                                 const std::string& file) {
  return ParseModelSection(LoadConfigYaml(yaml_text, file), file);
}

ModelConfig LoadModelConfig(const std::string& path) {
  return ParseModelSection(LoadConfigYamlFile(path), path);
}

ModelConfig OverrideModelConfig(const ModelConfig& model,
                                const std::vector<std::string>& overrides,
                                const std::string& source) {
  YAML::Node root(YAML::NodeType::Map);
  root["model"] = ModelConfigToYaml(model);
  for (const std::string& key : ApplyYamlOverrides(root, overrides)) {
    ROTOR_CHECK(key.rfind("model.", 0) == 0, "override ", key, " of ", source,
                ": only model.* keys apply to a model");
  }
  return ParseModelConfig(root["model"], source + " (after overrides)");
}

namespace {

// A value as the writer emits it: numbers through YamlNumber.
template <typename T>
YAML::Node ToYamlValue(const T& value) {
  if constexpr (std::is_same_v<T, double>) {
    return YamlNumber(value);
  } else {
    return YAML::Node(value);
  }
}

}  // namespace

YAML::Node ModelConfigToYaml(const ModelConfig& model) {
  YAML::Node node(YAML::NodeType::Map);
  auto put = [&](const char* key, const auto& value) {
    if (value.has_value()) node[key] = ToYamlValue(*value);
  };
  if (model.model_type != ModelType::kLlama) {
    node["model_type"] = ModelTypeName(model.model_type);
  }
  put("vocab_size", model.vocab_size);
  put("hidden_size", model.hidden_size);
  put("intermediate_size", model.intermediate_size);
  put("num_hidden_layers", model.num_hidden_layers);
  put("num_attention_heads", model.num_attention_heads);
  put("num_key_value_heads", model.num_key_value_heads);
  node["head_dim"] = model.rope.head_dim;
  put("rms_norm_eps", model.rms_norm_eps);
  put("tie_word_embeddings", model.tie_word_embeddings);
  put("attention_bias", model.attention_bias);
  put("mlp_bias", model.mlp_bias);
  put("sliding_window", model.sliding_window);
  put("use_sliding_window", model.use_sliding_window);
  put("max_window_layers", model.max_window_layers);
  put("initializer_range", model.initializer_range);
  put("bos_token_id", model.bos_token_id);
  if (model.eos_token_id) {
    YAML::Node ids(YAML::NodeType::Sequence);
    ids.SetStyle(YAML::EmitterStyle::Flow);
    for (int64_t id : *model.eos_token_id) ids.push_back(id);
    node["eos_token_id"] = ids;
  }
  put("pad_token_id", model.pad_token_id);
  put("torch_dtype", model.torch_dtype);
  const RopeScalingConfig& rope = model.rope;
  node["max_position_embeddings"] = rope.max_position_embeddings;
  node["rope_theta"] = YamlNumber(rope.rope_theta);
  node["partial_rotary_factor"] = YamlNumber(rope.partial_rotary_factor);
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
    if (value.has_value() && applies(key)) scaling[key] = ToYamlValue(*value);
  };
  put_scaling("factor", rope.factor);
  put_scaling("original_max_position_embeddings",
              rope.original_max_position_embeddings);
  put_scaling("attention_factor", rope.attention_factor);
  if (applies("beta_fast")) scaling["beta_fast"] = YamlNumber(rope.beta_fast);
  if (applies("beta_slow")) scaling["beta_slow"] = YamlNumber(rope.beta_slow);
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
    for (double v : **list) values.push_back(YamlNumber(v));
    scaling[key] = values;
  }
  node["rope_scaling"] = scaling;
  return node;
}

int64_t PretrainedLength(const ModelConfig& model) {
  const RopeScalingConfig& rope = model.rope;
  if (rope.rope_type != RopeType::kDefault &&
      rope.original_max_position_embeddings) {
    return *rope.original_max_position_embeddings;
  }
  return rope.max_position_embeddings;
}

std::vector<std::string> RopeOverridesFromConfig(const std::string& path) {
  const YAML::Node root = LoadConfigYamlFile(path);
  const YAML::Node model = root.IsMap() ? root["model"] : YAML::Node();
  ROTOR_CHECK(model && model.IsMap(), path, ": has no model: section");
  std::vector<std::string> overrides;
  for (const char* key :
       {"max_position_embeddings", "rope_theta", "rope_scaling"}) {
    const YAML::Node value = model[key];
    if (!value) continue;
    YAML::Emitter flow;
    flow.SetMapFormat(YAML::Flow);
    flow.SetSeqFormat(YAML::Flow);
    flow << value;
    overrides.push_back(StrCat("model.", key, "=", flow.c_str()));
  }
  ROTOR_CHECK(!overrides.empty(), path,
              ": its model: section sets none of max_position_embeddings, "
              "rope_theta, rope_scaling");
  return overrides;
}

namespace {

int64_t Required(const std::optional<int64_t>& value, const char* key) {
  ROTOR_CHECK(value.has_value(), "model.", key,
              " is required to build the model");
  return *value;
}

}  // namespace

nn::TransformerConfig ResolveTransformerConfig(const ModelConfig& model) {
  nn::TransformerConfig config;
  config.vocab_size = Required(model.vocab_size, "vocab_size");
  config.hidden_size = Required(model.hidden_size, "hidden_size");
  config.intermediate_size =
      Required(model.intermediate_size, "intermediate_size");
  config.num_hidden_layers =
      Required(model.num_hidden_layers, "num_hidden_layers");
  config.num_attention_heads =
      Required(model.num_attention_heads, "num_attention_heads");
  config.num_key_value_heads =
      model.num_key_value_heads.value_or(config.num_attention_heads);
  config.rms_norm_eps = model.rms_norm_eps.value_or(1e-5);
  config.tie_word_embeddings = model.tie_word_embeddings.value_or(false);
  config.rope = model.rope;
  config.head_dim = model.rope.head_dim;
  config.initializer_range = model.initializer_range.value_or(0.02);
  const bool llama = model.model_type == ModelType::kLlama;
  const bool attention_bias = llama && model.attention_bias.value_or(false);
  config.qkv_bias = attention_bias || model.model_type == ModelType::kQwen2;
  config.o_proj_bias = attention_bias;
  config.mlp_bias = llama && model.mlp_bias.value_or(false);
  // Qwen2 windows the layers from max_window_layers on, and only with
  // use_sliding_window; rotor refuses sequences longer than any window.
  const bool windowed =
      model.model_type == ModelType::kMistral ||
      (model.use_sliding_window.value_or(false) &&
       model.max_window_layers.value_or(0) < config.num_hidden_layers);
  config.sliding_window = windowed ? model.sliding_window.value_or(0) : 0;

  for (auto [value, key] :
       {std::pair{config.vocab_size, "vocab_size"},
        std::pair{config.hidden_size, "hidden_size"},
        std::pair{config.intermediate_size, "intermediate_size"},
        std::pair{config.num_hidden_layers, "num_hidden_layers"},
        std::pair{config.num_attention_heads, "num_attention_heads"},
        std::pair{config.num_key_value_heads, "num_key_value_heads"},
        std::pair{config.head_dim, "head_dim"}}) {
    ROTOR_CHECK(value > 0, "model.", key, " must be positive, got ", value);
  }
  ROTOR_CHECK(config.num_attention_heads % config.num_key_value_heads == 0,
              "model.num_attention_heads (", config.num_attention_heads,
              ") must be a multiple of model.num_key_value_heads (",
              config.num_key_value_heads, ")");
  ROTOR_CHECK(config.rms_norm_eps > 0, "model.rms_norm_eps must be positive");
  return config;
}

}  // namespace rotor::train
