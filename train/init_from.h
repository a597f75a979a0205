// Starting a run from another run's weights (train.init_from): the basis of
// context-extension fine-tuning, where a model trained at length L continues
// at a longer sequence length with a new rope_scaling.
//
// Only the weights are copied. The optimizer moments, learning-rate schedule,
// step counter and batch sampler start fresh, and the RoPE tables come from
// the new config (the weights hold no positional information: RoPE has no
// parameters), so max_position_embeddings, rope_theta and rope_scaling may
// all change. Everything that shapes a weight must match.
#ifndef ROTOR_TRAIN_FINETUNE_H_
#define ROTOR_TRAIN_FINETUNE_H_

#include <memory>
#include <string>
#include <vector>

#include "nn/transformer.h"
#include "train/config/train_config.h"

namespace rotor::train {

// The checkpoint folder `path` names: itself if it holds model.safetensors,
// else the newest checkpoint of the run whose output_dir it is. Throws,
// naming the path, when it does not exist or is neither.
std::string ResolveCheckpointPath(const std::string& path);

// Throws rotor::Error listing every architecture key whose value differs
// between `source` (a checkpoint, described by `source_name`) and `target`,
// e.g.
// "init_from runs/a/checkpoints/step_00001500: the architecture differs from
// this config: hidden_size 192 (checkpoint) vs 256 (config)".
void CheckSameArchitecture(const nn::TransformerConfig& source,
                           const nn::TransformerConfig& target,
                           const std::string& source_name);

// Resolves `path`, checks its architecture against `model`'s and copies its
// weights into `model`. Returns the checkpoint folder used.
std::string InitializeFromCheckpoint(const std::string& path,
                                     nn::Transformer& model);

// A trained model for evaluation: the checkpoint `path` names (resolved as
// above), its saved config with `overrides` ("model.rope_scaling.rope_type=
// yarn", ...) applied, its weights. This is how a base model is evaluated
// with a scaling method it was not trained with (zero-shot extension); the
// overrides may change RoPE settings only (CheckSameArchitecture).
// `config` (optional) receives the config used.
std::unique_ptr<nn::Transformer> LoadCheckpointModel(
    const std::string& path, const std::vector<std::string>& overrides,
    TrainConfig* config = nullptr);

// The RoPE settings of a config file's `model:` section (max_position_
// embeddings, rope_theta, rope_scaling; whichever are present) as overrides
// for LoadCheckpointModel, e.g. {"model.max_position_embeddings=1024",
// "model.rope_scaling={rope_type: yarn, factor: 4, ...}"}. This is how
// `rotor eval --rope-from configs/extend/yarn-4x.yaml` evaluates a base
// model with the settings of an extension config, without fine-tuning.
std::vector<std::string> RopeOverridesFromConfig(const std::string& path);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_FINETUNE_H_
