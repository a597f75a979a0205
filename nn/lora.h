// Fine-tuning with a frozen base: LoRA adapters on chosen Linear layers
// (nn/layers.h has the math) and a few parameters trained in full.
//
// SetUpFinetuning freezes every parameter (requires_grad false: no gradient
// buffer is ever allocated for it, and optimizers given
// Module::NamedTrainableParameters() keep no state for it), adds an adapter
// to each Linear whose own name is one of the target modules, and makes the
// parameters the `trainable` entries name trainable again. An entry names
//   norm           every RmsNorm weight (each layer's input_layernorm and
//                  post_attention_layernorm, and the final model.norm);
//   anything else  the parameters of every module whose own name (the last
//                  part of its path) it is: embed_tokens is
//                  model.embed_tokens.weight, lm_head lm_head.weight (absent
//                  with tied embeddings), q_proj every layer's q_proj.weight
//                  (and bias).
// A target or entry that matches nothing is an error naming it.
#ifndef ROTOR_NN_LORA_H_
#define ROTOR_NN_LORA_H_

#include <cstdint>
#include <string>
#include <vector>

#include "nn/layers.h"
#include "nn/module.h"

namespace rotor {
namespace nn {

struct FinetuneSettings {
  bool lora = false;  // add adapters to `target_modules`
  LoraSettings lora_settings;
  std::vector<std::string> target_modules;  // e.g. q_proj, v_proj
  std::vector<std::string> trainable;       // e.g. embed_tokens, norm
};

// See above. The adapters' A matrices are drawn from `seed`, one Linear
// after the other in module order.
void SetUpFinetuning(Module& model, const FinetuneSettings& settings,
                     uint64_t seed);

// Gives every adapter's dropout its mask for the next forward pass: the
// k-th adapter in module order gets the k-th draw of Rng(seed). Call it
// before each training forward (a step's micro-batch) with a seed of that
// forward, so that runs, and resumed runs, drop the same elements.
void SetLoraDropoutSeed(Module& model, uint64_t seed);

// The Linear layers with an adapter, in module order.
int64_t CountLoraLayers(Module& model);

// Folds every adapter into its weight (Linear::MergeLora), leaving the
// plain model.
void MergeLora(Module& model);

}  // namespace nn
}  // namespace rotor

#endif  // ROTOR_NN_LORA_H_
