// The training loop behind `rotor train`:
//
//   for step in [start, max_steps):
//     lr = warm-up + cosine schedule(step)
//     zero gradients
//     for each of gradient_accumulation_steps micro-batches:
//       (with data.passkey_fraction, some rows become passkey examples:
//        train/data/passkey.h; with data.retrieval_fraction, others
//        RULER-style retrieval examples: train/data/retrieval_examples.h)
//       loss = cross-entropy(model(inputs), targets)
//       backward(loss * micro_tokens / step_tokens)   (token-weighted mean)
//     clip the global gradient norm, AdamW update
//     watchdog: stop on NaN/Inf, or when the smoothed loss explodes
//     log (progress line, metrics.jsonl); evaluate and checkpoint every N
//
// Everything that decides the next step (weights, AdamW moments and step,
// sampler state) is in the checkpoint, so a resumed run continues bitwise
// like the uninterrupted one at the same thread count.
//
// Data-parallel (`mpirun -np N rotor train`, docs/distributed.md): every
// rank runs this loop on the same weights and draws every micro-batch from
// the same sampler, but computes the loss and gradients of its own rows of
// the step only (train/distributed/batch_split.h), with the weights of the
// whole step's token count. The gradients are summed over the ranks during
// the last backward (train/distributed/gradient_buckets.h), so every rank
// takes the same optimizer step. Rank 0 alone prints, writes metrics.jsonl,
// the plot and the checkpoints; every rank evaluates its share of the
// validation batches. What the trainer asks of the other ranks is in one
// class, DataParallel (train/distributed/data_parallel.h).
#ifndef ROTOR_TRAIN_TRAINER_H_
#define ROTOR_TRAIN_TRAINER_H_

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "nn/transformer.h"
#include "train/checkpoint.h"
#include "train/config/train_config.h"
#include "train/data/batches.h"
#include "train/data/retrieval_examples.h"
#include "train/data/token_file.h"
#include "train/distributed/communicator.h"
#include "train/distributed/data_parallel.h"
#include "train/io/folder_lock.h"
#include "train/metrics.h"
#include "train/optim/adamw.h"
#include "train/tokenizer/tokenizer.h"

namespace rotor::train {

struct TrainSummary {
  int64_t steps = 0;        // optimizer steps completed in total
  int64_t steps_run = 0;    // of which this Run() did
  double train_loss = 0.0;  // last step's loss
  double val_loss = 0.0;    // final evaluation
  double seconds = 0.0;     // wall time of this run
  double tokens_per_second = 0.0;
  std::string checkpoint;  // the run's final checkpoint folder
};

class Trainer {
 public:
  // Builds the model, optimizer and data from `config`, and resumes from a
  // checkpoint as config.train.resume says; a run that does not resume
  // starts from train.init_from's weights when set (InitializeFromCheckpoint
  // in train/checkpoint.h). Messages go to `log`. Bad data,
  // checkpoints or output_dir throw here, before anything is written; then
  // <output_dir>/metrics.jsonl keeps only the lines up to the starting step
  // (so a run killed after its last checkpoint and resumed still logs each
  // step once).
  //
  // `communicator` connects the ranks of a data-parallel job; it must
  // outlive the trainer. A batch the ranks cannot share equally, or ranks
  // that would start from different states (output_dir or init_from not on
  // a file system they share), are refused here.
  Trainer(TrainConfig config, std::ostream& log,
          Communicator& communicator = SingleProcessCommunicator());

  // Trains to config.train.max_steps (or until the watchdog stops it, which
  // throws rotor::Error after saving nothing broken). `stop_after_steps`
  // > 0 stops early after that many steps of this run, checkpointing first
  // (used to test resuming).
  TrainSummary Run(int64_t stop_after_steps = 0);

  // What the run will do, in three lines for the terminal: the model (type,
  // parameters, shape), the data and tokens per step, the steps, the output
  // folder.
  std::string Summary() const;

  nn::Transformer& model() { return *model_; }
  // The data's tokenizer (for samples while training).
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const TrainerState& state() const { return state_; }

