// Checkpoints: one folder per saved step,
//
//   <output_dir>/checkpoints/step_00000500/
//     model.safetensors       weights, Hugging Face Llama names, F32
//     optimizer.safetensors   AdamW moments: exp_avg.<name>, exp_avg_sq.<name>
//     trainer_state.json      step, sampler state (RNG + batches drawn),
//                             tokens seen, loss statistics, elapsed time,
//                             world_size (the ranks that trained it)
//     config.yaml             the resolved training config
//
// A run with a frozen base (finetune:, LoRA: docs/lora.md) saves in
// model.safetensors only what it trains (the adapters, <module>.lora_A.weight
// and <module>.lora_B.weight, and the parameters of finetune.trainable) and,
// in its __metadata__, the base it adapts: "base_model" (train.init_from as
// given) and "base_weights_hash" (train/io/weights_hash.h). Loading it loads
// that base first and refuses a base whose hash differs.
//
// Each folder is written into a temporary folder and renamed into place, so
// a killed run never leaves a half-written checkpoint; resuming from it
// continues bitwise as the uninterrupted run would have (same thread count).
//
// It is also the one place a trained model is loaded: ResolveCheckpointPath
// (a checkpoint folder, a run's newest, or a Hugging Face model folder:
// train/hf/hf_model.h), InitializeFromCheckpoint
// (train.init_from: weights only, the architecture checked), and
// LoadCheckpointModel (evaluation, generation and
// the report; the RoPE settings may differ from the saved ones), and
// LoadCheckpointModelConfig (the config alone, for rotor rope).
#ifndef ROTOR_TRAIN_CHECKPOINT_H_
#define ROTOR_TRAIN_CHECKPOINT_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "nn/module.h"
#include "nn/transformer.h"
#include "train/config/model_config.h"
#include "train/config/model_edit.h"
#include "train/config/train_config.h"
#include "train/data/batches.h"
#include "train/optim/adamw.h"
#include "train/tokenizer/tokenizer.h"

