#include "train/config/model_edit.h"

#include "core/error.h"
#include "nn/rope_methods.h"
#include "train/config/model_reader.h"
#include "train/config/model_yaml.h"
#include "train/config/yaml.h"

namespace rotor::train {

ModelConfig ApplyModelEdit(const ModelConfig& saved, const ModelEdit& edit) {
  ModelConfig model = edit.model.value_or(saved);
  RopeScalingConfig& rope = model.rope;
  if (edit.rope.max_position_embeddings) {
    rope.max_position_embeddings = *edit.rope.max_position_embeddings;
  }
  if (edit.rope.rope_theta) rope.rope_theta = *edit.rope.rope_theta;
  if (edit.rope.rope_scaling) {
    // The method and its keys are the edit's; the table and the head are
    // the model's.
    RopeScalingConfig scaling = *edit.rope.rope_scaling;
    scaling.rope_theta = rope.rope_theta;
    scaling.head_dim = rope.head_dim;
    scaling.partial_rotary_factor = rope.partial_rotary_factor;
    scaling.max_position_embeddings = rope.max_position_embeddings;
    rope = scaling;
  }
  if (const auto problem = FindModelConfigProblem(model)) {
    throw Error(StrCat(edit.source.empty() ? "the model" : edit.source,
                       ": model.", problem->key, ": ", problem->message));
  }
  return model;
}

RopeEdit RopeEditFromConfig(const std::string& path) {
  const YAML::Node root = LoadConfigYamlFile(path);
  const YAML::Node model = root.IsMap() ? root["model"] : YAML::Node();
  ROTOR_CHECK(model && model.IsMap(), path, ": has no model: section");
  ModelReader<YamlValue> reader(path, ModelConfigDialect::kRotorYaml, nullptr);
  ModelConfig read;
  reader.ReadKeys(YamlValue(model), read);
  reader.ReadRopeScaling(read);
  RopeEdit edit;
  if (reader.Given("max_position_embeddings")) {
    edit.max_position_embeddings = read.rope.max_position_embeddings;
  }
  if (reader.Given("rope_theta")) edit.rope_theta = read.rope.rope_theta;
  if (model["rope_scaling"]) edit.rope_scaling = read.rope;  // null: default
  ROTOR_CHECK(!edit.empty(), path,
              ": its model: section sets none of max_position_embeddings, "
              "rope_theta, rope_scaling");
  return edit;
}

std::vector<std::string> RopeEditText(const ModelConfig& model) {
  std::vector<std::string> text = {StrCat("model.max_position_embeddings=",
                                          model.rope.max_position_embeddings)};
  if (!RopeMethodOf(model.rope.rope_type).scales()) {
    text.push_back("model.rope_scaling=null");
    return text;
  }
  YAML::Emitter flow;
  flow.SetMapFormat(YAML::Flow);
  flow.SetSeqFormat(YAML::Flow);
  flow << ModelConfigToYaml(model)["rope_scaling"];
  text.push_back(StrCat("model.rope_scaling=", flow.c_str()));
  return text;
}

}  // namespace rotor::train
