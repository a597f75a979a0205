#include "train/trainer.h"

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "core/autograd.h"
#include "core/error.h"
#include "core/ops/ops.h"
#include "core/parallel.h"
#include "train/io/atomic_file.h"
#include "train/init_from.h"
#include "train/io/json.h"
#include "train/optim/lr_schedule.h"
#include "train/data/passkey.h"
#include "train/data/tokenizer.h"

namespace rotor::train {

namespace fs = std::filesystem;

namespace {

double Now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Resuming replays the interrupted run's data stream (the sampler position
// and the passkey mix), which only means the same thing with the same batch
// shape, seed and mix: a checkpoint whose run had other values is refused
// with the differences named, instead of resuming into a different run.
void CheckResumable(const std::string& dir, const TrainConfig& config) {
  const std::string differences =
      DataStreamDifferences(LoadCheckpointTrainConfig(dir), config);
  ROTOR_CHECK(differences.empty(), config.file, ": cannot resume from ", dir,
              ": its run used other data settings: ", differences,
              ". Restore them to continue that run, or start a new run "
              "(another output_dir) from its weights with train.init_from=",
              dir);
}

std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  char buffer[32];
  if (s >= 3600) {
    std::snprintf(buffer, sizeof(buffer), "%lldh%02lldm",
                  static_cast<long long>(s / 3600),
                  static_cast<long long>(s % 3600 / 60));
  } else {
    std::snprintf(buffer, sizeof(buffer), "%lldm%02llds",
                  static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  }
  return buffer;
}

std::string CacheDir() {
  if (const char* dir = std::getenv("ROTOR_CACHE_DIR"); dir && *dir) {
    return dir;
  }
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.cache/rotor";
}

void AppendLine(const std::string& path, const std::string& line) {
  std::ofstream out(path, std::ios::app);
  out << line << "\n";
}

// Keeps the lines of metrics.jsonl up to `step` (the step training starts
// from) and drops the rest: a run killed after its last checkpoint logged
// steps that the resumed run logs again, and may have left half a line.
void TrimMetrics(const std::string& path, int64_t step) {
  if (!fs::exists(path)) return;
  const std::string text = ReadFile(path);
  std::string kept;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    try {
      if (ParseJson(line, path).Get("step").AsInt64() <= step) {
        kept += line + "\n";
      }
    } catch (const Error&) {  // half-written: dropped
    }
  }
  if (kept != text) WriteFileAtomically(path, kept);
}

// Writes <output_dir>/loss.png from metrics.jsonl with gnuplot, if present.
std::string PlotLossCurve(const std::string& output_dir) {
  if (std::system("command -v gnuplot > /dev/null 2>&1") != 0) {
    return "no loss plot: gnuplot is not installed (apt-get install "
           "gnuplot-nox), then rerun to get " +
           output_dir + "/loss.png";
  }
  const std::string metrics = output_dir + "/metrics.jsonl";
  const std::string train_dat = output_dir + "/.loss_train.dat";
  const std::string val_dat = output_dir + "/.loss_val.dat";
  {
    std::ifstream in(metrics);
    std::ofstream train(train_dat), val(val_dat);
    for (std::string line; std::getline(in, line);) {
      const JsonValue json = ParseJson(line, metrics);
      const double step = json.Get("step").AsDouble();
      if (const JsonValue* loss = json.Find("loss")) {
        train << step << " " << loss->AsDouble() << "\n";
      }
      if (const JsonValue* loss = json.Find("val_loss")) {
        val << step << " " << loss->AsDouble() << "\n";
      }
    }
  }
  const std::string png = output_dir + "/loss.png";
  const std::string script =
      "set terminal pngcairo size 900,540; set output '" + png +
      "'; set xlabel 'step'; set ylabel 'loss (nats/token)'; set grid;"
      " set title 'rotor training loss';"
      " plot '" +
      train_dat + "' with lines title 'train', '" + val_dat +
      "' with linespoints title 'validation'";
  const std::string command = "gnuplot -e \"" + script + "\" > /dev/null 2>&1";
  const bool ok = std::system(command.c_str()) == 0;
  fs::remove(train_dat);
  fs::remove(val_dat);
  return ok ? "loss curve: " + png : "gnuplot failed to write " + png;
}

}  // namespace

