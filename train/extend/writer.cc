#include "train/extend/writer.h"

#include <iomanip>
#include <iterator>
#include <map>
#include <sstream>

#include "core/error.h"
#include "nn/rope_scaling.h"
#include "train/config/model_edit.h"
#include "train/extend/rope_explorer.h"
#include "train/io/atomic_file.h"
#include "train/io/markdown_html.h"
#include "train/io/plot.h"
#include "train/metrics.h"

namespace rotor::train {

namespace {

std::string Fixed(double value, int digits) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(digits) << value;
  return out.str();
}

std::string Percent(double fraction) {
  return Fixed(100.0 * fraction, 0) + "%";
}

// "yarn + fine-tune", "yarn + LoRA fine-tune", "yarn (zero-shot)": a row
// of the tables.
std::string VariantLabel(const VariantResult& r) {
  return std::string(RopeTypeName(r.method)) + (!r.finetuned ? " (zero-shot)"
                                                : r.lora ? " + LoRA fine-tune"
                                                         : " + fine-tune");
}

// "r 8, alpha 16, dropout 0.05, q_proj v_proj; trainable: norm".
std::string LoraSettingsText(const FinetuneSection& finetune) {
  const LoraConfig& lora = finetune.lora;
  std::string text = StrCat("r ", lora.r, ", alpha ", lora.alpha, ", dropout ",
                            lora.dropout, " on");
  for (const std::string& target : lora.target_modules) text += " " + target;
  if (!finetune.trainable.empty()) {
    text += "; trained in full:";
    for (const std::string& entry : finetune.trainable) text += " " + entry;
  }
  return text;
}

// A heat map of `variants` by length: a row per variant, the first at the
// top (gnuplot draws row 0 at the bottom), a column per length of `lengths`
// labelled `column_labels`, value_at(variant, length) in each cell.
template <typename ValueAt>
HeatMap VariantsByLength(const std::string& title,
                         const std::vector<const VariantResult*>& variants,
                         const std::vector<int64_t>& lengths,
                         std::vector<std::string> column_labels,
                         ValueAt value_at) {
  HeatMap map;
  map.title = title;
  map.x_label = "context length (tokens)";
  map.column_labels = std::move(column_labels);
  for (auto it = variants.rbegin(); it != variants.rend(); ++it) {
    map.row_labels.push_back(VariantLabel(**it));
    std::vector<double> row;
    for (int64_t length : lengths) row.push_back(value_at(**it, length));
    map.values.push_back(row);
  }
  return map;
}

// The retrieval lengths of a report, each with the number of tasks measured
// there, and the number of tasks measured at any length.
struct RetrievalColumns {
  std::vector<int64_t> lengths;  // ascending
  std::vector<int> tasks;        // per length
  int measured_tasks = 0;
  bool All(size_t column) const { return tasks[column] == measured_tasks; }
  bool AllEverywhere() const {
    for (size_t c = 0; c < lengths.size(); ++c) {
      if (!All(c)) return false;
    }
    return true;
  }
  // "1 of 2": short, so that the labels of neighbouring columns fit.
  std::string Tasks(size_t column) const {
    return StrCat(tasks[column], " of ", measured_tasks);
  }
  // "400" or, where not every task fits, "400 (1 of 2)".
  std::string Label(size_t column) const {
    return All(column) ? StrCat(lengths[column])
                       : StrCat(lengths[column], " (", Tasks(column), ")");
  }
};

RetrievalColumns ColumnsOf(const std::vector<RetrievalTaskLengths>& plan) {
  std::map<int64_t, int> tasks_at;
  RetrievalColumns columns;
  for (const RetrievalTaskLengths& task : plan) {
    if (!task.lengths.empty()) ++columns.measured_tasks;
    for (int64_t length : task.lengths) ++tasks_at[length];
  }
  for (const auto& [length, tasks] : tasks_at) {
    columns.lengths.push_back(length);
    columns.tasks.push_back(tasks);
  }
  return columns;
}

class ReportWriter {
 public:
  ReportWriter(const ExtendReportConfig& config, const ReportPlan& plan,
               const ReportRun& run, const std::vector<VariantResult>& results)
      : config_(config),
        plan_(plan),
        run_(run),
        results_(results),
        base_(FindVariant(results, RopeType::kDefault, false)),
        base_at_l_(base_ ? PerplexityAt(*base_, plan.base_length) : nullptr) {}

