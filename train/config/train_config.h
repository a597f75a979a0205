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
#include <optional>
#include <string>
#include <vector>

#include "core/fields.h"
#include "core/limits.h"
#include "core/ops/gemm.h"
#include "nn/lora.h"
#include "nn/transformer.h"
#include "train/config/model_config.h"
#include "train/data/passkey.h"
#include "train/data/retrieval_examples.h"
#include "train/eval/validation.h"

namespace YAML {
class Node;
}

namespace rotor::train {

class SectionReader;  // train/config/yaml.h

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
  // Digits in each passkey; rotor eval --passkey asks for as many.
  int64_t passkey_digits = kPasskeyDefaultDigits;
  // Share of training rows replaced by RULER-style retrieval examples
  // (train/data/retrieval_examples.h), the loss on the answer only: other
  // rows than the passkey ones, so the two fractions add up to at most 1.
  // 0 disables.
  double retrieval_fraction = 0.0;
  // The tasks those rows are drawn from, uniformly.
  std::vector<RetrievalTask> retrieval_tasks = AllRetrievalTasks();
  // Documents packed into a training row (each begins at the data's
  // separator token; a row that begins mid-document, at 0): with
  // data.document_mask they do not attend to each other, with
  // data.document_positions their RoPE positions restart at 0. Both off by
  // default (plain causal attention over the row); validation does the same.
  DocumentPacking documents;
};

template <typename Visitor>
void VisitFields(Visitor& v, DataConfig& d) {
  v(Key{"path", "prepared data (rotor prepare), or brown"}, d.path,
    field::Text{});
  v(Key{"tokenizer", "byte or a tokenizer.json: must be the data's"},
    d.tokenizer, field::Text{});
  v(Key{"passkey_fraction", "share of rows that are passkey examples"},
    d.passkey_fraction, field::Real{0.0, 1.0});
  v(Key{"passkey_loss", "retrieval (the key only) or all"}, d.passkey_loss,
    field::Parsed<PasskeyLoss>{PasskeyLossName, ParsePasskeyLoss});
  v(Key{"passkey_digits", "digits in each passkey key"}, d.passkey_digits,
    field::Int{1, kPasskeyMaxDigits});
  v(Key{"retrieval_fraction", "share of rows that are retrieval examples"},
    d.retrieval_fraction, field::Real{0.0, 1.0});
  v(Key{"retrieval_tasks", "the RULER-style tasks of those rows"},
    d.retrieval_tasks,
    field::Choices<RetrievalTask>{
        {RetrievalTaskName, RetrievalTaskFromName, RefuseRetrievalTask},
        "retrieval task names"});
  v(Key{"document_mask", "packed documents do not attend to each other"},
    d.documents.mask_attention, field::Flag{});
  v(Key{"document_positions", "RoPE positions restart at each document"},
    d.documents.restart_positions, field::Flag{});
}

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
  // The matrix products' precision (core/ops/gemm.h): fp32, or bf16 with
  // PyTorch autocast's semantics (operands rounded to bfloat16, float32
  // accumulation and results; weights, gradients, AdamW state, norms,
  // softmax, RoPE and the loss stay float32). docs/performance.md.
  MatmulPrecision precision = MatmulPrecision::kFloat32;
};

// train.precision: fp32 | bf16.
MatmulPrecision ParsePrecision(const std::string& name);

// train.resume, in two members: auto | none | a checkpoint folder.
struct ResumeSetting {
  ResumeMode& mode;
  std::string& folder;
};
struct ResumeKey : field::Custom {
  void Read(const SectionReader& section, const char* key,
            const ResumeSetting& out) const;
  std::optional<YAML::Node> Write(const ResumeSetting& value) const;
};
// train.activation_checkpointing: none | layers | {every_k: K}.
struct ActivationCheckpointingKey : field::Custom {
  void Read(const SectionReader& section, const char* key,
            int64_t& every) const;
  std::optional<YAML::Node> Write(const int64_t& every) const;
};

