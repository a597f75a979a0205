// Typed changes to a model config, where library code once passed override
// text ("model.rope_scaling={...}"): what a checkpoint is loaded with
// (train/checkpoint.h LoadCheckpointModel), what `rotor eval --rope-from`
// takes from a config file, and what the extension report lists for each
// method. Command-line `key=value` text becomes a ModelEdit in tools/,
// through OverrideModelConfig (the model table's reader).
#ifndef ROTOR_TRAIN_CONFIG_MODEL_EDIT_H_
#define ROTOR_TRAIN_CONFIG_MODEL_EDIT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nn/rope_scaling.h"
#include "train/config/model_config.h"

namespace rotor::train {

// A change of RoPE settings, the one kind of change a trained model takes
// (its weights fix the rest). Each field that is set replaces the model's;
// rope_scaling replaces the method with every key of it (rope_type kDefault:
// unscaled RoPE), keeping head_dim and partial_rotary_factor.
struct RopeEdit {
  std::optional<int64_t> max_position_embeddings;
  std::optional<double> rope_theta;
  std::optional<RopeScalingConfig> rope_scaling;
  bool empty() const {
    return !max_position_embeddings && !rope_theta && !rope_scaling;
  }
};

// How to change a saved model: the whole model config instead of the saved
// one (its architecture must be the saved one's), then `rope`. `source`
// names the change in messages ("overrides", "yarn-4x.yaml's RoPE
// settings"); empty for an unchanged model.
struct ModelEdit {
  std::optional<ModelConfig> model;
  RopeEdit rope;
  std::string source;
};

// `saved` with `edit` applied, checked as a parsed config is
// (FindModelConfigProblem); errors name `edit.source`.
ModelConfig ApplyModelEdit(const ModelConfig& saved, const ModelEdit& edit);

// The RoPE settings of a config file's `model:` section (max_position_
// embeddings, rope_theta, rope_scaling; whichever are present), each read
// and checked by the model table; the whole is checked once applied, with
// the model's head_dim. This is how `rotor eval --rope-from
// configs/extend/yarn-4x.yaml` evaluates a base model with the settings of
// an extension config, without fine-tuning.
RopeEdit RopeEditFromConfig(const std::string& path);

// `model`'s RoPE settings as the key=value text `rotor eval` takes, e.g.
// {"model.max_position_embeddings=1024", "model.rope_scaling={rope_type:
// linear, factor: 4}"}, written by the model table's YAML writer: how
// report.md lists each method.
std::vector<std::string> RopeEditText(const ModelConfig& model);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_CONFIG_MODEL_EDIT_H_
