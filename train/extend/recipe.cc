#include "train/extend/recipe.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/error.h"
#include "nn/rope_methods.h"
#include "train/checkpoint.h"
#include "train/config/hf_config.h"
#include "train/data/data_dir.h"
#include "train/data/passkey.h"

namespace rotor::train {

namespace {

// `value` with the 6 significant digits report.md shows (and
// configs/extend/*.yaml hold), so the overrides it lists give exactly the
// model that was evaluated.
double AsShown(double value) {
  std::istringstream text(StrCat(value));
  double shown = 0.0;
  text >> shown;
  return shown;
}

// AsShown on the numbers RopeSettingsAtFactor derives from the factor.
void RoundAsShown(RopeScalingConfig& rope) {
  if (rope.factor) rope.factor = AsShown(*rope.factor);
  for (std::optional<std::vector<double>>* list :
       {&rope.short_factor, &rope.long_factor}) {
    if (!*list) continue;
    for (double& value : **list) value = AsShown(value);
  }
}

// The checks ParseTrainConfig makes beyond each key's range, for the
// configs built here.
void CheckBuiltConfig(const TrainConfig& config, const std::string& what) {
  const std::optional<ConfigProblem> problem = FindTrainConfigProblem(config);
  ROTOR_CHECK(!problem, what, ": ", problem->key, " ", problem->message);
}

}  // namespace

ReportPlan PlanReport(const ExtendReportConfig& report) {
  ReportPlan plan;
  if (!report.base_config.empty()) {
    plan.base = LoadTrainConfig(report.base_config, report.base_overrides);
  }
  plan.base.train.threads = report.threads;
  plan.base.logging.progress = false;
  plan.init_from = report.base_init_from;
  plan.tokenizer = plan.base.data.tokenizer;
  if (!plan.init_from.empty()) {
    // The folder's own model, tokenizer and pre-training length; a rotor
    // checkpoint's passkey key length too (its passkey rows were trained on
    // keys of that many digits; a Hugging Face model has none).
    const TrainConfig saved = LoadCheckpointModelConfig(plan.init_from);
    plan.base.model = saved.model;
    if (!IsHfModelFolder(ResolveCheckpointPath(plan.init_from))) {
      plan.base.data.passkey_digits = saved.data.passkey_digits;
    }
    plan.tokenizer = CheckpointTokenizerSpec(plan.init_from);
    plan.base.data.tokenizer = plan.tokenizer;
    plan.base.train.seq_len = PretrainedLength(plan.base.model);
  }
  if (!report.base_data.empty()) {
    plan.base.data.path = report.base_data;
    if (!HoldsPreparedData(report.base_data)) {
      plan.text_files = report.base_data;
      plan.base.data.path = report.output_dir + "/data";
    }
  }
  plan.base_length = plan.base.train.seq_len;
  plan.extended_length =
      static_cast<int64_t>(std::llround(report.factor * plan.base_length));
  const int64_t l = plan.base_length;
  plan.lengths = report.lengths;
  if (plan.lengths.empty()) {
    plan.lengths = {
        std::max<int64_t>(l / 4, 1), std::max<int64_t>(l / 2, 1), l, 2 * l,
        plan.extended_length,        2 * plan.extended_length};
  }
  std::sort(plan.lengths.begin(), plan.lengths.end());
  plan.lengths.erase(std::unique(plan.lengths.begin(), plan.lengths.end()),
                     plan.lengths.end());
  const int digits = static_cast<int>(plan.base.data.passkey_digits);
  const int64_t shortest = PasskeyMinLength(digits);
  plan.passkey_lengths = report.passkey_lengths;
  if (plan.passkey_lengths.empty()) {
    for (int64_t length : plan.lengths) {
      if (length >= shortest) plan.passkey_lengths.push_back(length);
    }
  }
  for (int64_t length : plan.passkey_lengths) {
    ROTOR_CHECK(length >= shortest, report.file, ": passkey length ", length,
                " is below the shortest passkey prompt (", shortest,
                " tokens); set eval.passkey_lengths");
  }
  for (RetrievalTask task : report.retrieval_tasks) {
    const int64_t needed = RetrievalMinLength(task);
    RetrievalTaskLengths measured{task, {}};
    for (int64_t length : report.retrieval_lengths.empty()
                              ? plan.passkey_lengths
                              : report.retrieval_lengths) {
      if (length >= needed) {
        measured.lengths.push_back(length);
      } else {
        ROTOR_CHECK(report.retrieval_lengths.empty(), report.file,
                    ": retrieval length ", length, " is below the shortest ",
                    RetrievalTaskName(task), " prompt (", needed,
                    " tokens); set eval.retrieval_lengths");
      }
    }
    plan.retrieval.push_back(measured);
  }
  return plan;
}

ModelConfig ExtendModelConfig(const ModelConfig& base, RopeType method,
                              double factor, int64_t base_length) {
  ModelConfig model = base;
  model.rope = RopeSettingsAtFactor(base.rope, method, factor, base_length);
  if (!RopeMethodOf(method).scales()) return model;
  RoundAsShown(model.rope);
  const std::optional<RopeConfigProblem> problem =
      FindRopeConfigProblem(model.rope);
  ROTOR_CHECK(!problem, RopeTypeName(method), " x", factor, ": model.",
              problem->key, ": ", problem->message);
  return model;
}

int64_t FinetuneTokensPerStep(const ExtendReportConfig& report,
                              const TrainConfig& base) {
  return report.finetune_tokens_per_step > 0
             ? report.finetune_tokens_per_step
             : base.train.batch_size * base.train.seq_len;
}

double FinetunePasskeyFraction(const ExtendReportConfig& report,
                               const TrainConfig& base) {
  return report.finetune_passkey_fraction ? *report.finetune_passkey_fraction
                                          : base.data.passkey_fraction;
}

TrainConfig PracticeConfig(const ExtendReportConfig& report,
                           const ReportPlan& plan,
                           const std::string& base_checkpoint) {
  TrainConfig config = plan.base;
  config.output_dir = report.practice_output_dir;
  config.train.init_from = base_checkpoint;
  config.train.resume = ResumeMode::kAuto;
  config.data.passkey_fraction = report.practice_passkey_fraction;
  config.data.retrieval_fraction = report.practice_retrieval_fraction;
  config.data.retrieval_tasks = report.practice_retrieval_tasks;
  config.train.max_steps = report.practice_steps;
  config.train.warmup_steps =
      std::min(report.practice_warmup_steps, report.practice_steps);
  config.eval.every_n_steps = 0;
  config.checkpoint.every_n_steps = 0;
  config.checkpoint.keep_last_n = 1;
  CheckBuiltConfig(config, "passkey practice");
  return config;
}

TrainConfig PracticeFirstPhaseConfig(const ExtendReportConfig& report,
                                     const ReportPlan& plan,
                                     const std::string& base_checkpoint) {
  TrainConfig config = PracticeConfig(report, plan, base_checkpoint);
  config.output_dir = report.practice_output_dir + "-examples-only";
  // The practice's proportion of passkey to retrieval rows, over all rows.
  const double examples =
      report.practice_passkey_fraction + report.practice_retrieval_fraction;
  config.data.passkey_fraction = report.practice_passkey_fraction / examples;
  config.data.retrieval_fraction = 1.0 - config.data.passkey_fraction;
  config.train.max_steps = report.practice_examples_only_steps;
  config.train.warmup_steps = std::min(report.practice_warmup_steps,
                                       report.practice_examples_only_steps);
  CheckBuiltConfig(config, "practice's first phase");
  return config;
}

std::string PracticeDescription(const ExtendReportConfig& report) {
  std::string text;
  if (report.practice_examples_only_steps > 0) {
    text = StrCat(report.practice_examples_only_steps,
                  " steps of examples only, then ");
  }
  text += StrCat(report.practice_steps, " steps with ",
                 report.practice_passkey_fraction, " passkey rows");
  if (report.practice_retrieval_fraction > 0) {
    std::string tasks;
    for (RetrievalTask task : report.practice_retrieval_tasks) {
      tasks +=
          (tasks.empty() ? "" : ", ") + std::string(RetrievalTaskName(task));
    }
    text += StrCat(" and ", report.practice_retrieval_fraction,
                   " retrieval rows (", tasks, ")");
  }
  return text;
}

TrainConfig FinetuneConfig(const ExtendReportConfig& report,
                           const ReportPlan& plan, RopeType method,
                           const std::string& base_checkpoint, bool lora) {
  TrainConfig config = plan.base;
  config.output_dir = report.output_dir + "/finetune/" + RopeTypeName(method) +
                      (lora ? "-lora" : "");
  config.model = ExtendModelConfig(plan.base.model, method, report.factor,
                                   plan.base_length);
  config.data.passkey_fraction = FinetunePasskeyFraction(report, plan.base);
  if (report.finetune_retrieval_fraction) {
    config.data.retrieval_fraction = *report.finetune_retrieval_fraction;
    config.data.retrieval_tasks = report.practice_retrieval_tasks;
  }
  TrainSection& train = config.train;
  train.init_from = base_checkpoint;
  train.resume = ResumeMode::kAuto;
  train.seq_len = plan.extended_length;
  // About the base run's cost per step: the batch shrinks by s.
  train.batch_size = std::max<int64_t>(
      1, FinetuneTokensPerStep(report, plan.base) / plan.extended_length);
  train.gradient_accumulation_steps = 1;
  train.max_steps = report.finetune_steps;
  train.lr = report.finetune_lr;
  train.min_lr = report.finetune_min_lr;
  train.warmup_steps =
      std::min(report.finetune_warmup_steps, report.finetune_steps);
  config.eval.every_n_steps = 0;
  config.eval.max_batches = 4;
  config.checkpoint.every_n_steps = 0;
  config.checkpoint.keep_last_n = 1;
  config.logging.log_every_n_steps =
      std::max<int64_t>(1, report.finetune_steps / 10);
  if (lora) {
    config.finetune = report.lora_finetune;
    if (report.lora_lr > 0.0) {
      train.min_lr =
          train.lr > 0.0 ? train.min_lr * report.lora_lr / train.lr : 0.0;
      train.lr = report.lora_lr;
    }
  }
  CheckBuiltConfig(config, StrCat(RopeTypeName(method), " fine-tune"));
  return config;
}

}  // namespace rotor::train
