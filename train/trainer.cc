#include "train/trainer.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <limits>
#include <optional>
#include <sstream>

#include "core/autograd.h"
#include "core/checked_math.h"
#include "core/error.h"
#include "core/ops/ops.h"
#include "core/parallel.h"
#include "core/random.h"
#include "nn/lora.h"
#include "train/config/memory_estimate.h"
#include "train/data/data_dir.h"
#include "train/data/passkey.h"
#include "train/io/output_file.h"
#include "train/optim/lr_schedule.h"

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

// The mask of the adapters' dropout in micro-batch `micro` of the coming
// step: a function of the seed and the position in the run alone.
void Trainer::SeedLoraDropout(int64_t micro) {
  if (config_.finetune.lora.dropout == 0.0) return;
  const TrainSection& t = config_.train;
  Rng mixer(t.seed ^ 0x10ad5eedull);
  nn::SetLoraDropoutSeed(
      *model_, mixer.NextU64() +
                   static_cast<uint64_t>(
                       state_.step * t.gradient_accumulation_steps + micro));
}

void Trainer::LogLine(const std::string& line) {
  if (live_progress_) log_ << "\r\033[K";
  log_ << line << std::endl;
}

// In a data-parallel job rank 0 writes the folder, and publishes it (the
// rename) only once every rank has reached the same step: a checkpoint is
// complete when the whole job got there, so a job that loses a rank keeps
// its previous checkpoint as the newest.
void Trainer::SaveAndPrune() {
  state_.sampler = sampler_->state();
  const std::string dir = CheckpointDir(config_.output_dir, state_.step);
  const std::string barrier = StrCat(
      "waiting for every rank to reach the checkpoint of step ", state_.step);
  if (data_parallel_.shards_optimizer()) {
    data_parallel_.GatherMomentsOnRankZero(
        optimizer_->first_moments(), optimizer_->second_moments(), state_.step);
  }
  Communicator& communicator = data_parallel_.communicator();
  if (!writes_files()) {
    communicator.Barrier(barrier);
  } else if (distributed()) {
    SaveCheckpoint(
        dir, *model_, optimizer_.get(), state_, config_yaml_, tokenizer_spec_,
        [&] { communicator.Barrier(barrier); }, base_);
  } else {
    SaveCheckpoint(dir, *model_, optimizer_.get(), state_, config_yaml_,
                   tokenizer_spec_, nullptr, base_);
  }
  if (writes_files()) {
    PruneCheckpoints(config_.output_dir, config_.checkpoint.keep_last_n, dir);
  }
  if (data_parallel_.shards_optimizer()) {
    optimizer_->ShardMoments(data_parallel_.OwnedParameters());
  }
  last_checkpoint_ = dir;
}

// The mean loss of `batch`'s scored targets, its rows' documents run as
// data.document_mask and data.document_positions ask.
Tensor Trainer::BatchLoss(const Batch& batch) {
  const std::optional<nn::PackedDocuments> documents = BatchDocuments(
      batch, train_tokens_.separator_id(), config_.data.documents);
  return model_->Loss(batch.inputs, batch.targets, batch.batch_size,
                      batch.seq_len, kPasskeyIgnoredTarget,
                      documents ? &*documents : nullptr);
}

// The step's loss is the mean over all its scored tokens (passkey rows score
// only some of theirs): draw every micro-batch first, then weight each
// micro-batch's mean by its share of the scored tokens, so gradient
// accumulation equals one batch of all the rows.
double Trainer::ForwardBackward() {
  const TrainSection& t = config_.train;
  micro_batches_.resize(static_cast<size_t>(t.gradient_accumulation_steps));
  int64_t step_scored = 0;
  std::vector<int64_t> scored;
  for (Batch& batch : micro_batches_) {
    sampler_->Next(batch);
    const uint64_t first_row = (sampler_->state().batches_drawn - 1) *
                               static_cast<uint64_t>(batch.batch_size);
    if (passkey_maker_) {
      MixPasskeyExamples(batch, *passkey_maker_, config_.data.passkey_fraction,
                         config_.data.passkey_loss, t.seed, first_row,
                         static_cast<int>(config_.data.passkey_digits));
    }
    scored.push_back(static_cast<int64_t>(std::count_if(
        batch.targets.begin(), batch.targets.end(),
        [](TokenId target) { return target != kPasskeyIgnoredTarget; })));
    step_scored += scored.back();
  }
  ROTOR_CHECK(step_scored > 0, "training step ", state_.step + 1,
              ": no target token is scored");
  if (distributed()) return RankForwardBackward(scored, step_scored);
  double step_loss = 0.0;
  for (size_t micro = 0; micro < micro_batches_.size(); ++micro) {
    SeedLoraDropout(static_cast<int64_t>(micro));
    const Tensor loss = BatchLoss(micro_batches_[micro]);
    const double weight =
        static_cast<double>(scored[micro]) / static_cast<double>(step_scored);
    Mul(loss, static_cast<float>(weight)).Backward();
    step_loss += weight * loss.item();
  }
  return step_loss;
}

