// The training loop (Trainer::Run) and the parts of one step, in the order
// Run calls them; the run's set-up (the constructor's steps, resuming) is in
// trainer_setup.cc.
#include "train/trainer.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <optional>
#include <sstream>

#include "core/autograd.h"
#include "core/checked_math.h"
#include "core/error.h"
#include "core/ops/ops.h"
#include "core/random.h"
#include "nn/lora.h"
#include "train/data/passkey.h"
#include "train/optim/lr_schedule.h"

namespace rotor::train {

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
    if (retrieval_maker_) {
      MixRetrievalExamples(batch, *retrieval_maker_,
                           config_.data.retrieval_tasks,
                           config_.data.passkey_fraction,
                           config_.data.retrieval_fraction, t.seed, first_row);
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
