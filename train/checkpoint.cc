#include "train/checkpoint.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <sstream>

#include "core/error.h"
#include "core/suggest.h"
#include "nn/lora.h"
#include "train/config/memory_estimate.h"
#include "train/hf/hf_model.h"
#include "train/hf/peft_adapter.h"
#include "train/io/atomic_file.h"
#include "train/io/json.h"
#include "train/io/output_file.h"
#include "train/io/safetensors.h"
#include "train/io/weights_hash.h"

namespace rotor::train {

namespace fs = std::filesystem;

namespace {

constexpr char kModelFile[] = "model.safetensors";
constexpr char kOptimizerFile[] = "optimizer.safetensors";
constexpr char kStateFile[] = "trainer_state.json";
constexpr char kConfigFile[] = "config.yaml";
constexpr char kBaseModelKey[] = "base_model";
constexpr char kBaseHashKey[] = "base_weights_hash";

SafetensorsEntry Entry(const std::string& name, const Tensor& tensor) {
  return {name, SafetensorsDtype::kF32, tensor.shape(), tensor.data()};
}

// Copies tensor `name` of `file` into `target` (shapes must match).
void CopyInto(const SafetensorsFile& file, const std::string& name,
              Tensor target) {
  const std::vector<float> values = file.ReadF32(name, &target.shape());
  ROTOR_CHECK(target.is_contiguous(), "checkpoint target ", name,
              " is not contiguous");
  std::copy(values.begin(), values.end(), target.data());
}

}  // namespace

std::string CheckpointDir(const std::string& output_dir, int64_t step) {
  char name[32];
  std::snprintf(name, sizeof(name), "step_%08lld",
                static_cast<long long>(step));
  return (fs::path(output_dir) / "checkpoints" / name).string();
}

std::vector<std::string> ListCheckpoints(const std::string& output_dir) {
  std::vector<std::string> dirs;
  const fs::path root = fs::path(output_dir) / "checkpoints";
  std::error_code error;
  if (!fs::is_directory(root, error)) return dirs;
  for (const fs::directory_entry& entry : fs::directory_iterator(root)) {
    const std::string name = entry.path().filename().string();
    // Only complete folders: temporary ones carry a ".tmp-" suffix.
    if (entry.is_directory() && name.rfind("step_", 0) == 0 &&
        name.find('.') == std::string::npos) {
      dirs.push_back(entry.path().string());
    }
  }
  std::sort(dirs.begin(), dirs.end());  // zero-padded: sorts by step
  return dirs;
}

void SaveCheckpoint(const std::string& dir, const nn::Module& model,
                    AdamW* optimizer, const TrainerState& state,
                    const std::string& config_yaml,
                    const std::string& tokenizer,
                    const std::function<void()>& before_publish,
                    const BaseReference& base) {
  fs::create_directories(fs::path(dir).parent_path());
  const std::string step_text = std::to_string(state.step);
  const bool adapts_base = !base.path.empty();
  ReplaceDirectoryAtomically(dir, [&](const std::string& temp) {
    std::vector<SafetensorsEntry> weights;
    for (const auto& [name, tensor] : adapts_base
                                          ? model.NamedTrainableParameters()
                                          : model.NamedParameters()) {
      weights.push_back(Entry(name, tensor));
    }
    std::map<std::string, std::string> metadata = {{"step", step_text},
                                                   {"producer", "rotor"}};
    if (adapts_base) {
      metadata[kBaseModelKey] = base.path;
      metadata[kBaseHashKey] = base.weights_hash;
    }
    WriteSafetensors(temp + "/" + kModelFile, weights, metadata);

    if (optimizer != nullptr) {
      std::vector<SafetensorsEntry> moments;
      const auto& params = optimizer->parameters();
      for (size_t i = 0; i < params.size(); ++i) {
        moments.push_back(
            Entry("exp_avg." + params[i].first, optimizer->first_moments()[i]));
        moments.push_back(Entry("exp_avg_sq." + params[i].first,
                                optimizer->second_moments()[i]));
      }
      WriteSafetensors(temp + "/" + kOptimizerFile, moments,
                       {{"step", std::to_string(optimizer->step())},
                        {"optimizer", "adamw"}});
    }

    const Json json = {
        {"step", state.step},
        {"sampler_rng_state", state.sampler.rng_state},
        {"sampler_batches_drawn", state.sampler.batches_drawn},
        {"tokens_seen", state.tokens_seen},
        {"best_val_loss", FiniteOrNull(state.best_val_loss)},
        {"val_loss", FiniteOrNull(state.val_loss)},
        {"smoothed_loss", FiniteOrNull(state.smoothed_loss)},
        {"min_smoothed_loss", FiniteOrNull(state.min_smoothed_loss)},
        {"elapsed_seconds", state.elapsed_seconds},
        {"world_size", state.world_size}};
    WriteFileAtomically(temp + "/" + kStateFile, json.dump(2) + "\n");
    WriteFileAtomically(temp + "/" + kConfigFile, config_yaml);
    CopyTokenizerInto(tokenizer, temp);
    if (before_publish) before_publish();
  });
}

void PruneCheckpoints(const std::string& output_dir, int64_t keep_last_n,
                      const std::string& just_saved) {
  const std::vector<std::string> dirs = ListCheckpoints(output_dir);
  // The best checkpoint survives however many worse ones follow it (a run
  // that degrades must not prune its good weights away). A folder whose
  // state cannot be read competes with no loss.
  std::string best;
  double best_loss = std::numeric_limits<double>::infinity();
  for (const std::string& dir : dirs) {
    double loss = std::numeric_limits<double>::quiet_NaN();
    try {
      loss = LoadTrainerState(dir).val_loss;
    } catch (const Error&) {
    }
    if (loss < best_loss) {
      best_loss = loss;
      best = dir;
    }
  }
  std::error_code error;
  for (size_t i = 0; i + keep_last_n < dirs.size(); ++i) {
    if (dirs[i] == best ||
        (!just_saved.empty() && fs::equivalent(dirs[i], just_saved, error))) {
      continue;
    }
    fs::remove_all(dirs[i]);
  }
  // Leftovers of a run killed while saving ("step_N.tmp-XXXXXX", and
  // "step_N.tmp-XXXXXX.old" from the fallback swap): the save that just
  // finished left none of its own. Only those whose step_N folder is
  // complete are deleted: a run killed between the two renames of the
  // fallback swap leaves the only copies of step_N in them.
  for (const std::string& dir : ListCheckpoints(output_dir)) {
    RemoveStaleTemporaryDirectories(dir);
  }
}

void LoadModelWeights(const std::string& dir, const nn::Module& model) {
  const SafetensorsFile file = SafetensorsFile::Read(dir + "/" + kModelFile);
  const auto params = model.NamedParameters();
  for (const auto& [name, tensor] : params) CopyInto(file, name, tensor);
  ROTOR_CHECK(file.tensors().size() == params.size(), file.source(), ": has ",
              file.tensors().size(), " tensors, the model has ", params.size(),
              " parameters (a checkpoint of another architecture?)");
}

void LoadOptimizerState(const std::string& dir, AdamW& optimizer) {
  const SafetensorsFile file =
      SafetensorsFile::Read(dir + "/" + kOptimizerFile);
  const auto& params = optimizer.parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    CopyInto(file, "exp_avg." + params[i].first, optimizer.first_moments()[i]);
    CopyInto(file, "exp_avg_sq." + params[i].first,
             optimizer.second_moments()[i]);
  }
  const auto step = file.metadata().find("step");
  ROTOR_CHECK(step != file.metadata().end(), file.source(),
              ": __metadata__ has no \"step\"");
  const std::string& text = step->second;
  char* end = nullptr;
  const long long parsed = std::strtoll(text.c_str(), &end, 10);
  ROTOR_CHECK(!text.empty() && *end == '\0' && parsed >= 0, file.source(),
              ": __metadata__ \"step\" is '", text,
              "', not a non-negative integer");
  optimizer.set_step(parsed);
}

