// The `model:` section in YAML (train/config/model_config.cc), for the files
// that hold one: a training config, a checkpoint's config.yaml, a model-only
// config such as configs/rope/*.yaml.
#ifndef ROTOR_TRAIN_CONFIG_MODEL_YAML_H_
#define ROTOR_TRAIN_CONFIG_MODEL_YAML_H_

#include <yaml-cpp/yaml.h>

#include <string>

#include "train/config/model_config.h"

namespace rotor::train {

// Reads a `model:` map (train/config/model_reader.h); errors name
// "FILE:LINE:COL: model.KEY", or "override 'ASSIGNMENT': model.KEY" for a
// value one of `overridden` gave.
ModelConfig ParseModelConfig(const YAML::Node& model, const std::string& file,
                             const OverriddenKeys& overridden = {});
// The map ParseModelConfig reads back as `model`, in the table's order.
YAML::Node ModelConfigToYaml(const ModelConfig& model);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_CONFIG_MODEL_YAML_H_
