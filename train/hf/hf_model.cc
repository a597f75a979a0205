#include "train/hf/hf_model.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <vector>

#include "core/error.h"
#include "core/kernels/convert.h"
#include "core/tensor.h"
#include "train/config/hf_config.h"
#include "train/config/train_config.h"  // kMaxConfigBytes
#include "train/io/atomic_file.h"
#include "train/io/json.h"
#include "train/io/message.h"
#include "train/io/output_file.h"
#include "train/io/safetensors.h"
#include "train/tokenizer/byte_tokenizer.h"
#include "train/tokenizer/tokenizer.h"

namespace rotor::train {

namespace fs = std::filesystem;

namespace {

constexpr char kSingleFile[] = "model.safetensors";
constexpr char kIndexFile[] = "model.safetensors.index.json";
constexpr char kGenerationConfigFile[] = "generation_config.json";

std::string JoinPath(const std::string& dir, const std::string& name) {
  return (fs::path(dir) / name).string();
}

// The weight files of `dir`, in order, and for an index the file each
// tensor is in. A file named by the index must be a plain name in `dir`
// ("../x" could read anything) that exists.
struct WeightFiles {
  std::vector<std::string> files;
  std::map<std::string, std::string> weight_map;  // tensor -> file name
};

WeightFiles FindWeightFiles(const std::string& dir) {
  WeightFiles found;
  const std::string index_path = JoinPath(dir, kIndexFile);
  // As in transformers, a single file wins over an index.
  if (fs::exists(JoinPath(dir, kSingleFile))) {
    found.files.push_back(kSingleFile);
    return found;
  }
  ROTOR_CHECK(fs::exists(index_path), dir, ": has neither ", kSingleFile,
              " nor ", kIndexFile,
              " (rotor reads safetensors weights; a pytorch_model.bin "
              "folder must be re-saved with safe_serialization=True)");
  const Json index =
      ParseJson(ReadFile(index_path, kMaxHfIndexBytes), index_path);
  const auto map = index.find("weight_map");
  ROTOR_CHECK(index.is_object() && map != index.end() && map->is_object(),
              index_path,
              ": weight_map: expected an object of tensor name -> "
              "file name");
  std::set<std::string> files;
  for (const auto& [name, file_json] : map->items()) {
    const std::string where =
        StrCat(index_path, ": weight_map.", Excerpt(name));
    const std::string file = JsonAs<std::string>(file_json, where);
    ROTOR_CHECK(!file.empty() && file.find('/') == std::string::npos &&
                    file != "." && file != "..",
                where, ": '", Excerpt(file),
                "' is not a file name in the folder");
    ROTOR_CHECK(fs::is_regular_file(JoinPath(dir, file)), where, ": names ",
                Excerpt(file), ", which does not exist in ", dir);
    found.weight_map[name] = file;
    files.insert(file);
  }
  found.files.assign(files.begin(), files.end());
  return found;
}

// Tensors HF checkpoints may hold that are not parameters: older Llama
// checkpoints saved RoPE's inverse frequencies as a buffer.
bool IsIgnoredBuffer(const std::string& name) {
  const std::string suffix = "rotary_emb.inv_freq";
  return name.size() >= suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The names in `dir` (not recursive), sorted; folders end in '/'.
std::vector<std::string> EntryNames(const std::string& dir) {
  std::vector<std::string> names;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    std::error_code error;
    const bool folder = entry.is_directory(error) && !entry.is_symlink(error);
    names.push_back(entry.path().filename().string() + (folder ? "/" : ""));
  }
  std::sort(names.begin(), names.end());
  return names;
}

// The files the marker of an earlier export in `dir` lists, or why `dir`
// has no valid marker.
std::set<std::string> ExportedFiles(const std::string& dir,
                                    std::string* problem) {
  const std::string marker = JoinPath(dir, kHfExportMarker);
  std::error_code error;
  if (!fs::is_regular_file(fs::symlink_status(marker, error))) {
    *problem = StrCat("it has no ", kHfExportMarker);
    return {};
  }
  try {
    const Json json = ParseJson(ReadFile(marker, kMaxConfigBytes), marker);
    ROTOR_CHECK(
        json.is_object() && json.value("written_by", "") == "rotor export",
        marker, ": not written by rotor export");
    std::set<std::string> files;
    for (const Json& file : json.at("files")) {
      files.insert(JsonAs<std::string>(file, marker));
    }
    return files;
  } catch (const std::exception& e) {
    *problem = e.what();
    return {};
  }
}

}  // namespace

ModelConfig LoadHfModelConfig(const std::string& dir) {
  std::vector<std::string> ignored;
  const std::string path = JoinPath(dir, kHfConfigFile);
  const ModelConfig config = LoadHfConfig(path, &ignored);
  if (!ignored.empty()) {
    std::cerr << path << ": ignoring keys rotor does not use: "
              << ListForMessage(ignored) << "\n";
  }
  return config;
}

void LoadHfWeights(const std::string& dir, const nn::Module& model) {
  const WeightFiles weights = FindWeightFiles(dir);
  std::map<std::string, Tensor> parameters;
  for (const auto& [name, tensor] : model.NamedParameters()) {
    parameters.emplace(name, tensor);
  }
  std::set<std::string> loaded;
  // Tied embeddings: save_pretrained leaves lm_head.weight out, but a folder
  // may still hold it; transformers then shares one tensor, so rotor takes
  // it only when it equals the embeddings.
  std::vector<float> tied_head;
  std::string tied_head_source;
  for (const std::string& name : weights.files) {
    const SafetensorsFile file = SafetensorsFile::Read(JoinPath(dir, name));
    // File order: the pages stream in sequence.
    for (const SafetensorsFile::TensorInfo& info : file.tensors()) {
      if (IsIgnoredBuffer(info.name)) continue;
      const auto parameter = parameters.find(info.name);
      if (parameter == parameters.end()) {
        if (info.name == "lm_head.weight" &&
            parameters.count("model.embed_tokens.weight") > 0) {
          tied_head_source = file.source();
          tied_head.resize(static_cast<size_t>(NumElements(info.shape)));
          file.ReadAsF32(info, tied_head.data());
          continue;
        }
        throw Error(StrCat(file.source(), ": tensor ", Excerpt(info.name),
                           " is not a parameter of this model (",
                           parameters.size(),
                           " parameters from config.json; another "
                           "architecture?)"));
      }
      if (!weights.weight_map.empty()) {
        const auto listed = weights.weight_map.find(info.name);
        ROTOR_CHECK(
            listed != weights.weight_map.end() && listed->second == name,
            file.source(), ": tensor ", info.name, " is not listed for ", name,
            " in ", kIndexFile);
      }
      ROTOR_CHECK(loaded.insert(info.name).second, file.source(), ": tensor ",
                  info.name, " is in more than one file");
      Tensor target = parameter->second;
      ROTOR_CHECK(info.shape == target.shape(), file.source(), ": tensor ",
                  info.name, " has shape ", ShapeToString(info.shape),
                  ", config.json gives ", ShapeToString(target.shape()));
      file.ReadAsF32(info, target.data());
    }
  }
  for (const auto& [name, tensor] : parameters) {
    if (loaded.count(name) > 0) continue;
    const auto listed = weights.weight_map.find(name);
    ROTOR_CHECK(listed == weights.weight_map.end(), JoinPath(dir, kIndexFile),
                ": lists ", name, " in ", listed->second,
                ", which does not hold it");
    throw Error(StrCat(dir, ": missing tensor ", name, " (shape ",
                       ShapeToString(tensor.shape()), ", from config.json)"));
  }
  if (!tied_head_source.empty()) {
    const Tensor& embed = parameters.at("model.embed_tokens.weight");
    ROTOR_CHECK(
        tied_head.size() == static_cast<size_t>(embed.numel()) &&
            std::equal(tied_head.begin(), tied_head.end(), embed.data()),
        tied_head_source,
        ": has lm_head.weight, but config.json ties the output head "
        "to the embeddings (tie_word_embeddings: true) and the two "
        "differ; set tie_word_embeddings to false to use it");
    loaded.insert("lm_head.weight");
  }
  for (const auto& [name, file] : weights.weight_map) {
    ROTOR_CHECK(loaded.count(name) > 0 || IsIgnoredBuffer(name),
                JoinPath(dir, kIndexFile), ": lists ", name, " in ", file,
                ", which does not hold it");
  }
}

std::unique_ptr<nn::Transformer> LoadHfModel(const std::string& dir,
                                             const ModelConfig& model) {
  auto transformer = std::make_unique<nn::Transformer>(
      ResolveTransformerConfig(model), nn::WeightsToBeLoaded{});
  LoadHfWeights(dir, *transformer);
  return transformer;
}

std::string DefaultExportDtype(const ModelConfig& model) {
  const std::string dtype = model.torch_dtype.value_or("float32");
  return dtype == "bfloat16" ? dtype : "float32";
}

std::string HfTokenizerSpec(const std::string& dir) {
  ROTOR_CHECK(fs::exists(JoinPath(dir, "tokenizer.json")), dir,
              ": has no tokenizer.json (rotor reads Hugging Face "
              "tokenizer.json files; transformers' "
              "AutoTokenizer.from_pretrained(DIR).save_pretrained(DIR) "
              "writes one for a folder with only tokenizer.model)");
  return TokenizerSpecIn(dir);
}

namespace {

// The weights as the tensors of the files to write: float32 as they are, or
// rounded to bfloat16 into `storage`.
std::vector<SafetensorsEntry> ExportEntries(
    const nn::Module& model, const std::string& dtype,
    std::vector<std::vector<uint16_t>>& storage) {
  ROTOR_CHECK(dtype == "float32" || dtype == "bfloat16", "export dtype '",
              dtype, "': expected float32 or bfloat16");
  std::vector<SafetensorsEntry> entries;
  for (const auto& [name, tensor] : model.NamedParameters()) {
    if (dtype == "float32") {
      entries.push_back(
          {name, SafetensorsDtype::kF32, tensor.shape(), tensor.data()});
      continue;
    }
    storage.emplace_back(static_cast<size_t>(tensor.numel()));
    kernels::F32ToBF16(tensor.data(), storage.back().data(),
                       storage.back().size());
    entries.push_back(
        {name, SafetensorsDtype::kBF16, tensor.shape(), storage.back().data()});
  }
  return entries;
}

int64_t EntryBytes(const SafetensorsEntry& entry) {
  return NumElements(entry.shape) *
         static_cast<int64_t>(SafetensorsDtypeSize(entry.dtype));
}

// save_pretrained's sharding: tensors in order, a new shard when the next
// one would overflow the current; files model-0000k-of-0000n.safetensors
// and an index, or model.safetensors alone when there is one shard.
void WriteShards(const std::string& dir,
                 const std::vector<SafetensorsEntry>& entries,
                 int64_t max_shard_bytes) {
  std::vector<std::vector<SafetensorsEntry>> shards(1);
  int64_t shard_bytes = 0;
  int64_t total_bytes = 0;
  for (const SafetensorsEntry& entry : entries) {
    const int64_t bytes = EntryBytes(entry);
    if (!shards.back().empty() && shard_bytes + bytes > max_shard_bytes) {
      shards.emplace_back();
      shard_bytes = 0;
    }
    shards.back().push_back(entry);
    shard_bytes += bytes;
    total_bytes += bytes;
  }
  // WriteSafetensors adds the "format": "pt" transformers requires.
  if (shards.size() == 1) {
    WriteSafetensors(JoinPath(dir, kSingleFile), entries);
    return;
  }
  std::map<std::string, std::string> weight_map;
  for (size_t i = 0; i < shards.size(); ++i) {
    char name[64];
    std::snprintf(name, sizeof(name), "model-%05zu-of-%05zu.safetensors", i + 1,
                  shards.size());
    WriteSafetensors(JoinPath(dir, name), shards[i]);
    for (const SafetensorsEntry& entry : shards[i]) {
      weight_map[entry.name] = name;
    }
  }
  Json index = Json::object();
  index["metadata"] = {{"total_size", total_bytes}};
  index["weight_map"] = Json::object();
  for (const auto& [name, file] : weight_map) index["weight_map"][name] = file;
  WriteFileAtomically(JoinPath(dir, kIndexFile), index.dump(2) + "\n");
}

std::string GenerationConfigJson(const ModelConfig& config) {
  Json json = Json::object();
  json["_from_model_config"] = true;
  if (config.bos_token_id) json["bos_token_id"] = *config.bos_token_id;
  if (config.eos_token_id) {
    const std::vector<int64_t>& eos = *config.eos_token_id;
    json["eos_token_id"] = eos.size() == 1 ? Json(eos[0]) : Json(eos);
  }
  if (config.pad_token_id) json["pad_token_id"] = *config.pad_token_id;
  return json.dump(2) + "\n";
}

}  // namespace

void CheckHfExportOutput(const std::string& dir) {
  std::error_code error;
  // rotor train takes RUN/checkpoints/step_N for a checkpoint (to resume
  // from, or to prune): no export goes inside a checkpoints folder.
  const fs::path where = fs::weakly_canonical(fs::absolute(dir), error);
  for (fs::path folder = where.parent_path();
       !folder.empty() && folder != folder.root_path();
       folder = folder.parent_path()) {
    ROTOR_CHECK(folder.filename() != "checkpoints", dir, " is inside ",
                folder.string(),
                ", a run's checkpoints folder, which rotor train reads and "
                "prunes; name a folder outside it");
  }
  const fs::file_status status = fs::symlink_status(dir, error);
  if (!fs::exists(status)) return;
  ROTOR_CHECK(fs::is_directory(status), dir,
              " exists and is not a folder; name a new folder");
  const std::vector<std::string> names = EntryNames(dir);
  if (names.empty()) return;
  std::vector<std::string> inputs;
  for (const std::string& name : names) {
    // The marker is read by this check itself.
    if (name != kHfExportMarker && IsInputFile(JoinPath(dir, name))) {
      inputs.push_back(name);
    }
  }
  ROTOR_CHECK(inputs.empty(), dir, " holds ", ListForMessage(inputs),
              ", read by this command (the model, its base or its "
              "tokenizer); name a new folder");
  std::string problem;
  const std::set<std::string> exported = ExportedFiles(dir, &problem);
  std::vector<std::string> lost;
  for (const std::string& name : names) {
    if (name != kHfExportMarker && exported.count(name) == 0) {
      lost.push_back(name);
    }
  }
  if (problem.empty() && lost.empty()) return;
  const std::string why =
      problem.empty()
          ? "was written by rotor export, but holds files the export did not "
            "write"
          : StrCat("exists and was not written by rotor export (", problem,
                   ")");
  throw Error(StrCat(dir, " ", why, "; replacing it would delete ",
                     ListForMessage(lost),
                     ". Name a new folder, or move those away first"));
}

namespace {

// `config` as an export writes it (HfExportConfigJson).
ModelConfig ExportedConfig(const ModelConfig& config,
                           const Tokenizer& tokenizer,
                           const std::string& dtype) {
  ModelConfig exported = config;
  // A model that declares no bos or eos (one rotor trained, with the byte
  // tokenizer or a BPE of its own) gets the ids it was trained with: the
  // document separator that starts every document of its token files, and
  // the ids that end a generated text (transformers' generate stops at
  // eos_token_id, and never stops without one). Only ids below vocab_size.
  const int64_t vocab = config.vocab_size.value_or(0);
  if (!exported.bos_token_id) {
    try {
      const TokenId separator = DocumentSeparator(tokenizer);
      if (separator < vocab) exported.bos_token_id = separator;
    } catch (const Error&) {
      // A tokenizer with no separator token: nothing to declare.
    }
  }
  if (!exported.eos_token_id) {
    std::vector<int64_t> ends;
    for (const TokenId id : EndOfTextIds(tokenizer)) {
      if (id < vocab) ends.push_back(id);
    }
    if (!ends.empty()) exported.eos_token_id = ends;
  }
  exported.torch_dtype = dtype;
  return exported;
}

}  // namespace

void WriteHfExportMarker(const std::string& dir) {
  const Json marker = {{"written_by", "rotor export"},
                       {"files", EntryNames(dir)}};
  WriteFileAtomically(JoinPath(dir, kHfExportMarker), marker.dump(2) + "\n");
}

std::string HfExportConfigJson(const ModelConfig& config,
                               const Tokenizer& tokenizer,
                               const std::string& dtype) {
  return HfConfigJson(ExportedConfig(config, tokenizer, dtype), dtype);
}

void WriteHfModelFolder(const std::string& dir, const nn::Module& model,
                        const ModelConfig& config,
                        const std::string& tokenizer_spec,
                        const HfExportOptions& options) {
  // The tokenizer files are written as they are: load them first, so a
  // malformed tokenizer.json is refused rather than copied.
  const std::unique_ptr<Tokenizer> tokenizer = LoadTokenizer(tokenizer_spec);
  const ModelConfig exported =
      ExportedConfig(config, *tokenizer, options.dtype);
  const std::string config_json = HfConfigJson(exported, options.dtype);
  std::vector<std::vector<uint16_t>> storage;
  const std::vector<SafetensorsEntry> entries =
      ExportEntries(model, options.dtype, storage);
  CheckHfExportOutput(dir);
  if (!fs::path(dir).parent_path().empty()) {
    fs::create_directories(fs::path(dir).parent_path());
  }
  ReplaceDirectoryAtomically(dir, [&](const std::string& temp) {
    WriteFileAtomically(JoinPath(temp, kHfConfigFile), config_json);
    WriteFileAtomically(JoinPath(temp, kGenerationConfigFile),
                        GenerationConfigJson(exported));
    WriteShards(temp, entries, options.max_shard_bytes);
    WriteHfTokenizerFiles(tokenizer_spec, temp, options.prompt_start);
    WriteHfExportMarker(temp);
  });
}

}  // namespace rotor::train