std::string ResolveDataDir(const std::string& path) {
  const std::string dir = path == "brown" ? CacheDir() + "/brown" : path;
  ROTOR_CHECK(
      fs::exists(dir + "/train.bin") && fs::exists(dir + "/val.bin"),
      "data.path '", path, "': ", dir, " has no train.bin/val.bin; ",
      path == "brown"
          ? "run scripts/fetch_brown.sh to download and prepare the "
            "Brown corpus"
          : "prepare it with: rotor prepare --input TEXTS --output " + dir);
  return dir;
}

ValidationResult Evaluate(nn::Transformer& model, const TokenFile& val,
                          int64_t batch_size, int64_t seq_len,
                          int64_t max_batches) {
  NoGradGuard no_grad;
  model.SetSequenceLength(seq_len);
  ValidationBatches batches(val, batch_size, seq_len);
  Batch batch;
  double total = 0.0;
  int64_t tokens = 0;
  for (int64_t i = 0;
       (max_batches == 0 || i < max_batches) && batches.Next(batch); ++i) {
    const Tensor loss = model.Loss(batch.inputs, batch.targets,
                                   batch.batch_size, batch.seq_len);
    const int64_t n = batch.batch_size * batch.seq_len;
    total += static_cast<double>(loss.item()) * n;
    tokens += n;
  }
  ROTOR_CHECK(tokens > 0, val.path(),
              ": too short for one validation window of ", seq_len + 1,
              " tokens");
  ValidationResult result;
  result.loss = total / tokens;
  result.perplexity = std::exp(result.loss);
  result.bits_per_byte = result.loss / std::log(2.0);
  result.tokens = tokens;
  return result;
}

std::unique_ptr<nn::Transformer> LoadModelFromCheckpoint(const std::string& dir,
                                                         TrainConfig* config) {
  ROTOR_CHECK(fs::is_directory(dir), "checkpoint folder ", dir,
              " does not exist");
  const TrainConfig parsed =
      ParseTrainConfig(LoadCheckpointConfig(dir), dir + "/config.yaml");
  auto model = std::make_unique<nn::Transformer>(
      ResolveTransformerConfig(parsed.model), parsed.train.seed);
  LoadModelWeights(dir, *model);
  if (config != nullptr) *config = parsed;
  return model;
}

