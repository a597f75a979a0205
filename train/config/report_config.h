// The context-extension report's config (`rotor extend-report CONFIG`;
// the report itself: train/extend/runner.h). configs/extend/report.yaml
// documents every key:
//
//   base: { config: configs/default.yaml, overrides: [],
//           init_from: "", data: "",
//           practice: { steps: 800, passkey_fraction: 0.75, warmup_steps: 50,
//                       output_dir: runs/default-passkey,
//                       examples_only_steps: 0, retrieval_fraction: 0,
//                       retrieval_tasks: [niah_single, ...] } }
//   output_dir: runs/extend-report
//   factor: 4
//   methods: [default, linear, ntk, dynamic, yarn, llama3, longrope]
//   finetune: { steps: 200, lr: 5e-4, min_lr: 5e-5, warmup_steps: 20,
//               tokens_per_step: 8192, passkey_fraction: 0.5,
//               retrieval_fraction: (the base's),
//               skip: [dynamic],
//               lora: { r, alpha, dropout, target_modules, trainable, lr } }
//   eval: { lengths: [], documents: 10, method: truncate, stride: 0,
//           passkey_lengths: [], depths: [0, 0.25, 0.5, 0.75, 1],
//           trials: 10,
//           retrieval_tasks: [niah_single, niah_multikey, niah_multivalue,
//                             variable_tracking],
//           retrieval_lengths: [], retrieval_trials: 2 }
//   checks: { zeroshot_ppl_ratio_min: 1.5, finetuned_ppl_ratio_max: 1.1,
//             finetuned_passkey_min: 0.9, base_passkey_min: 0.95,
//             max_seconds: 3600 }
//   export: none
//   threads: 0
//
// The base is either trained here from base.config, or, with
// base.init_from, a model you already have (a Hugging Face folder or a rotor
// checkpoint), used as it is: no base training, its tokenizer and
// pre-training length from the folder, base.config (optional) only for the
// fine-tunes' training settings.
#ifndef ROTOR_TRAIN_CONFIG_REPORT_CONFIG_H_
#define ROTOR_TRAIN_CONFIG_REPORT_CONFIG_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/fields.h"
#include "core/limits.h"
#include "nn/rope_methods.h"
#include "nn/rope_scaling.h"
#include "train/config/train_config.h"
#include "train/eval/length_eval.h"
#include "train/eval/retrieval.h"