TrainerState LoadTrainerState(const std::string& dir) {
  const std::string path = dir + "/" + kStateFile;
  const Json json = ParseJson(ReadFile(path), path);
  TrainerState state;
  state.step = JsonMember<int64_t>(json, "step", path);
  state.sampler.rng_state =
      JsonMember<uint64_t>(json, "sampler_rng_state", path);
  state.sampler.batches_drawn =
      JsonMember<uint64_t>(json, "sampler_batches_drawn", path);
  state.tokens_seen = JsonMember<int64_t>(json, "tokens_seen", path);
  state.best_val_loss =
      NumberOrFallback(json, "best_val_loss", state.best_val_loss, path);
  state.val_loss = NumberOrFallback(json, "val_loss", state.val_loss, path);
  state.smoothed_loss =
      NumberOrFallback(json, "smoothed_loss", state.smoothed_loss, path);
  state.min_smoothed_loss = NumberOrFallback(json, "min_smoothed_loss",
                                             state.min_smoothed_loss, path);
  state.elapsed_seconds = NumberOrFallback(json, "elapsed_seconds", 0.0, path);
  if (json.contains("world_size")) {
    state.world_size = JsonMember<int64_t>(json, "world_size", path);
    ROTOR_CHECK(state.world_size >= 1, path, ": world_size is ",
                state.world_size, ", not a rank count >= 1");
  }
  return state;
}

