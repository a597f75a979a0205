// Hugging Face's config.json <-> rotor's ModelConfig.
//
// rotor's `model:` keys are config.json's, so both directions are a mapping
// of names that already agree:
//
//   config.json                         ModelConfig / YAML model:
//   model_type, architectures[0]        model_type (llama, mistral, qwen2)
//   vocab_size ... num_key_value_heads  the same keys
//   head_dim, rms_norm_eps, rope_theta  the same keys
//   tie_word_embeddings                 the same key
//   attention_bias, mlp_bias            the same keys (llama)
//   sliding_window, use_sliding_window  the same keys (mistral, qwen2)
//   max_position_embeddings             the same key
//   rope_scaling {rope_type | type,     rope_scaling, the same spellings
//     ...}                                (nn/rope_scaling.h)
//   original_max_position_embeddings    the same key: Phi-3 puts it at the
//     (top level)                         top level; it sets rope_scaling's
//   rope_parameters (transformers v5)   rope_theta + rope_scaling
//   bos/eos/pad_token_id, torch_dtype   kept for export
//   (or dtype)
//   hidden_act, attention_dropout       checked: silu, 0
//
// Reading goes through the same parser as a YAML `model:` section, so a
// value is checked the same way wherever it comes from; errors name the file
// and the JSON key, e.g. "models/x/config.json: rope_scaling.factor: must be
// a finite number >= 1, got 0.5". Keys transformers uses for bookkeeping
// (transformers_version, use_cache, ...) are accepted; any other unknown key
// is returned in `ignored_keys` (transformers keeps it unused too), so the
// caller can say so.
#ifndef ROTOR_TRAIN_CONFIG_HF_CONFIG_H_
#define ROTOR_TRAIN_CONFIG_HF_CONFIG_H_

#include <string>
#include <vector>

#include "train/config/model_config.h"

namespace rotor::train {

// True for a Hugging Face model folder: one with config.json and without
// rotor's checkpoint config.yaml.
bool IsHfModelFolder(const std::string& path);

// Parses config.json text; `path` names it in errors. Throws for invalid
// JSON, an architecture rotor does not run (architectures and model_type
// must be one of LlamaForCausalLM/llama, MistralForCausalLM/mistral,
// Qwen2ForCausalLM/qwen2), and every problem the model parser finds.
ModelConfig ParseHfConfig(const std::string& json_text, const std::string& path,
                          std::vector<std::string>* ignored_keys = nullptr);

// Reads and parses `path` (a config.json).
ModelConfig LoadHfConfig(const std::string& path,
                         std::vector<std::string>* ignored_keys = nullptr);

// The config.json transformers would write for `model`, weights stored as
// `torch_dtype` ("float32" or "bfloat16"): sorted keys, 2-space indent,
// rope_scaling spelt as HF spells each method. Two methods need a rewrite
// to mean the same in HF (docs/huggingface.md, "Export"):
// - ntk: HF has no fixed NTK-aware scaling, but it is default RoPE with the
//   base b * s^(r/(r-2)), so rope_theta carries that base and rope_scaling
//   is null;
// - yarn: max_position_embeddings becomes factor * original_max_position_
//   embeddings (transformers 4.51-4.55 replaced factor by their ratio, so
//   they must agree for every version to compute the same frequencies).
// Throws when `model` cannot be expressed (a yarn factor * L0 that is no
// integer).
std::string HfConfigJson(const ModelConfig& model,
                         const std::string& torch_dtype);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_CONFIG_HF_CONFIG_H_
