#include "train/extend/runner.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <vector>

#include "core/error.h"
#include "core/parallel.h"
#include "train/checkpoint.h"
#include "train/data/data_dir.h"
#include "train/data/token_file.h"
#include "train/eval/length_eval.h"
#include "train/eval/passkey_eval.h"
#include "train/extend/recipe.h"
#include "train/extend/results.h"
#include "train/extend/writer.h"
#include "train/io/atomic_file.h"
#include "train/metrics.h"
#include "train/tokenizer/tokenizer.h"
#include "train/trainer.h"

namespace rotor::train {

namespace {

// A finished run found in `wanted.output_dir` (newest checkpoint
// `checkpoint`) is reused only if it is the run this report would start:
// the same starting weights, steps and data. Otherwise the report stops,
// naming what differs, rather than report on a model it did not ask for.
void CheckReusedRun(const std::string& checkpoint, const TrainConfig& wanted,
                    const std::string& what) {
  const TrainConfig saved = LoadCheckpointTrainConfig(checkpoint);
  std::string differences = DataStreamDifferences(saved, wanted);
  if (saved.train.init_from != wanted.train.init_from) {
    differences += StrCat(differences.empty() ? "" : ", ", "train.init_from '",
                          saved.train.init_from, "' (checkpoint) vs '",
                          wanted.train.init_from, "' (report)");
  }
  const std::string finetune = FinetuneDifferences(saved, wanted);
  if (!finetune.empty()) {
    differences += (differences.empty() ? "" : ", ") + finetune;
  }
  if (saved.train.max_steps != wanted.train.max_steps) {
    differences += StrCat(differences.empty() ? "" : ", ", "train.max_steps ",
                          saved.train.max_steps, " (checkpoint) vs ",
                          wanted.train.max_steps, " (report)");
  }
  ROTOR_CHECK(differences.empty(), what, ": ", wanted.output_dir,
              " holds another run (", checkpoint, ": ", differences,
              "); delete that folder to redo it, or point the report at "
              "another one");
}

// The newest checkpoint of a run and whether it reached max_steps.
struct RunStatus {
  std::string checkpoint;  // empty: none yet
  bool finished = false;
};
RunStatus StatusOf(const TrainConfig& config) {
  RunStatus status;
  const std::vector<std::string> checkpoints =
      ListCheckpoints(config.output_dir);
  if (checkpoints.empty()) return status;
  status.checkpoint = checkpoints.back();
  status.finished =
      LoadTrainerState(status.checkpoint).step >= config.train.max_steps;
  return status;
}

class ReportRunner {
 public:
  ReportRunner(const ExtendReportConfig& config, std::ostream& log)
      : config_(config), log_(log) {}

  ExtendReportSummary Run();

 private:
  void Say(const std::string& line) {
    log_ << "extend-report: " << line << std::endl;
  }
  // Trains `config` to its max_steps (saying `announcement` and where the
  // log <output_dir>/logs/<log_name>.log is) unless its output_dir holds a
  // finished run. A finished run must be the one asked for (CheckReusedRun,
  // naming it `reused`) unless `reused` is empty. Returns the run's newest
  // checkpoint.
  std::string TrainOrReuse(const TrainConfig& config, const std::string& reused,
                           const std::string& log_name,
                           const std::string& announcement);
  // Sets run_.base_checkpoint to the base run's, or the passkey practice's.
  void TrainBase();
  VariantResult Evaluate(nn::Transformer& model, RopeType method,
                         bool finetuned);
  VariantResult ZeroShot(RopeType method);
  VariantResult Finetuned(RopeType method, bool lora);
  // The stored result if there is one, else ZeroShot or Finetuned, stored.
  VariantResult RunVariant(RopeType method, bool finetuned, bool lora = false);