namespace rotor::train {

// The expected outcome of issue #6, checked on the measured numbers in
// report.md's "Checks" table. Ratios are perplexity at s*L over the
// zero-shot default model's at L; accuracies are passkey retrieval rates.
struct ExtendReportChecks {
  double zeroshot_ppl_ratio_min = 1.5;   // unscaled RoPE: ratio above this
  double finetuned_ppl_ratio_max = 1.1;  // yarn, linear fine-tuned: at most
  double finetuned_passkey_min = 0.9;    // yarn fine-tuned at s*L: at least
  double base_passkey_min = 0.95;        // the base model at L: at least
  double max_seconds = 3600.0;           // the whole comparison: less than this
  // yarn fine-tuned niah_single at s*L: at least (when measured, and the
  // recipe practises the RULER tasks).
  double finetuned_niah_single_min = 0.8;
};
template <typename Visitor>
void VisitFields(Visitor& v, ExtendReportChecks& c) {
  constexpr double kAny = std::numeric_limits<double>::max();
  v(Key{"zeroshot_ppl_ratio_min", "unscaled RoPE's ratio is above this"},
    c.zeroshot_ppl_ratio_min, field::Real{0.0, kAny});
  v(Key{"finetuned_ppl_ratio_max", "yarn and linear fine-tuned: at most"},
    c.finetuned_ppl_ratio_max, field::Real{0.0, kAny});
  v(Key{"finetuned_passkey_min", "yarn fine-tuned passkey at s*L: at least"},
    c.finetuned_passkey_min, field::Real{0.0, 1.0});
  v(Key{"base_passkey_min", "the base's passkey at L: at least"},
    c.base_passkey_min, field::Real{0.0, 1.0});
  v(Key{"finetuned_niah_single_min",
        "yarn fine-tuned niah_single at s*L (when measured): at least"},
    c.finetuned_niah_single_min, field::Real{0.0, 1.0});
  v(Key{"max_seconds", "the whole report: less than this"}, c.max_seconds,
    field::Real{0.0, kAny});
}

// "unknown method 'X' (default, linear, ...)", for a report's method lists.
std::string RefuseMethod(const std::string& given);

// What the report writes of each fine-tuned model besides its checkpoint:
// nothing, or a Hugging Face folder <output_dir>/export/<method>[-lora]
// (LoRA merged), in the base's dtype when that is bfloat16.
enum class ReportExport { kNone, kHf };
const char* ReportExportName(ReportExport format);
// "none" / "hf"; throws rotor::Error naming the accepted values.
ReportExport ParseReportExport(const std::string& name);

// finetune.skip's default: the methods that cannot extend a model by
// fine-tuning, as they scale only sequences longer than
// max_position_embeddings (RopeMethod::scales_only_past_max_positions:
// dynamic).
std::vector<RopeType> RopeTypesNotFinetuned();

struct ExtendReportConfig {
  std::string file;                         // for messages
  std::string base_config;                  // a training config (YAML)
  std::vector<std::string> base_overrides;  // key=value on it
  // A model to extend as it is (an HF folder, a rotor checkpoint or run
  // folder) instead of training one from base_config; "" = train it.
  std::string base_init_from;
  // The text to fine-tune and evaluate on: a folder prepared with the
  // model's tokenizer, or a folder of text files the report prepares with
  // it into <output_dir>/data; "" = base_config's data.path.
  std::string base_data;
  // Passkey practice after the base run, at the base length, from its
  // weights, with the base config's learning rate; 0 steps = none.
  int64_t practice_steps = 0;
  double practice_passkey_fraction = 0.75;
  int64_t practice_warmup_steps = 50;
  std::string practice_output_dir;  // required when practice_steps > 0
  // RULER-style retrieval rows in practice (data.retrieval_fraction and
  // data.retrieval_tasks of the practice run; the fine-tunes draw from the
  // same tasks when finetune.retrieval_fraction is set). The two fractions
  // add up to at most 1.
  double practice_retrieval_fraction = 0.0;
  std::vector<RetrievalTask> practice_retrieval_tasks = AllRetrievalTasks();
  // The learning ladder's curriculum (docs/learn.md, rungs 06-09): a first
  // phase of this many steps whose rows are all examples (passkeys, and
  // retrieval rows in the practice's proportion), no text, in
  // <practice_output_dir>-examples-only; then the practice above from its
  // weights. 0: no first phase.
  int64_t practice_examples_only_steps = 0;
  std::string output_dir = "runs/extend-report";
  double factor = 4.0;                          // s
  std::vector<RopeType> methods = RopeTypes();  // all, in display order
  // Fine-tuning at length s*L.
  int64_t finetune_steps = 200;
  double finetune_lr = 5e-4;
  double finetune_min_lr = 5e-5;
  int64_t finetune_warmup_steps = 20;
  // Tokens per optimizer step; 0 = the base run's batch_size * seq_len (the
  // batch size shrinks by s so each step costs about the same).
  int64_t finetune_tokens_per_step = 0;
  // data.passkey_fraction of the fine-tunes; unset: the base config's.
  std::optional<double> finetune_passkey_fraction;
  // data.retrieval_fraction of the fine-tunes, with practice's tasks;
  // unset: the base config's fraction and tasks.
  std::optional<double> finetune_retrieval_fraction;
  std::vector<RopeType> finetune_skip = RopeTypesNotFinetuned();
  // finetune.lora: each fine-tuned method is fine-tuned a second time with
  // LoRA on the same budget (steps, tokens per step, warm-up and cosine):
  // these frozen-base settings (lora_finetune.lora.enabled when the key is
  // given), at peak rate lora_lr (0: finetune_lr; the minimum keeps
  // finetune's ratio).
  FinetuneSection lora_finetune;
  double lora_lr = 0.0;
  // Evaluation. Empty lengths mean {L/4, L/2, L, 2L, s*L, 2*s*L} (sorted,
  // unique): the short ones show what static scaling costs below L.
  std::vector<int64_t> lengths;
  int64_t documents = 10;
  LengthEvalMethod ppl_method = LengthEvalMethod::kTruncate;
  int64_t stride = 0;  // sliding only; 0 = L / 2
  // Empty: the perplexity lengths that fit the shortest passkey prompt.
  std::vector<int64_t> passkey_lengths;
  std::vector<double> depths = {0.0, 0.25, 0.5, 0.75, 1.0};
  int64_t trials = 10;
  // RULER-style retrieval (train/eval/retrieval.h) at the same depths; empty
  // lengths: each task at the passkey lengths that hold its prompt.
  std::vector<RetrievalTask> retrieval_tasks = AllRetrievalTasks();
  std::vector<int64_t> retrieval_lengths;
  int64_t retrieval_trials = 2;
  ExtendReportChecks checks;
  ReportExport export_format = ReportExport::kNone;
  int64_t threads = 0;
};

template <typename Visitor>
void VisitFields(Visitor& v, ExtendReportConfig& c) {
  using limits::kMaxEvalGridPoints;
  using limits::kMaxEvalTrials;
  using limits::kMaxSteps;
  const field::Choices<RopeType> methods{
      {RopeTypeName, RopeTypeFromName, RefuseMethod}, "rope_type names"};
  const field::Choices<RetrievalTask> tasks{
      {RetrievalTaskName, RetrievalTaskFromName, RefuseRetrievalTask},
      "retrieval task names"};
  v.Map(Key{"base", "the base model"}, [&](auto& base) {
    base(Key{"config", "its training config (required to train one)"},
         c.base_config, field::Text{});
    base(Key{"overrides", "key=value overrides of that config"},
         c.base_overrides, field::Strings{"key.path=value strings"});
    base(Key{"init_from", "an HF folder or checkpoint, used as it is"},
         c.base_init_from, field::Text{});
    base(Key{"data", "prepared data or a folder of text files"}, c.base_data,
         field::Text{});
    base.Map(
        Key{"practice", "passkey practice after the base run"},
        [&](auto& practice) {
          practice(Key{"steps", "steps of practice; 0: none"}, c.practice_steps,
                   field::Int{0, kMaxSteps});
          practice(Key{"passkey_fraction", "passkey rows in practice"},
                   c.practice_passkey_fraction, field::RealAbove{0.0, 1.0});
          practice(Key{"warmup_steps", "practice warm-up steps"},
                   c.practice_warmup_steps, field::Int{0, kMaxSteps});
          practice(Key{"output_dir", "the practice run's folder"},
                   c.practice_output_dir, field::Text{});
          practice(Key{"retrieval_fraction",
                       "RULER-style retrieval rows in practice"},
                   c.practice_retrieval_fraction, field::Real{0.0, 1.0});
          practice(Key{"retrieval_tasks", "the tasks of those rows"},
                   c.practice_retrieval_tasks, tasks);
          practice(Key{"examples_only_steps",
                       "a first phase without text rows; 0: none"},
                   c.practice_examples_only_steps, field::Int{0, kMaxSteps});
        });
  });
  v(Key{"output_dir", "report.md, report.html and the runs go here"},
    c.output_dir, field::Text{});
  v(Key{"factor", "s: the extended context over the base's"}, c.factor,
    field::RealAbove{1.0, 64.0});
  v(Key{"methods", "the scaling methods compared"}, c.methods, methods);
  v(Key{"export", "none, or hf: each fine-tune as an HF folder"},
    c.export_format,
    field::Parsed<ReportExport>{ReportExportName, ParseReportExport});
  v(Key{"threads", "threads; 0: all cores"}, c.threads,
    field::Int{0, limits::kMaxThreads});
  v.Map(Key{"finetune", "the fine-tunes at s*L"}, [&](auto& finetune) {
    finetune(Key{"steps", "steps per fine-tune; 0: zero-shot only"},
             c.finetune_steps, field::Int{0, kMaxSteps});
    finetune(Key{"lr", "peak learning rate"}, c.finetune_lr,
             field::Real{0.0, 10.0});
    finetune(Key{"min_lr", "where the cosine ends"}, c.finetune_min_lr,
             field::Real{0.0, 10.0});
    finetune(Key{"warmup_steps", "warm-up steps"}, c.finetune_warmup_steps,
             field::Int{0, kMaxSteps});
    finetune(Key{"tokens_per_step", "tokens per step; 0: the base run's"},
             c.finetune_tokens_per_step,
             field::Int{0, limits::kMaxBatchSize * limits::kMaxPositions});
    finetune(Key{"passkey_fraction", "passkey rows; absent: the base's"},
             c.finetune_passkey_fraction, field::Real{0.0, 1.0});
    finetune(Key{"retrieval_fraction", "retrieval rows; absent: the base's"},
             c.finetune_retrieval_fraction, field::Real{0.0, 1.0});
    finetune(Key{"skip", "methods not fine-tuned"}, c.finetune_skip, methods);
    finetune.Map(
        Key{"lora", "each fine-tune again with LoRA"},
        [&](auto& lora) {
          VisitFields(lora, c.lora_finetune.lora);
          lora(Key{"trainable", "also trained in full, as in training"},
               c.lora_finetune.trainable,
               field::Names{TrainableGroupNames, "parameter group names"});
          lora(Key{"lr", "the adapters' peak rate; 0: finetune.lr"}, c.lora_lr,
               field::Real{0.0, 10.0});
        },
        &c.lora_finetune.lora.enabled);
  });
  v.Map(Key{"eval", "perplexity, passkey and retrieval"}, [&](auto& eval) {
    eval(Key{"lengths", "perplexity lengths; empty: L/4, L/2, L, 2L, sL, 2sL"},
         c.lengths, field::Ints{"positive integers", kMaxEvalGridPoints});
    eval(Key{"documents", "documents per length"}, c.documents,
         field::Int{1, limits::kMaxEvalDocuments});
    eval(Key{"method", "truncate or sliding"}, c.ppl_method,
         field::Parsed<LengthEvalMethod>{LengthEvalMethodName,
                                         LengthEvalMethodFromName});
    eval(Key{"stride", "sliding only; 0: L / 2"}, c.stride,
         field::Int{0, limits::kMaxPositions});
    eval(Key{"passkey_lengths", "empty: those above that fit a prompt"},
         c.passkey_lengths,
         field::Ints{"positive integers", kMaxEvalGridPoints});
    eval(Key{"depths", "key depths in [0, 1]"}, c.depths,
         field::Numbers{"numbers in [0, 1]", kMaxEvalGridPoints});
    eval(Key{"trials", "passkey trials per length and depth"}, c.trials,
         field::Int{1, kMaxEvalTrials});
    eval(Key{"retrieval_tasks", "RULER-style tasks; []: none"},
         c.retrieval_tasks, tasks);
    eval(Key{"retrieval_lengths", "empty: the passkey lengths that fit"},
         c.retrieval_lengths,
         field::Ints{"positive integers", kMaxEvalGridPoints});
    eval(Key{"retrieval_trials", "examples per task, length and depth"},
         c.retrieval_trials, field::Int{1, kMaxEvalTrials});
  });
  v.Section(Key{"checks", "the expected outcome"}, c.checks);
}

// The first problem of a report config that its keys' ranges do not catch
// (base.config missing, finetune.min_lr above finetune.lr, dynamic
// fine-tuned, lengths out of range, ...).
std::optional<ConfigProblem> FindReportConfigProblem(
    const ExtendReportConfig& config);

// Parses a report config; `overrides` ("finetune.steps=50", ...) are applied
// first. Errors name the file, line and key.
ExtendReportConfig ParseExtendReportConfig(
    const std::string& yaml_text, const std::string& file,
    const std::vector<std::string>& overrides = {});
ExtendReportConfig LoadExtendReportConfig(
    const std::string& path, const std::vector<std::string>& overrides = {});

// The resolved report config as YAML, every default filled in (the report
// saves it as report_config.yaml); parsing it again gives the same config.
std::string ExtendReportConfigToYaml(const ExtendReportConfig& config);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_CONFIG_REPORT_CONFIG_H_
