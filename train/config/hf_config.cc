#include "train/config/hf_config.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "nn/rope_scaling.h"
#include "train/config/model_reader.h"
#include "train/io/atomic_file.h"
#include "train/io/json.h"
#include "train/io/message.h"

namespace rotor::train {

namespace {

// A config.json value as train/config/model_reader.h reads it. Numbers
// keep JSON's meaning: an integer is an integer, and so is a float with no
// fraction (2048.0, as some exporters write sizes); strings are never
// numbers.
class JsonValue {
 public:
  JsonValue() = default;
  explicit JsonValue(const Json* json) : json_(json) {}

  bool Present() const { return json_ != nullptr && !json_->is_null(); }
  bool IsMap() const { return json_->is_object(); }
  bool IsList() const { return json_->is_array(); }
  size_t size() const { return json_->size(); }
  JsonValue At(size_t i) const { return JsonValue(&(*json_)[i]); }
  template <typename F>
  void ForEachEntry(F f) const {
    for (const auto& [key, member] : json_->items()) {
      f(key, JsonValue(&member), JsonValue(&member));
    }
  }
  template <typename T>
  std::optional<T> Decode() const {
    const Json& json = *json_;
    if constexpr (std::is_same_v<T, int64_t>) {
      if (json.is_number_integer() && !json.is_number_unsigned()) {
        return json.get<int64_t>();
      }
      if (json.is_number_unsigned() &&
          json.get<uint64_t>() <= uint64_t{INT64_MAX}) {
        return static_cast<int64_t>(json.get<uint64_t>());
      }
      if (json.is_number_float()) {
        const double value = json.get<double>();
        if (value == std::floor(value) && std::fabs(value) < 0x1p53) {
          return static_cast<int64_t>(value);
        }
      }
      return std::nullopt;
    } else if constexpr (std::is_same_v<T, double>) {
      if (json.is_number()) return json.get<double>();
      return std::nullopt;
    } else if constexpr (std::is_same_v<T, bool>) {
      if (json.is_boolean()) return json.get<bool>();
      return std::nullopt;
    } else {
      if (json.is_string()) return json.get<std::string>();
      if (json.is_number() || json.is_boolean()) return json.dump();
      return std::nullopt;
    }
  }
  std::string Describe() const {
    if (json_->is_object()) return "a map";
    if (json_->is_array()) return "a list";
    if (json_->is_string())
      return "'" + PrintableExcerpt(json_->get<std::string>()) + "'";
    return "'" + Excerpt(json_->dump()) + "'";
  }
  std::string Position() const { return ""; }  // config.json has no marks

 private:
  const Json* json_ = nullptr;
};

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
  return ModelReader<JsonValue>(path, ModelConfigDialect::kHfConfigJson,
                                ignored_keys)
      .Parse(JsonValue(&config));
}

ModelConfig LoadHfConfig(const std::string& path,
                         std::vector<std::string>* ignored_keys) {
  return ParseHfConfig(ReadFile(path, limits::kMaxConfigBytes), path,
                       ignored_keys);
}

namespace {

// Writes a table's struct as config.json members, sorted by key as
// transformers writes them: every member that is set, in HF's spelling (a
// single eos_token_id as a number). rope_scaling is null for default RoPE,
// else its rope_type and the keys of its method.
class JsonWriter {
 public:
  template <typename T, typename Check, typename... Extra>
  void operator()(const Key& key, const T& member, const Check& check,
                  const Extra&...) {
    if (std::optional<Json> value = Encode(member, check)) {
      members_[key.name] = std::move(*value);
    }
  }
  // A section's method (rope_scaling's rope_type), written first; a row
  // that carries ForMethods is written only for the methods it lists.
  void operator()(const Key& key, RopeType method,
                  const field::Choice<RopeType>& check) {
    method_.Set(key, method);
    members_[key.name] = check.name(method);
  }
  template <typename T, typename Check>
  void operator()(const Key& key, const T& member, const Check& check,
                  const ForMethods& only) {
    if (method_.Applies(key, only)) (*this)(key, member, check);
  }
  // A section is an object, or null (SectionMethod).
  template <typename Struct>
  void Section(const Key& key, Struct& fields) {
    JsonWriter section;
    VisitFields(section, fields);
    members_[key.name] =
        section.method_.WrittenAsNull() ? Json(nullptr) : section.Object();
  }

  std::map<std::string, Json>& members() { return members_; }
  Json Object() {
    Json json = Json::object();
    for (auto& [key, value] : members_) json[key] = std::move(value);
    return json;
  }

 private:
  template <typename T, typename Check>
  static std::optional<Json> Encode(const std::optional<T>& value,
                                    const Check& check) {
    if (!value) return std::nullopt;
    return Encode(*value, check);
  }
  static std::optional<Json> Encode(const std::vector<int64_t>& ids,
                                    const field::TokenIds&) {
    return ids.size() == 1 ? Json(ids[0]) : Json(ids);
  }
  template <typename T, typename Check>
  static std::optional<Json> Encode(const std::vector<T>& values,
                                    const Check&) {
    return Json(values);
  }
  template <typename Enum>
  static std::optional<Json> Encode(const Enum& value,
                                    const field::Choice<Enum>& check) {
    return Json(check.name(value));
  }
  template <typename T, typename Check,
            typename = std::enable_if_t<std::is_arithmetic_v<T> ||
                                        std::is_same_v<T, std::string>>>
  static std::optional<Json> Encode(const T& value, const Check&) {
    return Json(value);
  }

  SectionMethod method_;  // the section's, once its row is seen
  std::map<std::string, Json> members_;
};

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

  // The model as transformers would write it: every default resolved.
  ModelConfig written = model;
  written.rope = rope;
  written.rope.max_position_embeddings = max_positions;
  written.rope.head_dim = resolved.head_dim;
  written.num_key_value_heads = resolved.num_key_value_heads;
  written.rms_norm_eps = resolved.rms_norm_eps;
  written.tie_word_embeddings = resolved.tie_word_embeddings;
  written.initializer_range = resolved.initializer_range;
  written.hidden_act = "silu";
  written.attention_dropout = 0.0;
  written.torch_dtype = torch_dtype;
  switch (model.model_type) {
    case ModelType::kLlama:
      written.attention_bias = resolved.qkv_bias;
      written.mlp_bias = resolved.mlp_bias;
      break;
    case ModelType::kMistral:
      break;
    case ModelType::kQwen2:
      written.use_sliding_window = model.use_sliding_window.value_or(false);
      written.max_window_layers =
          model.max_window_layers.value_or(resolved.num_hidden_layers);
      break;
  }
  JsonWriter writer;
  VisitFields(writer, written);
  std::map<std::string, Json>& keys = writer.members();
  // truncate is gpt-oss's alone (false); transformers before 4.55 warns
  // about the key, so its default stays unsaid.
  if (keys["rope_scaling"].is_object() && rope.truncate) {
    keys["rope_scaling"].erase("truncate");
  }
  keys["architectures"] = Json::array({ArchitectureName(model.model_type)});
  keys["use_cache"] = true;
  if (model.model_type != ModelType::kLlama && !model.sliding_window) {
    keys["sliding_window"] = nullptr;
  }
  // rotor's own keys that HF's three classes do not have.
  keys.erase("partial_rotary_factor");
  Json json = Json::object();
  for (auto& [key, value] : keys) json[key] = std::move(value);
  return json.dump(2) + "\n";
}

}  // namespace rotor::train