// The same sum as ForwardBackward's, over this rank's rows: each piece's
// mean loss weighted by its share of the whole step's scored tokens, so the
// ranks' gradients add up to the single process's. A piece that is a whole
// micro-batch is computed exactly as one process would, so with
// gradient_accumulation_steps a multiple of the rank count only the order
// of the additions differs. The last piece's backward starts the gradient
// sums bucket by bucket; the earlier ones accumulate locally.
double Trainer::RankForwardBackward(const std::vector<int64_t>& scored,
                                    int64_t step_scored) {
  double rank_loss = 0.0;
  const std::vector<RowRange>& rank_rows = data_parallel_.rank_rows();
  for (size_t p = 0; p < rank_rows.size(); ++p) {
    const RowRange& range = rank_rows[p];
    const Batch& micro = micro_batches_[static_cast<size_t>(range.micro)];
    const bool whole = range.rows == micro.batch_size;
    if (!whole) {
      const auto first = static_cast<size_t>(range.first_row * micro.seq_len);
      const auto end = first + static_cast<size_t>(range.rows * micro.seq_len);
      piece_.batch_size = range.rows;
      piece_.seq_len = micro.seq_len;
      piece_.inputs.assign(micro.inputs.begin() + first,
                           micro.inputs.begin() + end);
      piece_.targets.assign(micro.targets.begin() + first,
                            micro.targets.begin() + end);
    }
    const Batch& batch = whole ? micro : piece_;
    SeedLoraDropout(range.micro);
    const int64_t piece_scored =
        whole ? scored[static_cast<size_t>(range.micro)]
              : static_cast<int64_t>(std::count_if(
                    batch.targets.begin(), batch.targets.end(),
                    [](TokenId t) { return t != kPasskeyIgnoredTarget; }));
    const Tensor loss = BatchLoss(batch);
    const double weight =
        static_cast<double>(piece_scored) / static_cast<double>(step_scored);
    const Tensor weighted = Mul(loss, static_cast<float>(weight));
    if (p + 1 < rank_rows.size()) {
      weighted.Backward();
    } else {
      RunBackward(weighted, Tensor(),
                  data_parallel_.GradientSumHook(state_.step + 1));
    }
    rank_loss += weight * loss.item();
  }
  const double wait_start = SteadySeconds();
  data_parallel_.FinishGradientSums();
  window_.allreduce_wait += SteadySeconds() - wait_start;
  return data_parallel_.SumLoss(rank_loss, state_.step + 1);
}

// Runs before the update, so that a broken step changes nothing. The
// explosion check watches every step, warm-up included (a rate that is too
// high often blows up while it is still rising), once a few steps have
// seeded the smoothed loss's minimum.
void Trainer::CheckWatchdog(double step_loss, double grad_norm) {
  constexpr int64_t kGraceSteps = 3;
  const TrainSection& t = config_.train;
  ROTOR_CHECK(std::isfinite(step_loss) && std::isfinite(grad_norm),
              "training stopped: the loss is ", step_loss,
              " and the gradient norm ", grad_norm, " at step ",
              state_.step + 1,
              " (NaN/Inf). Lower train.lr or check the data; the last "
              "checkpoint is untouched");
  state_.smoothed_loss = std::isnan(state_.smoothed_loss)
                             ? step_loss
                             : 0.9 * state_.smoothed_loss + 0.1 * step_loss;
  if (t.loss_explosion_ratio > 0 && state_.step >= kGraceSteps &&
      state_.smoothed_loss >
          t.loss_explosion_ratio * state_.min_smoothed_loss) {
    throw Error(StrCat(
        "training stopped: the smoothed loss ", state_.smoothed_loss,
        " at step ", state_.step + 1, " exceeds ", t.loss_explosion_ratio,
        " x its lowest value ", state_.min_smoothed_loss,
        " (loss explosion). Lower train.lr or raise "
        "train.loss_explosion_ratio; the last checkpoint is untouched, and "
        "the best one (lowest validation loss) is never pruned"));
  }
  state_.min_smoothed_loss =
      std::min(state_.min_smoothed_loss, state_.smoothed_loss);
}

