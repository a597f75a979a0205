#include "train/config/model_config.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/limits.h"
#include "nn/rope_methods.h"
#include "train/config/overrides.h"
#include "train/io/message.h"

namespace rotor::train {
namespace {

// A key of the model table that exists only in some architectures, set in a
// config of another.
struct ModelTypeKeyCheck {
  ModelType type;
  std::optional<RopeConfigProblem> problem;

  template <typename T, typename Check>
  void operator()(const Key&, T&, const Check&) {}
  template <typename T, typename Check>
  void operator()(const Key& key, T& member, const Check&,
                  const OnlyFor& only) {
    if (problem || !member.has_value() ||
        std::find(only.types.begin(), only.types.end(), type) !=
            only.types.end()) {
      return;
    }
    problem = RopeConfigProblem{
        key.name, StrCat("does not apply to model_type ", ModelTypeName(type),
                         " (only to ", only.which, ")")};
  }
  // A section (rope_scaling) holds no architecture's keys.
  template <typename Struct>
  void Section(const Key&, Struct&) {}
};

}  // namespace

std::string RefuseModelType(const std::string& given) {
  return StrCat("'", Excerpt(given),
                "' is not supported (rotor runs llama, mistral and qwen2)");
}

std::string RefuseHiddenAct(const std::string& given) {
  // transformers maps silu and swish to the same SiLU.
  return StrCat("'", Excerpt(given),
                "' is not supported (rotor's feed-forward block is SwiGLU: "
                "silu)");
}

std::string RefuseTorchDtype(const std::string& given) {
  return StrCat("'", Excerpt(given),
                "' is not a dtype rotor reads (float32, bfloat16, float16)");
}

std::optional<RopeConfigProblem> FindModelConfigProblem(
    const ModelConfig& config) {
  ModelConfig copy = config;
  ModelTypeKeyCheck keys{config.model_type, std::nullopt};
  VisitFields(keys, copy);
  if (keys.problem) return keys.problem;
  // bos_token_id and eos_token_id name tokens of the vocabulary: export
  // writes them back, and generation stops at an eos it can never sample.
  if (config.vocab_size) {
    const auto outside = [&](int64_t id, const std::string& key) {
      return RopeConfigProblem{key, StrCat("must be below vocab_size ",
                                           *config.vocab_size, ", got ", id)};
    };
    if (config.bos_token_id && *config.bos_token_id >= *config.vocab_size) {
      return outside(*config.bos_token_id, "bos_token_id");
    }
    if (config.eos_token_id) {
      const std::vector<int64_t>& ids = *config.eos_token_id;
      for (size_t i = 0; i < ids.size(); ++i) {
        if (ids[i] < *config.vocab_size) continue;
        return outside(ids[i], ids.size() == 1
                                   ? std::string("eos_token_id")
                                   : StrCat("eos_token_id[", i, "]"));
      }
    }
  }
  return FindRopeConfigProblem(config.rope);
}

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

void CheckModelOverrides(const std::vector<std::string>& overrides,
                         const std::string& source) {
  for (const std::string& assignment : overrides) {
    const std::string key = assignment.substr(0, assignment.find('='));
    ROTOR_CHECK(key.rfind("model.", 0) == 0, OverrideName(assignment), " of ",
                source, ": only model.* keys apply to a model");
  }
}

int64_t PretrainedLength(const ModelConfig& model) {
  const RopeScalingConfig& rope = model.rope;
  if (RopeMethodOf(rope.rope_type).reads_original_length() &&
      rope.original_max_position_embeddings) {
    return *rope.original_max_position_embeddings;
  }
  return rope.max_position_embeddings;
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
