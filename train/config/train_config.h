// A rotor training config: one YAML file with the sections
//
// clang-format off
//   output_dir: runs/default          # checkpoints, metrics, plots go here
//   model:      { ... }               # Hugging Face names (model_config.h)
//   data:       { path: brown }       # prepared token files (rotor prepare)
//   train:      { batch_size, seq_len, max_steps, lr, ... }
//   eval:       { every_n_steps, max_batches }
//   checkpoint: { every_n_steps, keep_last_n }
//   logging:    { log_every_n_steps, progress }
//   finetune:   { lora: {r, alpha, dropout, target_modules}, trainable }
// clang-format on
//
// Every key has a default except the model sizes and data.path (see
// configs/default.yaml for each key's meaning). Unknown, repeated and
// wrongly typed keys are errors that name the file, line and key path.
// `key.sub=value` overrides from the command line are applied to the YAML
// before it is read, and are checked the same way. The resolved config (every
// default filled in) is printed when training starts and saved with each
// checkpoint.
#ifndef ROTOR_TRAIN_CONFIG_TRAIN_CONFIG_H_
#define ROTOR_TRAIN_CONFIG_TRAIN_CONFIG_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "nn/lora.h"
#include "nn/transformer.h"
#include "train/config/model_config.h"
#include "train/data/passkey.h"
#include "train/eval/validation.h"