std::string LoadCheckpointConfig(const std::string& dir) {
  return ReadFile(dir + "/" + kConfigFile);
}

TrainConfig LoadCheckpointTrainConfig(const std::string& dir) {
  return ParseCheckpointTrainConfig(LoadCheckpointConfig(dir),
                                    dir + "/" + kConfigFile);
}

namespace {

// What is there instead of the missing folder `path`: the newest
// checkpoints of its run (for RUN/checkpoints/step_N), else the nearest
// folder beside it (a mistyped run folder); "" when neither.
std::string WhatExistsInstead(const std::string& path) {
  const fs::path missing = fs::path(path).lexically_normal();
  const fs::path parent = missing.parent_path();
  std::error_code error;
  if (parent.filename() == "checkpoints") {
    const std::string run = parent.parent_path().string();
    const std::vector<std::string> checkpoints = ListCheckpoints(run);
    if (!checkpoints.empty()) {
      constexpr size_t kNewest = 3;
      std::string names;
      for (size_t i =
               checkpoints.size() > kNewest ? checkpoints.size() - kNewest : 0;
           i < checkpoints.size(); ++i) {
        names += (names.empty() ? "" : ", ") +
                 fs::path(checkpoints[i]).filename().string();
      }
      return StrCat(
          "; ", parent.string(), " holds ", checkpoints.size(),
          checkpoints.size() == 1 ? " checkpoint, " : " checkpoints, ",
          checkpoints.size() == 1 ? "" : "the newest ", names,
          " (the run's folder ", run, " stands for its newest)");
    }
  }
  std::vector<std::string> siblings;
  const fs::path where = parent.empty() ? fs::path(".") : parent;
  if (!fs::is_directory(where, error)) return "";
  for (fs::directory_iterator it(where, error), end; !error && it != end;
       it.increment(error)) {
    if (it->is_directory(error)) siblings.push_back(it->path().filename());
  }
  std::sort(siblings.begin(), siblings.end());
  const std::string nearest =
      NearestName(missing.filename().string(), siblings);
  if (nearest.empty()) return "";
  return StrCat(", did you mean '", (parent / nearest).string(), "'?");
}

// ResolveCheckpointPath without noting the folder's files.
std::string ResolveCheckpointFolder(const std::string& path) {
  ROTOR_CHECK(fs::is_directory(path), "checkpoint folder ", path,
              " does not exist", WhatExistsInstead(path));
  if (IsHfModelFolder(path)) return path;
  // A folder meant as a Hugging Face one whose config.json is no file would
  // otherwise be taken for a rotor checkpoint missing its config.yaml.
  const std::string config_json = (fs::path(path) / "config.json").string();
  const std::string kind = NonRegularFileKind(config_json);
  ROTOR_CHECK(kind.empty() || fs::exists(fs::path(path) / kConfigFile),
              config_json, " is ", kind,
              ", not a file (a Hugging Face model folder's config.json "
              "must be a regular file)");
  if (fs::exists(fs::path(path) / "model.safetensors")) return path;
  ROTOR_CHECK(!fs::exists(fs::path(path) / kPeftConfigFile), path,
              " is a PEFT adapter folder (", kPeftConfigFile,
              "), not a model. Merge it into its base with PEFT: "
              "PeftModel.from_pretrained(base, '",
              path,
              "').merge_and_unload().save_pretrained(OUT), base being the "
              "model its base_model_name_or_path names; then pass OUT (a "
              "rotor LoRA run: rotor export --checkpoint RUN writes it "
              "merged)");
  const std::vector<std::string> checkpoints = ListCheckpoints(path);
  ROTOR_CHECK(!checkpoints.empty(), path,
              " is neither a checkpoint folder (with model.safetensors), a "
              "Hugging Face model folder (with config.json) nor a run's "
              "output_dir with checkpoints/step_* folders");
  return checkpoints.back();
}

}  // namespace