template <typename Visitor>
void VisitFields(Visitor& v, TrainSection& t) {
  using limits::kMaxBatchSize;
  using limits::kMaxPositions;
  using limits::kMaxSteps;
  v(Key{"batch_size", "sequences per micro-batch"}, t.batch_size,
    field::Int{1, kMaxBatchSize});
  v(Key{"seq_len", "tokens per sequence"}, t.seq_len,
    field::Int{1, kMaxPositions});
  v(Key{"gradient_accumulation_steps", "micro-batches per step"},
    t.gradient_accumulation_steps,
    field::Int{1, limits::kMaxAccumulationSteps});
  v(Key{"max_steps", "optimizer steps"}, t.max_steps, field::Int{1, kMaxSteps});
  v(Key{"lr", "peak learning rate"}, t.lr, field::Real{0.0, 10.0});
  v(Key{"min_lr", "where the cosine decay ends"}, t.min_lr,
    field::Real{0.0, 10.0});
  v(Key{"warmup_steps", "linear warm-up steps"}, t.warmup_steps,
    field::Int{0, kMaxSteps});
  v(Key{"weight_decay", "AdamW's, on weight matrices"}, t.weight_decay,
    field::Real{0.0, 10.0});
  v(Key{"betas", "AdamW's [beta1, beta2]"}, field::Pair{t.beta1, t.beta2},
    field::UnitPair{});
  v(Key{"eps", "AdamW's epsilon"}, t.eps, field::Real{1e-30, 1.0});
  v(Key{"clip_grad_norm", "max global gradient norm; 0: off"}, t.clip_grad_norm,
    field::Real{0.0, 1e30});
  v(Key{"seed", "initialisation and batch sampling"}, t.seed,
    field::Unsigned{});
  v(Key{"threads", "threads per process; 0: all cores"}, t.threads,
    field::Int{0, limits::kMaxThreads});
  v(Key{"allreduce_bucket_mb", "data-parallel gradient bucket size"},
    t.allreduce_bucket_mb, field::Real{0.001, 4096.0});
  v(Key{"collective_timeout_seconds", "data-parallel wait before failing"},
    t.collective_timeout_seconds, field::Real{0.1, 1e6});
  v(Key{"zero_stage", "1: shard the AdamW moments over ranks"}, t.zero_stage,
    field::Int{0, 1});
  v(Key{"loss_explosion_ratio", "stop above this x the best loss; 0: off"},
    t.loss_explosion_ratio, field::Real{0.0, 1e30});
  v(Key{"resume", "auto, none or a checkpoint folder"},
    ResumeSetting{t.resume, t.resume_checkpoint}, ResumeKey{});
  v(Key{"init_from", "weights to start from: a checkpoint or HF folder"},
    t.init_from, field::Text{});
  v(Key{"activation_checkpointing", "none, layers or {every_k: K}"},
    t.activation_checkpointing_every, ActivationCheckpointingKey{});
  v(Key{"loss_chunk_rows", "rows of logits the loss computes at a time"},
    t.loss_chunk_rows, field::Int{1, kMaxBatchSize * kMaxPositions});
  v(Key{"precision", "matmuls in fp32, or bf16 (autocast)"}, t.precision,
    field::Parsed<MatmulPrecision>{MatmulPrecisionName, ParsePrecision});
}

struct EvalSection {
  int64_t every_n_steps = 100;  // 0: only at the end
  int64_t max_batches = 16;     // validation batches per evaluation; 0 = all
};
template <typename Visitor>
void VisitFields(Visitor& v, EvalSection& e) {
  v(Key{"every_n_steps", "steps between validations; 0: at the end"},
    e.every_n_steps, field::Int{0});
  v(Key{"max_batches", "validation batches; 0: all"}, e.max_batches,
    field::Int{0});
}

struct CheckpointSection {
  int64_t every_n_steps = 250;  // 0: only at the end
  int64_t keep_last_n = 2;      // the newest kept, besides the best (val_loss)
};
template <typename Visitor>
void VisitFields(Visitor& v, CheckpointSection& c) {
  v(Key{"every_n_steps", "steps between checkpoints; 0: at the end"},
    c.every_n_steps, field::Int{0});
  v(Key{"keep_last_n", "newest checkpoints kept (and the best)"}, c.keep_last_n,
    field::Int{1});
}

struct LoggingSection {
  int64_t log_every_n_steps = 10;
  bool progress = true;  // a live progress line when stdout is a terminal
};
template <typename Visitor>
void VisitFields(Visitor& v, LoggingSection& l) {
  v(Key{"log_every_n_steps", "steps between log lines"}, l.log_every_n_steps,
    field::Int{1});
  v(Key{"progress", "a live progress line on a terminal"}, l.progress,
    field::Flag{});
}

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

