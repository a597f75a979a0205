// The `model:` section of a rotor YAML config, with Hugging Face's key names
// (config.json), e.g.
//
//   model:
//     hidden_size: 576
//     num_attention_heads: 9
//     max_position_embeddings: 8192
//     rope_theta: 100000
//     rope_scaling:
//       rope_type: yarn
//       factor: 4
//       original_max_position_embeddings: 2048
//
// Keys: vocab_size, hidden_size, intermediate_size, num_hidden_layers,
// num_attention_heads, num_key_value_heads, rms_norm_eps, tie_word_embeddings,
// head_dim (optional; else hidden_size / num_attention_heads), rope_theta
// (default 10000), max_position_embeddings (required), partial_rotary_factor
// (default 1) and rope_scaling (a map with rope_type, or the legacy `type`, and
// the keys nn/rope_scaling.h lists for that type; absent or null means
// default RoPE). A null value counts as absent, as in HF.
//
// The architecture keys of HF's config.json are keys here too, so a model
// folder's config reads the same way (train/config/hf_config.h):
// model_type (llama, the default; mistral; qwen2), attention_bias and
// mlp_bias (llama), sliding_window (mistral; qwen2 with use_sliding_window
// and max_window_layers), hidden_act (silu only), attention_dropout (0 only),
// initializer_range, and the token ids bos_token_id, eos_token_id (one id or
// a list), pad_token_id and torch_dtype, which rotor keeps for export.
//
// Every error names the file, the 1-based line and column and the key path,
//   "cfg.yaml:7:13: model.rope_scaling.factor: must be a finite number >= 1,
//   got 0.5",
// for unknown keys, keys that do not apply to the rope_type, missing required
// keys, values of the wrong type and out-of-range values.
#ifndef ROTOR_TRAIN_CONFIG_MODEL_CONFIG_H_
#define ROTOR_TRAIN_CONFIG_MODEL_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nn/rope_scaling.h"
#include "nn/transformer.h"

namespace rotor::train {

// Hugging Face's model_type. The three architectures compute the same
// decoder; they differ in which projections carry biases (llama: q, k, v and
// o with attention_bias, gate/up/down with mlp_bias; qwen2: q, k and v
// always; mistral: none) and in the sliding window (mistral, qwen2).
enum class ModelType { kLlama, kMistral, kQwen2 };

// "llama", "mistral", "qwen2".
const char* ModelTypeName(ModelType type);
// The inverse of ModelTypeName; nullopt for an unknown name.
std::optional<ModelType> ModelTypeFromName(const std::string& name);
// HF's class name in config.json's "architectures": "LlamaForCausalLM",
// "MistralForCausalLM", "Qwen2ForCausalLM".
const char* ArchitectureName(ModelType type);

struct ModelConfig {
  ModelType model_type = ModelType::kLlama;
  // Architecture keys (type- and range-checked here; which ones a model needs
  // is up to the model). Absent keys are nullopt.
  std::optional<int64_t> vocab_size;
  std::optional<int64_t> hidden_size;
  std::optional<int64_t> intermediate_size;
  std::optional<int64_t> num_hidden_layers;
  std::optional<int64_t> num_attention_heads;
  std::optional<int64_t> num_key_value_heads;
  std::optional<double> rms_norm_eps;
  std::optional<bool> tie_word_embeddings;
  std::optional<bool> attention_bias;        // llama
  std::optional<bool> mlp_bias;              // llama
  std::optional<int64_t> sliding_window;     // mistral, qwen2
  std::optional<bool> use_sliding_window;    // qwen2
  std::optional<int64_t> max_window_layers;  // qwen2
  std::optional<double> initializer_range;

  // What a model folder declares besides the architecture, kept so that an
  // export writes it back: the special token ids and the weights' dtype.
  std::optional<int64_t> bos_token_id;
  std::optional<std::vector<int64_t>> eos_token_id;  // HF allows a list
  std::optional<int64_t> pad_token_id;
  std::optional<std::string> torch_dtype;  // float32, bfloat16 or float16

  // Positions: rope_theta, max_position_embeddings, partial_rotary_factor,
  // the resolved head_dim and rope_scaling. Valid (FindRopeConfigProblem
  // finds nothing) after parsing.
  RopeScalingConfig rope;
};

// Parses the `model:` section of YAML text (other top-level sections are
// left to their own parsers).
ModelConfig ParseModelConfigText(const std::string& yaml_text,
                                 const std::string& file);

// Reads `path` and parses its `model:` section.
ModelConfig LoadModelConfig(const std::string& path);

// `model` with command-line overrides ("model.rope_scaling.rope_type=yarn",
// ...) applied and checked as a `model:` section again; `source` names the
// model in errors. An override of another section is an error.
ModelConfig OverrideModelConfig(const ModelConfig& model,
                                const std::vector<std::string>& overrides,
                                const std::string& source);

// The RoPE settings of a config file's `model:` section (max_position_
// embeddings, rope_theta, rope_scaling; whichever are present) as
// command-line overrides, e.g. {"model.max_position_embeddings=1024",
// "model.rope_scaling={rope_type: yarn, factor: 4, ...}"}. This is how
// `rotor eval --rope-from configs/extend/yarn-4x.yaml` evaluates a base
// model with the settings of an extension config, without fine-tuning.
std::vector<std::string> RopeOverridesFromConfig(const std::string& path);

// The context length a model was pre-trained at, as its config says:
// rope_scaling's original_max_position_embeddings when the model is itself
// scaled (a Llama 3.1 folder), else max_position_embeddings.
int64_t PretrainedLength(const ModelConfig& model);

// Fills the model's TransformerConfig from a parsed `model:` section; throws
// naming the missing key or the inconsistent sizes (e.g. heads not divisible
// by kv heads).
nn::TransformerConfig ResolveTransformerConfig(const ModelConfig& model);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_CONFIG_MODEL_CONFIG_H_