namespace rotor::train {

// Everything besides weights and moments that resuming needs.
struct TrainerState {
  int64_t step = 0;  // optimizer steps completed
  SamplerState sampler;
  int64_t tokens_seen = 0;
  double best_val_loss = std::numeric_limits<double>::infinity();
  // The validation loss measured at `step`; NaN when that step was not
  // evaluated. Pruning keeps the checkpoint where it is lowest.
  double val_loss = std::numeric_limits<double>::quiet_NaN();
  // Exponential moving average of the training loss (watchdog), NaN before
  // the first step, and its lowest value so far.
  double smoothed_loss = std::numeric_limits<double>::quiet_NaN();
  double min_smoothed_loss = std::numeric_limits<double>::infinity();
  double elapsed_seconds = 0.0;
  // The processes of the data-parallel job that saved it (1 for a single
  // process and for checkpoints older than the key). Any rank count may
  // resume it: the data stream depends on the global batch only
  // (train/distributed/batch_split.h).
  int64_t world_size = 1;
};

// "<output_dir>/checkpoints/step_00000500".
std::string CheckpointDir(const std::string& output_dir, int64_t step);
// Checkpoint folders under <output_dir>/checkpoints, oldest first.
std::vector<std::string> ListCheckpoints(const std::string& output_dir);

// The base a frozen-base run adapts (see above).
struct BaseReference {
  std::string path;           // train.init_from as given
  std::string weights_hash;   // of its weights as loaded
  std::string folder;         // the folder `path` resolved to
  double hash_seconds = 0.0;  // the time WeightsHash took (for the log)
};

// Writes a complete checkpoint folder atomically. `optimizer` may be null
// (weights only). A `tokenizer` other than "byte" is copied in as
// DIR/tokenizer.json, so the checkpoint is never paired with another one
// (LoadCheckpointTokenizer). `before_publish`, when set, runs once every
// file is written and before the folder is renamed into place; if it
// throws, nothing is published (data-parallel training waits there for
// every rank to reach the step). With a `base` (a path), only the trainable
// parameters are written, with the reference to the base.
void SaveCheckpoint(const std::string& dir, const nn::Module& model,
                    AdamW* optimizer, const TrainerState& state,
                    const std::string& config_yaml,
                    const std::string& tokenizer = "byte",
                    const std::function<void()>& before_publish = nullptr,
                    const BaseReference& base = {});
// Deletes the checkpoint folders other than the newest `keep_last_n`, the
// best one (the lowest val_loss in its trainer_state.json) and `just_saved`
// (never deleted, whatever its step), and the temporary folders a run killed
// while saving left behind next to a complete folder of the same step. Call
// it right after a save (one writer per output_dir).
void PruneCheckpoints(const std::string& output_dir, int64_t keep_last_n,
                      const std::string& just_saved = "");

// Copies the weights of <dir>/model.safetensors into `model`. Every
// parameter must be present with its shape; errors name the file and tensor.
void LoadModelWeights(const std::string& dir, const nn::Module& model);
void LoadOptimizerState(const std::string& dir, AdamW& optimizer);
TrainerState LoadTrainerState(const std::string& dir);
// The config.yaml text saved in a checkpoint.
std::string LoadCheckpointConfig(const std::string& dir);

// The training config saved in checkpoint folder `dir`. Checkpoints written
// before data.passkey_loss existed scored every token of their passkey rows,
// so for them a missing key reads as "all", not today's default.
TrainConfig LoadCheckpointTrainConfig(const std::string& dir);

// Loading a trained model, for evaluation, generation and fine-tuning
// (train.init_from: a model trained at length L continues at a longer
// sequence length with a new rope_scaling). Only the weights are copied; the
// RoPE tables come from the config in force (RoPE has no parameters), so
// max_position_embeddings, rope_theta and rope_scaling may all change, while
// everything that shapes a weight must match.

// The checkpoint folder `path` names: itself if it holds model.safetensors,
// else the newest checkpoint of the run whose output_dir it is. Throws,
// naming the path, when it does not exist or is neither. The files of the
// folder it returns become inputs of the command (NoteModelFilesAsInputs).
std::string ResolveCheckpointPath(const std::string& path);

// The files of the model in `folder`, sorted: its weights, configs,
// tokenizer and trainer state (*.safetensors, config.yaml, config.json,
// tokenizer.json and the other files of a checkpoint or a Hugging Face
// model folder); not other files there (an eval's JSON, a plot).
std::vector<std::string> ModelFiles(const std::string& folder);

// Notes each of ModelFiles(folder) as an input of this command
// (NoteInputPath), so that no output replaces one, whether the command
// reads it or not. ResolveCheckpointPath does this for every folder it
// resolves.
void NoteModelFilesAsInputs(const std::string& folder);

// Throws rotor::Error listing every architecture key whose value differs
// between `source` (a checkpoint, described by `source_name`) and `target`,
// e.g.
// "init_from runs/a/checkpoints/step_00001500: the architecture differs from
// this config: hidden_size 192 (checkpoint) vs 256 (config)".
void CheckSameArchitecture(const nn::TransformerConfig& source,
                           const nn::TransformerConfig& target,
                           const std::string& source_name);

// Resolves `path`, checks its architecture against `model`'s and copies its
// weights into `model`. Returns the checkpoint folder used. A checkpoint of
// a frozen-base run is refused (export it first: rotor export merges).
std::string InitializeFromCheckpoint(const std::string& path,
                                     nn::Transformer& model);

// For a config with a frozen base (config.finetune.freezes_base()): copies
// train.init_from's weights into `model` (InitializeFromCheckpoint), hashes
// them, then freezes them and adds the adapters and trainables
// (nn::SetUpFinetuning, the adapters drawn from train.seed).
BaseReference LoadFinetuneBase(const TrainConfig& config,
                               nn::Transformer& model);

// Copies the trainable parameters saved in checkpoint folder `dir` into
// `model`, set up on `base` by LoadFinetuneBase. Throws, naming the base's
// path and both hashes, when the checkpoint was trained on another base.
void LoadFinetuneWeights(const std::string& dir, const BaseReference& base,
                         const nn::Module& model);

// A trained model for evaluation: the checkpoint `path` names (resolved as
// above), its saved config changed by `edit` (train/config/model_edit.h:
// another rope_scaling, a whole model config of the same architecture), its
// weights. This is how a base model is evaluated with a scaling method it
// was not trained with (zero-shot extension); an edit that changes the
// architecture is refused (CheckSameArchitecture). `config` (optional)
// receives the config used. A frozen-base (LoRA) checkpoint gives its base
// with the adapters, in evaluation mode (no dropout); nn::MergeLora folds
// them in.
std::unique_ptr<nn::Transformer> LoadCheckpointModel(
    const std::string& path, const ModelEdit& edit = {},
    TrainConfig* config = nullptr);
// The config LoadCheckpointModel(path, edit) builds its model from, without
// reading the weights (rotor rope looks at a model's RoPE this way).
TrainConfig LoadCheckpointModelConfig(const std::string& path,
                                      const ModelEdit& edit = {});

// The length the model at `path` was trained at: a rotor checkpoint's
// train.seq_len (of `config`, its config as loaded), or a Hugging Face
// folder's pre-training length (PretrainedLength of its own config.json,
// before any edit stretched it).
int64_t TrainedLength(const std::string& path, const TrainConfig& config);

// The tokenizer a checkpoint (`path`, resolved as above) was trained with,
// as a spec (its tokenizer.json copy, or "byte"; a Hugging Face folder's
// tokenizer.json) and loaded.
std::string CheckpointTokenizerSpec(const std::string& path);
std::unique_ptr<Tokenizer> LoadCheckpointTokenizer(const std::string& path);

// What the texts of the model at `path` (resolved as above) started with in
// training: a Hugging Face folder's as its tokenizer says (kTokenizerBos);
// a rotor checkpoint's, fine-tuned from one or not, with the document
// separator rotor prepare put before every document (kDocumentSeparator).
PromptStart CheckpointPromptStart(const std::string& path);

// Throws unless the checkpoint `checkpoint` (resolved as above) and the
// prepared data folder `data_dir` use the same tokenizer, naming both.
void CheckSameTokenizer(const std::string& checkpoint,
                        const std::string& data_dir);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_CHECKPOINT_H_
