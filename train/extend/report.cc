#include "train/extend/report.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/parallel.h"
#include "train/checkpoint.h"
#include "train/config/train_config.h"
#include "train/data/data_dir.h"
#include "train/data/passkey.h"
#include "train/data/token_file.h"
#include "train/eval/passkey_eval.h"
#include "train/io/atomic_file.h"
#include "train/io/json.h"
#include "train/io/plot.h"
#include "train/metrics.h"
#include "train/trainer.h"

namespace rotor::train {

namespace fs = std::filesystem;

namespace {

// ---------------------------------------------------------------------------
// Results.

struct VariantResult {
  RopeType method = RopeType::kDefault;
  bool finetuned = false;
  std::vector<LengthPerplexity> perplexity;
  std::vector<PasskeyCell> passkey;
  double eval_seconds = 0.0;
  // Training time of the fine-tune (its checkpoint's elapsed_seconds, so it
  // counts every invocation that worked on it); 0 for zero-shot.
  double finetune_seconds = 0.0;
};

std::string VariantName(RopeType method, bool finetuned) {
  return std::string(RopeTypeName(method)) +
         (finetuned ? "-finetuned" : "-zeroshot");
}

std::string VariantLabel(const VariantResult& r) {
  return std::string(RopeTypeName(r.method)) +
         (r.finetuned ? " + fine-tune" : " (zero-shot)");
}

Json ToJson(const VariantResult& r) {
  Json perplexity = Json::array();
  for (const LengthPerplexity& p : r.perplexity) {
    perplexity.push_back({{"length", p.length},
                          {"loss", p.loss},
                          {"perplexity", p.perplexity},
                          {"tokens", p.tokens}});
  }
  Json passkey = Json::array();
  for (const PasskeyCell& c : r.passkey) {
    passkey.push_back({{"length", c.length},
                       {"depth", c.depth},
                       {"correct", c.correct},
                       {"digits_right", c.digits_right},
                       {"num_digits", c.num_digits},
                       {"trials", c.trials}});
  }
  return {{"method", RopeTypeName(r.method)},
          {"finetuned", r.finetuned},
          {"perplexity", std::move(perplexity)},
          {"passkey", std::move(passkey)},
          {"eval_seconds", r.eval_seconds},
          {"finetune_seconds", r.finetune_seconds}};
}

VariantResult FromJson(const Json& json, const std::string& source) {
  VariantResult r;
  const std::string method = JsonMember<std::string>(json, "method", source);
  const std::optional<RopeType> type = RopeTypeFromName(method);
  ROTOR_CHECK(type.has_value(), source, ": unknown method \"", method, "\"");
  r.method = *type;
  r.finetuned = JsonMember<bool>(json, "finetuned", source);
  for (const Json& item : json.at("perplexity")) {
    LengthPerplexity p;
    p.length = JsonMember<int64_t>(item, "length", source);
    p.loss = JsonMember<double>(item, "loss", source);
    p.perplexity = JsonMember<double>(item, "perplexity", source);
    p.tokens = JsonMember<int64_t>(item, "tokens", source);
    r.perplexity.push_back(p);
  }
  for (const Json& item : json.at("passkey")) {
    PasskeyCell c;
    c.length = JsonMember<int64_t>(item, "length", source);
    c.depth = JsonMember<double>(item, "depth", source);
    c.correct = JsonMember<int64_t>(item, "correct", source);
    c.digits_right = JsonMember<int64_t>(item, "digits_right", source);
    c.num_digits =
        static_cast<int>(JsonMember<int64_t>(item, "num_digits", source));
    c.trials = JsonMember<int64_t>(item, "trials", source);
    r.passkey.push_back(c);
  }
  r.eval_seconds = JsonMember<double>(json, "eval_seconds", source);
  r.finetune_seconds = JsonMember<double>(json, "finetune_seconds", source);
  return r;
}

bool Contains(const std::vector<RopeType>& list, RopeType type) {
  return std::find(list.begin(), list.end(), type) != list.end();
}

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
RunStatus StatusOf(const std::string& output_dir, int64_t max_steps) {
  RunStatus status;
  const std::vector<std::string> checkpoints = ListCheckpoints(output_dir);
  if (checkpoints.empty()) return status;
  status.checkpoint = checkpoints.back();
  status.finished = LoadTrainerState(status.checkpoint).step >= max_steps;
  return status;
}

std::string Fixed(double value, int digits) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(digits) << value;
  return out.str();
}

std::string Percent(double fraction) {
  return Fixed(100.0 * fraction, 0) + "%";
}

const LengthPerplexity* PerplexityAt(const VariantResult& r, int64_t length) {
  for (const LengthPerplexity& p : r.perplexity) {
    if (p.length == length) return &p;
  }
  return nullptr;
}

bool HasPasskeyLength(const VariantResult& r, int64_t length) {
  for (const PasskeyCell& c : r.passkey) {
    if (c.length == length) return true;
  }
  return false;
}

}  // namespace