 private:
  // The constructor's set-up steps, in its order (trainer_setup.cc). Each
  // comment says what the step establishes; a step whose check fails throws.
  //
  // This rank's threads and collective timeout; a batch the ranks share.
  void SetUpRank();
  // tokenizer_: the data's, as data.tokenizer allows; passkey_maker_ in
  // its tokens when data.passkey_fraction mixes passkey rows.
  void LoadDataTokenizer();
  // The model's config, once the run fits in memory and its token count in
  // int64_t, the model's vocabulary covers the data's, and val.bin holds a
  // window.
  nn::TransformerConfig CheckRunFits() const;
  // model_ (with its frozen base when fine-tuning), optimizer_ over what
  // trains, sampler_.
  void BuildModel(const nn::TransformerConfig& model_config);
  // output_dir is not the data folder; rank 0 locks it if it exists.
  void CheckOutputDir();
  // state_, the weights and the moments: resumed from a checkpoint, or
  // fresh (from train.init_from's weights when set).
  void StartOrResume();
  // The checkpoint train.resume names, checked to continue this
  // output_dir's history; empty for a fresh start.
  std::string CheckpointToResume() const;
  // Everything from checkpoint `dir` that decides the next step.
  void ResumeFrom(const std::string& dir);
  // Rank 0 holds output_dir's lock and metrics.jsonl ends at the starting
  // step; live_progress_ is set.
  void OpenOutputDir();
  // The ranks agree on where they start; each has its rows of a step, its
  // gradient buckets and, under ZeRO stage 1, its share of the moments.
  void SetUpDataParallel();

  // One optimizer step's pieces, in the order Run calls them (trainer.cc).
  // The mean loss of one batch (or a rank's piece of one).
  Tensor BatchLoss(const Batch& batch);
  double ForwardBackward();  // returns the step's loss
  // This rank's share of ForwardBackward in a data-parallel job.
  double RankForwardBackward(const std::vector<int64_t>& scored,
                             int64_t step_scored);
  void CheckWatchdog(double step_loss, double grad_norm);
  void ReportStep(const StepMetrics& step);
  ValidationResult Validate();
  void SaveAndPrune();

  // Fine-tuning with a frozen base (finetune:): the base, adapters and
  // trainables, set up before the optimizer sees the trainable parameters.
  void SetUpFrozenBase();
  bool adapts_base() const { return !base_.path.empty(); }
  void SeedLoraDropout(int64_t micro);

  void LogLine(const std::string& line);
  int64_t StepTokens() const;  // tokens per optimizer step
  bool writes_files() const { return data_parallel_.rank() == 0; }
  // Rank 0: creates output_dir if needed and takes its train.lock.
  void LockOutputDir();
  bool distributed() const { return data_parallel_.distributed(); }

  TrainConfig config_;
  std::string config_yaml_;
  // Rank 0 holds output_dir/train.lock for the life of the run.
  std::unique_ptr<FolderLock> output_lock_;
  // train.precision, from SetUpRank until the trainer is gone (then the
  // precision before it again).
  std::unique_ptr<MatmulPrecisionScope> precision_;
  std::ostream& log_;
  std::unique_ptr<nn::Transformer> model_;
  BaseReference base_;  // empty unless the run freezes a base
  std::unique_ptr<AdamW> optimizer_;
  std::string data_dir_;        // data.path resolved (before the token files)
  std::string tokenizer_spec_;  // the data's: "byte" or its tokenizer.json
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<PasskeyMaker> passkey_maker_;  // null without passkey rows
  // null without retrieval rows
  std::unique_ptr<RetrievalMaker> retrieval_maker_;
  TokenFile train_tokens_;
  TokenFile val_tokens_;
  MetricsLog metrics_;
  std::unique_ptr<BatchSampler> sampler_;
  TrainerState state_;
  std::vector<Batch> micro_batches_;
  // The ranks of a data-parallel job (one, training alone).
  DataParallel data_parallel_;
  // Data-parallel only: the rows of a micro-batch this rank shares with
  // other ranks.
  Batch piece_;
  // Where the current tokens/s window started: time and tokens_seen; and
  // the time spent waiting for gradient sums since then.
  struct {
    double start = 0.0;
    int64_t start_tokens = 0;
    double allreduce_wait = 0.0;
  } window_;
  bool live_progress_ = false;
  // The checkpoint this run last saved (or resumed from): the one it
  // reports, whatever else output_dir holds.
  std::string last_checkpoint_;
};

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_TRAINER_H_
