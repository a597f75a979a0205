#include "train/config/hf_config.h"

#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "nn/rope_scaling.h"
#include "train/config/yaml.h"
#include "train/io/atomic_file.h"
#include "train/io/json.h"
#include "train/io/message.h"

namespace rotor::train {

namespace {

// The same tree as YAML nodes, for the one model parser. Scalars keep their
// JSON spelling's meaning: integers and booleans as such, doubles with every
// digit (yaml-cpp writes max_digits10), null as null. Members are appended
// with force_insert: map[key] searches the map's keys one by one, which made
// an object of n keys (a classifier's id2label) cost O(n^2); ParseJson has
// already refused repeated keys.
YAML::Node ToYaml(const Json& value) {
  switch (value.type()) {
    case Json::value_t::object: {
      YAML::Node map(YAML::NodeType::Map);
      for (const auto& [key, member] : value.items()) {
        map.force_insert(key, ToYaml(member));
      }
      return map;
    }
    case Json::value_t::array: {
      YAML::Node list(YAML::NodeType::Sequence);
      for (const Json& element : value) list.push_back(ToYaml(element));
      return list;
    }
    case Json::value_t::boolean:
      return YAML::Node(value.get<bool>());
    case Json::value_t::number_integer:
      return YAML::Node(value.get<int64_t>());
    case Json::value_t::number_unsigned:
      return YAML::Node(value.get<uint64_t>());
    case Json::value_t::number_float:
      return YAML::Node(value.get<double>());
    case Json::value_t::string: {
      YAML::Node text(value.get<std::string>());
      text.SetTag("!");  // as YAML marks a quoted scalar: never a number
      return text;
    }
    default:
      return YAML::Node(YAML::NodeType::Null);
  }
}

// The top level of config.json as YAML for the model parser. Of its
// objects the parser reads only rope_scaling; any other (id2label, a
// vendor's settings) stands as an empty map, still reported as ignored (or,
// under a key the parser knows, refused as "a map") without converting what
// may be tens of thousands of members.
YAML::Node TopLevelToYaml(const Json& config) {
  YAML::Node map(YAML::NodeType::Map);
  for (const auto& [key, member] : config.items()) {
    map.force_insert(key, member.is_object() && key != "rope_scaling"
                              ? YAML::Node(YAML::NodeType::Map)
                              : ToYaml(member));
  }
  return map;
}

// model_type must name an architecture rotor runs, and architectures (when
// given) its causal-LM class: a sequence classifier's head is not lm_head.
void CheckArchitecture(const Json& config, const std::string& path) {
  const auto type = config.find("model_type");
  ROTOR_CHECK(type != config.end() && type->is_string(), path,
              ": model_type: required (llama, mistral or qwen2), got ",
              type == config.end() ? "nothing" : Excerpt(type->dump()));
  const std::optional<ModelType> model_type =
      ModelTypeFromName(type->get<std::string>());
  ROTOR_CHECK(model_type.has_value(), path, ": model_type: '",
              Excerpt(type->get<std::string>()),
              "' is not supported (rotor loads llama, mistral and qwen2)");
  const auto architectures = config.find("architectures");
  if (architectures == config.end() || architectures->is_null()) return;
  const std::string expected = ArchitectureName(*model_type);
  ROTOR_CHECK(architectures->is_array() && architectures->size() == 1 &&
                  (*architectures)[0] == expected,
              path, ": architectures: expected [\"", expected,
              "\"] for model_type ", ModelTypeName(*model_type), ", got ",
              Excerpt(architectures->dump()),
              " (rotor loads LlamaForCausalLM, MistralForCausalLM and "
              "Qwen2ForCausalLM)");
}

// transformers v5 writes rope_theta and the scaling keys together as
// rope_parameters; older files have rope_theta and rope_scaling.
void SplitRopeParameters(Json& config, const std::string& path) {
  const auto parameters = config.find("rope_parameters");
  if (parameters == config.end() || parameters->is_null()) return;
  ROTOR_CHECK(parameters->is_object(), path,
              ": rope_parameters: expected an object, got ",
              Excerpt(parameters->dump()));
  for (const char* key : {"rope_theta", "rope_scaling"}) {
    ROTOR_CHECK(!config.contains(key) || config[key].is_null(), path,
                ": both rope_parameters and ", key,
                " are given; give one of them");
  }
  Json scaling = *parameters;
  config.erase("rope_parameters");
  if (scaling.contains("rope_theta")) {
    config["rope_theta"] = scaling["rope_theta"];
    scaling.erase("rope_theta");
  }
  const auto type = scaling.find("rope_type");
  if (type != scaling.end() && *type != "default") {
    config["rope_scaling"] = scaling;
  }
}

// The defaults of transformers' LlamaConfig, MistralConfig and Qwen2Config
// for keys a config.json may leave out, where they differ from a rotor YAML
// section's (rms_norm_eps there defaults to 1e-5) or exist only in HF. The
// sizes have no default here: a config without them is refused.
void ApplyClassDefaults(Json& config) {
  const std::string type = config["model_type"].get<std::string>();
  Json defaults = {{"rms_norm_eps", 1e-6}};
  if (type == "llama") {
    defaults["max_position_embeddings"] = 2048;
  } else if (type == "mistral") {
    defaults["max_position_embeddings"] = 4096 * 32;
    defaults["num_key_value_heads"] = 8;
    defaults["sliding_window"] = 4096;
  } else if (type == "qwen2") {
    defaults["max_position_embeddings"] = 32768;
    defaults["num_key_value_heads"] = 32;
    defaults["sliding_window"] = 4096;
    defaults["max_window_layers"] = 28;
  }
  for (const auto& [key, value] : defaults.items()) {
    if (!config.contains(key)) config[key] = value;
  }
}

// Newer Qwen2 and Mistral configs name each layer's attention in
// layer_types; rotor keeps the window's only consequence (sequences longer
// than the window are refused), so for Qwen2 a list with sliding layers
// becomes use_sliding_window from the first of them (Mistral's window is
// sliding_window alone).
void ReadLayerTypes(Json& config, const std::string& path) {
  const auto types = config.find("layer_types");
  if (types == config.end() || types->is_null()) return;
  ROTOR_CHECK(types->is_array(), path, ": layer_types: expected a list");
  int64_t first_sliding = -1;
  for (size_t i = 0; i < types->size(); ++i) {
    const Json& type = (*types)[i];
    ROTOR_CHECK(type == "full_attention" || type == "sliding_attention", path,
                ": layer_types[", i,
                "]: expected full_attention or "
                "sliding_attention, got ",
                Excerpt(type.dump()));
    if (type == "sliding_attention" && first_sliding < 0) {
      first_sliding = static_cast<int64_t>(i);
    }
  }
  const auto layers = config.find("num_hidden_layers");
  ROTOR_CHECK(layers == config.end() || !layers->is_number_integer() ||
                  *layers == types->size(),
              path, ": layer_types: ", types->size(),
              " entries for num_hidden_layers ",
              layers == config.end() ? "" : Excerpt(layers->dump()),
              " (one per layer)");
  config.erase("layer_types");
  if (config["model_type"] != "qwen2") return;  // mistral: sliding_window
  if (first_sliding < 0) {
    config["use_sliding_window"] = false;
  } else {
    config["use_sliding_window"] = true;
    config["max_window_layers"] = first_sliding;
  }
}

}  // namespace

bool IsHfModelFolder(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code error;
  return fs::is_regular_file(fs::path(path) / "config.json", error) &&
         !fs::exists(fs::path(path) / "config.yaml", error);
}

ModelConfig ParseHfConfig(const std::string& json_text, const std::string& path,
                          std::vector<std::string>* ignored_keys) {
  Json config = ParseJson(json_text, path);
  ROTOR_CHECK(config.is_object(), path, ": expected a JSON object, got ",
              config.type_name());
  CheckArchitecture(config, path);
  ApplyClassDefaults(config);
  ReadLayerTypes(config, path);
  SplitRopeParameters(config, path);
  return ParseModelConfig(TopLevelToYaml(config), path,
                          ModelConfigDialect::kHfConfigJson, ignored_keys);
}

ModelConfig LoadHfConfig(const std::string& path,
                         std::vector<std::string>* ignored_keys) {
  return ParseHfConfig(ReadFile(path, kMaxConfigBytes), path, ignored_keys);
}

namespace {

// rope_scaling for `rope`, with the keys of its method that are set; null
// for default RoPE.
Json RopeScalingJson(const RopeScalingConfig& rope) {
  if (rope.rope_type == RopeType::kDefault) return nullptr;
  std::map<std::string, Json> keys;  // sorted, as transformers writes them
  keys["rope_type"] = RopeTypeName(rope.rope_type);
  const YAML::Node yaml = [&] {
    ModelConfig only_rope;
    only_rope.rope = rope;
    return ModelConfigToYaml(only_rope)["rope_scaling"];
  }();
  // The YAML writer already knows which keys apply to each method; read its
  // choice back as JSON values.
  for (const auto& entry : yaml) {
    const std::string key = entry.first.Scalar();
    const YAML::Node& value = entry.second;
    if (key == "rope_type") continue;
    if (value.IsSequence()) {
      Json list = Json::array();
      for (const auto& element : value) list.push_back(element.as<double>());
      keys[key] = list;
    } else if (key == "original_max_position_embeddings") {
      keys[key] = value.as<int64_t>();
    } else if (key == "truncate") {
      // Only gpt-oss sets it (to false); transformers before 4.55 warns
      // about the key, so the default stays unsaid.
      if (!value.as<bool>()) keys[key] = false;
    } else {
      keys[key] = value.as<double>();
    }
  }
  Json json = Json::object();
  for (auto& [key, value] : keys) json[key] = std::move(value);
  return json;
}

}  // namespace

std::string HfConfigJson(const ModelConfig& model,
                         const std::string& torch_dtype) {
  const nn::TransformerConfig resolved = ResolveTransformerConfig(model);
  ROTOR_CHECK(resolved.rope.partial_rotary_factor == 1.0,
              "cannot export partial_rotary_factor ",
              resolved.rope.partial_rotary_factor,
              ": HF's Llama, Mistral and Qwen2 rotate every channel");
  RopeScalingConfig rope = model.rope;
  int64_t max_positions = rope.max_position_embeddings;
  if (rope.rope_type == RopeType::kNtk) {
    // Fixed NTK-aware scaling is default RoPE with a larger base.
    rope.rope_theta =
        ComputeRopeFrequencies(rope, rope.max_position_embeddings).base;
    rope.rope_type = RopeType::kDefault;
  } else if (rope.rope_type == RopeType::kYarn) {
    const int64_t original =
        rope.original_max_position_embeddings.value_or(max_positions);
    const double extended = *rope.factor * static_cast<double>(original);
    ROTOR_CHECK(extended == std::floor(extended), "cannot export yarn: factor ",
                *rope.factor, " x original_max_position_embeddings ", original,
                " is not a whole number of positions");
    max_positions = static_cast<int64_t>(extended);
    rope.original_max_position_embeddings = original;
  }

  std::map<std::string, Json> keys;
  keys["architectures"] = Json::array({ArchitectureName(model.model_type)});
  keys["model_type"] = ModelTypeName(model.model_type);
  keys["attention_dropout"] = 0.0;
  keys["head_dim"] = resolved.head_dim;
  keys["hidden_act"] = "silu";
  keys["hidden_size"] = resolved.hidden_size;
  keys["initializer_range"] = resolved.initializer_range;
  keys["intermediate_size"] = resolved.intermediate_size;
  keys["max_position_embeddings"] = max_positions;
  keys["num_attention_heads"] = resolved.num_attention_heads;
  keys["num_hidden_layers"] = resolved.num_hidden_layers;
  keys["num_key_value_heads"] = resolved.num_key_value_heads;
  keys["rms_norm_eps"] = resolved.rms_norm_eps;
  keys["rope_scaling"] = RopeScalingJson(rope);
  keys["rope_theta"] = rope.rope_theta;
  keys["tie_word_embeddings"] = resolved.tie_word_embeddings;
  keys["torch_dtype"] = torch_dtype;
  keys["use_cache"] = true;
  keys["vocab_size"] = resolved.vocab_size;
  switch (model.model_type) {
    case ModelType::kLlama:
      keys["attention_bias"] = resolved.qkv_bias;
      keys["mlp_bias"] = resolved.mlp_bias;
      break;
    case ModelType::kMistral:
      keys["sliding_window"] =
          model.sliding_window ? Json(*model.sliding_window) : Json(nullptr);
      break;
    case ModelType::kQwen2:
      keys["use_sliding_window"] = model.use_sliding_window.value_or(false);
      keys["sliding_window"] =
          model.sliding_window ? Json(*model.sliding_window) : Json(nullptr);
      keys["max_window_layers"] =
          model.max_window_layers.value_or(resolved.num_hidden_layers);
      break;
  }
  if (model.bos_token_id) keys["bos_token_id"] = *model.bos_token_id;
  if (model.pad_token_id) keys["pad_token_id"] = *model.pad_token_id;
  if (model.eos_token_id) {
    const std::vector<int64_t>& eos = *model.eos_token_id;
    keys["eos_token_id"] = eos.size() == 1 ? Json(eos[0]) : Json(eos);
  }

  Json json = Json::object();
  for (auto& [key, value] : keys) json[key] = std::move(value);
  return json.dump(2) + "\n";
}

}  // namespace rotor::train
