#include "train/config/model_yaml.h"

#include <string>
#include <vector>

#include "core/error.h"
#include "train/config/extension_lint.h"
#include "train/config/model_reader.h"
#include "train/config/yaml.h"

namespace rotor::train {
namespace {

ModelConfig ParseModelSection(const YAML::Node& root, const std::string& file) {
  if (!root.IsMap() || !root["model"]) {
    throw Error(StrCat(file, ": no 'model:' section"));
  }
  return ParseModelConfig(root["model"], file);
}

}  // namespace

ModelConfig ParseModelConfig(const YAML::Node& model, const std::string& file,
                             const OverriddenKeys& overridden) {
  return ModelReader<YamlValue>(file, ModelConfigDialect::kRotorYaml, nullptr,
                                &overridden)
      .Parse(YamlValue(model));
}

ModelConfig AmendModelConfig(const ModelConfig& base,
                             const std::string& base_file,
                             const YAML::Node& amendments,
                             const std::string& file,
                             const OverriddenKeys& overridden) {
  return ModelReader<YamlValue>(file, ModelConfigDialect::kRotorYaml, nullptr,
                                &overridden)
      .Amend(YamlValue(amendments), base, PretrainingLengthOf(base, base_file));
}

ModelConfig ParseModelConfigText(const std::string& yaml_text,
                                 const std::string& file) {
  return ParseModelSection(LoadConfigYaml(yaml_text, file), file);
}

ModelConfig LoadModelConfig(const std::string& path) {
  return ParseModelSection(LoadConfigYamlFile(path), path);
}

ModelConfig OverrideModelConfig(const ModelConfig& model,
                                const std::vector<std::string>& overrides,
                                const std::string& source) {
  YAML::Node root(YAML::NodeType::Map);
  root["model"] = ModelConfigToYaml(model);
  // A malformed override is named first.
  const OverriddenKeys overridden = ApplyYamlOverrides(root, overrides);
  CheckModelOverrides(overrides, source);
  return ParseModelConfig(root["model"], source, overridden);
}

YAML::Node ModelConfigToYaml(const ModelConfig& model) {
  ModelConfig copy = model;
  YamlWriter writer;
  VisitFields(writer, copy);
  return writer.node();
}

}  // namespace rotor::train
