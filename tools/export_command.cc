// `rotor export --checkpoint C --output DIR`: writes a model as a Hugging
// Face folder (train/hf/hf_model.h) that transformers' AutoModelForCausalLM
// and llama.cpp's converter read unchanged. `--random CONFIG.yaml` exports a
// freshly initialised model of a config's `model:` section instead, which is
// how the tests and examples make HF folders without downloading weights.
// A LoRA checkpoint (docs/lora.md) is exported merged: its base with each
// adapter folded into its weight, a plain model; with --adapter, its
// adapters alone in PEFT's layout (train/hf/peft_adapter.h). With
// --format gguf, one GGUF file for llama.cpp instead (train/gguf/).
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/parallel.h"
#include "nn/lora.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "train/checkpoint.h"
#include "train/config/hf_config.h"
#include "train/config/memory_estimate.h"
#include "train/config/model_config.h"
#include "train/gguf/gguf_export.h"
#include "train/hf/hf_model.h"
#include "train/hf/peft_adapter.h"
#include "train/io/json.h"
#include "train/io/message.h"
#include "train/io/output_file.h"
#include "train/tokenizer/tokenizer.h"

namespace rotor {
namespace tools {

namespace {

constexpr char kExportDetails[] =
    "Writes DIR as transformers' save_pretrained does: config.json (with\n"
    "rope_scaling spelt as HF spells each method), model.safetensors (or\n"
    "shards of at most --max-shard-size bytes and their index; no\n"
    "lm_head.weight when the embeddings are tied), generation_config.json\n"
    "and the tokenizer (tokenizer.json, tokenizer_config.json), which\n"
    "starts a text with the BOS the model's texts started with in training\n"
    "(a model rotor trained: the document separator; an HF folder: its\n"
    "own), as rotor generate does: add_bos_token, and a post-processor\n"
    "that adds it. The folder\n"
    "is written whole, then renamed into place, with a .rotor-export file\n"
    "that lists what it wrote. An existing DIR is replaced only if it is\n"
    "empty or an earlier export that holds nothing else; any other path\n"
    "is refused, naming what replacing it would delete.\n"
    "A LoRA checkpoint is written merged: W += (alpha/r) B A for each\n"
    "adapter, on the base it names (checked by its weights hash).\n"
    "--adapter writes a LoRA checkpoint as PEFT's save_pretrained does\n"
    "instead: adapter_config.json and adapter_model.safetensors (F32), for\n"
    "PeftModel.from_pretrained on its base (docs/lora.md); when the run\n"
    "changed its base's model settings (a RoPE extension), also\n"
    "base_config/config.json, the base's config as the run has it, to load\n"
    "the base with (AutoConfig.from_pretrained(DIR/base_config)).\n"
    "\n"
    "  rotor export --checkpoint runs/hf-extend --output models/extended\n"
    "  rotor export --random configs/models/smollm2-135m.yaml \\\n"
    "      --tokenizer tok.json --dtype bfloat16 --output models/random\n"
    "  rotor export --checkpoint runs/lora --adapter --output models/adapter\n"
    "\n"
    "--format gguf writes FILE.gguf for llama.cpp (and ollama): the llama\n"
    "architecture's keys, the RoPE scaling as llama.cpp computes it, the\n"
    "tokenizer, matrices as --dtype f32 (default), f16, bf16 or q8_0. A\n"
    "dynamic RoPE needs --rope-static-length N (and only a dynamic one\n"
    "takes it); overrides such as\n"
    "'model.rope_scaling={rope_type: yarn, factor: 4}' change the RoPE\n"
    "settings first (a zero-shot extension). general.name is the\n"
    "checkpoint folder's name. A weight the dtype cannot hold (f16 past\n"
    "65504, a q8_0 block past about 8.3e6), a NaN or infinite weight, and\n"
    "a RoPE setting float32 cannot hold are refused, naming them. The\n"
    "tokenizer's add_bos_token and bos_token_id start a text as rotor\n"
    "generate does, so llama.cpp's greedy text is rotor's.\n"
    "\n"
    "  rotor export --checkpoint runs/hf-extend --format gguf \\\n"
    "      --dtype f16 --output extended.gguf\n"
    "  bash scripts/llama_cpp.sh complete extended.gguf --context 2048 \\\n"
    "      \"Once upon a time\"\n"
    "\n"
    "scripts/llama_cpp.sh runs the llama.cpp scripts/fetch_llama_cpp.sh\n"
    "installs (greedy, no repeat penalty); elsewhere, llama.cpp's llama-cli\n"
    "(-no-cnv; llama-completion in its newer builds) and ollama run the\n"
    "file (docs/gguf.md).\n"
    "\n"
    "Details: docs/huggingface.md, docs/gguf.md.";

struct ExportOptions {
  std::string checkpoint;
  std::string random_config;
  std::string tokenizer = "byte";
  std::string output;
  std::string dtype;  // "": the base's torch_dtype (ExportDtype)
  int64_t max_shard_bytes = int64_t{5} * 1000 * 1000 * 1000;
  bool max_shard_size_given = false;  // --max-shard-size was given
  uint64_t seed = 0;
  int64_t threads = 0;
  bool adapter = false;  // a LoRA checkpoint's adapters in PEFT's layout
  std::string format = "hf";
  int64_t rope_static_length = 0;  // gguf: 0 = none given
  bool force = false;
  std::vector<std::string> overrides;  // gguf: RoPE settings
};

// The base name of folder `path` ("runs/hf-extend/" -> "hf-extend", "." ->
// the current folder's): GGUF's general.name.
std::string FolderName(const std::string& path) {
  std::filesystem::path folder =
      std::filesystem::absolute(path).lexically_normal();
  if (folder.filename().empty()) folder = folder.parent_path();
  return folder.filename().string();
}

// --format gguf: the model of a checkpoint (a LoRA one merged) as one
// GGUF file.
void RunGgufExport(const ExportOptions& options) {
  ROTOR_CHECK(!options.checkpoint.empty(), "--format gguf needs --checkpoint");
  ROTOR_CHECK(!options.adapter,
              "--format gguf writes a merged model; "
              "--adapter writes PEFT's folder (--format hf)");
  ROTOR_CHECK(!options.max_shard_size_given,
              "--max-shard-size is for --format hf (safetensors shards); "
              "--format gguf writes one file");
  train::CheckOutputFile(options.output, options.force, "--output");
  train::GgufExportOptions gguf;
  gguf.dtype =
      train::GgmlTypeFromName(options.dtype.empty() ? "f32" : options.dtype);
  gguf.force = options.force;
  if (options.rope_static_length > 0) {
    gguf.rope_static_length = options.rope_static_length;
  }
  train::TrainConfig config;
  const auto model = train::LoadCheckpointModel(
      options.checkpoint,
      WithOverrides(options.checkpoint, {}, options.overrides), &config);
  nn::MergeLora(*model);
  // A rotor checkpoint trained with its scaling; an HF folder's history is
  // unknown, and overrides apply a scaling the weights never saw.
  gguf.rope_finetuned =
      !train::IsHfModelFolder(options.checkpoint) && options.overrides.empty();
  gguf.prompt_start = train::CheckpointPromptStart(options.checkpoint);
  gguf.source = options.checkpoint;
  gguf.name = FolderName(options.checkpoint);
  std::cout << train::WriteGgufModel(
                   options.output, *model, config.model,
                   train::CheckpointTokenizerSpec(options.checkpoint), gguf)
            << "\n";
}

// The dtype to write: --dtype, else the base's (train::DefaultExportDtype:
// float32 for a model trained from scratch; rotor writes float32 and
// bfloat16 only, and says so for a float16 base).
std::string ExportDtype(const std::string& asked,
                        const train::ModelConfig& model) {
  if (!asked.empty()) return asked;
  if (model.torch_dtype == "float16") {
    std::cout << "the base is float16, which rotor does not write: writing "
                 "float32 (--dtype bfloat16 for half the size)\n";
  }
  return train::DefaultExportDtype(model);
}

// The keys whose values differ between two config.json texts, e.g.
// "max_position_embeddings, rope_scaling".
std::string ChangedKeys(const std::string& from, const std::string& to) {
  const train::Json a = train::ParseJson(from, "the base's config");
  const train::Json b = train::ParseJson(to, "the run's config");
  std::vector<std::string> keys;
  for (const auto& [key, value] : b.items()) {
    if (!a.contains(key) || a.at(key) != value) keys.push_back(key);
  }
  for (const auto& [key, value] : a.items()) {
    if (!b.contains(key)) keys.push_back(key);
  }
  return train::ListForMessage(keys);
}

// PEFT loads an adapter's base with the base's own config.json: when the
// LoRA run changed model settings against it (a RoPE extension), the
// config.json of the base as the run has it, which the adapter export
// writes beside the adapter (kPeftBaseConfigDir); else "".
std::string ChangedBaseConfigJson(const ExportOptions& options,
                                  const train::TrainConfig& run) {
  const train::ModelConfig base =
      train::LoadCheckpointModelConfig(run.train.init_from, {}).model;
  const std::string dtype = train::DefaultExportDtype(run.model);
  const auto tokenizer = train::LoadCheckpointTokenizer(options.checkpoint);
  const std::string changed =
      train::HfExportConfigJson(run.model, *tokenizer, dtype);
  const std::string unchanged =
      train::HfExportConfigJson(base, *tokenizer, dtype);
  if (changed == unchanged) return "";
  std::cout << "note: the run changed its base's "
            << ChangedKeys(unchanged, changed)
            << ", which PEFT would take from the base's config.json: the "
               "adapter folder holds the base's config.json as the run has "
               "it, "
            << train::kPeftBaseConfigDir << "/" << train::kHfConfigFile << "\n";
  return changed;
}

// How to load the base with the run's settings (ChangedBaseConfigJson).
void PrintBaseConfigUse(const std::string& adapter,
                        const std::string& init_from) {
  const std::string dir = train::PeftBaseModelPath(adapter);
  std::cout << "load the adapter on its base configured so (or export merged, "
               "without --adapter):\n"
               "  from transformers import AutoConfig, AutoModelForCausalLM\n"
               "  from peft import PeftModel\n"
               "  config = AutoConfig.from_pretrained(\""
            << dir << "/" << train::kPeftBaseConfigDir
            << "\")\n"
               "  base = AutoModelForCausalLM.from_pretrained(\""
            << train::PeftBaseModelPath(init_from)
            << "\", config=config)\n"
               "  model = PeftModel.from_pretrained(base, \""
            << dir << "\")\n";
}

void RunExport(const ExportOptions& options) {
  SetNumThreads(static_cast<int>(options.threads));
  if (options.format == "gguf") {
    RunGgufExport(options);
    return;
  }
  ROTOR_CHECK(options.overrides.empty() && options.rope_static_length == 0 &&
                  !options.force,
              "overrides, --rope-static-length and --force are for "
              "--format gguf");
  ROTOR_CHECK(options.dtype.empty() || options.dtype == "float32" ||
                  options.dtype == "bfloat16",
              "--dtype ", options.dtype,
              ": a Hugging Face folder is float32 or bfloat16");
  // Before the slow part; WriteHfModelFolder checks again.
  train::CheckHfExportOutput(options.output);
  train::HfExportOptions export_options;
  export_options.max_shard_bytes = options.max_shard_bytes;
  if (!options.random_config.empty()) {
    const train::ModelConfig model =
        train::LoadModelConfig(options.random_config);
    export_options.dtype = ExportDtype(options.dtype, model);
    const nn::TransformerConfig architecture =
        train::ResolveTransformerConfig(model);
    train::CheckModelFitsInMemory(architecture, options.random_config);
    const auto tokenizer = train::LoadTokenizer(options.tokenizer);
    ROTOR_CHECK(tokenizer->VocabSize() <= architecture.vocab_size,
                options.random_config, ": model.vocab_size ",
                architecture.vocab_size, " is smaller than the ",
                tokenizer->VocabSize(), " ids of tokenizer ",
                options.tokenizer);
    const nn::Transformer transformer(architecture, options.seed);
    train::WriteHfModelFolder(options.output, transformer, model,
                              options.tokenizer, export_options);
  } else {
    train::TrainConfig config;
    const auto model =
        train::LoadCheckpointModel(options.checkpoint, {}, &config);
    if (options.adapter) {
      ROTOR_CHECK(config.finetune.lora.enabled, options.checkpoint,
                  " is not a LoRA checkpoint (its config.yaml has no "
                  "finetune.lora): --adapter writes a LoRA run's adapters; "
                  "export it without --adapter");
      const std::string base_config_json =
          ChangedBaseConfigJson(options, config);
      if (!train::IsHfModelFolder(
              train::ResolveCheckpointPath(config.train.init_from))) {
        std::cout << "note: the base, " << config.train.init_from
                  << ", is a rotor checkpoint, which PEFT cannot load; "
                     "export it as a Hugging Face folder (rotor export "
                     "--checkpoint "
                  << config.train.init_from
                  << " --output BASE) and set the adapter's "
                     "base_model_name_or_path to BASE\n";
      }
      train::WritePeftAdapterFolder(options.output, *model, config,
                                    base_config_json);
      std::cout << "wrote " << options.output << "\n";
      if (!base_config_json.empty()) {
        PrintBaseConfigUse(options.output, config.train.init_from);
      }
      return;
    }
    // A LoRA checkpoint is its base with adapters: W += (alpha/r) B A.
    nn::MergeLora(*model);
    export_options.dtype = ExportDtype(options.dtype, config.model);
    export_options.prompt_start =
        train::CheckpointPromptStart(options.checkpoint);
    train::WriteHfModelFolder(
        options.output, *model, config.model,
        train::CheckpointTokenizerSpec(options.checkpoint), export_options);
  }
  std::cout << "wrote " << options.output << "\n";
}

}  // namespace

void AddExportCommand(CLI::App& rotor) {
  CLI::App* command =
      AddCommand(rotor, "export", "write a model as a Hugging Face folder",
                 kExportDetails);
  auto options = std::make_shared<ExportOptions>();
  CLI::Option* checkpoint =
      command
          ->add_option("--checkpoint", options->checkpoint,
                       "a checkpoint, a run's output_dir or an HF folder")
          ->type_name("DIR")
          ->check(NotEmpty());
  CLI::Option* random =
      command
          ->add_option("--random", options->random_config,
                       "export a new model of this config's model: "
                       "section, with random weights (--seed)")
          ->type_name("CONFIG.yaml")
          ->check(NotEmpty());
  checkpoint->excludes(random);
  CLI::Option* adapter =
      command->add_flag("--adapter", options->adapter,
                        "with a LoRA --checkpoint: write its adapters as "
                        "PEFT's adapter folder, not the merged model");
  adapter->needs(checkpoint);
  command
      ->add_option("--format", options->format,
                   "hf (a Hugging Face folder, default) or gguf (one file "
                   "for llama.cpp)")
      ->check(CLI::IsMember({"hf", "gguf"}));
  command
      ->add_option("--output", options->output,
                   "the folder to write (--format gguf: the file)")
      ->type_name("DIR|FILE")
      ->required()
      ->check(NotEmpty());
  command
      ->add_option("--dtype", options->dtype,
                   "float32 or bfloat16 (default: the base's torch_dtype;\n"
                   "float32 for a model trained from scratch); with\n"
                   "--format gguf: f32 (default), f16, bf16 or q8_0")
      ->check(
          CLI::IsMember({"float32", "bfloat16", "f32", "f16", "bf16", "q8_0"}))
      ->excludes(adapter);
  CLI::Option* max_shard_size = AddIntegerOption(
      *command, "--max-shard-size", options->max_shard_bytes, int64_t{1},
      "bytes per safetensors shard (default 5e9; not with --format gguf)");
  command
      ->add_option("--tokenizer", options->tokenizer,
                   "with --random: its tokenizer, byte (default) or a "
                   "tokenizer.json")
      ->type_name("FILE")
      ->check(NotEmpty());
  AddIntegerOption(*command, "--seed", options->seed, uint64_t{0},
                   "with --random: the initialisation seed (default 0)");
  AddIntegerOption(*command, "--rope-static-length",
                   options->rope_static_length, int64_t{1},
                   "--format gguf: the sequence length a dynamic RoPE is "
                   "frozen at (llama.cpp has no dynamic NTK), at most 2^24");
  command->add_flag("--force", options->force,
                    "--format gguf: replace an existing FILE");
  AddOverrides(*command, options->overrides,
               "--format gguf: overrides of the checkpoint's RoPE settings,\n"
               "e.g. model.max_position_embeddings=2048");
  AddThreadsOption(*command, options->threads);
  command->callback([options, max_shard_size] {
    ROTOR_CHECK(!options->checkpoint.empty() || !options->random_config.empty(),
                "give --checkpoint DIR or --random CONFIG.yaml");
    options->max_shard_size_given = max_shard_size->count() > 0;
    RunExport(*options);
  });
}

}  // namespace tools
}  // namespace rotor
