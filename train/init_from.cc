#include "train/init_from.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <sstream>

#include "core/error.h"
#include "train/checkpoint.h"
#include "train/config/train_config.h"

namespace rotor::train {

namespace fs = std::filesystem;

std::string ResolveCheckpointPath(const std::string& path) {
  ROTOR_CHECK(fs::is_directory(path), "checkpoint folder ", path,
              " does not exist");
  if (fs::exists(fs::path(path) / "model.safetensors")) return path;
  const std::vector<std::string> checkpoints = ListCheckpoints(path);
  ROTOR_CHECK(!checkpoints.empty(), path,
              " is neither a checkpoint folder (with model.safetensors) nor "
              "a run's output_dir with checkpoints/step_* folders");
  return checkpoints.back();
}

void CheckSameArchitecture(const nn::TransformerConfig& source,
                           const nn::TransformerConfig& target,
                           const std::string& source_name) {
  std::ostringstream differences;
  auto compare = [&](const char* key, auto source_value, auto target_value) {
    if (source_value == target_value) return;
    differences << (differences.tellp() > 0 ? ", " : "") << key << " "
                << source_value << " (checkpoint) vs " << target_value
                << " (config)";
  };
  compare("vocab_size", source.vocab_size, target.vocab_size);
  compare("hidden_size", source.hidden_size, target.hidden_size);
  compare("intermediate_size", source.intermediate_size,
          target.intermediate_size);
  compare("num_hidden_layers", source.num_hidden_layers,
          target.num_hidden_layers);
  compare("num_attention_heads", source.num_attention_heads,
          target.num_attention_heads);
  compare("num_key_value_heads", source.num_key_value_heads,
          target.num_key_value_heads);
  compare("head_dim", source.head_dim, target.head_dim);
  compare("tie_word_embeddings", source.tie_word_embeddings,
          target.tie_word_embeddings);
  compare("partial_rotary_factor", source.rope.partial_rotary_factor,
          target.rope.partial_rotary_factor);
  ROTOR_CHECK(
      differences.tellp() == 0, source_name,
      ": the architecture differs from this config: ", differences.str(),
      " (only max_position_embeddings, rope_theta and rope_scaling "
      "may change)");
}

std::string InitializeFromCheckpoint(const std::string& path,
                                     nn::Transformer& model) {
  std::string dir;
  try {
    dir = ResolveCheckpointPath(path);
  } catch (const Error& e) {
    throw Error(
        StrCat("train.init_from: ", e.what(), " (train the base model first)"));
  }
  const TrainConfig source =
      ParseTrainConfig(LoadCheckpointConfig(dir), dir + "/config.yaml");
  CheckSameArchitecture(ResolveTransformerConfig(source.model),
                        model.config(), "init_from " + dir);
  LoadModelWeights(dir, model);
  return dir;
}

std::unique_ptr<nn::Transformer> LoadCheckpointModel(
    const std::string& path, const std::vector<std::string>& overrides,
    TrainConfig* config) {
  const std::string dir = ResolveCheckpointPath(path);
  const std::string saved = LoadCheckpointConfig(dir);
  const TrainConfig original = ParseTrainConfig(saved, dir + "/config.yaml");
  const TrainConfig parsed =
      ParseTrainConfig(saved, dir + "/config.yaml", overrides);
  const nn::TransformerConfig architecture =
      ResolveTransformerConfig(parsed.model);
  CheckSameArchitecture(ResolveTransformerConfig(original.model),
                        architecture, "checkpoint " + dir + " with overrides");
  auto model =
      std::make_unique<nn::Transformer>(architecture, parsed.train.seed);
  LoadModelWeights(dir, *model);
  if (config != nullptr) *config = parsed;
  return model;
}

std::vector<std::string> RopeOverridesFromConfig(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    throw Error(StrCat(path, ": cannot read the RoPE settings: ", e.msg));
  }
  const YAML::Node model = root.IsMap() ? root["model"] : YAML::Node();
  ROTOR_CHECK(model && model.IsMap(), path, ": has no model: section");
  std::vector<std::string> overrides;
  for (const char* key :
       {"max_position_embeddings", "rope_theta", "rope_scaling"}) {
    const YAML::Node value = model[key];
    if (!value) continue;
    YAML::Emitter flow;
    flow.SetMapFormat(YAML::Flow);
    flow.SetSeqFormat(YAML::Flow);
    flow << value;
    overrides.push_back(StrCat("model.", key, "=", flow.c_str()));
  }
  ROTOR_CHECK(!overrides.empty(), path,
              ": its model: section sets none of max_position_embeddings, "
              "rope_theta, rope_scaling");
  return overrides;
}

}  // namespace rotor::train
