#include "train/extend/runner.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/parallel.h"
#include "nn/lora.h"
#include "train/checkpoint.h"
#include "train/config/model_yaml.h"
#include "train/data/data_dir.h"
#include "train/data/prepare.h"
#include "train/data/token_file.h"
#include "train/eval/length_eval.h"
#include "train/eval/variant_eval.h"
#include "train/extend/recipe.h"
#include "train/extend/results.h"
#include "train/extend/writer.h"
#include "train/hf/hf_model.h"
#include "train/io/atomic_file.h"
#include "train/io/json.h"
#include "train/io/output_file.h"
#include "train/io/weights_hash.h"
#include "train/metrics.h"
#include "train/tokenizer/byte_tokenizer.h"
#include "train/tokenizer/tokenizer.h"
#include "train/trainer.h"

namespace rotor::train {

namespace {

// Whether two train.init_from values name the same checkpoint: the same
// text, or, spelt differently (a run folder and its newest checkpoint, a
// trailing slash), the same checkpoint folder once resolved.
bool SameInitFrom(const std::string& a, const std::string& b) {
  if (a == b) return true;
  if (a.empty() || b.empty()) return false;
  try {
    std::error_code error;
    const bool same = std::filesystem::equivalent(
        ResolveCheckpointPath(a), ResolveCheckpointPath(b), error);
    return !error && same;
  } catch (const Error&) {
    return false;  // one of them no longer resolves: not the same
  }
}

// A finished run found in `wanted.output_dir` (newest checkpoint
// `checkpoint`) is reused only if it is the run this report would start:
// the same starting weights, steps and data. Otherwise the report stops,
// naming what differs, rather than report on a model it did not ask for.
void CheckReusedRun(const std::string& checkpoint, const TrainConfig& wanted,
                    const std::string& what) {
  const TrainConfig saved = LoadCheckpointTrainConfig(checkpoint);
  std::string differences = DataStreamDifferences(saved, wanted);
  if (!SameInitFrom(saved.train.init_from, wanted.train.init_from)) {
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
  // naming it `reused`). Returns the run's newest checkpoint.
  std::string TrainOrReuse(const TrainConfig& config, const std::string& reused,
                           const std::string& log_name,
                           const std::string& announcement);
  // The fine-tuned variants to run, in order: (method, LoRA) for every
  // method not in finetune.skip, LoRA too when lora_finetune enables it.
  std::vector<std::pair<RopeType, bool>> FinetunedVariants() const;
  // Builds every training config the report will run (the practice and
  // each fine-tune) and checks it before anything trains: a share of rows
  // over 1 that only appears once the base config's passkey_fraction fills
  // in an absent finetune.passkey_fraction would otherwise stop the report
  // after its base training and practice.
  void CheckTrainingConfigs() const;
  // With report text files (plan_.text_files), prepares them with the
  // model's tokenizer into plan_.base.data.path; then checks that the data
  // folder's tokenizer is the model's.
  void PrepareData();
  // Sets run_.base_checkpoint to the existing base (base.init_from) or the
  // base run's, or to the passkey practice's.
  void TrainBase();
  // The grid every variant is evaluated on (grid_), its documents from
  // `val`.
  void PlanGrid(const TokenFile& val);
  VariantResult Evaluate(nn::Transformer& model, RopeType method,
                         bool finetuned);
  VariantResult ZeroShot(RopeType method);
  // `inputs`: the variant's (VariantInputs).
  VariantResult Finetuned(RopeType method, bool lora,
                          const std::map<std::string, std::string>& inputs);
  // The stored result if there is one, else ZeroShot or Finetuned, stored;
  // with `export: hf`, a fine-tuned model is also written as a Hugging Face
  // folder (ExportFinetuned).
  VariantResult RunVariant(RopeType method, bool finetuned, bool lora = false);
  // Writes the fine-tune of `method` as <output_dir>/export/<name>, its
  // LoRA adapters merged, unless an earlier invocation has (the folder is
  // written atomically, so one that exists is complete).
  void ExportFinetuned(RopeType method, bool lora);

  // What the result of a variant depends on (VariantResult::inputs): the
  // base's files, the tokenizer, the data, the method's settings (the
  // extended model config, or the fine-tune's whole training config) and
  // the evaluation grid, each as a fingerprint.
  std::map<std::string, std::string> VariantInputs(RopeType method,
                                                   bool finetuned,
                                                   bool lora) const;
  // Fingerprints of what every variant shares, once the base is known.
  void FingerprintSharedInputs();
  // A fine-tune folder trained from other inputs than `wanted` (the parts
  // but "eval"), or before the report recorded them, is removed with its
  // export, to train again.
  void DiscardStaleFinetune(const TrainConfig& train, RopeType method,
                            bool lora,
                            std::map<std::string, std::string> wanted);

  const ExtendReportConfig& config_;
  std::ostream& log_;
  ReportPlan plan_;
  ReportRun run_;
  std::map<std::string, std::string> shared_inputs_;  // base, tokenizer, data
  std::unique_ptr<Tokenizer> tokenizer_;              // the model's
  EvalGrid grid_;                                     // every variant's
};

std::string ReportRunner::TrainOrReuse(const TrainConfig& config,
                                       const std::string& reused,
                                       const std::string& log_name,
                                       const std::string& announcement) {
  const RunStatus status = StatusOf(config);
  if (status.finished) {
    CheckReusedRun(status.checkpoint, config, reused);
    return status.checkpoint;
  }
  const std::string log_path = config_.output_dir + "/logs/" + log_name;
  Say(announcement + "; log: " + log_path + ")");
  std::ofstream log(log_path, std::ios::app);
  Trainer trainer(config, log);
  trainer.Run();
  return StatusOf(config).checkpoint;
}

void ReportRunner::PrepareData() {
  const std::string& dir = plan_.base.data.path;
  if (!plan_.text_files.empty()) {
    // Preparing is fast and deterministic: the same files give the same
    // token files, so a rerun never changes what the runs were trained on.
    PrepareOptions prepare;
    prepare.inputs = {plan_.text_files};
    prepare.output = dir;
    prepare.tokenizer =
        plan_.tokenizer.empty() ? ByteTokenizer::kName : plan_.tokenizer;
    prepare.force = true;
    const PrepareSummary summary = RunPrepare(prepare);
    Say(StrCat("prepared ", plan_.text_files, " with ", prepare.tokenizer,
               " into ", dir, " (", summary.train.tokens, " training and ",
               summary.val.tokens, " validation tokens)"));
  }
  const std::string data_dir = ResolveDataDir(dir);
  const std::string data_tokenizer = TokenizerSpecIn(data_dir);
  if (plan_.tokenizer.empty()) plan_.tokenizer = data_tokenizer;
  ROTOR_CHECK(SameTokenizer(data_tokenizer, plan_.tokenizer), config_.file,
              ": base.data ", data_dir, " was prepared with tokenizer ",
              data_tokenizer, ", but the model's is ", plan_.tokenizer,
              "; prepare it with the model's (rotor prepare --tokenizer ",
              plan_.tokenizer,
              "), or name a folder of text files, which the report prepares");
}

void ReportRunner::TrainBase() {
  if (!plan_.init_from.empty()) {
    run_.base_checkpoint = ResolveCheckpointPath(plan_.init_from);
    Say(StrCat("base model: ", run_.base_checkpoint,
               " (an existing model, not trained here; L = ", plan_.base_length,
               ")"));
  } else {
    const TrainConfig& base = plan_.base;
    run_.base_checkpoint = TrainOrReuse(
        base, "base run", "base.log",
        StrCat("training the base model (", config_.base_config, " -> ",
               base.output_dir, ", ", base.train.max_steps, " steps"));
    run_.base_train_seconds =
        LoadTrainerState(run_.base_checkpoint).elapsed_seconds;
    Say("base model: " + run_.base_checkpoint);
  }
  if (config_.practice_steps == 0) return;

  if (config_.practice_examples_only_steps > 0) {
    const TrainConfig first =
        PracticeFirstPhaseConfig(config_, plan_, run_.base_checkpoint);
    run_.base_checkpoint = TrainOrReuse(
        first, "practice's first phase", "practice-examples-only.log",
        StrCat("practice's first phase (", config_.practice_examples_only_steps,
               " steps at length ", plan_.base_length, ", examples only -> ",
               first.output_dir));
    run_.practice_seconds +=
        LoadTrainerState(run_.base_checkpoint).elapsed_seconds;
  }
  const TrainConfig practice =
      PracticeConfig(config_, plan_, run_.base_checkpoint);
  run_.base_checkpoint = TrainOrReuse(
      practice, "passkey practice", "practice.log",
      StrCat("passkey practice (", PracticeDescription(config_), " at length ",
             plan_.base_length, " -> ", practice.output_dir));
  run_.practice_seconds +=
      LoadTrainerState(run_.base_checkpoint).elapsed_seconds;
  Say("base model after passkey practice: " + run_.base_checkpoint);
}

std::vector<std::pair<RopeType, bool>> ReportRunner::FinetunedVariants() const {
  std::vector<std::pair<RopeType, bool>> variants;
  if (config_.finetune_steps == 0) return variants;
  for (RopeType method : config_.methods) {
    const std::vector<RopeType>& skip = config_.finetune_skip;
    if (std::find(skip.begin(), skip.end(), method) != skip.end()) continue;
    // The same budget with LoRA, for the full/LoRA comparison.
    for (bool lora : {false, true}) {
      if (lora && !config_.lora_finetune.lora.enabled) continue;
      variants.emplace_back(method, lora);
    }
  }
  return variants;
}

void ReportRunner::CheckTrainingConfigs() const {
  // The builders check what they build; the checkpoint is only a name here.
  const std::string checkpoint =
      plan_.init_from.empty() ? "the base run's checkpoint" : plan_.init_from;
  if (config_.practice_steps > 0) {
    if (config_.practice_examples_only_steps > 0) {
      PracticeFirstPhaseConfig(config_, plan_, checkpoint);
    }
    PracticeConfig(config_, plan_, checkpoint);
  }
  for (const auto& [method, lora] : FinetunedVariants()) {
    FinetuneConfig(config_, plan_, method, checkpoint, lora);
  }
}

VariantResult ReportRunner::Evaluate(nn::Transformer& model, RopeType method,
                                     bool finetuned) {
  VariantResult result;
  const double start = SteadySeconds();
  // Each part's time: from the end of the previous one.
  double part_start = start;
  std::map<EvalPart, double> part_seconds;
  static_cast<VariantEvaluation&>(result) = EvaluateVariant(
      model, *tokenizer_, grid_, [&](EvalPart part, const VariantEvaluation&) {
        const double now = SteadySeconds();
        part_seconds[part] = now - part_start;
        part_start = now;
      });
  result.eval_seconds = SteadySeconds() - start;
  result.eval_part_seconds = part_seconds;
  result.method = method;
  result.finetuned = finetuned;
  return result;
}

void ReportRunner::PlanGrid(const TokenFile& val) {
  LengthEvalOptions& ppl = grid_.perplexity;
  ppl.lengths = plan_.lengths;
  ppl.num_documents = config_.documents;
  ppl.method = config_.ppl_method;
  ppl.stride = config_.stride > 0 ? config_.stride
                                  : std::max<int64_t>(plan_.base_length / 2, 1);
  grid_.documents =
      LongDocuments(val, plan_.lengths.back() + 1, config_.documents);
  PasskeyEvalOptions& passkey = grid_.passkey;
  passkey.lengths = plan_.passkey_lengths;
  passkey.depths = config_.depths;
  passkey.trials = config_.trials;
  passkey.num_digits = static_cast<int>(plan_.base.data.passkey_digits);
  for (const RetrievalTaskLengths& task : plan_.retrieval) {
    RetrievalEvalOptions retrieval;
    retrieval.tasks = {task.task};
    retrieval.lengths = task.lengths;
    retrieval.depths = config_.depths;
    retrieval.trials = config_.retrieval_trials;
    grid_.retrieval.push_back(retrieval);
  }
}

VariantResult ReportRunner::ZeroShot(RopeType method) {
  Say(VariantName(method, false) + ": evaluating the base weights with " +
      RopeTypeName(method));
  // The base's own model settings, extended.
  const ModelConfig saved =
      LoadCheckpointModelConfig(run_.base_checkpoint).model;
  ModelEdit edit;
  edit.model =
      ExtendModelConfig(saved, method, config_.factor, plan_.base_length);
  edit.source = StrCat(RopeTypeName(method), " x", config_.factor);
  auto model = LoadCheckpointModel(run_.base_checkpoint, edit);
  return Evaluate(*model, method, false);
}

VariantResult ReportRunner::Finetuned(
    RopeType method, bool lora,
    const std::map<std::string, std::string>& inputs) {
  const std::string name = VariantName(method, true, lora);
  const TrainConfig train =
      FinetuneConfig(config_, plan_, method, run_.base_checkpoint, lora);
  DiscardStaleFinetune(train, method, lora, inputs);
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
  const std::map<std::string, std::string> inputs =
      VariantInputs(method, finetuned, lora);
  if (std::optional<VariantResult> done = LoadVariantResult(path)) {
    const std::string stale = InputsDifferences(done->inputs, inputs);
    if (stale.empty()) {
      Say(name + ": done before (" + path + ")");
      done->reused = true;
      return *done;
    }
    Say(StrCat(name, ": ", path, " was computed from other inputs (",
               done->inputs.empty() ? "none recorded" : stale,
               "); computing it again"));
  }
  VariantResult result =
      finetuned ? Finetuned(method, lora, inputs) : ZeroShot(method);
  result.inputs = inputs;
  SaveVariantResult(path, result);
  Say(name + ": " + VariantSummary(result, plan_.extended_length));
  return result;
}

void ReportRunner::FingerprintSharedInputs() {
  // The base model's files, but its optimizer state: as large again as the
  // weights, and nothing a variant reads.
  std::vector<std::string> base_files = ModelFiles(run_.base_checkpoint);
  base_files.erase(
      std::remove_if(base_files.begin(), base_files.end(),
                     [](const std::string& file) {
                       return std::filesystem::path(file).filename() ==
                              "optimizer.safetensors";
                     }),
      base_files.end());
  shared_inputs_["base"] = FilesHash(base_files);
  const std::string tokenizer = TokenizerFile(plan_.tokenizer);
  shared_inputs_["tokenizer"] =
      tokenizer.empty() ? plan_.tokenizer : FilesHash({tokenizer});
  const std::string data = ResolveDataDir(plan_.base.data.path);
  shared_inputs_["data"] = FilesHash({data + "/train.bin", data + "/val.bin"});
}

std::map<std::string, std::string> ReportRunner::VariantInputs(
    RopeType method, bool finetuned, bool lora) const {
  std::map<std::string, std::string> inputs = shared_inputs_;
  if (finetuned) {
    TrainConfig train =
        FinetuneConfig(config_, plan_, method, run_.base_checkpoint, lora);
    // The same run at any thread count, and wherever its folders are (or
    // however their paths are spelled): what they hold is in the base,
    // tokenizer and data parts.
    train.train.threads = 0;
    train.output_dir.clear();
    train.train.init_from.clear();
    train.data.path.clear();
    train.data.tokenizer.clear();
    inputs["method"] = TextHash(TrainConfigToYaml(train));
  } else {
    const ModelConfig saved =
        LoadCheckpointModelConfig(run_.base_checkpoint).model;
    inputs["method"] = TextHash(YAML::Dump(ModelConfigToYaml(
        ExtendModelConfig(saved, method, config_.factor, plan_.base_length))));
  }
  Json retrieval = Json::array();
  for (const RetrievalTaskLengths& task : plan_.retrieval) {
    retrieval.push_back(
        {{"task", RetrievalTaskName(task.task)}, {"lengths", task.lengths}});
  }
  const Json grid = {{"lengths", plan_.lengths},
                     {"documents", config_.documents},
                     {"method", LengthEvalMethodName(config_.ppl_method)},
                     {"stride", config_.stride},
                     {"passkey_lengths", plan_.passkey_lengths},
                     {"depths", config_.depths},
                     {"trials", config_.trials},
                     {"passkey_digits", plan_.base.data.passkey_digits},
                     {"retrieval", retrieval},
                     {"retrieval_trials", config_.retrieval_trials}};
  inputs["eval"] = TextHash(grid.dump());
  return inputs;
}

void ReportRunner::DiscardStaleFinetune(
    const TrainConfig& train, RopeType method, bool lora,
    std::map<std::string, std::string> wanted) {
  wanted.erase("eval");  // evaluating otherwise needs no new training
  const std::map<std::string, std::string> stored =
      LoadInputsRecord(train.output_dir);
  if (!InputsDifferences(stored, wanted).empty()) {
    if (!ListCheckpoints(train.output_dir).empty()) {
      Say(StrCat(
          VariantName(method, true, lora), ": ", train.output_dir,
          " was trained from other inputs (",
          stored.empty() ? "none recorded" : InputsDifferences(stored, wanted),
          "); training it again"));
      std::filesystem::remove_all(train.output_dir);
    }
    // An export of an earlier fine-tune, even one whose folder is gone.
    std::filesystem::remove_all(
        ReportExportDir(config_.output_dir, method, lora));
  }
  SaveInputsRecord(train.output_dir, wanted);
}

void ReportRunner::ExportFinetuned(RopeType method, bool lora) {
  const std::string dir = ReportExportDir(config_.output_dir, method, lora);
  if (std::filesystem::exists(dir + "/" + kHfExportMarker)) return;
  const std::string checkpoint =
      StatusOf(
          FinetuneConfig(config_, plan_, method, run_.base_checkpoint, lora))
          .checkpoint;
  TrainConfig config;
  const auto model = LoadCheckpointModel(checkpoint, {}, &config);
  nn::MergeLora(*model);  // a LoRA run's W += (alpha / r) B A
  HfExportOptions options;
  options.dtype = DefaultExportDtype(config.model);
  WriteHfModelFolder(dir, *model, config.model,
                     CheckpointTokenizerSpec(checkpoint), options);
  Say(StrCat(VariantName(method, true, lora), ": exported to ", dir, " (",
             options.dtype, ")"));
}

ExtendReportSummary ReportRunner::Run() {
  const double start = SteadySeconds();
  SetNumThreads(static_cast<int>(config_.threads));
  plan_ = PlanReport(config_);
  CheckTrainingConfigs();
  // The report never writes into what it reads: `rotor prepare --force` of
  // its data, or a new run into its base's folder, would replace it.
  const std::string harm =
      "the report and its fine-tunes would be lost when that folder is "
      "replaced";
  for (const InputFolder& input :
       {InputFolder{config_.base_data, "the data folder", "base.data", harm},
        InputFolder{plan_.base.data.path, "the data folder",
                    "the base config's data.path", harm},
        InputFolder{plan_.init_from, "the base model folder", "base.init_from",
                    harm}}) {
    CheckOutputDirOutside(config_.file, config_.output_dir, input);
  }
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
  PrepareData();
  // The passkey prompts are built in the model's tokens.
  tokenizer_ = LoadTokenizer(plan_.tokenizer);

  TrainBase();
  FingerprintSharedInputs();
  run_.val_path = ResolveDataDir(plan_.base.data.path) + "/val.bin";
  PlanGrid(TokenFile(run_.val_path));

  std::vector<VariantResult> results;
  for (RopeType method : config_.methods) {
    results.push_back(RunVariant(method, false));
  }
  for (const auto& [method, lora] : FinetunedVariants()) {
    results.push_back(RunVariant(method, true, lora));
    if (config_.export_format == ReportExport::kHf) {
      ExportFinetuned(method, lora);
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
