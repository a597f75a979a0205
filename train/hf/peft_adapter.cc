#include "train/hf/peft_adapter.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"
#include "nn/lora.h"
#include "train/hf/hf_model.h"  // CheckHfExportOutput, WriteHfExportMarker
#include "train/io/atomic_file.h"
#include "train/io/json.h"
#include "train/io/message.h"
#include "train/io/safetensors.h"

namespace rotor::train {

namespace fs = std::filesystem;

namespace {

// PeftModel wraps the transformers model as base_model (a LoraModel) whose
// .model is the causal LM: every key starts so.
constexpr char kPeftPrefix[] = "base_model.model.";

std::string JoinPath(const std::string& dir, const std::string& name) {
  return (fs::path(dir) / name).string();
}

bool EndsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool IsAdapterName(const std::string& name) {
  return EndsWith(name, ".lora_A.weight") || EndsWith(name, ".lora_B.weight");
}

// The module path of a parameter name: "model.norm.weight" -> "model.norm".
std::string ModulePath(const std::string& name) {
  const size_t dot = name.rfind('.');
  return dot == std::string::npos ? name : name.substr(0, dot);
}

// finetune.trainable's entries as PEFT's modules_to_save (module names that
// PEFT matches against the end of each module's path).
std::vector<std::string> ModulesToSave(
    const std::vector<std::string>& trainable) {
  std::vector<std::string> modules;
  for (const std::string& entry : trainable) {
    if (entry == "norm") {
      for (const char* norm :
           {"input_layernorm", "post_attention_layernorm", "norm"}) {
        modules.emplace_back(norm);
      }
    } else {
      modules.push_back(entry);
    }
  }
  return modules;
}

// Whether the module at `path` is one PEFT's modules_to_save names (PEFT
// matches the end of the path; older versions without a '.' boundary).
bool IsModuleToSave(const std::string& path,
                    const std::vector<std::string>& modules) {
  return std::any_of(modules.begin(), modules.end(),
                     [&](const std::string& m) { return EndsWith(path, m); });
}

}  // namespace

std::string PeftBaseModelPath(const std::string& init_from) {
  const fs::path base = fs::absolute(init_from).lexically_normal();
  return (base.has_filename() ? base : base.parent_path()).string();
}

void WritePeftAdapterFolder(const std::string& dir, const nn::Module& model,
                            const TrainConfig& config,
                            const std::string& base_config_json) {
  const FinetuneSection& finetune = config.finetune;
  ROTOR_CHECK(finetune.lora.enabled, config.file,
              ": not a LoRA checkpoint (its config has no finetune.lora); "
              "--adapter writes a LoRA run's adapters, export this model "
              "without --adapter");
  const auto parameters = model.NamedParameters();
  const bool has_head =
      std::any_of(parameters.begin(), parameters.end(),
                  [](const auto& p) { return p.first == "lm_head.weight"; });
  const bool trains_embeddings =
      std::count(finetune.trainable.begin(), finetune.trainable.end(),
                 "embed_tokens") > 0;
  ROTOR_CHECK(!trains_embeddings || has_head, config.file,
              ": finetune.trainable has embed_tokens with tied embeddings "
              "(model.tie_word_embeddings), which PEFT's modules_to_save "
              "cannot hold: its copy of embed_tokens would not be the output "
              "head, which would stay the base's. Export it merged, without "
              "--adapter");
  const std::vector<std::string> modules = ModulesToSave(finetune.trainable);

  Json json = Json::object();
  json["alpha_pattern"] = Json::object();
  json["base_model_name_or_path"] = PeftBaseModelPath(config.train.init_from);
  json["bias"] = "none";
  json["fan_in_fan_out"] = false;
  json["inference_mode"] = true;
  json["init_lora_weights"] = true;
  json["layers_pattern"] = nullptr;
  json["layers_to_transform"] = nullptr;
  // LoraConfig's lora_alpha is an int: 16, not 16.0, when it is one.
  const double alpha = finetune.lora.alpha;
  json["lora_alpha"] = alpha == static_cast<double>(static_cast<int64_t>(alpha))
                           ? Json(static_cast<int64_t>(alpha))
                           : Json(alpha);
  json["lora_dropout"] = finetune.lora.dropout;
  json["modules_to_save"] = modules.empty() ? Json(nullptr) : Json(modules);
  json["peft_type"] = "LORA";
  json["r"] = finetune.lora.r;
  json["rank_pattern"] = Json::object();
  json["revision"] = nullptr;
  json["target_modules"] = finetune.lora.target_modules;
  json["task_type"] = "CAUSAL_LM";
  json["use_dora"] = false;
  json["use_rslora"] = false;

  std::vector<SafetensorsEntry> entries;
  for (const auto& [name, tensor] : model.NamedTrainableParameters()) {
    ROTOR_CHECK(
        IsAdapterName(name) || IsModuleToSave(ModulePath(name), modules),
        "the LoRA model trains ", name,
        ", which is neither an adapter nor in modules_to_save ",
        ListForMessage(modules));
    entries.push_back({kPeftPrefix + name, SafetensorsDtype::kF32,
                       tensor.shape(), tensor.data()});
  }
  ROTOR_CHECK(!entries.empty(), config.file, ": the model has no adapters");
  CheckHfExportOutput(dir);
  if (!fs::path(dir).parent_path().empty()) {
    fs::create_directories(fs::path(dir).parent_path());
  }
  ReplaceDirectoryAtomically(dir, [&](const std::string& temp) {
    WriteFileAtomically(JoinPath(temp, kPeftConfigFile), json.dump(2) + "\n");
    WriteSafetensors(JoinPath(temp, kPeftWeightsFile), entries);
    if (!base_config_json.empty()) {
      const std::string base_config = JoinPath(temp, kPeftBaseConfigDir);
      fs::create_directory(base_config);
      WriteFileAtomically(JoinPath(base_config, kHfConfigFile),
                          base_config_json);
    }
    WriteHfExportMarker(temp);
  });
}

void LoadPeftAdapter(const std::string& dir, nn::Module& model) {
  const std::string config_path = JoinPath(dir, kPeftConfigFile);
  const Json json =
      ParseJson(ReadFile(config_path, kMaxConfigBytes), config_path);
  ROTOR_CHECK(json.is_object(), config_path, ": expected a JSON object");
  const auto where = [&](const char* key) {
    return StrCat(config_path, ": ", key);
  };
  const std::string peft_type =
      JsonMember<std::string>(json, "peft_type", config_path);
  ROTOR_CHECK(peft_type == "LORA", where("peft_type"), ": '",
              Excerpt(peft_type), "', rotor reads LORA adapters only");
  // Keys whose non-default values rotor's LoRA does not compute.
  const auto check_default = [&](const char* key, const Json& fallback,
                                 const char* what) {
    const auto found = json.find(key);
    if (found == json.end() || found->is_null()) return;
    ROTOR_CHECK(*found == fallback, where(key), ": ", found->dump(), ": ", what,
                " is not implemented in rotor");
  };
  check_default("bias", "none", "training biases");
  check_default("fan_in_fan_out", false, "transposed (Conv1D) weights");
  check_default("use_rslora", false, "rank-stabilised scaling");
  check_default("use_dora", false, "DoRA");
  check_default("rank_pattern", Json::object(), "a rank per module");
  check_default("alpha_pattern", Json::object(), "an alpha per module");
  check_default("layers_to_transform", nullptr, "adapting some layers only");

  nn::FinetuneSettings settings;
  settings.lora = true;
  settings.lora_settings.rank = JsonMember<int64_t>(json, "r", config_path);
  settings.lora_settings.alpha =
      JsonMember<double>(json, "lora_alpha", config_path);
  ROTOR_CHECK(settings.lora_settings.rank > 0, where("r"), ": ",
              settings.lora_settings.rank, ", expected a positive rank");
  const auto targets = json.find("target_modules");
  ROTOR_CHECK(targets != json.end() && targets->is_array(),
              where("target_modules"),
              ": expected a list of module names (rotor does not match a "
              "regular expression)");
  for (const Json& target : *targets) {
    settings.target_modules.push_back(
        JsonAs<std::string>(target, where("target_modules")));
  }
  std::vector<std::string> modules;
  const auto to_save = json.find("modules_to_save");
  if (to_save != json.end() && !to_save->is_null()) {
    for (const Json& module : *to_save) {
      modules.push_back(JsonAs<std::string>(module, where("modules_to_save")));
    }
  }
  // A target that matches nothing is refused here, naming it.
  nn::SetUpFinetuning(model, settings, /*seed=*/0);

  std::map<std::string, Tensor> parameters;
  std::set<std::string> adapters;
  for (const auto& [name, tensor] : model.NamedParameters()) {
    parameters.emplace(name, tensor);
    if (IsAdapterName(name)) adapters.insert(name);
  }
  const SafetensorsFile file =
      SafetensorsFile::Read(JoinPath(dir, kPeftWeightsFile));
  std::set<std::string> loaded;
  for (const SafetensorsFile::TensorInfo& info : file.tensors()) {
    ROTOR_CHECK(info.name.rfind(kPeftPrefix, 0) == 0, file.source(),
                ": tensor ", Excerpt(info.name), " does not start with ",
                kPeftPrefix, " (PeftModel's names for a causal LM)");
    const std::string name = info.name.substr(sizeof(kPeftPrefix) - 1);
    const auto parameter = parameters.find(name);
    const bool expected =
        parameter != parameters.end() &&
        (adapters.count(name) > 0 || IsModuleToSave(ModulePath(name), modules));
    ROTOR_CHECK(expected, file.source(), ": tensor ", Excerpt(info.name),
                " is neither an adapter of target_modules ",
                ListForMessage(settings.target_modules),
                " nor a parameter of modules_to_save ",
                ListForMessage(modules));
    ROTOR_CHECK(info.shape == parameter->second.shape(), file.source(),
                ": tensor ", info.name, " has shape ",
                ShapeToString(info.shape), ", the model's is ",
                ShapeToString(parameter->second.shape()));
    file.ReadAsF32(info, parameter->second.data());
    loaded.insert(name);
  }
  for (const std::string& name : adapters) {
    ROTOR_CHECK(loaded.count(name) > 0, file.source(), ": missing tensor ",
                kPeftPrefix, name, " (an adapter of target_modules)");
  }
  model.Eval();
}

}  // namespace rotor::train
