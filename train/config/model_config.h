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
// the keys whose rows in nn/rope_scaling.h list that type; absent or null
// means default RoPE). A null value counts as absent, as in HF.
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

#include "core/fields.h"
#include "core/limits.h"
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

// What the readers say of a name the tables below refuse, e.g. "'gpt2' is
// not supported (rotor runs llama, mistral and qwen2)" (rope_type's:
// nn/rope_scaling.h, beside rope_scaling's table).
std::string RefuseModelType(const std::string& given);
std::string RefuseHiddenAct(const std::string& given);
std::string RefuseTorchDtype(const std::string& given);

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
  // Checked, for what rotor computes: SwiGLU (silu) and no attention
  // dropout.
  std::optional<std::string> hidden_act;
  std::optional<double> attention_dropout;

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
  // Phi-3's config.json gives rope_scaling's original_max_position_
  // embeddings at the top level; the parser moves it there, so it is unset
  // in every parsed config.
  std::optional<int64_t> top_level_original_max_position_embeddings;
};

// A key that exists only in some architectures (a key of another one is
// refused: it would be meaningless in HF too).
struct OnlyFor {
  std::vector<ModelType> types;
  const char* which;  // for the message: "llama", "mistral, qwen2"
};

// The keys of a `model:` section and of config.json, in the order the
// "unknown key" message lists them.
template <typename Visitor>
void VisitFields(Visitor& v, ModelConfig& m) {
  using limits::kMaxPositions;
  v(Key{"vocab_size", "tokens in the vocabulary"}, m.vocab_size,
    field::Int{1, limits::kMaxVocabSize});
  v(Key{"hidden_size", "width of the residual stream"}, m.hidden_size,
    field::Int{1, limits::kMaxHiddenSize});
  v(Key{"intermediate_size", "width of the SwiGLU feed-forward block"},
    m.intermediate_size, field::Int{1, limits::kMaxIntermediateSize});
  v(Key{"num_hidden_layers", "decoder layers"}, m.num_hidden_layers,
    field::Int{1, limits::kMaxLayers});
  v(Key{"num_attention_heads", "query heads"}, m.num_attention_heads,
    field::Int{1, limits::kMaxHeads});
  v(Key{"num_key_value_heads",
        "key and value heads (default: num_attention_heads)"},
    m.num_key_value_heads, field::Int{1, limits::kMaxHeads});
  v(Key{"head_dim", "channels per head (default: hidden_size / heads)"},
    m.rope.head_dim, field::Int{1, limits::kMaxHeadDim});
  v(Key{"rms_norm_eps", "RMSNorm's epsilon (default 1e-5)"}, m.rms_norm_eps,
    field::PositiveReal{});
  v(Key{"tie_word_embeddings", "lm_head is embed_tokens"},
    m.tie_word_embeddings, field::Flag{});
  v(Key{"max_position_embeddings", "the context length (required)"},
    m.rope.max_position_embeddings, field::Int{1, kMaxPositions});
  v(Key{"original_max_position_embeddings",
        "Phi-3's place for rope_scaling's key of that name"},
    m.top_level_original_max_position_embeddings, field::Int{1, kMaxPositions});
  v(Key{"rope_theta", "RoPE's base b (default 10000)"}, m.rope.rope_theta,
    field::AnyReal{});
  v(Key{"partial_rotary_factor", "share of each head's channels rotated"},
    m.rope.partial_rotary_factor, field::AnyReal{});
  v.Section(Key{"rope_scaling",
                "the scaling method and its keys; null: "
                "default RoPE"},
            m.rope);
  v(Key{"model_type", "llama (default), mistral or qwen2"}, m.model_type,
    field::Choice<ModelType>{ModelTypeName, ModelTypeFromName,
                             RefuseModelType});
  v(Key{"attention_bias", "biases on q, k, v and o"}, m.attention_bias,
    field::Flag{},
    OnlyFor{{ModelType::kLlama},
            "llama; qwen2 always has q, k, v "
            "biases"});
  v(Key{"mlp_bias", "biases on gate, up and down"}, m.mlp_bias, field::Flag{},
    OnlyFor{{ModelType::kLlama}, "llama"});
  v(Key{"sliding_window", "attention window (sequences above are refused)"},
    m.sliding_window, field::Int{1, kMaxPositions},
    OnlyFor{{ModelType::kMistral, ModelType::kQwen2}, "mistral, qwen2"});
  v(Key{"use_sliding_window", "qwen2: whether the window applies"},
    m.use_sliding_window, field::Flag{}, OnlyFor{{ModelType::kQwen2}, "qwen2"});
  v(Key{"max_window_layers", "qwen2: layers below this are not windowed"},
    m.max_window_layers, field::AnyInt{},
    OnlyFor{{ModelType::kQwen2}, "qwen2"});
  v(Key{"hidden_act", "silu (rotor's feed-forward block is SwiGLU)"},
    m.hidden_act, field::Accepted{{"silu", "swish"}, RefuseHiddenAct});
  v(Key{"attention_dropout", "0 (rotor has no attention dropout)"},
    m.attention_dropout, field::Zero{"rotor has no attention dropout"});
  v(Key{"initializer_range", "std of the random initial weights"},
    m.initializer_range, field::PositiveReal{});
  v(Key{"bos_token_id", "beginning-of-sequence token, kept for export"},
    m.bos_token_id, field::TokenId{});
  v(Key{"eos_token_id", "end-of-sequence token(s), kept for export"},
    m.eos_token_id, field::TokenIds{});
  v(Key{"pad_token_id", "padding token, kept for export"}, m.pad_token_id,
    field::TokenId{});
  v(Key{"torch_dtype", "the weights' dtype, kept for export", "dtype"},
    m.torch_dtype,
    field::Accepted{{"float32", "bfloat16", "float16"}, RefuseTorchDtype});
}

// The first problem of a parsed or code-built model config: a key of
// another architecture ("sliding_window does not apply to model_type
// llama"), a token id outside the vocabulary, or FindRopeConfigProblem's.
// The key is relative to the model section; readers map it to its line.
std::optional<RopeConfigProblem> FindModelConfigProblem(
    const ModelConfig& config);

// The YAML half (train/config/model_yaml.cc; model_yaml.h for the readers
// of YAML nodes): parses the `model:` section of YAML text (other
// top-level sections are left to their own parsers).
ModelConfig ParseModelConfigText(const std::string& yaml_text,
                                 const std::string& file);

// Throws "override 'KEY=VALUE' of SOURCE: only model.* keys apply to a
// model" for the first of `overrides` that is not a model key.
void CheckModelOverrides(const std::vector<std::string>& overrides,
                         const std::string& source);

// Reads `path` and parses its `model:` section.
ModelConfig LoadModelConfig(const std::string& path);

// `model` with command-line overrides ("model.rope_scaling.rope_type=yarn",
// ...) applied and checked as a `model:` section again; `source` names the
// model in errors. An override of another section is an error.
ModelConfig OverrideModelConfig(const ModelConfig& model,
                                const std::vector<std::string>& overrides,
                                const std::string& source);

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