  std::string Write();

 private:
  // Each plot returns whether it was drawn; problems go to plot_notes_.
  bool Drawn(const std::string& problem);
  bool DrawPerplexityPlots();
  bool DrawPasskeyOverview();
  std::vector<std::string> DrawDepthMaps();  // the variants drawn
  // retrieval.png: variants by length, the mean over tasks and depths.
  bool DrawRetrievalOverview();

  void WriteIntro();
  void WritePerplexity(bool have_plots);
  void WritePasskey(bool have_overview,
                    const std::vector<std::string>& depth_maps);
  // The head of a table with a row per variant and a column per length.
  void WriteLengthsHeader(const std::vector<int64_t>& lengths);
  // One row per variant, one column per passkey length.
  template <typename AccuracyAt>
  void WritePasskeyTable(AccuracyAt accuracy_at);
  // One table per retrieval task: a row per variant, a column per length,
  // whole answers and RULER's string_match_all; the overview, and why
  // nothing was answered when nothing was.
  void WriteRetrieval(bool have_overview);
  void WriteChecks();
  void WriteTime();
  // The time table's evaluations split into their parts (perplexity,
  // passkey, retrieval), a row per variant.
  void WriteEvalParts();
  void WriteSettings();
  // Every piece, wherever it was done (earlier invocations included): the
  // base run's and fine-tunes' elapsed_seconds and each evaluation's time.
  double AllSeconds() const;