std::vector<std::string> ModelFiles(const std::string& folder) {
  // What a rotor checkpoint or a Hugging Face model folder is made of; not
  // what a command may have written beside it (an eval's JSON, a plot).
  static constexpr const char* kModelFiles[] = {"config.yaml",
                                                "trainer_state.json",
                                                "config.json",
                                                "generation_config.json",
                                                "tokenizer.json",
                                                "tokenizer_config.json",
                                                "special_tokens_map.json",
                                                "added_tokens.json",
                                                "tokenizer.model",
                                                "vocab.json",
                                                "merges.txt",
                                                "model.safetensors.index.json"};
  std::vector<std::string> files;
  std::error_code error;
  for (fs::directory_iterator it(folder.empty() ? "." : folder, error), end;
       !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    bool model_file = it->path().extension() == ".safetensors";
    for (const char* file : kModelFiles) model_file |= name == file;
    if (model_file) files.push_back(it->path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

void NoteModelFilesAsInputs(const std::string& folder) {
  for (const std::string& file : ModelFiles(folder)) NoteInputPath(file);
}

std::string ResolveCheckpointPath(const std::string& path) {
  const std::string resolved = ResolveCheckpointFolder(path);
  NoteModelFilesAsInputs(resolved);
  return resolved;
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
  compare("q/k/v biases", source.qkv_bias, target.qkv_bias);
  compare("o_proj bias", source.o_proj_bias, target.o_proj_bias);
  compare("mlp biases", source.mlp_bias, target.mlp_bias);
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
    // A folder that is not there may be a Hugging Face model as well as a
    // run: "train the base model first" fits only a run without
    // checkpoints yet.
    std::error_code error;
    if (fs::exists(path, error)) {
      throw Error(StrCat("train.init_from: ", e.what(),
                         " (train the base model first)"));
    }
    throw Error(StrCat("train.init_from: ", path, " does not exist",
                       WhatExistsInstead(path),
                       " (check the path: train.init_from names a rotor "
                       "checkpoint, a run's output_dir or a Hugging Face "
                       "model folder)"));
  }
  if (IsHfModelFolder(dir)) {
    CheckSameArchitecture(ResolveTransformerConfig(LoadHfModelConfig(dir)),
                          model.config(), "init_from " + dir);
    LoadHfWeights(dir, model);
    return dir;
  }
  const TrainConfig source = LoadCheckpointTrainConfig(dir);
  ROTOR_CHECK(!source.finetune.freezes_base(), "train.init_from: ", dir,
              " is a checkpoint of a fine-tuning run with a frozen base (it "
              "holds adapters, not a model); export it first (rotor export "
              "merges the adapters into a Hugging Face folder) and start "
              "from that folder");
  CheckSameArchitecture(ResolveTransformerConfig(source.model), model.config(),
                        "init_from " + dir);
  LoadModelWeights(dir, model);
  return dir;
}

BaseReference LoadFinetuneBase(const TrainConfig& config,
                               nn::Transformer& model) {
  const FinetuneSection& f = config.finetune;
  ROTOR_CHECK(f.freezes_base() && !config.train.init_from.empty(), config.file,
              ": LoadFinetuneBase needs finetune: and "
              "train.init_from");
  BaseReference base;
  base.path = config.train.init_from;
  try {
    base.folder = InitializeFromCheckpoint(base.path, model);
  } catch (const Error& e) {
    throw Error(StrCat(config.file,
                       ": loading the frozen base (train.init_from, relative "
                       "to the current folder): ",
                       e.what()));
  }
  const auto hash_start = std::chrono::steady_clock::now();
  base.weights_hash = WeightsHash(model.NamedParameters());
  base.hash_seconds = std::chrono::duration<double>(
                          std::chrono::steady_clock::now() - hash_start)
                          .count();
  try {
    nn::SetUpFinetuning(model, FinetuneSettingsOf(f), config.train.seed);
  } catch (const Error& e) {
    throw Error(StrCat(config.file, ": finetune: ", e.what()));
  }
  return base;
}

void LoadFinetuneWeights(const std::string& dir, const BaseReference& base,
                         const nn::Module& model) {
  const SafetensorsFile file = SafetensorsFile::Read(dir + "/" + kModelFile);
  const auto saved_hash = file.metadata().find(kBaseHashKey);
  ROTOR_CHECK(saved_hash != file.metadata().end(), file.source(), ": has no \"",
              kBaseHashKey,
              "\" in its __metadata__: it is not the checkpoint of a "
              "fine-tuning run with a frozen base (its config.yaml says it "
              "is)");
  const auto saved_path = file.metadata().find(kBaseModelKey);
  ROTOR_CHECK(
      saved_hash->second == base.weights_hash, dir, " was trained on the base ",
      saved_path != file.metadata().end() ? saved_path->second : "?",
      " with weights hash ", saved_hash->second, ", but the base ", base.path,
      base.folder == base.path ? "" : " (" + base.folder + ")",
      " now has weights hash ", base.weights_hash,
      ": it is another model, or its weights changed. Point train.init_from "
      "at the base this checkpoint was trained on");
  const auto params = model.NamedTrainableParameters();
  for (const auto& [name, tensor] : params) CopyInto(file, name, tensor);
  ROTOR_CHECK(
      file.tensors().size() == params.size(), file.source(), ": has ",
      file.tensors().size(), " tensors, the fine-tuned model trains ",
      params.size(),
      " parameters (another finetune: section than its config.yaml's?)");
}

namespace {

// The model of `config` (checked against the architecture `saved` holds)
// with the weights of checkpoint folder `dir`; `what` names it in errors.
std::unique_ptr<nn::Transformer> BuildCheckpointModel(const std::string& dir,
                                                      const ModelConfig& saved,
                                                      const TrainConfig& config,
                                                      const std::string& what) {
  const nn::TransformerConfig architecture =
      ResolveTransformerConfig(config.model);
  CheckSameArchitecture(ResolveTransformerConfig(saved), architecture, what);
  CheckModelFitsInMemory(architecture, "checkpoint " + dir);
  if (config.finetune.freezes_base()) {
    auto model = std::make_unique<nn::Transformer>(architecture,
                                                   nn::WeightsToBeLoaded{});
    const BaseReference base = LoadFinetuneBase(config, *model);
    LoadFinetuneWeights(dir, base, *model);
    model->Eval();
    return model;
  }
  auto model =
      std::make_unique<nn::Transformer>(architecture, config.train.seed);
  LoadModelWeights(dir, *model);
  return model;
}

// A Hugging Face folder has no training config: evaluation takes its model
// (edited) and, by default, windows of max_position_embeddings tokens, one
// at a time; the data must be named.
TrainConfig HfFolderConfig(const ModelConfig& saved, const ModelEdit& edit) {
  TrainConfig parsed;
  parsed.model = ApplyModelEdit(saved, edit);
  parsed.train.seq_len = parsed.model.rope.max_position_embeddings;
  parsed.train.batch_size = 1;
  return parsed;
}

// How a checkpoint changed by `edit` is named in errors.
std::string EditedName(const std::string& what, const ModelEdit& edit) {
  return edit.source.empty() ? what : what + " with " + edit.source;
}

}  // namespace

TrainConfig LoadCheckpointModelConfig(const std::string& path,
                                      const ModelEdit& edit) {
  const std::string dir = ResolveCheckpointPath(path);
  if (IsHfModelFolder(dir)) return HfFolderConfig(LoadHfModelConfig(dir), edit);
  TrainConfig config =
      ParseTrainConfig(LoadCheckpointConfig(dir), dir + "/config.yaml");
  config.model = ApplyModelEdit(config.model, edit);
  return config;
}

int64_t TrainedLength(const std::string& path, const TrainConfig& config) {
  const std::string dir = ResolveCheckpointPath(path);
  if (!IsHfModelFolder(dir)) return config.train.seq_len;
  return PretrainedLength(LoadHfModelConfig(dir));
}

std::unique_ptr<nn::Transformer> LoadCheckpointModel(const std::string& path,
                                                     const ModelEdit& edit,
                                                     TrainConfig* config) {
  const std::string dir = ResolveCheckpointPath(path);
  if (IsHfModelFolder(dir)) {
    const ModelConfig saved = LoadHfModelConfig(dir);
    const TrainConfig parsed = HfFolderConfig(saved, edit);
    const nn::TransformerConfig architecture =
        ResolveTransformerConfig(parsed.model);
    CheckSameArchitecture(ResolveTransformerConfig(saved), architecture,
                          EditedName("Hugging Face model " + dir, edit));
    CheckModelFitsInMemory(architecture, "model " + dir);
    auto model = LoadHfModel(dir, parsed.model);
    if (config != nullptr) *config = parsed;
    return model;
  }
  const TrainConfig original =
      ParseTrainConfig(LoadCheckpointConfig(dir), dir + "/config.yaml");
  TrainConfig parsed = original;
  parsed.model = ApplyModelEdit(original.model, edit);
  auto model = BuildCheckpointModel(dir, original.model, parsed,
                                    EditedName("checkpoint " + dir, edit));
  if (config != nullptr) *config = parsed;
  return model;
}

std::string CheckpointTokenizerSpec(const std::string& path) {
  const std::string dir = ResolveCheckpointPath(path);
  return IsHfModelFolder(dir) ? HfTokenizerSpec(dir) : TokenizerSpecIn(dir);
}

std::unique_ptr<Tokenizer> LoadCheckpointTokenizer(const std::string& path) {
  return LoadTokenizer(CheckpointTokenizerSpec(path));
}

PromptStart CheckpointPromptStart(const std::string& path) {
  const std::string resolved = ResolveCheckpointPath(path);
  if (!IsHfModelFolder(resolved)) return PromptStart::kDocumentSeparator;
  // A folder `rotor export` wrote before its tokenizer files said which BOS
  // the model's texts began with (no add_bos_token in tokenizer_config.json)
  // holds a model rotor trained, on texts that began with the document
  // separator, and its tokenizer.json as it was: the separator, still.
  const std::string config = resolved + "/tokenizer_config.json";
  if (fs::exists(resolved + "/" + kHfExportMarker) && fs::exists(config) &&
      !ParseJson(ReadFile(config), config).contains("add_bos_token")) {
    return PromptStart::kDocumentSeparator;
  }
  return PromptStart::kTokenizerBos;
}

void CheckSameTokenizer(const std::string& checkpoint,
                        const std::string& data_dir) {
  const std::string model_tokenizer = CheckpointTokenizerSpec(checkpoint);
  const std::string data_tokenizer = TokenizerSpecIn(data_dir);
  ROTOR_CHECK(SameTokenizer(model_tokenizer, data_tokenizer), "checkpoint ",
              checkpoint, " was trained with tokenizer ", model_tokenizer,
              " but the data in ", data_dir, " was prepared with ",
              data_tokenizer,
              "; use data prepared with the checkpoint's tokenizer (rotor "
              "prepare --tokenizer ",
              model_tokenizer, ")");
}

}  // namespace rotor::train
