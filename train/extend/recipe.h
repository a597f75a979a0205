// What rotor extend-report runs (train/extend/runner.h), as configs built
// from the report's settings and the base model's training config: the
// plan (lengths L, s*L and the evaluation lengths), each method's model
// settings, and the training configs of the passkey practice and of the
// fine-tunes. They are filled in as structs; no YAML text is written to be
// parsed again.
#ifndef ROTOR_TRAIN_EXTEND_RECIPE_H_
#define ROTOR_TRAIN_EXTEND_RECIPE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "nn/rope_scaling.h"
#include "train/config/model_config.h"
#include "train/config/report_config.h"
#include "train/config/train_config.h"
#include "train/eval/retrieval.h"

namespace rotor::train {

// The lengths one retrieval task is measured at.
struct RetrievalTaskLengths {
  RetrievalTask task = RetrievalTask::kNiahSingle;
  std::vector<int64_t> lengths;  // empty: its prompt fits none
};

// The base model and the lengths every variant is measured at.
struct ReportPlan {
  // The base model's training config (report.base_config with
  // report.base_overrides, or the defaults), with the report's thread count
  // and no live progress line. With report.base_init_from, its model is the
  // folder's, its seq_len the folder's pre-training length
  // (PretrainedLength), and its data.path report.base_data (or where the
  // report prepares it).
  TrainConfig base;
  // The existing base model (report.base_init_from), or "" when the report
  // trains it from `base`.
  std::string init_from;
  // The model's tokenizer spec: init_from's, or base.data.tokenizer's; ""
  // (a base trained here without data.tokenizer) = the data's own, which
  // the runner reads once the data is prepared (bytes for text files).
  std::string tokenizer;
  // A folder of text files (report.base_data that holds no prepared data)
  // that the runner prepares with `tokenizer` into base.data.path
  // (<output_dir>/data); "" when base.data.path is prepared already.
  std::string text_files;
  int64_t base_length = 0;      // L: the base's pre-training length
  int64_t extended_length = 0;  // s*L, rounded
  // Perplexity lengths (report.lengths, or L/4, L/2, L, 2L, s*L, 2*s*L),
  // sorted and unique; passkey lengths (report.passkey_lengths, or those of
  // the perplexity lengths that fit the shortest passkey prompt).
  std::vector<int64_t> lengths;
  std::vector<int64_t> passkey_lengths;
  // Each of report.retrieval_tasks at report.retrieval_lengths, or at the
  // passkey lengths that hold its prompt (RetrievalMinLength).
  std::vector<RetrievalTaskLengths> retrieval;
};

// Loads the base config (and the existing base's model config) and resolves
// the lengths; throws when a passkey or retrieval length is below the
// shortest prompt.
ReportPlan PlanReport(const ExtendReportConfig& report);

// `base`'s model extended by `factor` from its training length
// `base_length` with `method`: max_position_embeddings = factor *
// base_length (base_length for dynamic, whose L0 it is) and the method's
// rope_scaling, replacing any the base had (its rope_theta, head_dim and
// partial_rotary_factor stay): RopeSettingsAtFactor (nn/rope_methods.h),
// with its numbers as report.md shows them. llama3 takes Meta's Llama 3.1
// bands; longrope's factors are illustrative, not searched.
ModelConfig ExtendModelConfig(const ModelConfig& base, RopeType method,
                              double factor, int64_t base_length);

// Tokens per optimizer step and data.passkey_fraction of the fine-tunes:
// the report's, or the base run's where the report leaves them unset
// (data.retrieval_fraction likewise: FinetuneConfig).
int64_t FinetuneTokensPerStep(const ExtendReportConfig& report,
                              const TrainConfig& base);
double FinetunePasskeyFraction(const ExtendReportConfig& report,
                               const TrainConfig& base);

// The passkey-practice run: the base config at its own length, from the
// weights of `base_checkpoint` (the base's, or the first phase's), with the
// report's shares of passkey and retrieval rows, in
// report.practice_output_dir.
TrainConfig PracticeConfig(const ExtendReportConfig& report,
                           const ReportPlan& plan,
                           const std::string& base_checkpoint);

// The practice's first phase (report.practice_examples_only_steps > 0): the
// practice run with every row an example, passkey and retrieval rows in the
// practice's proportion, for report.practice_examples_only_steps steps, in
// <report.practice_output_dir>-examples-only.
TrainConfig PracticeFirstPhaseConfig(const ExtendReportConfig& report,
                                     const ReportPlan& plan,
                                     const std::string& base_checkpoint);

// What the practice does, for the log and report.md: "120 steps of examples
// only, then 300 steps with 0.5 passkey rows and 0.25 retrieval rows
// (niah_single, variable_tracking)".
std::string PracticeDescription(const ExtendReportConfig& report);

// The fine-tune of `method`: from the weights of `base_checkpoint`,
// report.finetune_steps steps at s*L with the method's model settings, in
// <report.output_dir>/finetune/<method>. With `lora`, the same budget with
// report.lora_finetune's frozen base and adapters at report.lora_lr, in
// <report.output_dir>/finetune/<method>-lora.
TrainConfig FinetuneConfig(const ExtendReportConfig& report,
                           const ReportPlan& plan, RopeType method,
                           const std::string& base_checkpoint,
                           bool lora = false);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_EXTEND_RECIPE_H_
