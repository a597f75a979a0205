// The `model:` section in YAML (train/config/model_yaml.cc, which also
// defines model_config.h's ParseModelConfigText, LoadModelConfig and
// OverrideModelConfig), for the files that hold one: a training config, a
// checkpoint's config.yaml, a model-only config such as configs/rope/*.yaml.
#ifndef ROTOR_TRAIN_CONFIG_MODEL_YAML_H_
#define ROTOR_TRAIN_CONFIG_MODEL_YAML_H_

#include <yaml-cpp/yaml.h>

#include <string>

#include "train/config/model_config.h"
#include "train/config/overrides.h"

namespace rotor::train {

// Reads a `model:` map (train/config/model_reader.h); errors name
// "FILE:LINE:COL: model.KEY", or "override 'ASSIGNMENT': model.KEY" for a
// value one of `overridden` gave.
ModelConfig ParseModelConfig(const YAML::Node& model, const std::string& file,
                             const OverriddenKeys& overridden = {});
// `base` (a Hugging Face folder's config.json `base_file`, for
// train.init_from) amended by a `model:` map, absent or null: a key it
// gives replaces the base's value (null: the default; rope_scaling as a
// whole), the others stay the folder's. A rope_scaling that reads
// original_max_position_embeddings takes the folder's pre-training length
// (PretrainedLength) when it leaves the key out, and is refused, naming
// both, when it gives another. Errors as ParseModelConfig's; a problem
// with a value of the folder names `file` without a line.
ModelConfig AmendModelConfig(const ModelConfig& base,
                             const std::string& base_file,
                             const YAML::Node& amendments,
                             const std::string& file,
                             const OverriddenKeys& overridden = {});
// The map ParseModelConfig reads back as `model`, in the table's order.
YAML::Node ModelConfigToYaml(const ModelConfig& model);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_CONFIG_MODEL_YAML_H_
