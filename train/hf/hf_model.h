// Hugging Face model folders: what transformers' save_pretrained writes,
// read into rotor's model and written back from it.
//
//   DIR/config.json                      the architecture
//                                        (train/config/hf_config.h)
//   DIR/model.safetensors                the weights in one file, or shards
//   DIR/model-00001-of-00003.safetensors with the index that says which
//   DIR/model.safetensors.index.json     file holds each tensor:
//                                        {"metadata": {"total_size": N},
//                                         "weight_map": {NAME: FILE, ...}}
//   DIR/tokenizer.json                   the tokenizer (optional to load the
//                                        model; needed to use it on text)
//   DIR/generation_config.json           bos/eos ids (written on export)
//
// rotor's parameter names are HF's (model.layers.0.self_attn.q_proj.weight,
// ...), so the weights map one to one. Tensors may be BF16, F16 or F32; they
// become float32 as they are read from the memory-mapped files, one tensor
// at a time, so loading needs the float32 weights and little more
// (bench/hf_load_bench). Every mismatch is an error that names the file and
// tensor: a tensor missing or left over, a shape or dtype rotor does not
// read, a truncated shard, an index that names a file that is not there.
#ifndef ROTOR_TRAIN_HF_HF_MODEL_H_
#define ROTOR_TRAIN_HF_HF_MODEL_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "nn/module.h"
#include "nn/transformer.h"
#include "train/config/hf_config.h"  // IsHfModelFolder
#include "train/config/model_config.h"
#include "train/tokenizer/tokenizer.h"

namespace rotor::train {

// The largest model.safetensors.index.json rotor reads (docs/limits.md): an
// index names each tensor once, so even a 400B-parameter model's is under
// 1 MiB. config.json is bounded like a YAML config (kMaxConfigBytes).
inline constexpr size_t kMaxHfIndexBytes = size_t{16} << 20;

// The model settings of config.json in `dir`; keys transformers keeps unused
// and rotor does not know are named on stderr, once.
ModelConfig LoadHfModelConfig(const std::string& dir);

// Copies every parameter of `model` from the folder's safetensors files
// (converting BF16 and F16 to float32). Throws naming the file and tensor
// for a missing or extra tensor (old checkpoints' rotary_emb.inv_freq
// buffers are skipped: RoPE comes from the config), a shape that differs
// from the model's, an unsupported dtype, a truncated file or a bad index.
void LoadHfWeights(const std::string& dir, const nn::Module& model);

// The model of an HF folder with the settings `model` (config.json's, with
// any RoPE changes; CheckSameArchitecture guards the rest) and its weights.
std::unique_ptr<nn::Transformer> LoadHfModel(const std::string& dir,
                                             const ModelConfig& model);

// The tokenizer of an HF folder as a tokenizer spec (train/tokenizer/
// tokenizer.h): its tokenizer.json. Throws naming the folder when there is
// none (rotor reads tokenizer.json only, not tokenizer.model).
std::string HfTokenizerSpec(const std::string& dir);

// How `rotor export` stores the weights.
struct HfExportOptions {
  std::string dtype = "float32";  // or "bfloat16" (rounded to nearest even)
  // Shards above this size split, as save_pretrained's max_shard_size (its
  // default is 5 GB); one file when everything fits.
  int64_t max_shard_bytes = int64_t{5} * 1000 * 1000 * 1000;
  // What a text starts with, written into the tokenizer files
  // (WriteHfTokenizerFiles): a model rotor trained starts with the document
  // separator; a Hugging Face folder exported as it is, as its tokenizer
  // says.
  PromptStart prompt_start = PromptStart::kDocumentSeparator;
};

// The dtype an export of `model` writes by default: its torch_dtype when
// that is one rotor writes (a bfloat16 folder fine-tuned stays bfloat16,
// half the size of float32), else float32.
std::string DefaultExportDtype(const ModelConfig& model);

// A model folder's config (transformers' CONFIG_NAME).
inline constexpr char kHfConfigFile[] = "config.json";

// The file by which an export knows a folder it wrote: a JSON object
// {"written_by": "rotor export", "files": [every other file it wrote]}.
inline constexpr char kHfExportMarker[] = ".rotor-export";

// Writes kHfExportMarker into `dir`, the folder an export has just filled,
// listing every other entry in it (a subfolder as "NAME/").
void WriteHfExportMarker(const std::string& dir);

// The config.json an export of a model configured by `config` writes, in
// `dtype` (its torch_dtype): a model that declares no bos or eos gets the
// ids it was trained with, from `tokenizer` (ids below vocab_size only).
std::string HfExportConfigJson(const ModelConfig& config,
                               const Tokenizer& tokenizer,
                               const std::string& dtype);

// Throws unless `dir` may be (re)placed by an export: it does not exist, is
// an empty folder, or is a folder an export wrote (kHfExportMarker) holding
// nothing but what that export wrote. The message names what replacing it
// would delete. A config.json alone proves nothing: an app's settings, a
// git checkout or a downloaded model have one too. Nor may `dir` hold a
// file this process has read (train/io/output_file.h): exporting a
// checkpoint onto itself, or a LoRA checkpoint onto its base, is refused.
void CheckHfExportOutput(const std::string& dir);

// Writes `model` (configured by `config`) as an HF folder at `dir`,
// atomically: config.json, model.safetensors (or shards and their index; no
// lm_head.weight when the embeddings are tied), generation_config.json, the
// tokenizer files of `tokenizer_spec` and kHfExportMarker. An existing
// `dir` is replaced if CheckHfExportOutput allows it, else refused.
void WriteHfModelFolder(const std::string& dir, const nn::Module& model,
                        const ModelConfig& config,
                        const std::string& tokenizer_spec,
                        const HfExportOptions& options = {});

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_HF_HF_MODEL_H_