Trainer::Trainer(TrainConfig config, std::ostream& log)
    : config_(std::move(config)),
      config_yaml_(TrainConfigToYaml(config_)),
      log_(log),
      data_dir_(ResolveDataDir(config_.data.path)),
      train_tokens_(data_dir_ + "/train.bin"),
      val_tokens_(data_dir_ + "/val.bin") {
  const TrainSection& t = config_.train;
  SetNumThreads(static_cast<int>(t.threads));
  nn::TransformerConfig model_config =
      ResolveTransformerConfig(config_.model);
  for (const TokenFile* tokens : {&train_tokens_, &val_tokens_}) {
    ROTOR_CHECK(model_config.vocab_size >= tokens->vocab_size(), config_.file,
                ": model.vocab_size (", model_config.vocab_size,
                ") is smaller than the data's vocabulary (",
                tokens->vocab_size(), ", ", tokens->path(), ")");
  }
  // Checks now, rather than at the first evaluation, that val.bin holds at
  // least one window.
  ValidationBatches(val_tokens_, t.batch_size, t.seq_len);
  model_ = std::make_unique<nn::Transformer>(model_config, t.seed);
  model_->SetSequenceLength(t.seq_len);
  optimizer_ = std::make_unique<AdamW>(
      model_->NamedParameters(),
      AdamWSettings{t.beta1, t.beta2, t.eps, t.weight_decay});
  sampler_ = std::make_unique<BatchSampler>(train_tokens_, t.batch_size,
                                            t.seq_len, t.seed);

  // Where to start: a checkpoint (resume) or from scratch.
  std::string resume_dir;
  const std::vector<std::string> existing = ListCheckpoints(config_.output_dir);
  if (t.resume == "auto") {
    if (!existing.empty()) resume_dir = existing.back();
  } else if (t.resume == "none") {
    ROTOR_CHECK(existing.empty(), config_.output_dir,
                " already holds checkpoints (", existing.back(),
                "); set train.resume=auto to continue that run, or choose "
                "another output_dir — nothing was overwritten");
  } else {
    resume_dir = t.resume;
    ROTOR_CHECK(fs::is_directory(resume_dir), config_.file,
                ": train.resume: checkpoint folder ", resume_dir,
                " does not exist (use auto, none or a step_N folder)");
  }
  if (!resume_dir.empty()) {
    CheckResumable(resume_dir, config_);
    LoadModelWeights(resume_dir, *model_);
    LoadOptimizerState(resume_dir, *optimizer_);
    state_ = LoadTrainerState(resume_dir);
    sampler_->set_state(state_.sampler);
    ROTOR_CHECK(optimizer_->step() == state_.step, resume_dir,
                ": optimizer step ", optimizer_->step(),
                " does not match trainer step ", state_.step);
    log_ << "resuming from " << resume_dir << " at step " << state_.step
         << "\n";
  } else if (!t.init_from.empty()) {
    log_ << "initialising the weights from "
         << InitializeFromCheckpoint(t.init_from, *model_)
         << " (fresh optimizer, schedule and sampler)\n";
  }
  std::error_code error;
  fs::create_directories(config_.output_dir, error);
  ROTOR_CHECK(fs::is_directory(config_.output_dir), config_.file,
              ": output_dir ", config_.output_dir, " is not a folder",
              error ? " (" + error.message() + ")" : "");
  TrimMetrics(config_.output_dir + "/metrics.jsonl", state_.step);
  live_progress_ =
      config_.logging.progress && isatty(STDOUT_FILENO) && &log_ == &std::cout;
}

void Trainer::LogLine(const std::string& line) {
  if (live_progress_) log_ << "\r\033[K";
  log_ << line << std::endl;
}

void Trainer::SaveAndPrune() {
  state_.sampler = sampler_->state();
  const std::string dir = CheckpointDir(config_.output_dir, state_.step);
  SaveCheckpoint(dir, *model_, optimizer_.get(), state_, config_yaml_);
  PruneCheckpoints(config_.output_dir, config_.checkpoint.keep_last_n);
}

TrainConfig LoadCheckpointTrainConfig(const std::string& dir) {
  const std::string text = LoadCheckpointConfig(dir);
  TrainConfig config = ParseTrainConfig(text, dir + "/config.yaml");
  const YAML::Node root = YAML::Load(text);
  if (!(root["data"] && root["data"]["passkey_loss"]) &&
      config.data.passkey_fraction > 0) {
    config.data.passkey_loss = "all";
  }
  return config;
}

std::string DataStreamDifferences(const TrainConfig& saved,
                                  const TrainConfig& now) {
  std::string differences;
  const auto compare = [&differences](const char* key, const auto& before,
                                      const auto& after) {
    if (before == after) return;
    differences += StrCat(differences.empty() ? "" : ", ", key, " ", before,
                          " (checkpoint) vs ", after, " (config)");
  };
  compare("train.batch_size", saved.train.batch_size, now.train.batch_size);
  compare("train.seq_len", saved.train.seq_len, now.train.seq_len);
  compare("train.gradient_accumulation_steps",
          saved.train.gradient_accumulation_steps,
          now.train.gradient_accumulation_steps);
  compare("train.seed", saved.train.seed, now.train.seed);
  compare("data.passkey_fraction", saved.data.passkey_fraction,
          now.data.passkey_fraction);
  compare("data.passkey_loss", saved.data.passkey_loss, now.data.passkey_loss);
  return differences;
}

