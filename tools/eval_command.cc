// `rotor eval --checkpoint DIR`: validation loss, perplexity and bits per
// byte of a trained model on its validation split; with --lengths,
// perplexity against context length, and with --passkey, passkey-retrieval
// accuracy over lengths x depths (train/eval/validation.h,
// train/eval/length_eval.h, train/eval/passkey_eval.h). With --json, the
// same figures as one JSON object. The measuring is EvaluateVariant's
// (train/eval/variant_eval.h); this file turns the flags into its grid and
// shows what it measures: tables, plots and the JSON.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/limits.h"
#include "core/parallel.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "train/checkpoint.h"
#include "train/config/model_config.h"
#include "train/data/data_dir.h"
#include "train/data/prompt_tokens.h"
#include "train/data/token_file.h"
#include "train/eval/eval_request.h"
#include "train/eval/length_eval.h"
#include "train/eval/passkey_eval.h"
#include "train/eval/retrieval.h"
#include "train/eval/validation.h"
#include "train/eval/variant_eval.h"
#include "train/hf/hf_model.h"
#include "train/io/json.h"
#include "train/io/plot.h"
#include "train/io/plot_mark.h"
#include "train/tokenizer/tokenizer.h"

namespace rotor {
namespace tools {

namespace {

namespace fs = std::filesystem;

constexpr char kEvalDetails[] =
    "Evaluates a checkpoint on the validation split (val.bin) of its data:\n"
    "the mean cross-entropy per token, perplexity exp(loss) and bits per\n"
    "byte loss/ln 2 (tokens are bytes). Windows of seq-len tokens walk the\n"
    "file in order without overlap, so the number is reproducible.\n"
    "\n"
    "Context length (docs/context-extension.md, part 7.2):\n"
    "  rotor eval --checkpoint runs/default --lengths 256,512,1024,2048 \\\n"
    "      model.rope_scaling.rope_type=yarn model.rope_scaling.factor=4\n"
    "evaluates the same validation documents at each length and prints a\n"
    "table and draws a plot; key=value pairs override the checkpoint's\n"
    "config (RoPE settings only), which measures zero-shot extension.\n"
    "--rope-from PATH takes the RoPE settings of another config instead\n"
    "(e.g. configs/extend/dynamic-4x.yaml, or a Hugging Face model's\n"
    "config.json or folder); --rope-from A,B,... measures\n"
    "each in turn and draws their curves in one plot (--passkey uses the\n"
    "first). --passkey adds passkey retrieval over --passkey-lengths x\n"
    "--depths, in the model's tokens whatever its tokenizer; its filler is\n"
    "the Landmark sentences, or the validation text (--passkey-filler).\n"
    "--retrieval TASKS adds RULER-style retrieval tasks on the same grid\n"
    "(docs/context-extension.md, \"Retrieval tasks\"), drawn as one heat\n"
    "map (--retrieval-plot).\n"
    "\n"
    "The plots go to --plot and --passkey-plot, by default\n"
    "ppl_by_length.png and passkey.png in the working folder. A plot\n"
    "rotor drew there (its PNG carries rotor's mark) is replaced, so the\n"
    "same eval runs again; any other existing file only with --force.\n"
    "\n"
    "--json prints every figure as one JSON object at full precision\n"
    "instead of the text (numbers JSON cannot hold, such as an infinite\n"
    "perplexity, as null); plots are still drawn, and the object names\n"
    "them (\"plot\", or null and \"plot_problem\" when none was drawn).";

// 0 or empty stands for "the checkpoint config's value".
struct EvalOptions {
  std::string checkpoint;
  std::string data;
  int64_t seq_len = 0;
  int64_t batch_size = 0;
  int64_t max_batches = 0;
  int64_t threads = 0;
  std::string precision;               // "": the run's train.precision
  std::vector<std::string> rope_from;  // the first is the model's RoPE
  std::vector<std::string> overrides;
  // Perplexity against length, passkey and retrieval; the flags below fill
  // the rest of it in RunEval.
  train::EvalRequest request;
  std::string method = "truncate";
  std::string passkey_filler = "landmark";  // or "validation"
  std::string retrieval;                    // a comma list of tasks
  std::string plot = "ppl_by_length.png";
  std::string passkey_plot = "passkey.png";
  std::string retrieval_plot = "retrieval.png";
  bool force = false;
  bool json = false;
};

// Bits per byte uses the split's bytes per token (TokenFile::BitsPerByte),
// so models with different tokenizers compare on one scale.
void PrintPerplexityTable(const std::vector<train::LengthPerplexity>& results,
                          const train::TokenFile& val) {
  std::printf("%8s  %10s  %9s  %11s  %9s\n", "length", "tokens", "loss",
              "perplexity", "bits/byte");
  for (const train::LengthPerplexity& r : results) {
    std::printf("%8lld  %10lld  %9.4f  %11.3f  %9.4f\n",
                static_cast<long long>(r.length),
                static_cast<long long>(r.tokens), r.loss, r.perplexity,
                val.BitsPerByte(r.loss));
  }
}

void PrintPasskeyTable(const std::vector<train::PasskeyCell>& cells,
                       const std::vector<int64_t>& lengths,
                       const std::vector<double>& depths) {
  std::printf(
      "passkey accuracy (rows: context length, columns: depth; digits: the "
      "share of answer digits right, chance 10%%)\n");
  std::printf("%8s", "length");
  for (double depth : depths) std::printf("  %6.2f", depth);
  std::printf("  %6s  %6s\n", "mean", "digits");
  for (size_t l = 0; l < lengths.size(); ++l) {
    std::printf("%8lld", static_cast<long long>(lengths[l]));
    for (size_t d = 0; d < depths.size(); ++d) {
      std::printf("  %5.0f%%", 100.0 * cells[l * depths.size() + d].accuracy());
    }
    std::printf("  %5.0f%%  %5.0f%%\n",
                100.0 * train::PasskeyAccuracyAt(cells, lengths[l]),
                100.0 * train::PasskeyDigitAccuracyAt(cells, lengths[l]));
  }
}

// One table per retrieval task: accuracy by length and depth, and RULER's
// string_match_all averaged over the depths.
void PrintRetrievalTable(const std::vector<train::RetrievalCell>& cells,
                         const train::RetrievalEvalOptions& retrieval) {
  const size_t per_task = retrieval.lengths.size() * retrieval.depths.size();
  for (size_t t = 0; t < retrieval.tasks.size(); ++t) {
    std::printf(
        "%s accuracy (rows: context length, columns: depth; match: RULER's "
        "string_match_all)\n",
        train::RetrievalTaskName(retrieval.tasks[t]));
    std::printf("%8s", "length");
    for (double depth : retrieval.depths) std::printf("  %6.2f", depth);
    std::printf("  %6s\n", "match");
    for (size_t l = 0; l < retrieval.lengths.size(); ++l) {
      std::printf("%8lld", static_cast<long long>(retrieval.lengths[l]));
      double match = 0.0;
      for (size_t d = 0; d < retrieval.depths.size(); ++d) {
        const train::RetrievalCell& cell =
            cells[t * per_task + l * retrieval.depths.size() + d];
        std::printf("  %5.0f%%", 100.0 * cell.accuracy());
        match += cell.string_match_all();
      }
      std::printf("  %5.0f%%\n",
                  100.0 * match / static_cast<double>(retrieval.depths.size()));
    }
  }
}

// Reports a drawn plot or why there is none: the line "plot <png>" or the
// reason, or with --json the members "plot" (the file, or null) and
// "plot_problem" (the reason) of `section`.
void ReportPlot(const EvalOptions& options, const std::string& png,
                const std::string& problem, train::Json& section) {
  if (options.json) {
    section["plot"] = problem.empty() ? train::Json(png) : train::Json(nullptr);
    if (!problem.empty()) section["plot_problem"] = problem;
    return;
  }
  std::printf("%s\n", problem.empty() ? ("plot         " + png).c_str()
                                      : problem.c_str());
}

void RunValidation(nn::Transformer& model, const EvalOptions& options,
                   const train::TokenFile& val, int64_t batch_size,
                   int64_t seq_len, const train::DocumentPacking& documents,
                   train::Json& report) {
  const train::ValidationResult result =
      Evaluate(model, val, batch_size, seq_len, options.max_batches, documents);
  if (options.json) {
    report["data"] = val.path();
    report["seq_len"] = seq_len;
    report["tokens"] = result.tokens;
    report["loss"] = result.loss;
    report["perplexity"] = train::FiniteOrNull(result.perplexity);
    report["bits_per_byte"] = result.bits_per_byte;
    return;
  }
  std::printf("checkpoint   %s\n", options.checkpoint.c_str());
  std::printf("data         %s (%lld tokens evaluated, seq_len %lld)\n",
              val.path().c_str(), static_cast<long long>(result.tokens),
              static_cast<long long>(seq_len));
  std::printf("val_loss     %.4f nats/token\n", result.loss);
  std::printf("perplexity   %.6g\n", result.perplexity);  // inf past 709.8 nats
  std::printf("bits/byte    %.4f\n", result.bits_per_byte);
}

// The --json form of the table above.
train::Json PerplexityTableJson(
    const std::vector<train::LengthPerplexity>& results,
    const train::TokenFile& val) {
  train::Json rows = train::Json::array();
  for (const train::LengthPerplexity& r : results) {
    rows.push_back(train::RecordJson(r, train::RecordForm::kShown));
    rows.back()["bits_per_byte"] = val.BitsPerByte(r.loss);
  }
  return rows;
}

// The lengths this run evaluates, for the context-extension lint: --lengths
// and --passkey-lengths (passkey and retrieval), or the validation's
// sequence length.
train::ExtensionLengths EvaluatedLengths(const EvalOptions& options,
                                         const train::TrainConfig& config) {
  train::ExtensionLengths lengths;
  const std::vector<int64_t>& by_length = options.request.perplexity.lengths;
  const bool grid = options.request.HasGrid();
  const std::vector<int64_t>& passkey =
      grid ? options.request.passkey_grid.lengths : std::vector<int64_t>{};
  if (by_length.empty() && !grid) {
    lengths.eval_lengths = {options.seq_len > 0 ? options.seq_len
                                                : config.train.seq_len};
    lengths.eval_lengths_key =
        options.seq_len > 0 ? "--seq-len" : "train.seq_len";
    return lengths;
  }
  lengths.eval_lengths = options.request.GivenLengths();
  lengths.eval_lengths_key = passkey.empty() ? "--lengths"
                             : by_length.empty()
                                 ? "--passkey-lengths"
                                 : "--lengths and --passkey-lengths";
  return lengths;
}

// The context-extension lint of each model this run evaluates (the
// checkpoint with each --rope-from file and the overrides) against the
// lengths it evaluates, before anything slow: errors stop the run. An
// edited model is also checked against the checkpoint's pre-training
// length.
void LintEvaluatedModels(const EvalOptions& options) {
  const std::vector<std::string> rope_from = options.rope_from.empty()
                                                 ? std::vector<std::string>{""}
                                                 : options.rope_from;
  for (const std::string& file : rope_from) {
    const train::TrainConfig in_force = train::LoadCheckpointModelConfig(
        options.checkpoint,
        RopeOverrideEdit(options.checkpoint, file, options.overrides));
    EnforceRopeLint(options.checkpoint, file, options.overrides, in_force.model,
                    EvaluatedLengths(options, in_force), "eval");
  }
}

// A curve's name in the plot: the RoPE type, and with several --rope-from
// files the file's name too.
std::string CurveName(const EvalOptions& options, size_t index,
                      const train::TrainConfig& config) {
  const std::string type = RopeTypeName(config.model.rope.rope_type);
  if (options.rope_from.size() < 2) return type;
  return StrCat(type, " (", fs::path(options.rope_from[index]).stem().string(),
                ")");
}

train::LineSeries Curve(const std::string& name,
                        const std::vector<train::LengthPerplexity>& results) {
  train::LineSeries series;
  series.title = name;
  for (const train::LengthPerplexity& r : results) {
    series.x.push_back(static_cast<double>(r.length));
    series.y.push_back(r.perplexity);
  }
  return series;
}

// The perplexity table of the model (`results`) and of each other
// --rope-from file, measured here on the same documents and lengths, and
// their curves in one plot.
void ShowPerplexityByLength(const std::vector<train::LengthPerplexity>& results,
                            const train::EvalGrid& grid,
                            const train::Tokenizer& tokenizer,
                            const EvalOptions& options,
                            const train::TokenFile& val,
                            const train::TrainConfig& config,
                            train::Json& report) {
  const char* rope_type = RopeTypeName(config.model.rope.rope_type);
  const train::LengthEvalOptions& length_eval = grid.perplexity;
  const bool truncate =
      length_eval.method == train::LengthEvalMethod::kTruncate;
  const int64_t trained_length =
      train::TrainedLength(options.checkpoint, config);
  train::Json section = train::Json::object();
  if (options.json) {
    section["method"] = train::LengthEvalMethodName(length_eval.method);
    section["trained_length"] = trained_length;
    if (!truncate) section["stride"] = length_eval.stride;
    section["documents"] = length_eval.num_documents;
    section["data"] = val.path();
    section["results"] = PerplexityTableJson(results, val);
  } else {
    std::printf(
        "perplexity   %s, %lld documents of %s\n",
        truncate
            ? "truncate (each document cut to L tokens)"
            : ("sliding, stride " + std::to_string(length_eval.stride)).c_str(),
        static_cast<long long>(length_eval.num_documents), val.path().c_str());
    PrintPerplexityTable(results, val);
  }
  train::LineChart chart;
  chart.title =
      options.rope_from.size() < 2
          ? std::string("perplexity against context length (") + rope_type + ")"
          : std::string("perplexity against context length");
  chart.x_label = "context length (tokens)";
  chart.y_label = "perplexity";
  chart.log_x = true;
  chart.log_y = true;
  chart.series.push_back(Curve(CurveName(options, 0, config), results));
  // The other --rope-from files: the same checkpoint, documents and
  // lengths with each one's RoPE settings, a table and a curve each.
  train::EvalGrid perplexity_only;
  perplexity_only.perplexity = grid.perplexity;
  perplexity_only.documents = grid.documents;
  train::Json compared = train::Json::array();
  for (size_t i = 1; i < options.rope_from.size(); ++i) {
    train::TrainConfig other;
    auto other_model = train::LoadCheckpointModel(
        options.checkpoint,
        RopeOverrideEdit(options.checkpoint, options.rope_from[i],
                         options.overrides),
        &other);
    const std::vector<train::LengthPerplexity> other_results =
        train::EvaluateVariant(*other_model, tokenizer, perplexity_only)
            .perplexity;
    const std::string name = CurveName(options, i, other);
    if (options.json) {
      compared.push_back(
          {{"rope_from", options.rope_from[i]},
           {"rope_type", RopeTypeName(other.model.rope.rope_type)},
           {"results", PerplexityTableJson(other_results, val)}});
    } else {
      std::printf("rope         %s from %s\n", name.c_str(),
                  options.rope_from[i].c_str());
      PrintPerplexityTable(other_results, val);
    }
    chart.series.push_back(Curve(name, other_results));
  }
  if (options.json && !compared.empty()) section["compared"] = compared;
  chart.vertical_lines.push_back({static_cast<double>(trained_length),
                                  StrCat("trained at ", trained_length)});
  ReportPlot(options, options.plot, train::DrawLineChart(chart, options.plot),
             section);
  if (options.json) report["perplexity_by_length"] = std::move(section);
}

// A heat map of the cells' accuracies: a column per depth, and a row per
// depths.size() consecutive cells, labelled by `row_label` of its first.
template <typename Cell, typename RowLabel>
train::HeatMap AccuracyHeatMap(std::string title, const char* x_label,
                               const char* y_label,
                               const std::vector<double>& depths,
                               const std::vector<Cell>& cells,
                               const RowLabel& row_label) {
  train::HeatMap map;
  map.title = std::move(title);
  map.x_label = x_label;
  map.y_label = y_label;
  for (double depth : depths) map.column_labels.push_back(StrCat(depth));
  for (size_t row = 0; row * depths.size() < cells.size(); ++row) {
    map.row_labels.push_back(row_label(cells[row * depths.size()]));
    std::vector<double> values;
    for (size_t d = 0; d < depths.size(); ++d) {
      values.push_back(cells[row * depths.size() + d].accuracy());
    }
    map.values.push_back(values);
  }
  return map;
}

// The --json form of the passkey table: every cell, then the accuracy per
// length (the table's "mean" and "digits" columns).
train::Json PasskeyTableJson(const std::vector<train::PasskeyCell>& cells,
                             const train::PasskeyEvalOptions& passkey_eval) {
  train::Json length_rows = train::Json::array();
  for (const int64_t length : passkey_eval.lengths) {
    length_rows.push_back(
        {{"length", length},
         {"accuracy", train::PasskeyAccuracyAt(cells, length)},
         {"digit_accuracy", train::PasskeyDigitAccuracyAt(cells, length)}});
  }
  return {{"lengths", passkey_eval.lengths},
          {"depths", passkey_eval.depths},
          {"trials", passkey_eval.trials},
          {"cells", train::RecordsJson(cells, train::RecordForm::kShown)},
          {"by_length", std::move(length_rows)}};
}

// Retrieval is a task a model learns from examples: none right at any
// length usually means it never practised, which the table alone does not
// say.
void PrintPasskeyHint(const std::vector<train::PasskeyCell>& cells,
                      const train::TrainConfig& config) {
  for (const train::PasskeyCell& cell : cells) {
    if (cell.accuracy() > 0.0) return;
  }
  std::printf(
      "no key retrieved: a model learns retrieval only from passkey rows in "
      "training (data.passkey_fraction, %g for this model); "
      "docs/context-extension.md, 7.1 \"passkey practice\", gives a short "
      "run that teaches it (data.passkey_fraction=0.75)\n",
      config.data.passkey_fraction);
}

void ShowPasskey(const std::vector<train::PasskeyCell>& cells,
                 const train::PasskeyEvalOptions& passkey_eval,
                 const EvalOptions& options, const train::TrainConfig& config,
                 train::Json& report) {
  train::Json section = train::Json::object();
  if (options.json) {
    section = PasskeyTableJson(cells, passkey_eval);
  } else {
    PrintPasskeyTable(cells, passkey_eval.lengths, passkey_eval.depths);
    PrintPasskeyHint(cells, config);
  }
  const train::HeatMap map = AccuracyHeatMap(
      StrCat("passkey retrieval (", RopeTypeName(config.model.rope.rope_type),
             ")"),
      "depth of the key (0 = start, 1 = end)", "context length",
      passkey_eval.depths, cells,
      [](const train::PasskeyCell& first) { return StrCat(first.length); });
  ReportPlot(options, options.passkey_plot,
             train::DrawHeatMap(map, options.passkey_plot), section);
  if (options.json) report["passkey"] = std::move(section);
}

// The --json form of the retrieval tables: every cell.
train::Json RetrievalJson(const std::vector<train::RetrievalCell>& cells,
                          const train::RetrievalEvalOptions& retrieval) {
  train::Json tasks = train::Json::array();
  for (const train::RetrievalTask task : retrieval.tasks) {
    tasks.push_back(train::RetrievalTaskName(task));
  }
  return {{"tasks", std::move(tasks)},
          {"lengths", retrieval.lengths},
          {"depths", retrieval.depths},
          {"trials", retrieval.trials},
          {"cells", train::RecordsJson(cells, train::RecordForm::kShown)}};
}

// As with the passkey: no question answered, in any task or cell, usually
// means the model never learned retrieval, which the tables alone do not
// say.
void PrintRetrievalHint(const std::vector<train::RetrievalCell>& cells,
                        const EvalOptions& options,
                        const train::TrainConfig& config) {
  if (train::AnyRetrievalAnswered(cells)) return;
  std::printf(
      "no retrieval question answered: %s; check --passkey at the length it "
      "was trained at (%lld) first, and if that fails too, 7.1 \"passkey "
      "practice\" gives a short run that teaches it\n",
      train::RetrievalUnansweredReason(config.data.passkey_fraction,
                                       "this model")
          .c_str(),
      static_cast<long long>(train::TrainedLength(options.checkpoint, config)));
}

// One heat map of every task: a row per task and length, a column per
// depth, as the passkey's.
train::HeatMap RetrievalHeatMap(const std::vector<train::RetrievalCell>& cells,
                                const train::RetrievalEvalOptions& retrieval,
                                const train::TrainConfig& config) {
  return AccuracyHeatMap(
      StrCat("retrieval (", RopeTypeName(config.model.rope.rope_type), ")"),
      "depth of the needle (0 = start, 1 = end)", "task, context length",
      retrieval.depths, cells, [](const train::RetrievalCell& first) {
        return StrCat(train::RetrievalTaskName(first.task), " ", first.length);
      });
}

// The retrieval tasks on the passkey grid (train/eval/retrieval.h).
void ShowRetrieval(const std::vector<train::RetrievalCell>& cells,
                   const train::RetrievalEvalOptions& retrieval,
                   const EvalOptions& options, const train::TrainConfig& config,
                   train::Json& report) {
  train::Json section = train::Json::object();
  if (options.json) {
    section = RetrievalJson(cells, retrieval);
  } else {
    PrintRetrievalTable(cells, retrieval);
    PrintRetrievalHint(cells, options, config);
  }
  ReportPlot(options, options.retrieval_plot,
             train::DrawHeatMap(RetrievalHeatMap(cells, retrieval, config),
                                options.retrieval_plot),
             section);
  if (options.json) report["retrieval"] = std::move(section);
}

void RunEval(const EvalOptions& given) {
  EvalOptions options = given;
  train::EvalRequest& request = options.request;
  if (!options.retrieval.empty()) {  // refused before loading
    request.retrieval = train::ParseRetrievalTasks(options.retrieval);
  }
  request.perplexity.method = train::LengthEvalMethodFromName(options.method);
  request.validation_filler = options.passkey_filler == "validation";
  const std::vector<int64_t>& lengths = request.perplexity.lengths;
  const bool grid = request.HasGrid();
  CheckDistinctValues("--rope-from", options.rope_from);
  SetNumThreads(static_cast<int>(options.threads));
  if (options.rope_from.size() > 1 && lengths.empty()) {
    throw CLI::ValidationError(
        "several --rope-from files compare perplexity against length: give "
        "--lengths");
  }
  LintEvaluatedModels(options);
  train::TrainConfig config;
  auto model = train::LoadCheckpointModel(
      options.checkpoint,
      RopeOverrideEdit(options.checkpoint,
                       options.rope_from.empty() ? "" : options.rope_from[0],
                       options.overrides),
      &config);
  // Keys as long as the ones the model practised on.
  request.passkey_grid.num_digits =
      static_cast<int>(config.data.passkey_digits);
  request.model_lengths = {train::PretrainedLength(config.model),
                           config.model.rope.max_position_embeddings};
  const auto precision =
      UsePrecision(options.precision, config, options.checkpoint);
  // Passkey and retrieval alone, on the fixed filler, need no data: a
  // downloaded model without any is evaluated so.
  const bool needs_data = !grid || request.ReadsValidation();
  const bool has_data = !options.data.empty() || !config.data.path.empty();
  ROTOR_CHECK(!needs_data || has_data, options.checkpoint,
              " is a Hugging Face model folder, which names no data; give "
              "--data DIR (prepared with the model's tokenizer: rotor "
              "prepare --tokenizer ",
              options.checkpoint,
              "), or evaluate passkey or retrieval alone on the fixed filler");
  std::optional<train::TokenFile> val;
  if (has_data) {
    const std::string data_dir = train::ResolveDataDir(
        options.data.empty() ? config.data.path : options.data);
    train::CheckSameTokenizer(options.checkpoint, data_dir);
    val.emplace(data_dir + "/val.bin");
  }
  const std::unique_ptr<train::Tokenizer> tokenizer = train::LoadTokenizer(
      train::TokenizerSpecIn(train::ResolveCheckpointPath(options.checkpoint)));
  // Every input is open now: check the plots before the slow part.
  if (!lengths.empty()) {
    train::CheckPlotOutputFile(options.plot, options.force, "--plot");
  }
  if (request.passkey) {
    train::CheckPlotOutputFile(options.passkey_plot, options.force,
                               "--passkey-plot");
  }
  if (!request.retrieval.empty()) {
    train::CheckPlotOutputFile(options.retrieval_plot, options.force,
                               "--retrieval-plot");
  }
  train::Json report = {{"checkpoint", options.checkpoint}};
  if (lengths.empty() && !grid) {
    RunValidation(
        *model, options, *val,
        options.batch_size > 0 ? options.batch_size : config.train.batch_size,
        options.seq_len > 0 ? options.seq_len : config.train.seq_len,
        config.data.documents, report);
  } else {
    const RopeScalingConfig& rope = config.model.rope;
    if (options.json) {
      report["rope"] = {
          {"rope_type", RopeTypeName(rope.rope_type)},
          {"max_position_embeddings", rope.max_position_embeddings}};
    } else {
      std::printf("checkpoint   %s\n", options.checkpoint.c_str());
      std::printf("rope         %s (max_position_embeddings %lld)\n",
                  RopeTypeName(rope.rope_type),
                  static_cast<long long>(rope.max_position_embeddings));
    }
    const train::EvalGrid grid =
        train::PlanEvalGrid(request, val ? &*val : nullptr);
    // Each part is shown as soon as it is measured.
    train::EvaluateVariant(
        *model, *tokenizer, grid,
        [&](train::EvalPart part, const train::VariantEvaluation& measured) {
          if (part == train::EvalPart::kPerplexity) {
            ShowPerplexityByLength(measured.perplexity, grid, *tokenizer,
                                   options, *val, config, report);
          } else if (part == train::EvalPart::kPasskey) {
            ShowPasskey(measured.passkey, grid.passkey, options, config,
                        report);
          } else {
            ShowRetrieval(measured.retrieval, grid.retrieval[0], options,
                          config, report);
          }
        });
  }
  if (options.json) std::printf("%s\n", report.dump().c_str());
}

}  // namespace

void AddEvalCommand(CLI::App& rotor) {
  CLI::App* command = AddCommand(
      rotor, "eval",
      "validation loss, perplexity and bits per byte of a checkpoint",
      kEvalDetails);
  auto options = std::make_shared<EvalOptions>();
  AddCheckpointOption(*command, options->checkpoint);
  command
      ->add_option("--data", options->data,
                   "data folder (default: the checkpoint config's)")
      ->type_name("PATH");
  AddIntegerOption(*command, "--seq-len", options->seq_len, 1,
                   limits::kMaxPositions,
                   "context length (default: the training seq_len)");
  AddIntegerOption(*command, "--batch-size", options->batch_size, 1,
                   limits::kMaxBatchSize,
                   "windows per batch (default: training batch_size)");
  AddIntegerOption(*command, "--max-batches", options->max_batches, 0,
                   "stop after N batches; 0 = the whole file (default)");
  AddListOption(*command, "--lengths", options->request.perplexity.lengths,
                IntegerAtLeast<int64_t>(1, limits::kMaxPositions),
                "perplexity at each context length, e.g. 256,1024");
  command
      ->add_option("--method", options->method,
                   "truncate (default): each document cut to L tokens,\n"
                   "one window; sliding: windows of L slide by --stride\n"
                   "over the first max(lengths) tokens of each document")
      ->type_name("M")
      ->check(CLI::IsMember({"truncate", "sliding"}));
  AddIntegerOption(*command, "--stride", options->request.stride, 1,
                   limits::kMaxPositions,
                   "sliding stride (default: the shortest length / 2)");
  AddIntegerOption(
      *command, "--documents", options->request.perplexity.num_documents, 1,
      limits::kMaxEvalDocuments, "validation documents (default 10)");
  command
      ->add_option("--plot", options->plot,
                   "perplexity plot (default ppl_by_length.png; a plot\n"
                   "rotor drew there is replaced)")
      ->type_name("FILE");
  command->add_flag("--passkey", options->request.passkey,
                    "also measure passkey retrieval");
  AddListOption(*command, "--passkey-lengths",
                options->request.passkey_grid.lengths,
                IntegerAtLeast<int64_t>(1, limits::kMaxPositions),
                "passkey context lengths (default: --lengths, else the\n"
                "model's pre-training length and max_position_embeddings)");
  AddListOption(*command, "--depths", options->request.passkey_grid.depths,
                NumberIn(0.0, 1.0),
                "key depths in [0, 1] (default 0,0.25,0.5,0.75,1)");
  AddIntegerOption(*command, "--trials", options->request.passkey_grid.trials,
                   1, limits::kMaxEvalTrials,
                   "examples per length and depth (default 10)");
  command
      ->add_option("--passkey-filler", options->passkey_filler,
                   "landmark (default): the Landmark sentences;\n"
                   "validation: the tokens of the data's val.bin")
      ->type_name("F")
      ->check(CLI::IsMember({"landmark", "validation"}));
  command
      ->add_option("--retrieval", options->retrieval,
                   "RULER-style tasks on the passkey grid, a comma list\n"
                   "of niah_single, niah_multikey, niah_multivalue,\n"
                   "variable_tracking")
      ->type_name("TASKS")
      ->check(NotEmpty());
  command
      ->add_option("--passkey-plot", options->passkey_plot,
                   "heat map (default passkey.png; a plot rotor drew\n"
                   "there is replaced)")
      ->type_name("FILE");
  command
      ->add_option("--retrieval-plot", options->retrieval_plot,
                   "heat map of the retrieval tasks (default retrieval.png)")
      ->type_name("FILE");
  command
      ->add_option("--rope-from", options->rope_from,
                   "use the max_position_embeddings, rope_theta and\n"
                   "rope_scaling of FILE's model: section, or of a\n"
                   "Hugging Face config.json or model folder (any PATH\n"
                   "rope --config takes); several files (A,B): one\n"
                   "curve each in the plot")
      ->type_name("PATH")
      ->delimiter(',');
  AddForceOption(*command, options->force);
  command->add_flag("--json", options->json,
                    "print one JSON object instead of the text");
  AddThreadsOption(*command, options->threads);
  AddPrecisionOption(*command, options->precision);
  AddRopeOverrideArguments(*command, options->overrides);
  command->callback([options] {
    const train::EvalRequest& request = options->request;
    RequireAtMostItems(request.perplexity.lengths, limits::kMaxEvalGridPoints,
                       "--lengths");
    RequireAtMostItems(request.passkey_grid.lengths, limits::kMaxEvalGridPoints,
                       "--passkey-lengths");
    RequireAtMostItems(request.passkey_grid.depths, limits::kMaxEvalGridPoints,
                       "--depths");
    RunEval(*options);
  });
}

}  // namespace tools
}  // namespace rotor