namespace rotor::train {

struct DataConfig {
  // Folder with train.bin / val.bin (rotor prepare). The name "brown" means
  // the Brown corpus prepared by scripts/fetch_brown.sh in the cache folder
  // ($ROTOR_CACHE_DIR, default ~/.cache/rotor).
  std::string path;
  // The tokenizer the data was prepared with: "byte" or a tokenizer.json.
  // Empty (the default) takes the data folder's own (its tokenizer.json
  // copy, or bytes); when set, it must be the same tokenizer as the data's,
  // or the run is refused.
  std::string tokenizer;
  // Share of training rows replaced by synthetic passkey-retrieval examples
  // (train/data/passkey.h), so the model learns to retrieve at its training
  // length; 0 disables. Validation stays pure text.
  double passkey_fraction = 0.0;
  // Which tokens of those rows the loss scores: "retrieval" (the key's
  // second mention and the answer, the default) or "all".
  PasskeyLoss passkey_loss = PasskeyLoss::kRetrieval;
  // Digits of each passkey (1-18). Fewer digits make a shorter example and
  // an easier copy: a tiny model forms the skill in fewer steps.
  int passkey_digits = kPasskeyDefaultDigits;
  // Documents packed into a training row (each begins at the data's
  // separator token; a row that begins mid-document, at 0): with
  // data.document_mask they do not attend to each other, with
  // data.document_positions their RoPE positions restart at 0. Both off by
  // default (plain causal attention over the row); validation does the same.
  DocumentPacking documents;
};

// train.resume: "auto", "none" or a checkpoint folder.
enum class ResumeMode { kAuto, kNone, kCheckpoint };

struct TrainSection {
  int64_t batch_size = 8;                   // sequences per micro-batch
  int64_t seq_len = 256;                    // tokens per sequence
  int64_t gradient_accumulation_steps = 1;  // micro-batches per step
  int64_t max_steps = 1000;                 // optimizer steps
  double lr = 1e-3;                         // peak learning rate
  double min_lr = 1e-4;                     // end of the cosine decay
  int64_t warmup_steps = 100;               // linear warm-up steps
  double weight_decay = 0.1;                // AdamW, on weight matrices only
  double beta1 = 0.9;                       // betas: [beta1, beta2]
  double beta2 = 0.95;
  double eps = 1e-8;
  double clip_grad_norm = 1.0;  // max global gradient norm; 0 disables
  uint64_t seed = 1337;         // initialisation and batch sampling
  // Threads per process; 0 = all cores (shared among the ranks of a
  // data-parallel job on one machine: docs/distributed.md).
  int64_t threads = 0;
  // Data-parallel training (docs/distributed.md): the gradients are summed
  // over the ranks in buckets of this many MiB, each started as soon as the
  // backward pass has finished its gradients (PyTorch DDP's default: 25).
  double allreduce_bucket_mb = 25.0;
  // A rank that waits this long for the others (a sum, a barrier) stops
  // with an error: one of them died or hangs.
  double collective_timeout_seconds = 300.0;
  // 1: ZeRO stage 1, each rank keeps the AdamW moments of its share of the
  // parameters only (train/distributed/optimizer_shards.h); 0: every rank
  // keeps all. The same weights either way.
  int64_t zero_stage = 0;
  // Stop when the loss exceeds this many times the lowest smoothed loss
  // seen so far (0 disables); NaN/Inf always stops.
  double loss_explosion_ratio = 4.0;
  // Where to start: "auto" resumes from the newest checkpoint in
  // output_dir if there is one; "none" starts fresh (and refuses to write
  // into an output_dir that already has checkpoints); anything else is a
  // checkpoint folder to resume from (refused when output_dir holds
  // checkpoints it did not lead to: one run's history per output_dir).
  ResumeMode resume = ResumeMode::kAuto;
  std::string resume_checkpoint;  // the folder, for ResumeMode::kCheckpoint
  // Fine-tuning: a checkpoint folder (or a run's output_dir, meaning its
  // newest checkpoint) whose weights start a fresh run. Only the weights are
  // taken (new optimizer, schedule and sampler); the architecture must match,
  // while max_position_embeddings and rope_scaling come from this config.
  // Ignored when resuming. Empty: start from random weights.
  std::string init_from;
  // Activation checkpointing (nn::Transformer::SetActivationCheckpointing):
  // 0 keeps every activation ("none", the default), 1 recomputes every
  // decoder layer in backward ("layers"), K every K-th one ({every_k: K}).
  int64_t activation_checkpointing_every = 0;
  // Rows of logits the loss computes at a time (nn::Transformer::
  // SetLossChunkRows): memory holds loss_chunk_rows x vocab_size floats of
  // them instead of batch_size x seq_len x vocab_size, and as much again
  // for their gradient.
  int64_t loss_chunk_rows = nn::Transformer::kDefaultLossChunkRows;
};

struct EvalSection {
  int64_t every_n_steps = 100;  // 0: only at the end
  int64_t max_batches = 16;     // validation batches per evaluation; 0 = all
};

struct CheckpointSection {
  int64_t every_n_steps = 250;  // 0: only at the end
  int64_t keep_last_n = 2;      // the newest kept, besides the best (val_loss)
};

struct LoggingSection {
  int64_t log_every_n_steps = 10;
  bool progress = true;  // a live progress line when stdout is a terminal
};

// finetune.lora: LoRA adapters (nn/lora.h, docs/lora.md) on the named
// projections of every layer; PEFT's LoraConfig defaults and key meanings.
struct LoraConfig {
  bool enabled = false;  // the finetune.lora key is given
  int64_t r = 8;         // rank
  double alpha = 8.0;    // the adapters' output is scaled by alpha / r
  double dropout = 0.0;  // on the adapters' input, seeded per micro-batch
  std::vector<std::string> target_modules = {"q_proj", "v_proj"};
};

// The projections LoRA may target (finetune.lora.target_modules).
inline const std::vector<std::string>& LoraTargetModuleNames() {
  static const std::vector<std::string> names = {
      "q_proj",    "k_proj",  "v_proj",   "o_proj",
      "gate_proj", "up_proj", "down_proj"};
  return names;
}

// Fine-tuning with a frozen base (train.init_from's weights): LoRA and/or
// parameters trained in full. Without the section every parameter trains.
struct FinetuneSection {
  LoraConfig lora;
  // Parameters trained in full besides the adapters: "embed_tokens",
  // "norm" (every RMSNorm weight) and "lm_head" (untied embeddings only).
  std::vector<std::string> trainable;
  // True when only the adapters and `trainable` train.
  bool freezes_base() const { return lora.enabled || !trainable.empty(); }
};

// The section as nn::SetUpFinetuning takes it.
nn::FinetuneSettings FinetuneSettingsOf(const FinetuneSection& finetune);

struct TrainConfig {
  std::string file;  // where it was read from (for messages)
  std::string output_dir = "runs/default";
  ModelConfig model;
  DataConfig data;
  TrainSection train;
  EvalSection eval;
  CheckpointSection checkpoint;
  LoggingSection logging;
  FinetuneSection finetune;
};

// The largest config file rotor reads (a training or report config, a
// checkpoint's config.yaml): real ones are a few KiB (docs/limits.md).
inline constexpr size_t kMaxConfigBytes = size_t{1} << 20;

// Parses YAML text; `file` names it in error messages. `overrides` are
// "a.b=value" strings applied first (the value is read as YAML, so lists
// work: train.betas=[0.9,0.99]).
TrainConfig ParseTrainConfig(const std::string& yaml_text,
                             const std::string& file,
                             const std::vector<std::string>& overrides = {});
TrainConfig LoadTrainConfig(const std::string& path,
                            const std::vector<std::string>& overrides = {});

// The model a YAML config file describes, with `overrides` applied, as
// rotor train would build it: a training config (any section besides
// model:) through ParseTrainConfig, so a model: section that only amends
// train.init_from's config.json is resolved against it; a file with only a
// model: section (configs/rope/) as that section.
ModelConfig LoadConfigFileModel(const std::string& path,
                                const std::vector<std::string>& overrides = {});

// Parses the config.yaml saved in a checkpoint (`file` names it). Checkpoints
// written before data.passkey_loss existed scored every token of their
// passkey rows, so for them a missing key reads as "all", not today's
// default.
TrainConfig ParseCheckpointTrainConfig(const std::string& yaml_text,
                                       const std::string& file);

// The settings that decide which data a run sees (batch_size, seq_len,
// gradient_accumulation_steps, seed, passkey_fraction, passkey_loss,
// passkey_digits) that differ between `saved` (a checkpoint's run) and `now`,
// each as "train.seq_len 32 (checkpoint) vs 16 (config)", comma-separated;
// empty if none differs.
std::string DataStreamDifferences(const TrainConfig& saved,
                                  const TrainConfig& now);

// The same for the finetune: section (whether LoRA is on, r, alpha,
// dropout, target_modules, trainable): a run that adapts its base another
// way is another run.
std::string FinetuneDifferences(const TrainConfig& saved,
                                const TrainConfig& now);

// The resolved config as YAML: every section and key, defaults filled in.
// Parsing it again gives the same config.
std::string TrainConfigToYaml(const TrainConfig& config);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_CONFIG_TRAIN_CONFIG_H_