  const ExtendReportConfig& config_;
  std::ostream& log_;
  ReportPlan plan_;
  ReportRun run_;
  std::vector<std::vector<TokenId>> documents_;  // the perplexity documents
};

std::string ReportRunner::TrainOrReuse(const TrainConfig& config,
                                       const std::string& reused,
                                       const std::string& log_name,
                                       const std::string& announcement) {
  const RunStatus status = StatusOf(config);
  if (status.finished) {
    if (!reused.empty()) CheckReusedRun(status.checkpoint, config, reused);
    return status.checkpoint;
  }
  const std::string log_path = config_.output_dir + "/logs/" + log_name;
  Say(announcement + "; log: " + log_path + ")");
  std::ofstream log(log_path, std::ios::app);
  Trainer trainer(config, log);
  trainer.Run();
  return StatusOf(config).checkpoint;
}

void ReportRunner::TrainBase() {
  const TrainConfig& base = plan_.base;
  run_.base_checkpoint = TrainOrReuse(
      base, "", "base.log",
      StrCat("training the base model (", config_.base_config, " -> ",
             base.output_dir, ", ", base.train.max_steps, " steps"));
  run_.base_train_seconds =
      LoadTrainerState(run_.base_checkpoint).elapsed_seconds;
  Say("base model: " + run_.base_checkpoint);
  if (config_.practice_steps == 0) return;

  const TrainConfig practice =
      PracticeConfig(config_, plan_, run_.base_checkpoint);
  run_.base_checkpoint = TrainOrReuse(
      practice, "passkey practice", "practice.log",
      StrCat("passkey practice (", config_.practice_steps, " steps at length ",
             plan_.base_length, ", ", config_.practice_passkey_fraction,
             " passkey rows -> ", practice.output_dir));
  run_.practice_seconds =
      LoadTrainerState(run_.base_checkpoint).elapsed_seconds;
  Say("base model after passkey practice: " + run_.base_checkpoint);
}

VariantResult ReportRunner::Evaluate(nn::Transformer& model, RopeType method,
                                     bool finetuned) {
  VariantResult result;
  result.method = method;
  result.finetuned = finetuned;
  const double start = SteadySeconds();
  LengthEvalOptions ppl;
  ppl.lengths = plan_.lengths;
  ppl.num_documents = config_.documents;
  ppl.method = config_.ppl_method;
  ppl.stride = config_.stride > 0 ? config_.stride
                                  : std::max<int64_t>(plan_.base_length / 2, 1);
  result.perplexity = PerplexityByLength(model, documents_, ppl);
  PasskeyEvalOptions passkey;
  passkey.lengths = plan_.passkey_lengths;
  passkey.depths = config_.depths;
  passkey.trials = config_.trials;
  passkey.num_digits = static_cast<int>(plan_.base.data.passkey_digits);
  const std::unique_ptr<Tokenizer> tokenizer =
      LoadTokenizer(TokenizerSpecIn(ResolveDataDir(plan_.base.data.path)));
  result.passkey = EvaluatePasskey(model, *tokenizer, passkey);
  result.eval_seconds = SteadySeconds() - start;
  return result;
}

VariantResult ReportRunner::ZeroShot(RopeType method) {
  Say(VariantName(method, false) + ": evaluating the base weights with " +
      RopeTypeName(method));
  // The base checkpoint's own model settings, extended.
  const ModelConfig saved =
      LoadCheckpointTrainConfig(run_.base_checkpoint).model;
  auto model = LoadCheckpointModel(
      run_.base_checkpoint,
      ModelEdit{
          ExtendModelConfig(saved, method, config_.factor, plan_.base_length)});
  return Evaluate(*model, method, false);
}

VariantResult ReportRunner::Finetuned(RopeType method, bool lora) {
  const std::string name = VariantName(method, true, lora);
  const TrainConfig train =
      FinetuneConfig(config_, plan_, method, run_.base_checkpoint, lora);
  const std::string checkpoint = TrainOrReuse(
      train, name + " fine-tune",
      StrCat("finetune-", RopeTypeName(method), lora ? "-lora" : "", ".log"),
      StrCat(name, ": fine-tuning ", train.train.max_steps, " steps at length ",
             train.train.seq_len, lora ? " with LoRA" : "", " (batch ",
             train.train.batch_size));
  Say(name + ": evaluating " + checkpoint);
  auto model = LoadCheckpointModel(checkpoint, {});
  VariantResult result = Evaluate(*model, method, true);
  result.lora = lora;
  result.finetune_seconds = LoadTrainerState(checkpoint).elapsed_seconds;
  return result;
}

VariantResult ReportRunner::RunVariant(RopeType method, bool finetuned,
                                       bool lora) {
  const std::string name = VariantName(method, finetuned, lora);
  const std::string path =
      VariantResultPath(config_.output_dir, method, finetuned, lora);
  if (std::optional<VariantResult> done = LoadVariantResult(path)) {
    Say(name + ": done before (" + path + ")");
    return *done;
  }
  const VariantResult result =
      finetuned ? Finetuned(method, lora) : ZeroShot(method);
  SaveVariantResult(path, result);
  Say(name + ": " + VariantSummary(result, plan_.extended_length));
  return result;
}

ExtendReportSummary ReportRunner::Run() {
  const double start = SteadySeconds();
  SetNumThreads(static_cast<int>(config_.threads));
  plan_ = PlanReport(config_);
  // output_dir must be a folder rotor can write, before any training.
  for (const char* sub : {"/logs", "/results"}) {
    std::error_code error;
    std::filesystem::create_directories(config_.output_dir + sub, error);
    ROTOR_CHECK(!error, config_.file, ": output_dir ", config_.output_dir,
                " cannot hold the report (", config_.output_dir, sub, ": ",
                error.message(), "); name a folder, e.g. runs/report");
  }
  WriteFileAtomically(config_.output_dir + "/report_config.yaml",
                      ExtendReportConfigToYaml(config_));

  TrainBase();
  run_.val_path = ResolveDataDir(plan_.base.data.path) + "/val.bin";
  const TokenFile val(run_.val_path);
  documents_ = LongDocuments(val, plan_.lengths.back() + 1, config_.documents);

  std::vector<VariantResult> results;
  for (RopeType method : config_.methods) {
    results.push_back(RunVariant(method, false));
  }
  const std::vector<RopeType>& skip = config_.finetune_skip;
  for (RopeType method : config_.methods) {
    if (config_.finetune_steps == 0 ||
        std::find(skip.begin(), skip.end(), method) != skip.end()) {
      continue;
    }
    results.push_back(RunVariant(method, true));
    // The same budget with LoRA, for the full/LoRA comparison.
    if (config_.lora_finetune.lora.enabled) {
      results.push_back(RunVariant(method, true, /*lora=*/true));
    }
  }
  run_.invocation_seconds = SteadySeconds() - start;
  SaveAllResults(config_.output_dir, run_.base_checkpoint, plan_.base_length,
                 config_.factor, results);
  ExtendReportSummary summary;
  summary.seconds = run_.invocation_seconds;
  summary.report_path = WriteReport(config_, plan_, run_, results);
  Say("report: " + summary.report_path);
  return summary;
}

}  // namespace

ExtendReportSummary RunExtendReport(const ExtendReportConfig& config,
                                    std::ostream& log) {
  return ReportRunner(config, log).Run();
}

}  // namespace rotor::train