  const ExtendReportConfig& config_;
  const ReportPlan& plan_;
  const ReportRun& run_;
  const std::vector<VariantResult>& results_;
  const VariantResult* base_;          // default (zero-shot)
  const LengthPerplexity* base_at_l_;  // its perplexity at L
  std::vector<std::string> plot_notes_;
  std::ostringstream md_;
};

std::string ReportWriter::Write() {
  const bool have_ppl_plots = DrawPerplexityPlots();
  const bool have_overview = DrawPasskeyOverview();
  const std::vector<std::string> depth_maps = DrawDepthMaps();
  const bool have_retrieval_overview = DrawRetrievalOverview();
  WriteIntro();
  WritePerplexity(have_ppl_plots);
  WritePasskey(have_overview, depth_maps);
  WriteRetrieval(have_retrieval_overview);
  WriteChecks();
  WriteTime();
  WriteSettings();
  const std::string path = config_.output_dir + "/report.md";
  WriteFileAtomically(path, md_.str());
  // report.html: the same text and tables, the plots drawn by the RoPE
  // explorer beside each method's frequencies, in one file.
  ExplorerModel model;
  model.name = "the base model of this report";
  model.model = plan_.base.model;
  model.original_length = plan_.base_length;
  model.factor = config_.factor;
  model.measured = results_;
  WriteFileAtomically(config_.output_dir + "/report.html",
                      RopeExplorerPage("Context extension report",
                                       MarkdownToHtml(md_.str()), {model}));
  return path;
}

bool ReportWriter::Drawn(const std::string& problem) {
  if (!problem.empty()) plot_notes_.push_back(problem);
  return problem.empty();
}

bool ReportWriter::DrawPerplexityPlots() {
  const int64_t l = plan_.base_length;
  const int64_t sl = plan_.extended_length;
  bool drawn = true;
  for (bool finetuned : {false, true}) {
    LineChart chart;
    chart.title = finetuned ? StrCat("after ", config_.finetune_steps,
                                     " fine-tuning steps at ", sl, " tokens")
                            : "zero-shot: base weights, scaled RoPE";
    chart.x_label = "context length (tokens)";
    chart.y_label = "perplexity (bytes)";
    chart.log_x = true;
    chart.log_y = true;
    chart.vertical_lines = {
        {static_cast<double>(l), StrCat("L = ", l)},
        {static_cast<double>(sl), StrCat(config_.factor, "L")}};
    // The fine-tuned chart has the base model as a dashed reference.
    for (const VariantResult& r : results_) {
      const bool reference = finetuned && &r == base_;
      if (r.finetuned != finetuned && !reference) continue;
      LineSeries series;
      series.title = reference ? "base (zero-shot default)"
                     : r.lora  ? RopeTypeName(r.method) + std::string(" LoRA")
                               : RopeTypeName(r.method);
      series.dashed = reference;
      for (const LengthPerplexity& p : r.perplexity) {
        series.x.push_back(static_cast<double>(p.length));
        series.y.push_back(p.perplexity);
      }
      chart.series.push_back(series);
    }
    if (chart.series.size() <= (finetuned ? 1u : 0u)) continue;
    drawn &= Drawn(DrawLineChart(
        chart, config_.output_dir +
                   (finetuned ? "/ppl_finetuned.png" : "/ppl_zeroshot.png")));
  }
  return drawn;
}

bool ReportWriter::DrawPasskeyOverview() {
  std::vector<const VariantResult*> variants;
  for (const VariantResult& r : results_) variants.push_back(&r);
  std::vector<std::string> labels;
  for (int64_t length : plan_.passkey_lengths) labels.push_back(StrCat(length));
  const HeatMap overview = VariantsByLength(
      "passkey accuracy (mean over depths)", variants, plan_.passkey_lengths,
      labels, [](const VariantResult& r, int64_t length) {
        return PasskeyAccuracyAt(r.passkey, length);
      });
  return Drawn(DrawHeatMap(overview, config_.output_dir + "/passkey.png"));
}

// One map for all tasks rather than one per task: report.md's table per
// task gives each task's numbers already, and one picture (one chart in
// report.html, as the passkey's) shows at a glance where retrieval holds.
bool ReportWriter::DrawRetrievalOverview() {
  const RetrievalColumns columns = ColumnsOf(plan_.retrieval);
  std::vector<const VariantResult*> variants;
  for (const VariantResult& r : results_) {
    if (!r.retrieval.empty()) variants.push_back(&r);
  }
  if (columns.lengths.empty() || variants.empty()) return false;
  std::vector<std::string> labels;
  for (size_t c = 0; c < columns.lengths.size(); ++c) {
    labels.push_back(columns.Label(c));
  }
  HeatMap overview = VariantsByLength(
      "retrieval accuracy (mean over tasks and depths)", variants,
      columns.lengths, labels, [](const VariantResult& r, int64_t length) {
        const std::optional<double> accuracy =
            RetrievalMeanAccuracyAt(r.retrieval, length);
        ROTOR_CHECK(accuracy, VariantLabel(r), ": no retrieval result at ",
                    length, " tokens");
        return *accuracy;
      });
  if (!columns.AllEverywhere()) {
    overview.x_label =
        "context length (tokens; in parentheses, tasks measured)";
  }
  return Drawn(DrawHeatMap(overview, config_.output_dir + "/retrieval.png"));
}

std::vector<std::string> ReportWriter::DrawDepthMaps() {
  std::vector<std::string> drawn;
  const size_t depths = config_.depths.size();
  for (const VariantResult& r : results_) {
    HeatMap map;
    map.title = "passkey: " + VariantLabel(r);
    map.x_label = "depth of the key (0 = start, 1 = just before the question)";
    map.y_label = "context length";
    for (double depth : config_.depths) {
      map.column_labels.push_back(StrCat(depth));
    }
    for (size_t li = 0; li < plan_.passkey_lengths.size(); ++li) {
      map.row_labels.push_back(StrCat(plan_.passkey_lengths[li]));
      std::vector<double> row;
      for (size_t d = 0; d < depths; ++d) {
        row.push_back(r.passkey[li * depths + d].accuracy());
      }
      map.values.push_back(row);
    }
    const std::string name = VariantName(r.method, r.finetuned, r.lora);
    const std::string file = config_.output_dir + "/passkey_" + name + ".png";
    if (Drawn(DrawHeatMap(map, file))) drawn.push_back(name);
  }
  return drawn;
}

void ReportWriter::WriteIntro() {
  const int64_t sl = plan_.extended_length;
  md_ << "# Context extension report\n\n"
      << "Base model `" << run_.base_checkpoint << "` (";
  if (!plan_.init_from.empty()) {
    md_ << "an existing model, not trained here";
  } else {
    md_ << "config `" << config_.base_config << "`";
  }
  for (const std::string& o : config_.base_overrides) md_ << " `" << o << "`";
  if (config_.practice_steps > 0) {
    md_ << ", then passkey practice: " << PracticeDescription(config_);
  }
  md_ << "), trained at **L = " << plan_.base_length << "** tokens, extended "
      << "by **s = " << config_.factor << "** to **" << sl
      << "** tokens with each RoPE scaling method: zero-shot (base weights, "
         "scaled RoPE) and after **"
      << config_.finetune_steps << "** fine-tuning steps at " << sl << " tokens"
      << (config_.lora_finetune.lora.enabled
              ? ", each fine-tuned in full and with LoRA on the same budget"
              : "")
      << ". Produced by `rotor extend-report " << config_.file
      << "`; docs/context-extension.md explains the methods and how to read "
         "this.\n\n";
}

void ReportWriter::WritePerplexity(bool have_plots) {
  const int64_t l = plan_.base_length;
  const int64_t sl = plan_.extended_length;
  md_ << "## Perplexity against context length\n\n"
      << "Perplexity per token (tokenizer `" << plan_.tokenizer
      << "`) on the same " << config_.documents
      << " validation documents at every length (`" << run_.val_path << "`), "
      << (config_.ppl_method == LengthEvalMethod::kTruncate
              ? "each cut to its first L tokens and scored in one window "
                "(YaRN's protocol), so the number at L averages positions 0 "
                "to L-1"
              : StrCat("scored with sliding windows of L tokens, stride ",
                       config_.stride > 0 ? config_.stride : l / 2,
                       ", over the first ", plan_.lengths.back(),
                       " tokens (every length scores the same tokens)"))
      << ". Last column: perplexity at " << sl
      << " divided by the base model's at " << l << ".\n\n| model |";
  for (int64_t length : plan_.lengths) md_ << " " << length << " |";
  md_ << " ratio " << sl << "/" << l << " |\n|---|";
  for (size_t i = 0; i < plan_.lengths.size(); ++i) md_ << "---:|";
  md_ << "---:|\n";
  for (const VariantResult& r : results_) {
    md_ << "| " << VariantLabel(r) << " |";
    for (int64_t length : plan_.lengths) {
      const LengthPerplexity* p = PerplexityAt(r, length);
      const char* bold = length == (r.finetuned ? sl : l) ? "**" : "";
      md_ << " " << bold << (p ? Fixed(p->perplexity, 3) : "-") << bold << " |";
    }
    const LengthPerplexity* p = PerplexityAt(r, sl);
    md_ << " "
        << (p && base_at_l_ ? Fixed(p->perplexity / base_at_l_->perplexity, 3)
                            : "-")
        << " |\n";
  }
  md_ << "\nBold: the length the weights were trained at.\n\n";
  if (have_plots) {
    md_ << "![zero-shot perplexity](ppl_zeroshot.png)\n\n";
    if (config_.finetune_steps > 0) {
      md_ << "![fine-tuned perplexity](ppl_finetuned.png)\n\n";
    }
  }
}

void ReportWriter::WriteLengthsHeader(const std::vector<int64_t>& lengths) {
  md_ << "| model |";
  for (int64_t length : lengths) md_ << " " << length << " |";
  md_ << "\n|---|";
  for (size_t i = 0; i < lengths.size(); ++i) md_ << "---:|";
  md_ << "\n";
}

template <typename AccuracyAt>
void ReportWriter::WritePasskeyTable(AccuracyAt accuracy_at) {
  WriteLengthsHeader(plan_.passkey_lengths);
  for (const VariantResult& r : results_) {
    md_ << "| " << VariantLabel(r) << " |";
    for (int64_t length : plan_.passkey_lengths) {
      md_ << " " << Percent(accuracy_at(r.passkey, length)) << " |";
    }
    md_ << "\n";
  }
  md_ << "\n";
}

void ReportWriter::WritePasskey(bool have_overview,
                                const std::vector<std::string>& depth_maps) {
  md_ << "## Passkey retrieval\n\n"
      << "A " << plan_.base.data.passkey_digits
      << "-digit key hidden in filler text at depths";
  for (double depth : config_.depths) md_ << " " << depth;
  md_ << " (0 = start, 1 = just before the question), " << config_.trials
      << " examples per length and depth, the same keys for every model. "
         "Retrieved = greedy decoding writes all "
      << plan_.base.data.passkey_digits
      << " digits (train/eval/passkey_eval.h). Mean accuracy over depths:\n\n";
  WritePasskeyTable(PasskeyAccuracyAt);
  if (have_overview) md_ << "![passkey accuracy](passkey.png)\n\n";
  md_ << "Partial credit: the share of answer digits right, each given the "
         "true digits before it (chance: 10%). It shows retrieval that is "
         "forming before whole keys come out right:\n\n";
  WritePasskeyTable(PasskeyDigitAccuracyAt);
  if (!depth_maps.empty()) {
    md_ << "By depth (length x depth heat maps):";
    for (const std::string& name : depth_maps) {
      md_ << " [" << name << "](passkey_" << name << ".png)";
    }
    md_ << "\n\n";
  }
}

void ReportWriter::WriteRetrieval(bool have_overview) {
  if (plan_.retrieval.empty()) return;
  md_ << "## Retrieval (RULER-style)\n\n"
      << "RULER's tasks (docs/context-extension.md, 7.5.1) at the passkey "
         "depths, "
      << config_.retrieval_trials
      << " examples per task, length and depth, the same examples for every "
         "model. An example counts when greedy decoding writes every expected "
         "value (train/eval/retrieval.h); in parentheses, RULER's "
         "string_match_all (the share of the values written) where it "
         "differs. Mean over depths.\n\n";
  for (const RetrievalTaskLengths& task : plan_.retrieval) {
    md_ << "### " << RetrievalTaskName(task.task) << "\n\n";
    if (task.lengths.empty()) {
      md_ << "Not measured: its prompt needs up to "
          << RetrievalMinLength(task.task)
          << " tokens, more than any length here.\n\n";
      continue;
    }
    WriteLengthsHeader(task.lengths);
    for (const VariantResult& r : results_) {
      md_ << "| " << VariantLabel(r) << " |";
      for (int64_t length : task.lengths) {
        const std::optional<double> accuracy =
            RetrievalAccuracyAt(r.retrieval, task.task, length);
        const std::optional<double> match =
            RetrievalMatchAt(r.retrieval, task.task, length);
        if (!accuracy) {
          md_ << " - |";
          continue;
        }
        md_ << " " << Percent(*accuracy);
        if (Percent(*match) != Percent(*accuracy)) {
          md_ << " (" << Percent(*match) << ")";
        }
        md_ << " |";
      }
      md_ << "\n";
    }
    md_ << "\n";
  }
  if (have_overview) {
    const RetrievalColumns columns = ColumnsOf(plan_.retrieval);
    md_ << "All tasks together, the mean over the tasks measured at each "
           "length and over depths";
    for (size_t c = 0; c < columns.lengths.size(); ++c) {
      if (columns.All(c)) continue;
      md_ << " (at a length marked \"" << columns.Tasks(c)
          << "\", only that many of the tasks' prompts fit)";
      break;
    }
    md_ << ":\n\n![retrieval accuracy](retrieval.png)\n\n";
  }
  bool measured = false, answered = false;
  for (const VariantResult& r : results_) {
    measured |= !r.retrieval.empty();
    answered |= AnyRetrievalAnswered(r.retrieval);
  }
  if (measured && !answered) {
    // The model every variant starts from: the practised base, if any.
    const double passkey_fraction = config_.practice_steps > 0
                                        ? config_.practice_passkey_fraction
                                        : plan_.base.data.passkey_fraction;
    md_ << "No retrieval question was answered, by any model: "
        << RetrievalUnansweredReason(passkey_fraction, "the base model")
        << ". If the passkey above is not retrieved at L = "
        << plan_.base_length
        << " either, 7.1 \"passkey practice\" gives a short run that "
           "teaches it (`base.practice` in the report config).\n\n";
  }
}

void ReportWriter::WriteChecks() {
  const ExtendReportChecks& checks = config_.checks;
  const int64_t l = plan_.base_length;
  const int64_t sl = plan_.extended_length;
  const auto met = [](bool yes) { return yes ? "yes" : "no"; };
  md_ << "## Checks\n\n| expectation | measured | met |\n|---|---|:-:|\n";
  if (base_at_l_ != nullptr) {
    if (const LengthPerplexity* p = PerplexityAt(*base_, sl)) {
      const double ratio = p->perplexity / base_at_l_->perplexity;
      md_ << "| unscaled RoPE degrades sharply at " << sl
          << " (zero-shot, ratio > " << checks.zeroshot_ppl_ratio_min << ") | "
          << Fixed(p->perplexity, 3) << " vs "
          << Fixed(base_at_l_->perplexity, 3) << " at " << l << " (x"
          << Fixed(ratio, 2) << ") | "
          << met(ratio > checks.zeroshot_ppl_ratio_min) << " |\n";
    }
    for (const RopeType method : {RopeType::kYarn, RopeType::kLinear}) {
      const VariantResult* r = FindVariant(results_, method, true);
      const LengthPerplexity* p = r ? PerplexityAt(*r, sl) : nullptr;
      if (p == nullptr) continue;
      const double ratio = p->perplexity / base_at_l_->perplexity;
      md_ << "| " << RopeTypeName(method) << " + " << config_.finetune_steps
          << " steps: perplexity at " << sl << " within "
          << Percent(checks.finetuned_ppl_ratio_max - 1.0) << " of the base at "
          << l << " | " << Fixed(p->perplexity, 3) << " (x" << Fixed(ratio, 3)
          << ") | " << met(ratio <= checks.finetuned_ppl_ratio_max) << " |\n";
    }
    const VariantResult* yarn = FindVariant(results_, RopeType::kYarn, true);
    if (yarn != nullptr && HasPasskeyLength(*yarn, sl) &&
        HasPasskeyLength(*base_, l)) {
      const double base_accuracy = PasskeyAccuracyAt(base_->passkey, l);
      const double accuracy = PasskeyAccuracyAt(yarn->passkey, sl);
      md_ << "| passkey at " << sl << " after yarn fine-tuning >= "
          << Percent(checks.finetuned_passkey_min) << " (base at " << l
          << " >= " << Percent(checks.base_passkey_min) << ") | "
          << Percent(accuracy) << " (base at " << l << ": "
          << Percent(base_accuracy) << ") | "
          << met(accuracy >= checks.finetuned_passkey_min &&
                 base_accuracy >= checks.base_passkey_min)
          << " |\n";
    }
  }
  // Expected of a recipe that practises the RULER tasks only (the base
  // config's data, the practice, or the fine-tunes' data): a model that
  // never saw them answers none (the retrieval section says so).
  const bool practised =
      plan_.base.data.retrieval_fraction > 0 ||
      (config_.practice_steps > 0 && config_.practice_retrieval_fraction > 0) ||
      config_.finetune_retrieval_fraction.value_or(0) > 0;
  const VariantResult* yarn_finetuned =
      FindVariant(results_, RopeType::kYarn, true);
  const std::optional<double> niah =
      yarn_finetuned != nullptr && practised
          ? RetrievalAccuracyAt(yarn_finetuned->retrieval,
                                RetrievalTask::kNiahSingle, sl)
          : std::nullopt;
  if (niah) {
    md_ << "| niah_single at " << sl << " after yarn fine-tuning >= "
        << Percent(checks.finetuned_niah_single_min) << " | " << Percent(*niah)
        << " | " << met(*niah >= checks.finetuned_niah_single_min) << " |\n";
  }
  const double all_seconds = AllSeconds();
  md_ << "| the whole comparison (base training included) under "
      << FormatDuration(checks.max_seconds) << " | "
      << FormatDuration(all_seconds) << " | "
      << met(all_seconds < checks.max_seconds) << " |\n\n";
}

double ReportWriter::AllSeconds() const {
  double seconds = run_.base_train_seconds + run_.practice_seconds;
  for (const VariantResult& r : results_) {
    seconds += r.eval_seconds + r.finetune_seconds;
  }
  return seconds;
}

void ReportWriter::WriteTime() {
  md_ << "## Time\n\nOn this machine ("
      << (config_.threads > 0 ? StrCat(config_.threads) : std::string("all"))
      << " threads); base training: "
      << (plan_.init_from.empty() ? FormatDuration(run_.base_train_seconds)
                                  : std::string("none (an existing model)"))
      << (config_.practice_steps > 0
              ? ", passkey practice: " + FormatDuration(run_.practice_seconds)
              : std::string())
      << ".\n\n| method | fine-tune | evaluate zero-shot | evaluate "
         "fine-tuned |";
  const bool lora = config_.lora_finetune.lora.enabled;
  md_ << (lora ? " LoRA fine-tune | evaluate LoRA |\n|---|---:|---:|---:|---:|"
                 "---:|\n"
               : "\n|---|---:|---:|---:|\n");
  const auto seconds = [](const VariantResult* r,
                          double VariantResult::*field) {
    return r ? FormatDuration(r->*field) : std::string("-");
  };
  for (RopeType method : config_.methods) {
    const VariantResult* zero = FindVariant(results_, method, false);
    const VariantResult* tuned = FindVariant(results_, method, true);
    md_ << "| " << RopeTypeName(method) << " | "
        << seconds(tuned, &VariantResult::finetune_seconds) << " | "
        << seconds(zero, &VariantResult::eval_seconds) << " | "
        << seconds(tuned, &VariantResult::eval_seconds) << " |";
    if (lora) {
      const VariantResult* adapted = FindVariant(results_, method, true, true);
      md_ << " " << seconds(adapted, &VariantResult::finetune_seconds) << " | "
          << seconds(adapted, &VariantResult::eval_seconds) << " |";
    }
    md_ << "\n";
  }
  md_ << "\nTotal: " << FormatDuration(AllSeconds())
      << " (this invocation: " << FormatDuration(run_.invocation_seconds)
      << ").";
  // A stored result is reused only when what it was computed from is the
  // same (VariantResult::inputs); say which were.
  std::string reused;
  for (const VariantResult& r : results_) {
    if (!r.reused) continue;
    reused += (reused.empty() ? "" : ", ") +
              VariantName(r.method, r.finetuned, r.lora);
  }
  if (!reused.empty()) {
    md_ << " Reused from an earlier invocation, computed from the same base, "
           "tokenizer, data, method settings and evaluation grid: "
        << reused << ".";
  }
  md_ << "\n\n";
  WriteEvalParts();
}

void ReportWriter::WriteEvalParts() {
  md_ << "Each evaluation by part (\"-\": not in the grid, or stored before "
         "the report timed its parts):\n\n| model |";
  for (EvalPart part : kEvalParts) md_ << " " << EvalPartName(part) << " |";
  md_ << " evaluation |\n|---|";
  for (size_t i = 0; i < std::size(kEvalParts); ++i) md_ << "---:|";
  md_ << "---:|\n";
  for (const VariantResult& r : results_) {
    md_ << "| " << VariantLabel(r) << " |";
    for (EvalPart part : kEvalParts) {
      const auto seconds = r.eval_part_seconds.find(part);
      md_ << " "
          << (seconds == r.eval_part_seconds.end()
                  ? std::string("-")
                  : FormatDuration(seconds->second))
          << " |";
    }
    md_ << " " << FormatDuration(r.eval_seconds) << " |\n";
  }
  md_ << "\n";
}

void ReportWriter::WriteSettings() {
  const TrainConfig& base = plan_.base;
  md_ << "## Settings\n\n"
      << "- Fine-tuning: `train.init_from` the base checkpoint, "
      << config_.finetune_steps << " steps at seq_len " << plan_.extended_length
      << ", " << FinetuneTokensPerStep(config_, base) << " tokens per step, lr "
      << config_.finetune_lr << " -> " << config_.finetune_min_lr
      << " (cosine) after " << config_.finetune_warmup_steps
      << " warm-up steps, the base config's data (passkey share "
      << FinetunePasskeyFraction(config_, base) << ", loss on "
      << PasskeyLossName(base.data.passkey_loss) << " tokens). Runs: `"
      << config_.output_dir << "/finetune/<method>`; logs: `"
      << config_.output_dir << "/logs/`.\n";
  if (config_.lora_finetune.lora.enabled) {
    const TrainConfig lora =
        FinetuneConfig(config_, plan_, RopeType::kYarn, run_.base_checkpoint,
                       /*lora=*/true);
    md_ << "- LoRA fine-tunes (`finetune.lora`): the same steps, tokens and "
           "schedule with the base frozen: "
        << LoraSettingsText(config_.lora_finetune) << "; lr " << lora.train.lr
        << " -> " << lora.train.min_lr << ". Runs: `" << config_.output_dir
        << "/finetune/<method>-lora` (docs/lora.md).\n";
  }
  if (config_.export_format == ReportExport::kHf) {
    md_ << "- Exports (`export: hf`): each fine-tuned model as a Hugging Face "
           "folder, LoRA merged, in `"
        << config_.output_dir << "/export/<method>`.\n";
  }
  md_ << "- Methods (`model.*` overrides on the base config):\n";
  for (RopeType method : config_.methods) {
    md_ << "  - " << RopeTypeName(method) << ":";
    const ModelConfig model = ExtendModelConfig(
        base.model, method, config_.factor, plan_.base_length);
    for (const std::string& o : RopeEditText(model)) {
      md_ << " `" << o << "`";
    }
    md_ << "\n";
  }
  md_ << "- Not fine-tuned:";
  for (RopeType method : config_.finetune_skip) {
    md_ << " " << RopeTypeName(method);
  }
  md_ << " (dynamic NTK is a zero-shot method: its L0 is "
         "max_position_embeddings).\n";
  for (const std::string& problem : plot_notes_) md_ << "- " << problem << "\n";
}

}  // namespace

std::string WriteReport(const ExtendReportConfig& config,
                        const ReportPlan& plan, const ReportRun& run,
                        const std::vector<VariantResult>& results) {
  return ReportWriter(config, plan, run, results).Write();
}

std::string VariantSummary(const VariantResult& result, int64_t length) {
  const LengthPerplexity* p = PerplexityAt(result, length);
  return StrCat(
      "perplexity ", p ? Fixed(p->perplexity, 3) : "-", " at ", length,
      HasPasskeyLength(result, length)
          ? ", passkey " + Percent(PasskeyAccuracyAt(result.passkey, length))
          : std::string(),
      " (", FormatDuration(result.eval_seconds), " to evaluate)");
}

}  // namespace rotor::train