// The parameter groups finetune.trainable may name.
inline const std::vector<std::string>& TrainableGroupNames() {
  static const std::vector<std::string> names = {"embed_tokens", "norm",
                                                 "lm_head"};
  return names;
}

// finetune.lora's keys (`enabled` is whether the section is given).
template <typename Visitor>
void VisitFields(Visitor& v, LoraConfig& l) {
  v(Key{"r", "the adapters' rank"}, l.r, field::Int{1, limits::kMaxHiddenSize});
  v(Key{"alpha", "the adapters' output is scaled by alpha / r"}, l.alpha,
    field::Real{1e-6, 1e6});
  v(Key{"dropout", "on the adapters' input"}, l.dropout,
    field::Real{0.0, 0.999});
  v(Key{"target_modules", "the projections adapted in every layer"},
    l.target_modules,
    field::Names{LoraTargetModuleNames, "module names",
                 "is empty: name at least one projection to adapt"});
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
template <typename Visitor>
void VisitFields(Visitor& v, FinetuneSection& f) {
  v.Section(Key{"lora", "LoRA adapters on a frozen base"}, f.lora,
            &f.lora.enabled);
  v(Key{"trainable", "also trained in full: embed_tokens, norm, lm_head"},
    f.trainable, field::Names{TrainableGroupNames, "parameter group names"});
}

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
template <typename Visitor>
void VisitFields(Visitor& v, TrainConfig& c) {
  v(Key{"output_dir", "checkpoints, metrics and plots go here"}, c.output_dir,
    field::Text{});
  v.Section(Key{"model", "the model, in config.json's names"}, c.model);
  v.Section(Key{"data", "the training text"}, c.data);
  v.Section(Key{"train", "the optimisation"}, c.train);
  v.Section(Key{"eval", "validation during training"}, c.eval);
  v.Section(Key{"checkpoint", "what is saved and kept"}, c.checkpoint);
  v.Section(Key{"logging", "what is printed"}, c.logging);
  v.Section(Key{"finetune", "a frozen base: LoRA, trainable groups"},
            c.finetune);
}

// The first problem of a training config that its keys' own ranges do not
// catch: train.min_lr above train.lr, train.seq_len beyond the model's
// positions, passkey rows that cannot fit, lm_head listed with tied
// embeddings, a frozen base without train.init_from. The parser reports it
// at the key's line; configs built in code (the extension report's) call it
// themselves.
std::optional<ConfigProblem> FindTrainConfigProblem(const TrainConfig& config);

using limits::kMaxConfigBytes;  // core/limits.h

// Parses YAML text; `file` names it in error messages. `overrides` are
// "a.b=value" strings applied first (ApplyYamlOverride: the value is the
// whole text after '=', a list or map in flow style: train.betas=[0.9,0.99]).
TrainConfig ParseTrainConfig(const std::string& yaml_text,
                             const std::string& file,
                             const std::vector<std::string>& overrides = {});
TrainConfig LoadTrainConfig(const std::string& path,
                            const std::vector<std::string>& overrides = {});

// The model a YAML config file describes, with `overrides` applied, as
// rotor train would build it: a training config (any section besides
// model:) through ParseTrainConfig, so a model: section that only amends
// train.init_from's config.json is resolved against it; a file with only a
// model: section (configs/rope/) as that section. `training`, when given,
// is set to the training config (left unset for a model-only file).
ModelConfig LoadConfigFileModel(const std::string& path,
                                const std::vector<std::string>& overrides = {},
                                std::optional<TrainConfig>* training = nullptr);

// Parses the config.yaml saved in a checkpoint (`file` names it). Checkpoints
// written before data.passkey_loss existed scored every token of their
// passkey rows, so for them a missing key reads as "all", not today's
// default.
TrainConfig ParseCheckpointTrainConfig(const std::string& yaml_text,
                                       const std::string& file);

// The settings that decide which data a run sees (batch_size, seq_len,
// gradient_accumulation_steps, seed, passkey_fraction, passkey_digits,
// passkey_loss, retrieval_fraction, retrieval_tasks) that
// differ between `saved` (a checkpoint's run) and `now`, each as
// "train.seq_len 32 (checkpoint) vs 16 (config)", comma-separated; empty if
// none differs.
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
