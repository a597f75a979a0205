// LoRA adapters in PEFT's layout (`PeftModel.save_pretrained` of a causal
// LM), written from a rotor LoRA checkpoint and read back onto a base:
//
//   DIR/adapter_config.json        LoraConfig's keys: peft_type "LORA",
//                                  task_type "CAUSAL_LM", r, lora_alpha,
//                                  lora_dropout, target_modules, bias "none",
//                                  fan_in_fan_out false, modules_to_save,
//                                  base_model_name_or_path, ...
//   DIR/adapter_model.safetensors  F32 tensors under PEFT's names, which are
//                                  rotor's with the prefix "base_model.model."
//                                  (get_peft_model_state_dict drops the
//                                  adapter name "default"):
//     base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight  [r, in]
//     base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight  [out, r]
//     base_model.model.model.embed_tokens.weight   a modules_to_save module's
//                                                  full tensor, under its
//                                                  own path
//
// finetune.trainable becomes modules_to_save: embed_tokens, lm_head, and for
// norm every RMSNorm (input_layernorm, post_attention_layernorm, norm).
// Trained tied embeddings are refused: PEFT's copy of embed_tokens would not
// be the output head, which stays the base's.
#ifndef ROTOR_TRAIN_HF_PEFT_ADAPTER_H_
#define ROTOR_TRAIN_HF_PEFT_ADAPTER_H_

#include <string>

#include "nn/module.h"
#include "train/config/train_config.h"

namespace rotor::train {

inline constexpr char kPeftConfigFile[] = "adapter_config.json";
inline constexpr char kPeftWeightsFile[] = "adapter_model.safetensors";
// The folder inside an adapter folder that holds the config.json of its
// base as the run changed it (a RoPE extension), for
// AutoConfig.from_pretrained(DIR/base_config).
inline constexpr char kPeftBaseConfigDir[] = "base_config";

// The adapter's base_model_name_or_path for a run's train.init_from
// `init_from`: the same folder as an absolute path, so that PEFT finds the
// base from wherever the adapter is loaded (train.init_from may be
// relative to the folder the run was started in).
std::string PeftBaseModelPath(const std::string& init_from);

// Writes the adapters and trainables of `model`, a LoRA checkpoint loaded
// with `config` (LoadCheckpointModel: its base with adapters, not merged),
// as a PEFT adapter folder at `dir`, atomically, with the export marker
// (CheckHfExportOutput's rules for an existing `dir`). Throws for a config
// without finetune.lora ("not a LoRA checkpoint") and for trained tied
// embeddings. base_model_name_or_path is train.init_from, absolute. A
// non-empty `base_config_json` is written as
// kPeftBaseConfigDir/config.json: the base's config as the run changed it
// (HfExportConfigJson of the run's model), which PEFT's base lacks.
void WritePeftAdapterFolder(const std::string& dir, const nn::Module& model,
                            const TrainConfig& config,
                            const std::string& base_config_json = "");

// Adds the adapters adapter_config.json at `dir` describes to `model` (its
// base, loaded already), copies adapter_model.safetensors into them and
// into the modules_to_save parameters, and puts the model in evaluation
// mode; nn::MergeLora then gives the merged model. Refuses, naming the file
// and key or tensor, what rotor's LoRA does not compute (another peft_type,
// bias other than "none", fan_in_fan_out, use_rslora, use_dora, rank or
// alpha patterns, layers_to_transform, a target_modules regex), a tensor
// that is not an adapter of a target or a parameter of a modules_to_save
// module, a wrong shape, and an adapter missing from the file.
void LoadPeftAdapter(const std::string& dir, nn::Module& model);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_HF_PEFT_ADAPTER_H_
