// The run's set-up: the Trainer constructor and its named steps, in the
// order it calls them (trainer.h lists what each establishes), with the
// checks that decide whether and from where a run resumes. The training
// loop itself is in trainer.cc.
#include <unistd.h>

#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "core/checked_math.h"
#include "core/error.h"
#include "core/parallel.h"
#include "nn/lora.h"
#include "train/config/memory_estimate.h"
#include "train/data/data_dir.h"
#include "train/data/passkey.h"
#include "train/data/retrieval_examples.h"
#include "train/io/output_file.h"
#include "train/trainer.h"

namespace rotor::train {

namespace fs = std::filesystem;

namespace {

// Resuming replays the interrupted run's data stream (the sampler position
// and the passkey mix), which only means the same thing with the same batch
// shape, seed and mix, and continues its adapters, which only means the
// same thing with the same finetune: section: a checkpoint whose run had
// other values is refused with the differences named, instead of resuming
// into a different run.
void CheckResumable(const std::string& dir, const TrainConfig& config) {
  const TrainConfig saved = LoadCheckpointTrainConfig(dir);
  std::string differences = DataStreamDifferences(saved, config);
  const std::string finetune = FinetuneDifferences(saved, config);
  if (!finetune.empty()) {
    differences += (differences.empty() ? "" : ", ") + finetune;
  }
  ROTOR_CHECK(
      differences.empty(), config.file, ": cannot resume from ", dir,
      ": its run used other data or fine-tuning settings: ", differences,
      ". Restore them to continue that run, or start a new run "
      "(another output_dir) from its weights with train.init_from=",
      dir);
}

// One run's history per output_dir. Pruning keeps the newest steps, so
// checkpoints of another run, or of a later point of this one, would be
// taken for this run's and win over the ones it writes. Resuming from a
// folder is refused when output_dir holds a checkpoint it did not lead to:
// any, for a checkpoint outside output_dir; a later one, for one inside.
void CheckOneHistory(const std::string& resume_dir, const TrainConfig& config,
                     const std::vector<std::string>& existing) {
  if (existing.empty()) return;
  std::error_code error;
  const fs::path resume = fs::weakly_canonical(resume_dir, error);
  const fs::path folder =
      fs::weakly_canonical(fs::path(config.output_dir) / "checkpoints", error);
  if (resume.parent_path() != folder) {
    throw Error(StrCat(
        config.file, ": train.resume=", resume_dir, " is outside output_dir ",
        config.output_dir, ", which already holds checkpoints (",
        existing.back(),
        "): two runs' checkpoints in one folder would be pruned as one run's. "
        "Choose an output_dir without checkpoints, or resume that run in its "
        "own output_dir — nothing was written"));
  }
  std::string later;
  for (const std::string& dir : existing) {
    if (fs::path(dir).filename() > resume.filename()) {
      later += (later.empty() ? "" : ", ") + fs::path(dir).filename().string();
    }
  }
  ROTOR_CHECK(later.empty(), config.file, ": train.resume=", resume_dir,
              " is not the newest checkpoint of output_dir ", config.output_dir,
              ": it also holds ", later,
              " from later in the run, which pruning would keep instead of "
              "the new ones. Move those folders out of ",
              folder.string(), " to continue from ", resume_dir,
              " — nothing was written");
}

}  // namespace

Trainer::Trainer(TrainConfig config, std::ostream& log,
                 Communicator& communicator)
    : config_(std::move(config)),
      config_yaml_(TrainConfigToYaml(config_)),
      log_(log),
      data_dir_(ResolveDataDir(config_.data.path)),
      tokenizer_spec_(TokenizerSpecIn(data_dir_)),
      train_tokens_(data_dir_ + "/train.bin"),
      val_tokens_(data_dir_ + "/val.bin"),
      metrics_(config_.output_dir),
      data_parallel_(communicator) {
  // Every check passes before OpenOutputDir makes a new output_dir; one
  // that exists is locked (CheckOutputDir) before its checkpoints are read.
  SetUpRank();
  LoadDataTokenizer();
  BuildModel(CheckRunFits());
  CheckOutputDir();
  StartOrResume();
  OpenOutputDir();
  SetUpDataParallel();
}

void Trainer::SetUpRank() {
  const TrainSection& t = config_.train;
  SetNumThreads(ThreadsPerRank(t.threads, data_parallel_.communicator()));
  if (t.precision == MatmulPrecision::kBfloat16) {
    const std::string problem = BfloatMatmulProblem();
    ROTOR_CHECK(problem.empty(), config_.file,
                ": train.precision is bf16, but ", problem,
                "; use train.precision: fp32");
  }
  precision_ = std::make_unique<MatmulPrecisionScope>(t.precision);
  data_parallel_.communicator().set_timeout_seconds(
      t.collective_timeout_seconds);
  CheckBatchSplits(t.batch_size, t.gradient_accumulation_steps,
                   data_parallel_.size(), config_.file);
}

void Trainer::LoadDataTokenizer() {
  ROTOR_CHECK(config_.data.tokenizer.empty() ||
                  SameTokenizer(config_.data.tokenizer, tokenizer_spec_),
              config_.file, ": data.tokenizer is ", config_.data.tokenizer,
              " but ", data_dir_, " was prepared with ", tokenizer_spec_,
              "; prepare the data with that tokenizer (rotor prepare "
              "--tokenizer), or drop data.tokenizer to use the data's own");
  tokenizer_ = LoadTokenizer(tokenizer_spec_);
  if (config_.data.passkey_fraction > 0.0) {
    passkey_maker_ =
        std::make_unique<PasskeyMaker>(*tokenizer_, config_.train.seq_len + 1);
  }
  if (config_.data.retrieval_fraction > 0.0) {
    const int64_t row = config_.train.seq_len + 1;
    retrieval_maker_ = std::make_unique<RetrievalMaker>(
        *tokenizer_, row + kRetrievalAnswerSlack);
    for (RetrievalTask task : config_.data.retrieval_tasks) {
      const int64_t needed = RetrievalRowMinLength(*retrieval_maker_, task);
      ROTOR_CHECK(
          needed <= row, config_.file, ": data.retrieval_tasks: a ",
          RetrievalTaskName(task), " row needs about ", needed, " tokens of ",
          tokenizer_->Name(), " without filler, but train.seq_len + 1 is ", row,
          "; set train.seq_len >= ", needed - 1, " or leave the task out");
    }
  }
}

nn::TransformerConfig Trainer::CheckRunFits() const {
  const TrainSection& t = config_.train;
  nn::TransformerConfig model_config = ResolveTransformerConfig(config_.model);
  CheckTrainingFitsInMemory(config_, model_config);
  // tokens_seen counts up to max_steps * StepTokens() in int64_t (configs
  // built in code, like the extend report's, are not parsed).
  CheckedMul(t.max_steps, StepTokens(),
             "the tokens of the run (train.max_steps * tokens per step)");
  for (const TokenFile* tokens : {&train_tokens_, &val_tokens_}) {
    ROTOR_CHECK(model_config.vocab_size >= tokens->vocab_size(), config_.file,
                ": model.vocab_size (", model_config.vocab_size,
                ") is smaller than the data's vocabulary (",
                tokens->vocab_size(), ", ", tokens->path(), ")");
  }
  // Checks now, rather than at the first evaluation, that val.bin holds at
  // least one window.
  ValidationBatches(val_tokens_, t.batch_size, t.seq_len);
  return model_config;
}

void Trainer::BuildModel(const nn::TransformerConfig& model_config) {
  const TrainSection& t = config_.train;
  model_ = std::make_unique<nn::Transformer>(model_config, t.seed);
  model_->SetActivationCheckpointing(t.activation_checkpointing_every);
  model_->SetLossChunkRows(t.loss_chunk_rows);
  model_->SetSequenceLength(t.seq_len);
  if (config_.finetune.freezes_base()) SetUpFrozenBase();
  // Only what trains has gradients and moments: with a frozen base, the
  // adapters and finetune.trainable.
  optimizer_ = std::make_unique<AdamW>(
      model_->NamedTrainableParameters(),
      AdamWSettings{t.beta1, t.beta2, t.eps, t.weight_decay});
  sampler_ = std::make_unique<BatchSampler>(train_tokens_, t.batch_size,
                                            t.seq_len, t.seed);
}

// The run's files never go into its data: checkpoints and metrics.jsonl
// in the data folder would be lost when it is prepared again (prepare
// replaces the folder whole), and mix a run with the corpus it reads.
// output_dir is this run's alone before its checkpoints are read: two runs
// on one folder would overwrite each other's. A new output_dir is made (and
// locked) only once every check has passed, by OpenOutputDir.
void Trainer::CheckOutputDir() {
  CheckOutputDirOutside(
      config_.file, config_.output_dir,
      {data_dir_, "the data folder", "data.path",
       "the run's checkpoints and metrics would go into its data"});
  if (fs::exists(config_.output_dir)) LockOutputDir();
}

void Trainer::StartOrResume() {
  const TrainSection& t = config_.train;
  const std::string resume_dir = CheckpointToResume();
  if (!resume_dir.empty()) {
    ResumeFrom(resume_dir);
  } else if (!t.init_from.empty() && !adapts_base()) {
    const std::string source = InitializeFromCheckpoint(t.init_from, *model_);
    CheckSameTokenizer(source, data_dir_);
    log_ << "initialising the weights from " << source
         << " (fresh optimizer, schedule and sampler)\n";
  }
  state_.world_size = data_parallel_.size();
}

std::string Trainer::CheckpointToResume() const {
  const TrainSection& t = config_.train;
  std::string resume_dir;
  const std::vector<std::string> existing = ListCheckpoints(config_.output_dir);
  if (t.resume == ResumeMode::kAuto) {
    if (!existing.empty()) resume_dir = existing.back();
  } else if (t.resume == ResumeMode::kNone) {
    ROTOR_CHECK(existing.empty(), config_.output_dir,
                " already holds checkpoints (", existing.back(),
                "); set train.resume=auto to continue that run, or choose "
                "another output_dir — nothing was overwritten");
  } else {
    resume_dir = t.resume_checkpoint;
    ROTOR_CHECK(fs::is_directory(resume_dir), config_.file,
                ": train.resume: checkpoint folder ", resume_dir,
                " does not exist (use auto, none or a step_N folder)");
  }
  if (!resume_dir.empty()) CheckOneHistory(resume_dir, config_, existing);
  return resume_dir;
}

void Trainer::ResumeFrom(const std::string& dir) {
  CheckResumable(dir, config_);
  CheckSameTokenizer(dir, data_dir_);
  if (adapts_base()) {
    LoadFinetuneWeights(dir, base_, *model_);
  } else {
    LoadModelWeights(dir, *model_);
  }
  LoadOptimizerState(dir, *optimizer_);
  state_ = LoadTrainerState(dir);
  sampler_->set_state(state_.sampler);
  ROTOR_CHECK(optimizer_->step() == state_.step, dir, ": optimizer step ",
              optimizer_->step(), " does not match trainer step ", state_.step);
  log_ << "resuming from " << dir << " at step " << state_.step;
  const int ranks = data_parallel_.size();
  if (state_.world_size != ranks) {
    log_ << " (saved by " << state_.world_size << " rank"
         << (state_.world_size == 1 ? "" : "s") << ", continued by " << ranks
         << ": the global batch is the same, so is the data stream)";
  }
  log_ << "\n";
  last_checkpoint_ = dir;
}

void Trainer::OpenOutputDir() {
  if (writes_files() && !output_lock_) {
    LockOutputDir();
    // Another run that made the folder meanwhile and is already done.
    ROTOR_CHECK(ListCheckpoints(config_.output_dir).empty(), config_.file,
                ": output_dir ", config_.output_dir,
                " gained checkpoints while this run started; run again to "
                "resume them");
  }
  if (writes_files()) metrics_.TrimAfter(state_.step);
  // Launchers hand each rank a pseudo-terminal whatever their own output
  // is, so a data-parallel run prints plain lines.
  live_progress_ = config_.logging.progress && isatty(STDOUT_FILENO) &&
                   &log_ == &std::cout && !distributed();
}

void Trainer::SetUpDataParallel() {
  if (!distributed()) return;
  const TrainSection& t = config_.train;
  data_parallel_.CheckRanksAgree(
      {state_.step, state_.sampler.rng_state, state_.sampler.batches_drawn,
       model_->Parameters()},
      config_.file);
  data_parallel_.SetUp(t.batch_size, t.gradient_accumulation_steps,
                       model_->TrainableParameters(), t.allreduce_bucket_mb,
                       t.zero_stage);
  if (data_parallel_.shards_optimizer()) {
    optimizer_->ShardMoments(data_parallel_.OwnedParameters());
  }
  log_ << data_parallel_.Description() << "\n";
}

// The base comes from train.init_from whether the run resumes or not (a
// checkpoint holds only what trains); its hash goes into every checkpoint.
void Trainer::SetUpFrozenBase() {
  base_ = LoadFinetuneBase(config_, *model_);
  CheckSameTokenizer(base_.folder, data_dir_);
  std::ostringstream line;
  line << "fine-tuning " << base_.folder << " (" << base_.weights_hash
       << ", hashed in " << std::fixed << std::setprecision(2)
       << base_.hash_seconds << " s) with a frozen base: ";
  if (config_.finetune.lora.enabled) {
    line << "LoRA r=" << config_.finetune.lora.r << " on "
         << nn::CountLoraLayers(*model_) << " projections, ";
  }
  line << model_->NumTrainableParameters() << " of " << model_->NumParameters()
       << " parameters train";
  log_ << line.str() << "\n";
}

void Trainer::LockOutputDir() {
  if (!writes_files()) return;
  std::error_code error;
  fs::create_directories(config_.output_dir, error);
  ROTOR_CHECK(fs::is_directory(config_.output_dir), config_.file,
              ": output_dir ", config_.output_dir, " is not a folder",
              error ? " (" + error.message() + ")" : "");
  output_lock_ = std::make_unique<FolderLock>(config_.output_dir, "train.lock",
                                              "output_dir");
}

}  // namespace rotor::train