// The progress line (every step on a terminal, every log_every_n_steps
// otherwise) and metrics.jsonl; tokens/s over the steps since the last log.
void Trainer::ReportStep(const StepMetrics& step) {
  const TrainSection& t = config_.train;
  const double now = SteadySeconds();
  const double tokens_per_second =
      (state_.tokens_seen - window_.start_tokens) / (now - window_.start);
  const double eta =
      (t.max_steps - step.step) * StepTokens() / tokens_per_second;
  std::ostringstream line;
  line << "step " << step.step << "/" << t.max_steps << "  loss " << std::fixed
       << std::setprecision(4) << step.loss << "  lr " << std::scientific
       << std::setprecision(2) << step.lr << "  " << std::fixed
       << std::setprecision(0) << tokens_per_second << " tok/s  ETA "
       << FormatDuration(eta);
  const double wait_share = window_.allreduce_wait / (now - window_.start);
  if (distributed()) {
    line << "  allreduce wait " << std::setprecision(0) << 100 * wait_share
         << "%";
  }
  // metrics.jsonl gets every step (the loss curve draws them all), with the
  // rate since the last printed line.
  StepMetrics logged = step;
  logged.tokens_per_second = tokens_per_second;
  if (distributed()) logged.allreduce_wait_share = wait_share;
  if (writes_files()) metrics_.LogStep(logged);
  if (step.step % config_.logging.log_every_n_steps == 0 ||
      step.step == t.max_steps) {
    LogLine(line.str());
    window_ = {now, state_.tokens_seen, 0.0};
  } else if (live_progress_) {
    log_ << "\r\033[K" << line.str() << std::flush;
  }
}