// ---------------------------------------------------------------------------

std::vector<std::string> ExtensionOverrides(RopeType method, double factor,
                                            int64_t base_length,
                                            int64_t head_dim,
                                            double rope_theta) {
  const int64_t extended =
      static_cast<int64_t>(std::llround(factor * base_length));
  const std::string s = StrCat(factor);
  const std::string l0 = StrCat(base_length);
  std::vector<std::string> overrides = {
      StrCat("model.max_position_embeddings=",
             method == RopeType::kDynamic ? base_length : extended)};
  switch (method) {
    case RopeType::kDefault:
      overrides.push_back("model.rope_scaling=null");
      break;
    case RopeType::kLinear:
    case RopeType::kNtk:
    case RopeType::kDynamic:
      overrides.push_back(StrCat("model.rope_scaling={rope_type: ",
                                 RopeTypeName(method), ", factor: ", s, "}"));
      break;
    case RopeType::kYarn:
      overrides.push_back(
          StrCat("model.rope_scaling={rope_type: yarn, factor: ", s,
                 ", original_max_position_embeddings: ", l0, "}"));
      break;
    case RopeType::kLlama3:
      // Meta's Llama 3.1 band settings: wavelengths above L0 interpolated,
      // below L0/4 kept, a smooth blend in between.
      overrides.push_back(
          StrCat("model.rope_scaling={rope_type: llama3, factor: ", s,
                 ", low_freq_factor: 1, high_freq_factor: 4, "
                 "original_max_position_embeddings: ",
                 l0, "}"));
      break;
    case RopeType::kLongRope: {
      // LongRoPE searches one factor per pair; rotor has no search, so the
      // long factors here are an illustrative smooth rise: 1 up to YaRN's
      // lower ramp bound (pairs that turn >= 32 times within L0), then a
      // raised cosine up to s at the slowest pair. Short factors are 1, so
      // sequences up to L0 run exactly as the base model.
      RopeScalingConfig rope;
      rope.rope_type = RopeType::kYarn;
      rope.head_dim = head_dim;
      rope.rope_theta = rope_theta;
      rope.max_position_embeddings = extended;
      rope.factor = factor;
      rope.original_max_position_embeddings = base_length;
      const int64_t pairs = RotaryDim(rope) / 2;
      const double low = ComputeYarnRampBounds(rope).low;
      std::string short_factor, long_factor;
      for (int64_t i = 0; i < pairs; ++i) {
        const double t =
            pairs - 1 > low
                ? std::clamp((i - low) / (pairs - 1 - low), 0.0, 1.0)
                : 1.0;
        const double lambda =
            1.0 + (factor - 1.0) * 0.5 * (1.0 - std::cos(M_PI * t));
        short_factor += (i ? ", " : "") + std::string("1");
        long_factor += (i ? ", " : "") + StrCat(lambda);
      }
      overrides.push_back(StrCat(
          "model.rope_scaling={rope_type: longrope, factor: ", s,
          ", original_max_position_embeddings: ", l0, ", short_factor: [",
          short_factor, "], long_factor: [", long_factor, "]}"));
      break;
    }
  }
  return overrides;
}

// ---------------------------------------------------------------------------

namespace {

class ReportRunner {
 public:
  ReportRunner(const ExtendReportConfig& config, std::ostream& log)
      : config_(config), log_(log) {}

  ExtendReportSummary Run();