TrainSummary Trainer::Run(int64_t stop_after_steps) {
  const TrainSection& t = config_.train;
  const CosineSchedule schedule{t.lr, t.min_lr, t.warmup_steps, t.max_steps};
  const std::vector<Tensor> parameters = model_->Parameters();
  const std::string metrics_path = config_.output_dir + "/metrics.jsonl";
  const int64_t step_tokens =
      t.batch_size * t.seq_len * t.gradient_accumulation_steps;

  TrainSummary summary;
  const double run_start = Now();
  double window_start = run_start;
  int64_t window_tokens = 0;
  int64_t steps_this_run = 0;
  double last_loss = 0.0;
  const double elapsed_before = state_.elapsed_seconds;
  const PasskeyLoss passkey_loss = ParsePasskeyLoss(config_.data.passkey_loss);
  std::vector<Batch> micro_batches(
      static_cast<size_t>(t.gradient_accumulation_steps));

  while (state_.step < t.max_steps) {
    const double lr = schedule.At(state_.step);
    model_->ZeroGrad();
    // The step's loss is the mean over all its scored tokens (passkey rows
    // score only some of theirs): draw every micro-batch first, then weight
    // each micro-batch's mean by its share of the scored tokens.
    int64_t step_scored = 0;
    std::vector<int64_t> scored;
    for (Batch& batch : micro_batches) {
      sampler_->Next(batch);
      const uint64_t first_row = (sampler_->state().batches_drawn - 1) *
                                 static_cast<uint64_t>(batch.batch_size);
      MixPasskeyExamples(batch, config_.data.passkey_fraction, passkey_loss,
                         t.seed, first_row);
      scored.push_back(static_cast<int64_t>(std::count_if(
          batch.targets.begin(), batch.targets.end(),
          [](TokenId target) { return target != kPasskeyIgnoredTarget; })));
      step_scored += scored.back();
    }
    ROTOR_CHECK(step_scored > 0, "training step ", state_.step + 1,
                ": no target token is scored");
    double step_loss = 0.0;
    for (size_t micro = 0; micro < micro_batches.size(); ++micro) {
      const Batch& batch = micro_batches[micro];
      const Tensor loss = model_->Loss(batch.inputs, batch.targets,
                                       batch.batch_size, batch.seq_len);
      const double weight =
          static_cast<double>(scored[micro]) / static_cast<double>(step_scored);
      Mul(loss, static_cast<float>(weight)).Backward();
      step_loss += weight * loss.item();
    }
    const double grad_norm = ClipGradNorm(parameters, t.clip_grad_norm);

    // Watchdog, before the update so that a broken step changes nothing.
    ROTOR_CHECK(std::isfinite(step_loss) && std::isfinite(grad_norm),
                "training stopped: the loss is ", step_loss,
                " and the gradient norm ", grad_norm, " at step ",
                state_.step + 1,
                " (NaN/Inf). Lower train.lr or check the data; the last "
                "checkpoint is untouched");
    state_.smoothed_loss = std::isnan(state_.smoothed_loss)
                               ? step_loss
                               : 0.9 * state_.smoothed_loss + 0.1 * step_loss;
    if (t.loss_explosion_ratio > 0 && state_.step >= t.warmup_steps &&
        state_.smoothed_loss >
            t.loss_explosion_ratio * state_.min_smoothed_loss) {
      throw Error(StrCat(
          "training stopped: the smoothed loss ", state_.smoothed_loss,
          " at step ", state_.step + 1, " exceeds ", t.loss_explosion_ratio,
          " x its lowest value ", state_.min_smoothed_loss,
          " (loss explosion). Lower train.lr or raise "
          "train.loss_explosion_ratio; the last checkpoint is untouched"));
    }
    state_.min_smoothed_loss =
        std::min(state_.min_smoothed_loss, state_.smoothed_loss);

    optimizer_->Step(lr);
    ++state_.step;
    ++steps_this_run;
    state_.tokens_seen += step_tokens;
    window_tokens += step_tokens;
    last_loss = step_loss;

    const double now = Now();
    const double tokens_per_second = window_tokens / (now - window_start);
    const double eta =
        (t.max_steps - state_.step) * step_tokens / tokens_per_second;
    std::ostringstream line;
    line << "step " << state_.step << "/" << t.max_steps << "  loss "
         << std::fixed << std::setprecision(4) << step_loss << "  lr "
         << std::scientific << std::setprecision(2) << lr << "  " << std::fixed
         << std::setprecision(0) << tokens_per_second << " tok/s  ETA "
         << FormatDuration(eta);
    const bool log_now = state_.step % config_.logging.log_every_n_steps == 0 ||
                         state_.step == t.max_steps;
    if (log_now) {
      LogLine(line.str());
      JsonValue json = JsonValue::Object();
      json.Set("step", JsonValue::Integer(state_.step));
      json.Set("loss", JsonValue::Number(step_loss));
      json.Set("lr", JsonValue::Number(lr));
      json.Set("grad_norm", JsonValue::Number(grad_norm));
      json.Set("tokens_per_second", JsonValue::Number(tokens_per_second));
      json.Set("tokens_seen", JsonValue::Integer(state_.tokens_seen));
      AppendLine(metrics_path, json.Dump());
      window_start = now;
      window_tokens = 0;
    } else if (live_progress_) {
      log_ << "\r\033[K" << line.str() << std::flush;
    }

    const bool last = state_.step == t.max_steps;
    if ((config_.eval.every_n_steps > 0 &&
         state_.step % config_.eval.every_n_steps == 0) ||
        last) {
      const ValidationResult val =
          Evaluate(*model_, val_tokens_, t.batch_size, t.seq_len,
                   config_.eval.max_batches);
      model_->SetSequenceLength(t.seq_len);
      state_.best_val_loss = std::min(state_.best_val_loss, val.loss);
      summary.val_loss = val.loss;
      std::ostringstream eval_line;
      eval_line << "eval step " << state_.step << "  val_loss " << std::fixed
                << std::setprecision(4) << val.loss << "  ppl "
                << std::setprecision(2) << val.perplexity << "  bpb "
                << std::setprecision(3) << val.bits_per_byte;
      LogLine(eval_line.str());
      JsonValue json = JsonValue::Object();
      json.Set("step", JsonValue::Integer(state_.step));
      json.Set("val_loss", JsonValue::Number(val.loss));
      json.Set("val_perplexity", JsonValue::Number(val.perplexity));
      json.Set("val_bits_per_byte", JsonValue::Number(val.bits_per_byte));
      AppendLine(metrics_path, json.Dump());
    }
    const bool stopping =
        stop_after_steps > 0 && steps_this_run >= stop_after_steps;
    if ((config_.checkpoint.every_n_steps > 0 &&
         state_.step % config_.checkpoint.every_n_steps == 0) ||
        last || stopping) {
      state_.elapsed_seconds = elapsed_before + (Now() - run_start);
      SaveAndPrune();
    }
    if (stopping) break;
  }
  summary.steps = state_.step;
  summary.steps_run = steps_this_run;
  summary.train_loss = last_loss;
  summary.seconds = Now() - run_start;
  summary.tokens_per_second =
      steps_this_run * step_tokens / std::max(summary.seconds, 1e-9);
  const std::vector<std::string> checkpoints =
      ListCheckpoints(config_.output_dir);
  if (!checkpoints.empty()) summary.checkpoint = checkpoints.back();
  if (steps_this_run > 0) LogLine(PlotLossCurve(config_.output_dir));
  return summary;
}

}  // namespace rotor::train