// Every rank evaluates its share of the validation batches; the sums of
// the losses (times their token counts) and of the token counts are added
// over the ranks.
ValidationResult Trainer::Validate() {
  const TrainSection& t = config_.train;
  ValidationResult val;
  model_->Eval();  // no dropout
  if (distributed()) {
    const ValidationSums sums = ValidationShareSums(
        *model_, val_tokens_, t.batch_size, t.seq_len, config_.eval.max_batches,
        data_parallel_.rank(), data_parallel_.size(), config_.data.documents);
    double totals[2] = {sums.loss_times_tokens,
                        static_cast<double>(sums.tokens)};
    data_parallel_.communicator().Sum(
        totals, 2, StrCat("summing the validation loss of step ", state_.step));
    val = ValidationFromSums(val_tokens_, t.seq_len,
                             {totals[0], static_cast<int64_t>(totals[1])});
  } else {
    val = Evaluate(*model_, val_tokens_, t.batch_size, t.seq_len,
                   config_.eval.max_batches, config_.data.documents);
  }
  model_->Train();
  model_->SetSequenceLength(t.seq_len);
  state_.best_val_loss = std::min(state_.best_val_loss, val.loss);
  state_.val_loss = val.loss;
  std::ostringstream line;
  line << "eval step " << state_.step << "  val_loss " << std::fixed
       << std::setprecision(4) << val.loss << "  ppl " << std::defaultfloat
       << std::setprecision(4) << val.perplexity  // 1.83e+07 or inf when huge
       << "  bpb " << std::fixed << std::setprecision(3) << val.bits_per_byte;
  LogLine(line.str());
  if (writes_files()) metrics_.LogEvaluation(state_.step, val);
  return val;
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

std::string Trainer::Summary() const {
  const nn::TransformerConfig& m = model_->config();
  const TrainSection& t = config_.train;
  std::ostringstream out;
  out << "model: " << ModelTypeName(config_.model.model_type) << ", "
      << FormatCount(model_->NumParameters()) << " parameters";
  if (model_->NumTrainableParameters() != model_->NumParameters()) {
    out << " (" << FormatCount(model_->NumTrainableParameters()) << " train)";
  }
  out << ": " << m.num_hidden_layers << " layers of " << m.hidden_size << ", "
      << m.num_attention_heads << " heads";
  if (m.num_key_value_heads != m.num_attention_heads) {
    out << " on " << m.num_key_value_heads << " kv";
  }
  out << ", vocabulary " << m.vocab_size << ", context "
      << m.rope.max_position_embeddings << "\n"
      << "data: " << data_dir_ << " ("
      << (tokenizer_spec_ == "byte" ? "byte tokenizer" : tokenizer_spec_)
      << ", " << FormatCount(static_cast<int64_t>(train_tokens_.size()))
      << " training tokens); " << t.batch_size << " x " << t.seq_len;
  if (t.gradient_accumulation_steps > 1) {
    out << " x " << t.gradient_accumulation_steps << " micro-batches";
  }
  out << " = " << StepTokens() << " tokens per step, " << t.max_steps
      << " steps (" << FormatCount(StepTokens() * t.max_steps) << " tokens)\n"
      << "output: " << config_.output_dir << "\n";
  return out.str();
}

int64_t Trainer::StepTokens() const {
  const TrainSection& t = config_.train;
  return CheckedMul(CheckedMul(t.batch_size, t.seq_len, "tokens per step"),
                    t.gradient_accumulation_steps, "tokens per step");
}

TrainSummary Trainer::Run(int64_t stop_after_steps) {
  const TrainSection& t = config_.train;
  const CosineSchedule schedule{t.lr, t.min_lr, t.warmup_steps, t.max_steps};
  const std::vector<Tensor> parameters = model_->TrainableParameters();
  const auto every = [this](int64_t n) {
    return n > 0 && state_.step % n == 0;
  };
  TrainSummary summary;
  const double run_start = SteadySeconds();
  const double elapsed_before = state_.elapsed_seconds;
  window_ = {run_start, state_.tokens_seen, 0.0};

  while (state_.step < t.max_steps) {
    const double lr = schedule.At(state_.step);
    model_->ZeroGrad();
    const double loss = ForwardBackward();
    const double grad_norm = GlobalGradNorm(parameters);
    CheckWatchdog(loss, grad_norm);
    optimizer_->Step(lr, ClipScale(grad_norm, t.clip_grad_norm));
    if (data_parallel_.shards_optimizer()) {
      data_parallel_.ShareUpdatedWeights(state_.step + 1);
    }
    ++state_.step;
    state_.val_loss = std::numeric_limits<double>::quiet_NaN();
    ++summary.steps_run;
    state_.tokens_seen =
        CheckedAdd(state_.tokens_seen, StepTokens(), "tokens_seen");
    summary.train_loss = loss;
    ReportStep({state_.step, loss, lr, grad_norm, 0.0, state_.tokens_seen});

    const bool last = state_.step == t.max_steps;
    if (every(config_.eval.every_n_steps) || last) {
      summary.val_loss = Validate().loss;
    }
    const bool stopping =
        stop_after_steps > 0 && summary.steps_run >= stop_after_steps;
    if (every(config_.checkpoint.every_n_steps) || last || stopping) {
      state_.elapsed_seconds = elapsed_before + (SteadySeconds() - run_start);
      SaveAndPrune();
    }
    if (stopping) break;
  }
  summary.steps = state_.step;
  summary.seconds = SteadySeconds() - run_start;
  summary.tokens_per_second =
      summary.steps_run * StepTokens() / std::max(summary.seconds, 1e-9);
  summary.checkpoint = last_checkpoint_;
  if (summary.steps_run > 0 && writes_files()) {
    const TrainSection& t = config_.train;
    std::ostringstream title;
    title << config_.output_dir << ": " << config_.file << ", "
          << FormatCount(model_->NumParameters()) << " parameters, "
          << t.batch_size << " x " << t.seq_len << " tokens per batch, lr "
          << t.lr;
    LogLine(metrics_.PlotLossCurve(title.str()));
  }
  return summary;
}

}  // namespace rotor::train
