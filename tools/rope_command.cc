// `rotor rope`: shows what a model config's RoPE settings resolve to — the
// frequencies, their wavelengths in tokens, the attention factor and the
// cos/sin values that multiply q and k — as text, JSON or a gnuplot PNG;
// with --html, the RoPE explorer page (train/extend/rope_explorer.h) for a
// config, a pair of configs and/or an extend-report folder.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/limits.h"
#include "core/number_format.h"
#include "nn/rope_methods.h"
#include "nn/rope_scaling.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "train/checkpoint.h"
#include "train/config/extension_lint.h"
#include "train/config/hf_config.h"
#include "train/config/model_config.h"
#include "train/config/train_config.h"
#include "train/extend/rope_explorer.h"
#include "train/io/atomic_file.h"
#include "train/io/json.h"
#include "train/io/output_file.h"
#include "train/io/plot.h"
#include "train/io/plot_mark.h"

namespace rotor {
namespace tools {
namespace {

constexpr double kPi = 3.14159265358979323846;

constexpr char kRopeDetails[] =
    "Shows the rotary position embedding of a model: the model: section of\n"
    "a rotor YAML config (a file with only a model: section is enough; see\n"
    "configs/rope/ and docs/context-extension.md; a fine-tuning config whose\n"
    "model: amends train.init_from's config.json is resolved as rotor train\n"
    "resolves it), or a trained model as eval's --checkpoint takes it (a\n"
    "run's output_dir, a checkpoint, a Hugging Face folder), or a\n"
    "config.json. key.path=value pairs override its settings, as in eval.\n"
    "  rotor rope --config runs/default model.rope_scaling.rope_type=yarn \\\n"
    "      model.rope_scaling.factor=4\n"
    "  rotor rope --config configs/extend/hf-yarn-4x.yaml\n"
    "\n"
    "It prints the resolved parameters, the attention factor a, the\n"
    "context-extension checks (the lint rotor train and eval run), the\n"
    "effective scale of each rotary pair i (the unscaled theta_i, the\n"
    "scaled inv_freq_i, scale = theta_i / inv_freq_i and the wavelength\n"
    "2*pi/inv_freq_i in tokens, to 6 digits), and a*cos(p*inv_freq_i) and\n"
    "a*sin(p*inv_freq_i) at the given positions p, as applied to q and k\n"
    "(%.17g, full double precision; --json gives every number so).\n"
    "\n"
    "--check PATH prints only the checks of PATH (a training config is\n"
    "checked against its train.seq_len and train.init_from's pre-training\n"
    "length) and exits with status 1 if one is an error:\n"
    "  rotor rope --check configs/extend/yarn-4x.yaml\n"
    "\n"
    "--html FILE writes the RoPE explorer instead: one self-contained page\n"
    "(no network) with every scaling method's wavelengths and per-pair\n"
    "scale for the config (and --compare's), sliders for the factor and\n"
    "the length, each method's attention factor and, with --report DIR,\n"
    "the perplexity, passkey and retrieval curves measured by rotor\n"
    "extend-report.\n"
    "  rotor rope --config configs/rope/yarn.yaml --html yarn.html\n"
    "  rotor rope --report runs/extend-report --html explorer.html\n"
    "\n"
    "Exit status: 0 on success, 1 for a bad config, 2 for bad flags.";

struct RopeOptions {
  std::string config_path;
  std::vector<int64_t> positions;  // empty: 0, 1 and seq_len - 1
  int64_t seq_len = 0;             // 0: max_position_embeddings
  bool json = false;
  std::string plot_path;
  std::string html_path;
  std::string compare_path;
  std::string report_dir;
  std::string check_path;
  std::vector<std::string> overrides;  // key.path=value, as eval takes them
  bool force = false;
};

// What the command shows, computed once for text, JSON and plot.
struct RopeReport {
  train::ModelConfig model;
  int64_t seq_len = 0;
  RopeFrequencies frequencies;
  std::vector<double> unscaled_inv_freq;
  std::vector<int64_t> positions;
  std::vector<std::vector<double>> cos;  // [position][i], times a
  std::vector<std::vector<double>> sin;
  std::vector<train::LintFinding> findings;  // the context-extension lint
};

// The lint of `model` against `lengths`, and --seq-len as a length used.
std::vector<train::LintFinding> Lint(const train::ModelConfig& model,
                                     train::ExtensionLengths lengths,
                                     int64_t seq_len) {
  if (seq_len > 0) {
    lengths.eval_lengths = {seq_len};
    lengths.eval_lengths_key = "--seq-len";
  }
  return train::LintContextExtension(model, lengths);
}

RopeReport BuildReport(const RopeOptions& options) {
  RopeReport report;
  train::ExtensionLengths lengths;
  report.model =
      LoadRopeModel(options.config_path, options.overrides, &lengths);
  report.findings = Lint(report.model, lengths, options.seq_len);
  const RopeScalingConfig& rope = report.model.rope;
  report.seq_len =
      options.seq_len > 0 ? options.seq_len : rope.max_position_embeddings;
  report.frequencies = ComputeRopeFrequencies(rope, report.seq_len);
  report.unscaled_inv_freq = UnscaledInvFreq(rope);
  if (!options.positions.empty()) {
    report.positions = options.positions;
  } else {  // 0, 1 and the last position, without repeats
    for (int64_t p : {int64_t{0}, int64_t{1}, report.seq_len - 1}) {
      if (p < report.seq_len &&
          (report.positions.empty() || p > report.positions.back())) {
        report.positions.push_back(p);
      }
    }
  }
  const double a = report.frequencies.attention_factor;
  for (int64_t p : report.positions) {
    std::vector<double> cos_row, sin_row;
    for (double inv_freq : report.frequencies.inv_freq) {
      const double angle = static_cast<double>(p) * inv_freq;
      cos_row.push_back(a * std::cos(angle));
      sin_row.push_back(a * std::sin(angle));
    }
    report.cos.push_back(std::move(cos_row));
    report.sin.push_back(std::move(sin_row));
  }
  return report;
}

std::vector<double> Wavelengths(const std::vector<double>& inv_freq) {
  std::vector<double> wavelengths;
  for (double f : inv_freq) wavelengths.push_back(2.0 * kPi / f);
  return wavelengths;
}

// theta_i / inv_freq_i per pair: the effective interpolation scale (1: the
// pair is kept, s: divided by the factor).
std::vector<double> Scales(const RopeReport& report) {
  std::vector<double> scales;
  for (size_t i = 0; i < report.frequencies.inv_freq.size(); ++i) {
    scales.push_back(report.unscaled_inv_freq[i] /
                     report.frequencies.inv_freq[i]);
  }
  return scales;
}

train::Json FindingsJson(const std::vector<train::LintFinding>& findings) {
  train::Json list = train::Json::array();
  for (const train::LintFinding& finding : findings) {
    list.push_back({{"severity", finding.severity == train::LintSeverity::kError
                                     ? "error"
                                     : "warning"},
                    {"keys", finding.keys},
                    {"message", finding.message}});
  }
  return list;
}

void PrintJson(const RopeOptions& options, const RopeReport& report) {
  const RopeFrequencies& f = report.frequencies;
  const train::Json json = {
      {"config", options.config_path},
      {"rope_type", RopeTypeName(f.rope_type)},
      {"head_dim", f.head_dim},
      {"rotary_dim", f.rotary_dim},
      {"rope_theta", report.model.rope.rope_theta},
      {"base", f.base},
      {"max_position_embeddings", report.model.rope.max_position_embeddings},
      {"seq_len", report.seq_len},
      {"attention_factor", f.attention_factor},
      {"inv_freq", f.inv_freq},
      {"unscaled_inv_freq", report.unscaled_inv_freq},
      {"wavelength", Wavelengths(f.inv_freq)},
      {"scale", Scales(report)},
      {"positions", report.positions},
      {"cos", report.cos},
      {"sin", report.sin},
      {"findings", FindingsJson(report.findings)}};
  std::cout << json.dump(2) << "\n";
}

void PrintRow(const std::string& name, const std::string& value) {
  std::string padded = "  " + name;
  while (padded.size() < 36) padded += ' ';
  std::cout << padded << value << "\n";
}

// The settings only one method has, and what they resolve to.
void PrintMethodSettings(const RopeReport& report) {
  const RopeScalingConfig& rope = report.model.rope;
  const RopeFrequencies& f = report.frequencies;
  const RopeMethod& method = RopeMethodOf(rope.rope_type);
  if (method.raised_base) PrintRow("base in force", FullDigits(f.base));
  for (const RopeNote& note : RopeNotes(rope, report.seq_len)) {
    PrintRow(note.label, note.value);
  }
}

// The effective per-pair scale: theta_i, inv_freq_i, their ratio and the
// wavelength, one compact row per pair; a*cos and a*sin per position.
void PrintTables(const RopeReport& report) {
  const RopeFrequencies& f = report.frequencies;
  const std::vector<double> scales = Scales(report);
  std::cout << "\nEffective scale per pair (theta_i = unscaled inv_freq; "
               "scale = theta_i / inv_freq: 1 kept, factor divided; "
               "wavelength = 2*pi/inv_freq tokens):\n";
  std::printf("  %4s  %-12s  %-12s  %-10s  %s\n", "i", "theta_i", "inv_freq",
              "scale", "wavelength");
  for (size_t i = 0; i < f.inv_freq.size(); ++i) {
    std::printf("  %4zu  %-12.6g  %-12.6g  %-10.6g  %.6g\n", i,
                report.unscaled_inv_freq[i], f.inv_freq[i], scales[i],
                2.0 * kPi / f.inv_freq[i]);
  }
  std::cout << "\na*cos(p*inv_freq_i) and a*sin(p*inv_freq_i), as applied to "
               "q and k:\n";
  for (size_t k = 0; k < report.positions.size(); ++k) {
    std::cout << "  position " << report.positions[k] << "\n";
    std::printf("  %4s  %-24s  %s\n", "i", "cos", "sin");
    for (size_t i = 0; i < f.inv_freq.size(); ++i) {
      std::printf("  %4zu  %-24s  %s\n", i,
                  FullDigits(report.cos[k][i]).c_str(),
                  FullDigits(report.sin[k][i]).c_str());
    }
  }
  std::fflush(stdout);
}

// The context-extension lint's findings, one per line.
void PrintFindings(const std::vector<train::LintFinding>& findings) {
  std::cout << "\nContext-extension checks (docs/context-extension.md):\n";
  if (findings.empty()) std::cout << "  none\n";
  for (const train::LintFinding& finding : findings) {
    std::cout << "  " << train::FormatLintFinding(finding) << "\n";
  }
}

void PrintText(const RopeOptions& options, const RopeReport& report) {
  const RopeScalingConfig& rope = report.model.rope;
  const RopeFrequencies& f = report.frequencies;
  const RopeType type = rope.rope_type;
  std::cout << "RoPE of " << options.config_path << "\n";
  PrintRow("rope_type", RopeTypeName(type));
  PrintRow("head_dim", std::to_string(f.head_dim));
  PrintRow("partial_rotary_factor", FullDigits(rope.partial_rotary_factor));
  PrintRow("rotary_dim r",
           StrCat(f.rotary_dim, " (", f.rotary_dim / 2, " frequencies)"));
  PrintRow("rope_theta", FullDigits(rope.rope_theta));
  PrintRow("max_position_embeddings",
           std::to_string(rope.max_position_embeddings));
  PrintRow("sequence length",
           StrCat(report.seq_len, RopeDependsOnSequenceLength(type)
                                      ? " (fixed per sequence; --seq-len)"
                                      : " (does not affect this rope_type)"));
  if (rope.factor) PrintRow("factor", FullDigits(*rope.factor));
  if (RopeMethodOf(type).reads_original_length()) {
    PrintRow("original_max_position_embeddings",
             std::to_string(OriginalLength(rope)));
  }
  PrintMethodSettings(report);
  PrintRow("attention_factor a", FullDigits(f.attention_factor));
  PrintFindings(report.findings);
  PrintTables(report);
}

// The wavelength of every frequency pair, unscaled and scaled, against the
// original context length (train/io/plot.h draws it).
void Plot(const RopeOptions& options, const RopeReport& report) {
  const RopeScalingConfig& rope = report.model.rope;
  // L0: dynamic's is max_position_embeddings.
  const int64_t original = RopeMethodOf(rope.rope_type).original_length_from ==
                                   OriginalLengthFrom::kMaxPositions
                               ? rope.max_position_embeddings
                               : OriginalLength(rope);
  train::LineChart chart;
  chart.title =
      StrCat("RoPE wavelength per frequency: ", RopeTypeName(rope.rope_type),
             " (r = ", report.frequencies.rotary_dim, ", base ",
             rope.rope_theta, ", sequence length ", report.seq_len, ")");
  chart.x_label = "frequency index i";
  chart.y_label = "wavelength 2 pi / inv_freq (tokens)";
  chart.log_y = true;
  train::LineSeries unscaled{"unscaled", {}, {}, false, /*points=*/false};
  train::LineSeries scaled{RopeTypeName(rope.rope_type), {}, {}};
  train::LineSeries context{StrCat("original context ", original),
                            {},
                            {},
                            /*dashed=*/true,
                            /*points=*/false};
  for (size_t i = 0; i < report.frequencies.inv_freq.size(); ++i) {
    for (train::LineSeries* series : {&unscaled, &scaled, &context}) {
      series->x.push_back(static_cast<double>(i));
    }
    unscaled.y.push_back(2.0 * kPi / report.unscaled_inv_freq[i]);
    scaled.y.push_back(2.0 * kPi / report.frequencies.inv_freq[i]);
    context.y.push_back(static_cast<double>(original));
  }
  chart.series = {unscaled, scaled, context};
  const std::string problem = train::DrawLineChart(chart, options.plot_path);
  ROTOR_CHECK(problem.empty(), "--plot: ", problem);
  std::cerr << "rotor rope: wrote " << options.plot_path << "\n";
}

// --check: the findings alone; errors make the exit status 1.
void Check(const RopeOptions& options) {
  train::ExtensionLengths lengths;
  const train::ModelConfig model =
      LoadRopeModel(options.check_path, options.overrides, &lengths);
  const std::vector<train::LintFinding> findings =
      Lint(model, lengths, options.seq_len);
  std::cout << options.check_path << ": "
            << (findings.empty() ? "no context-extension findings\n" : "\n");
  for (const train::LintFinding& finding : findings) {
    std::cout << "  " << train::FormatLintFinding(finding) << "\n";
  }
  std::cout << std::flush;
  const auto errors = std::count_if(
      findings.begin(), findings.end(), [](const train::LintFinding& f) {
        return f.severity == train::LintSeverity::kError;
      });
  ROTOR_CHECK(
      errors == 0, options.check_path, ": ", errors,
      errors == 1 ? " context-extension error" : " context-extension errors");
}

// The explorer page for --config, --compare and --report, in that order.
void WriteExplorer(const RopeOptions& options) {
  std::vector<train::ExplorerModel> models;
  for (const std::string& path : {options.config_path, options.compare_path}) {
    if (path.empty()) continue;
    models.push_back(train::ExplorerModelFromConfig(
        path, LoadRopeModel(path, options.overrides)));
  }
  if (!options.report_dir.empty()) {
    models.push_back(train::ExplorerModelFromReport(options.report_dir));
  }
  const std::string page = train::RopeExplorerPage("RoPE explorer", "", models);
  train::CheckOutputFile(options.html_path, options.force, "--html");
  train::WriteFileAtomically(options.html_path, page);
  std::cerr << "rotor rope: wrote " << options.html_path << "\n";
}

}  // namespace

void AddRopeCommand(CLI::App& rotor) {
  CLI::App* command = AddCommand(
      rotor, "rope", "show a model's RoPE frequencies, scaling and cos/sin",
      kRopeDetails);
  auto options = std::make_shared<RopeOptions>();
  CLI::Option* config =
      command
          ->add_option("--config", options->config_path,
                       "the model: a YAML config (a model: section, or a\n"
                       "training config), a run's output_dir, a checkpoint,\n"
                       "a Hugging Face model folder or its config.json")
          ->type_name("PATH");
  AddListOption(*command, "--positions", options->positions,
                IntegerAtLeast<int64_t>(0, limits::kMaxPositions - 1),
                "comma-separated positions, e.g. 0,1,2047\n"
                "(default: 0,1,N-1 with N the sequence length)");
  AddIntegerOption(*command, "--seq-len", options->seq_len, 1,
                   limits::kMaxPositions,
                   "the sequence length the tables are built for; only\n"
                   "dynamic and longrope depend on it (default:\n"
                   "max_position_embeddings)");
  CLI::Option* json =
      command->add_flag("--json", options->json,
                        "print one JSON object instead of text: rope_type,\n"
                        "head_dim, rotary_dim, attention_factor, base,\n"
                        "inv_freq, unscaled_inv_freq, wavelength, positions,\n"
                        "cos, sin (one row of r/2 numbers per position)");
  CLI::Option* plot =
      command
          ->add_option("--plot", options->plot_path,
                       "also draw wavelength per frequency index, scaled vs\n"
                       "unscaled, with gnuplot")
          ->type_name("FILE.png")
          ->check(NotEmpty());
  CLI::Option* html =
      command
          ->add_option("--html", options->html_path,
                       "write the RoPE explorer page instead of printing")
          ->type_name("FILE.html")
          ->check(NotEmpty())
          ->excludes(json)
          ->excludes(plot);
  command
      ->add_option("--compare", options->compare_path,
                   "a second model shown beside --config (with --html),\n"
                   "any PATH --config takes")
      ->type_name("PATH")
      ->needs(html)
      ->needs(config);
  CLI::Option* report_dir =
      command
          ->add_option("--report", options->report_dir,
                       "an extend-report output folder: its measured\n"
                       "perplexity, passkey and retrieval curves (with\n"
                       "--html)")
          ->type_name("DIR")
          ->needs(html);
  AddForceOption(*command, options->force);
  AddOverrides(*command, options->overrides,
               "change the model's settings, as in rotor eval (e.g.\n"
               "model.rope_scaling.rope_type=yarn); with --compare, both");
  CLI::Option* check =
      command
          ->add_option("--check", options->check_path,
                       "only the context-extension checks of PATH (any\n"
                       "PATH --config takes): exit status 1 on an error,\n"
                       "0 with warnings only")
          ->type_name("PATH")
          ->excludes(config)
          ->excludes(html)
          ->excludes(json)
          ->excludes(plot);
  command->callback([options, config, report_dir, html, check] {
    if (check->count() > 0) {
      Check(*options);
      return;
    }
    if (config->count() == 0 && report_dir->count() == 0) {
      throw CLI::RequiredError("--config (or --report with --html)");
    }
    if (html->count() > 0) {
      WriteExplorer(*options);
      return;
    }
    const RopeReport report = BuildReport(*options);
    if (!options->plot_path.empty()) {
      train::CheckPlotOutputFile(options->plot_path, options->force, "--plot");
    }
    if (options->json) {
      PrintJson(*options, report);
    } else {
      PrintText(*options, report);
    }
    if (!options->plot_path.empty()) Plot(*options, report);
  });
}

}  // namespace tools
}  // namespace rotor