 private:
  void Say(const std::string& line) {
    log_ << "extend-report: " << line << std::endl;
  }
  void TrainBase();
  // data.passkey_fraction of the fine-tunes.
  double FinetunePasskeyFraction() const {
    return config_.finetune_passkey_fraction >= 0.0
               ? config_.finetune_passkey_fraction
               : base_.data.passkey_fraction;
  }
  VariantResult Evaluate(nn::Transformer& model, RopeType method,
                         bool finetuned);
  VariantResult RunVariant(RopeType method, bool finetuned);
  std::string WriteReport(const std::vector<VariantResult>& results,
                          double total_seconds);

  const ExtendReportConfig& config_;
  std::ostream& log_;
  TrainConfig base_;
  std::string base_checkpoint_;
  double base_train_seconds_ = 0.0;  // the base checkpoint's elapsed_seconds
  double practice_seconds_ = 0.0;    // the practice run's, if any
  int64_t base_length_ = 0;
  int64_t extended_length_ = 0;
  std::vector<int64_t> lengths_;
  std::vector<int64_t> passkey_lengths_;
  std::vector<std::vector<TokenId>> documents_;
  std::string val_path_;
  std::map<std::string, std::vector<std::string>> overrides_by_method_;
};

void ReportRunner::TrainBase() {
  const RunStatus status = StatusOf(base_.output_dir, base_.train.max_steps);
  if (!status.finished) {
    const std::string log_path = config_.output_dir + "/logs/base.log";
    Say(StrCat("training the base model (", config_.base_config, " -> ",
               base_.output_dir, ", ", base_.train.max_steps,
               " steps; log: ", log_path, ")"));
    std::ofstream log(log_path, std::ios::app);
    TrainConfig config = base_;
    config.logging.progress = false;
    Trainer trainer(config, log);
    trainer.Run();
  }
  base_checkpoint_ =
      StatusOf(base_.output_dir, base_.train.max_steps).checkpoint;
  base_train_seconds_ = LoadTrainerState(base_checkpoint_).elapsed_seconds;
  Say("base model: " + base_checkpoint_);
  if (config_.practice_steps == 0) return;

  // Passkey practice: the base config at its own length, from the base
  // weights, with a large share of passkey rows.
  std::vector<std::string> overrides = config_.base_overrides;
  const std::vector<std::string> practice = {
      "output_dir=" + config_.practice_output_dir,
      "train.init_from=" + base_checkpoint_,
      "train.resume=auto",
      StrCat("data.passkey_fraction=", config_.practice_passkey_fraction),
      StrCat("train.max_steps=", config_.practice_steps),
      StrCat("train.warmup_steps=",
             std::min(config_.practice_warmup_steps, config_.practice_steps)),
      StrCat("train.threads=", config_.threads),
      "eval.every_n_steps=0",
      "checkpoint.every_n_steps=0",
      "checkpoint.keep_last_n=1",
      "logging.progress=false"};
  overrides.insert(overrides.end(), practice.begin(), practice.end());
  const TrainConfig train = LoadTrainConfig(config_.base_config, overrides);
  const RunStatus practice_status =
      StatusOf(train.output_dir, config_.practice_steps);
  if (practice_status.finished) {
    CheckReusedRun(practice_status.checkpoint, train, "passkey practice");
  } else {
    const std::string log_path = config_.output_dir + "/logs/practice.log";
    Say(StrCat("passkey practice (", config_.practice_steps,
               " steps at length ", base_length_, ", ",
               config_.practice_passkey_fraction, " passkey rows -> ",
               train.output_dir, "; log: ", log_path, ")"));
    std::ofstream log(log_path, std::ios::app);
    Trainer trainer(train, log);
    trainer.Run();
  }
  base_checkpoint_ =
      StatusOf(train.output_dir, config_.practice_steps).checkpoint;
  practice_seconds_ = LoadTrainerState(base_checkpoint_).elapsed_seconds;
  Say("base model after passkey practice: " + base_checkpoint_);
}

VariantResult ReportRunner::Evaluate(nn::Transformer& model, RopeType method,
                                     bool finetuned) {
  VariantResult result;
  result.method = method;
  result.finetuned = finetuned;
  const double start = SteadySeconds();
  LengthEvalOptions ppl;
  ppl.lengths = lengths_;
  ppl.num_documents = config_.documents;
  ppl.method = config_.ppl_method;
  ppl.stride = config_.stride > 0 ? config_.stride
                                  : std::max<int64_t>(base_length_ / 2, 1);
  result.perplexity = PerplexityByLength(model, documents_, ppl);
  PasskeyEvalOptions passkey;
  passkey.lengths = passkey_lengths_;
  passkey.depths = config_.depths;
  passkey.trials = config_.trials;
  result.passkey = EvaluatePasskey(model, passkey);
  result.eval_seconds = SteadySeconds() - start;
  return result;
}

VariantResult ReportRunner::RunVariant(RopeType method, bool finetuned) {
  const std::string name = VariantName(method, finetuned);
  const std::string result_path =
      config_.output_dir + "/results/" + name + ".json";
  if (fs::exists(result_path)) {
    Say(name + ": done before (" + result_path + ")");
    return FromJson(ParseJson(ReadFile(result_path), result_path), result_path);
  }
  const std::vector<std::string>& rope =
      overrides_by_method_[RopeTypeName(method)];
  VariantResult result;
  if (!finetuned) {
    Say(name + ": evaluating the base weights with " + RopeTypeName(method));
    auto model = LoadCheckpointModel(base_checkpoint_, rope);
    result = Evaluate(*model, method, false);
  } else {
    const int64_t tokens_per_step =
        config_.finetune_tokens_per_step > 0
            ? config_.finetune_tokens_per_step
            : base_.train.batch_size * base_.train.seq_len;
    const int64_t batch_size =
        std::max<int64_t>(1, tokens_per_step / extended_length_);
    const std::string run_dir =
        config_.output_dir + "/finetune/" + RopeTypeName(method);
    std::vector<std::string> overrides = config_.base_overrides;
    const std::vector<std::string> finetune = {
        "output_dir=" + run_dir,
        "train.init_from=" + base_checkpoint_,
        "train.resume=auto",
        StrCat("train.seq_len=", extended_length_),
        StrCat("train.batch_size=", batch_size),
        "train.gradient_accumulation_steps=1",
        StrCat("train.max_steps=", config_.finetune_steps),
        StrCat("train.lr=", config_.finetune_lr),
        StrCat("train.min_lr=", config_.finetune_min_lr),
        StrCat("train.warmup_steps=",
               std::min(config_.finetune_warmup_steps, config_.finetune_steps)),
        StrCat("train.threads=", config_.threads),
        StrCat("data.passkey_fraction=", FinetunePasskeyFraction()),
        "eval.every_n_steps=0",
        "eval.max_batches=4",
        "checkpoint.every_n_steps=0",
        "checkpoint.keep_last_n=1",
        "logging.progress=false",
        StrCat("logging.log_every_n_steps=",
               std::max<int64_t>(1, config_.finetune_steps / 10))};
    overrides.insert(overrides.end(), finetune.begin(), finetune.end());
    overrides.insert(overrides.end(), rope.begin(), rope.end());
    const TrainConfig train = LoadTrainConfig(config_.base_config, overrides);
    RunStatus status = StatusOf(run_dir, config_.finetune_steps);
    if (status.finished) {
      CheckReusedRun(status.checkpoint, train, name + " fine-tune");
    } else {
      const std::string log_path = config_.output_dir + "/logs/finetune-" +
                                   RopeTypeName(method) + ".log";
      Say(StrCat(name, ": fine-tuning ", config_.finetune_steps,
                 " steps at length ", extended_length_, " (batch ", batch_size,
                 "; log: ", log_path, ")"));
      std::ofstream log(log_path, std::ios::app);
      Trainer trainer(train, log);
      trainer.Run();
      status = StatusOf(run_dir, config_.finetune_steps);
    }
    Say(name + ": evaluating " + status.checkpoint);
    auto model = LoadCheckpointModel(status.checkpoint, {});
    result = Evaluate(*model, method, true);
    result.finetune_seconds =
        LoadTrainerState(status.checkpoint).elapsed_seconds;
  }
  WriteFileAtomically(result_path, ToJson(result).dump(2) + "\n");
  const LengthPerplexity* at_extended = PerplexityAt(result, extended_length_);
  Say(StrCat(name, ": perplexity ",
             at_extended ? Fixed(at_extended->perplexity, 3) : "-", " at ",
             extended_length_,
             HasPasskeyLength(result, extended_length_)
                 ? ", passkey " + Percent(PasskeyAccuracyAt(result.passkey,
                                                            extended_length_))
                 : std::string(),
             " (", FormatDuration(result.eval_seconds), " to evaluate)"));
  return result;
}

ExtendReportSummary ReportRunner::Run() {
  const double start = SteadySeconds();
  SetNumThreads(static_cast<int>(config_.threads));
  base_ = LoadTrainConfig(config_.base_config, config_.base_overrides);
  base_.train.threads = config_.threads;
  base_length_ = base_.train.seq_len;
  extended_length_ =
      static_cast<int64_t>(std::llround(config_.factor * base_length_));
  lengths_ = config_.lengths;
  if (lengths_.empty()) {
    lengths_ = {base_length_, 2 * base_length_, extended_length_,
                2 * extended_length_};
  }
  std::sort(lengths_.begin(), lengths_.end());
  lengths_.erase(std::unique(lengths_.begin(), lengths_.end()), lengths_.end());
  passkey_lengths_ =
      config_.passkey_lengths.empty() ? lengths_ : config_.passkey_lengths;
  for (int64_t length : passkey_lengths_) {
    ROTOR_CHECK(length >= PasskeyMinLength(), config_.file, ": passkey length ",
                length,
                " is below the shortest passkey "
                "prompt (",
                PasskeyMinLength(),
                " tokens); set "
                "eval.passkey_lengths");
  }
  fs::create_directories(config_.output_dir + "/logs");
  fs::create_directories(config_.output_dir + "/results");

  TrainBase();
  val_path_ = ResolveDataDir(base_.data.path) + "/val.bin";
  const TokenFile val(val_path_);
  documents_ = LongDocuments(val, lengths_.back() + 1, config_.documents);

  const nn::TransformerConfig architecture =
      ResolveTransformerConfig(base_.model);
  for (RopeType method : config_.methods) {
    overrides_by_method_[RopeTypeName(method)] =
        ExtensionOverrides(method, config_.factor, base_length_,
                           architecture.head_dim, base_.model.rope.rope_theta);
  }
  std::vector<VariantResult> results;
  for (RopeType method : config_.methods) {
    results.push_back(RunVariant(method, false));
  }
  if (config_.finetune_steps > 0) {
    for (RopeType method : config_.methods) {
      if (Contains(config_.finetune_skip, method)) continue;
      results.push_back(RunVariant(method, true));
    }
  }
  ExtendReportSummary summary;
  summary.seconds = SteadySeconds() - start;
  summary.report_path = WriteReport(results, summary.seconds);
  Say("report: " + summary.report_path);
  return summary;
}

std::string ReportRunner::WriteReport(const std::vector<VariantResult>& results,
                                      double total_seconds) {
  const std::string& dir = config_.output_dir;
  const std::string s = StrCat(config_.factor);
  const int64_t l = base_length_;
  const int64_t sl = extended_length_;

  // results.json: everything in one file.
  Json variants = Json::array();
  for (const VariantResult& r : results) variants.push_back(ToJson(r));
  const Json all = {{"base_checkpoint", base_checkpoint_},
                    {"base_length", l},
                    {"factor", config_.factor},
                    {"variants", std::move(variants)}};
  WriteFileAtomically(dir + "/results.json", all.dump(2) + "\n");

  const VariantResult* base = nullptr;
  for (const VariantResult& r : results) {
    if (r.method == RopeType::kDefault && !r.finetuned) base = &r;
  }
  const LengthPerplexity* base_at_l = base ? PerplexityAt(*base, l) : nullptr;

  // Plots.
  std::vector<std::string> plot_notes;
  auto note = [&](const std::string& problem) {
    if (!problem.empty()) plot_notes.push_back(problem);
    return problem.empty();
  };
  bool have_ppl_plots = true;
  for (bool finetuned : {false, true}) {
    LineChart chart;
    chart.title = finetuned ? StrCat("after ", config_.finetune_steps,
                                     " fine-tuning steps at ", sl, " tokens")
                            : "zero-shot: base weights, scaled RoPE";
    chart.x_label = "context length (tokens)";
    chart.y_label = "perplexity (bytes)";
    chart.log_x = true;
    chart.log_y = true;
    chart.vertical_lines = {{static_cast<double>(l), StrCat("L = ", l)},
                            {static_cast<double>(sl), StrCat(s, "L")}};
    for (const VariantResult& r : results) {
      if (r.finetuned != finetuned && !(finetuned && &r == base)) continue;
      LineSeries series;
      series.title = &r == base && finetuned ? "base (zero-shot default)"
                                             : RopeTypeName(r.method);
      series.dashed = &r == base && finetuned;
      for (const LengthPerplexity& p : r.perplexity) {
        series.x.push_back(static_cast<double>(p.length));
        series.y.push_back(p.perplexity);
      }
      chart.series.push_back(series);
    }
    if (chart.series.size() <= (finetuned ? 1u : 0u)) continue;
    have_ppl_plots &= note(DrawLineChart(
        chart, dir + (finetuned ? "/ppl_finetuned.png" : "/ppl_zeroshot.png")));
  }
  HeatMap overview;
  overview.title = "passkey accuracy (mean over depths)";
  overview.x_label = "context length (tokens)";
  overview.y_label = "";
  for (int64_t length : passkey_lengths_) {
    overview.column_labels.push_back(StrCat(length));
  }
  for (auto it = results.rbegin(); it != results.rend(); ++it) {
    overview.row_labels.push_back(VariantLabel(*it));
    std::vector<double> row;
    for (int64_t length : passkey_lengths_) {
      row.push_back(PasskeyAccuracyAt(it->passkey, length));
    }
    overview.values.push_back(row);
  }
  const bool have_overview = note(DrawHeatMap(overview, dir + "/passkey.png"));
  std::vector<std::string> depth_maps;
  for (const VariantResult& r : results) {
    HeatMap map;
    map.title = "passkey: " + VariantLabel(r);
    map.x_label = "depth of the key (0 = start, 1 = just before the question)";
    map.y_label = "context length";
    for (double depth : config_.depths)
      map.column_labels.push_back(StrCat(depth));
    for (size_t li = 0; li < passkey_lengths_.size(); ++li) {
      map.row_labels.push_back(StrCat(passkey_lengths_[li]));
      std::vector<double> row;
      for (size_t d = 0; d < config_.depths.size(); ++d) {
        row.push_back(r.passkey[li * config_.depths.size() + d].accuracy());
      }
      map.values.push_back(row);
    }
    const std::string file =
        "passkey_" + VariantName(r.method, r.finetuned) + ".png";
    if (note(DrawHeatMap(map, dir + "/" + file))) depth_maps.push_back(file);
  }

  // Markdown.
  std::ostringstream md;
  md << "# Context extension report\n\n"
     << "Base model `" << base_checkpoint_ << "` (config `"
     << config_.base_config << "`";
  for (const std::string& o : config_.base_overrides) md << " `" << o << "`";
  if (config_.practice_steps > 0) {
    md << ", then " << config_.practice_steps
       << " steps of passkey practice with "
       << config_.practice_passkey_fraction << " passkey rows";
  }
  md << "), trained at **L = " << l << "** tokens, extended by **s = " << s
     << "** to **" << sl
     << "** tokens with each RoPE scaling method: zero-shot (base weights, "
        "scaled RoPE) and after **"
     << config_.finetune_steps << "** fine-tuning steps at " << sl
     << " tokens. Produced by `rotor extend-report " << config_.file
     << "`; docs/context-extension.md explains the methods and how to read "
        "this.\n\n";

  md << "## Perplexity against context length\n\n"
     << "Perplexity per byte on the same " << config_.documents
     << " validation documents at every length (`" << val_path_ << "`), "
     << (config_.ppl_method == LengthEvalMethod::kTruncate
             ? "each cut to its first L tokens and scored in one window "
               "(YaRN's protocol), so the number at L averages positions 0 "
               "to L-1"
             : StrCat("scored with sliding windows of L tokens, stride ",
                      config_.stride > 0 ? config_.stride : l / 2,
                      ", over the first ", lengths_.back(),
                      " tokens (every length scores the same tokens)"))
     << ". Last column: perplexity at " << sl
     << " divided by the base model's at " << l << ".\n\n| model |";
  for (int64_t length : lengths_) md << " " << length << " |";
  md << " ratio " << sl << "/" << l << " |\n|---|";
  for (size_t i = 0; i < lengths_.size(); ++i) md << "---:|";
  md << "---:|\n";
  for (const VariantResult& r : results) {
    md << "| " << VariantLabel(r) << " |";
    for (int64_t length : lengths_) {
      const LengthPerplexity* p = PerplexityAt(r, length);
      const bool trained_length = length == (r.finetuned ? sl : l);
      md << " " << (trained_length ? "**" : "")
         << (p ? Fixed(p->perplexity, 3) : "-") << (trained_length ? "**" : "")
         << " |";
    }
    const LengthPerplexity* p = PerplexityAt(r, sl);
    md << " "
       << (p && base_at_l ? Fixed(p->perplexity / base_at_l->perplexity, 3)
                          : "-")
       << " |\n";
  }
  md << "\nBold: the length the weights were trained at.\n\n";
  if (have_ppl_plots) {
    md << "![zero-shot perplexity](ppl_zeroshot.png)\n\n";
    if (config_.finetune_steps > 0) {
      md << "![fine-tuned perplexity](ppl_finetuned.png)\n\n";
    }
  }

  md << "## Passkey retrieval\n\n"
     << "A 5-digit key hidden in filler text at depths";
  for (double depth : config_.depths) md << " " << depth;
  md << " (0 = start, 1 = just before the question), " << config_.trials
     << " examples per length and depth, the same keys for every model. "
        "Retrieved = greedy decoding writes all 5 digits "
        "(train/data/passkey.h). "
        "Mean accuracy over depths:\n\n";
  // One row per model, one column per length, cells from `accuracy_at`.
  auto passkey_table = [&](auto accuracy_at) {
    md << "| model |";
    for (int64_t length : passkey_lengths_) md << " " << length << " |";
    md << "\n|---|";
    for (size_t i = 0; i < passkey_lengths_.size(); ++i) md << "---:|";
    md << "\n";
    for (const VariantResult& r : results) {
      md << "| " << VariantLabel(r) << " |";
      for (int64_t length : passkey_lengths_) {
        md << " " << Percent(accuracy_at(r.passkey, length)) << " |";
      }
      md << "\n";
    }
    md << "\n";
  };
  passkey_table([](const auto& passkey, int64_t length) {
    return PasskeyAccuracyAt(passkey, length);
  });
  if (have_overview) md << "![passkey accuracy](passkey.png)\n\n";
  md << "Partial credit: the share of answer digits right, each given the "
        "true digits before it (chance: 10%). It shows retrieval that is "
        "forming before whole keys come out right:\n\n";
  passkey_table([](const auto& passkey, int64_t length) {
    return PasskeyDigitAccuracyAt(passkey, length);
  });
  if (!depth_maps.empty()) {
    md << "By depth (length x depth heat maps):";
    for (const std::string& file : depth_maps) {
      md << " [" << file.substr(8, file.size() - 12) << "](" << file << ")";
    }
    md << "\n\n";
  }

  // The expected outcome of issue #6, checked on these numbers.
  md << "## Checks\n\n| expectation | measured | met |\n|---|---|:-:|\n";
  auto find = [&](RopeType method, bool finetuned) -> const VariantResult* {
    for (const VariantResult& r : results) {
      if (r.method == method && r.finetuned == finetuned) return &r;
    }
    return nullptr;
  };
  if (base_at_l != nullptr) {
    if (const LengthPerplexity* p = PerplexityAt(*base, sl)) {
      const double ratio = p->perplexity / base_at_l->perplexity;
      md << "| unscaled RoPE degrades sharply at " << sl << " (zero-shot) | "
         << Fixed(p->perplexity, 3) << " vs " << Fixed(base_at_l->perplexity, 3)
         << " at " << l << " (x" << Fixed(ratio, 2) << ") | "
         << (ratio > 1.5 ? "yes" : "no") << " |\n";
    }
    for (RopeType method : {RopeType::kYarn, RopeType::kLinear}) {
      const VariantResult* r = find(method, true);
      const LengthPerplexity* p = r ? PerplexityAt(*r, sl) : nullptr;
      if (p == nullptr) continue;
      const double ratio = p->perplexity / base_at_l->perplexity;
      md << "| " << RopeTypeName(method) << " + " << config_.finetune_steps
         << " steps: perplexity at " << sl << " within 10% of the base at " << l
         << " | " << Fixed(p->perplexity, 3) << " (x" << Fixed(ratio, 3)
         << ") | " << (ratio <= 1.10 ? "yes" : "no") << " |\n";
    }
    const VariantResult* yarn = find(RopeType::kYarn, true);
    if (yarn != nullptr && HasPasskeyLength(*yarn, sl) &&
        HasPasskeyLength(*base, l)) {
      const double base_accuracy = PasskeyAccuracyAt(base->passkey, l);
      const double accuracy = PasskeyAccuracyAt(yarn->passkey, sl);
      md << "| passkey at " << sl << " after yarn fine-tuning >= 90% (base at "
         << l << " >= 95%) | " << Percent(accuracy) << " (base at " << l << ": "
         << Percent(base_accuracy) << ") | "
         << (accuracy >= 0.9 && base_accuracy >= 0.95 ? "yes" : "no") << " |\n";
    }
  }
  // Every piece, wherever it was done (earlier invocations included): the
  // base run's and fine-tunes' elapsed_seconds and each evaluation's time.
  double all_seconds = base_train_seconds_ + practice_seconds_;
  for (const VariantResult& r : results) {
    all_seconds += r.eval_seconds + r.finetune_seconds;
  }
  md << "| the whole comparison (base training included) under an hour | "
     << FormatDuration(all_seconds) << " | "
     << (all_seconds < 3600 ? "yes" : "no") << " |\n\n";

  md << "## Time\n\nOn this machine ("
     << (config_.threads > 0 ? StrCat(config_.threads) : std::string("all"))
     << " threads); base training: " << FormatDuration(base_train_seconds_)
     << (config_.practice_steps > 0
             ? ", passkey practice: " + FormatDuration(practice_seconds_)
             : std::string())
     << ".\n\n| method | fine-tune | evaluate zero-shot | evaluate fine-tuned "
        "|\n"
        "|---|---:|---:|---:|\n";
  for (RopeType method : config_.methods) {
    const VariantResult* zero = find(method, false);
    const VariantResult* tuned = find(method, true);
    md << "| " << RopeTypeName(method) << " | "
       << (tuned ? FormatDuration(tuned->finetune_seconds) : "-") << " | "
       << (zero ? FormatDuration(zero->eval_seconds) : "-") << " | "
       << (tuned ? FormatDuration(tuned->eval_seconds) : "-") << " |\n";
  }
  md << "\nTotal: " << FormatDuration(all_seconds)
     << " (this invocation: " << FormatDuration(total_seconds) << ").\n\n";

  md << "## Settings\n\n"
     << "- Fine-tuning: `train.init_from` the base checkpoint, "
     << config_.finetune_steps << " steps at seq_len " << sl << ", "
     << (config_.finetune_tokens_per_step > 0
             ? config_.finetune_tokens_per_step
             : base_.train.batch_size * base_.train.seq_len)
     << " tokens per step, lr " << config_.finetune_lr << " -> "
     << config_.finetune_min_lr << " (cosine) after "
     << config_.finetune_warmup_steps
     << " warm-up steps, the base config's data (passkey share "
     << FinetunePasskeyFraction() << ", loss on "
     << PasskeyLossName(base_.data.passkey_loss) << " tokens). Runs: `" << dir
     << "/finetune/<method>`; logs: `" << dir << "/logs/`.\n"
     << "- Methods (`model.*` overrides on the base config):\n";
  for (RopeType method : config_.methods) {
    md << "  - " << RopeTypeName(method) << ":";
    for (const std::string& o : overrides_by_method_[RopeTypeName(method)]) {
      md << " `" << o << "`";
    }
    md << "\n";
  }
  md << "- Not fine-tuned:";
  for (RopeType method : config_.finetune_skip)
    md << " " << RopeTypeName(method);
  md << " (dynamic NTK is a zero-shot method: its L0 is "
        "max_position_embeddings).\n";
  for (const std::string& problem : plot_notes) md << "- " << problem << "\n";
  const std::string path = dir + "/report.md";
  WriteFileAtomically(path, md.str());
  return path;
}

}  // namespace

ExtendReportSummary RunExtendReport(const ExtendReportConfig& config,
                                    std::ostream& log) {
  ReportRunner runner(config, log);
  return runner.Run();
}

}  // namespace rotor::train
