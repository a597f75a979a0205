// `rotor rope`: shows what a model config's RoPE settings resolve to — the
// frequencies, their wavelengths in tokens, the attention factor and the
// cos/sin values that multiply q and k — as text, JSON or a gnuplot PNG.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "nn/rope_scaling.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "train/config/model_config.h"

namespace rotor {
namespace tools {
namespace {

constexpr double kPi = 3.14159265358979323846;

constexpr char kRopeDetails[] =
    "Shows the rotary position embedding of the model: section of a rotor\n"
    "YAML config (a file with only a model: section is enough; see\n"
    "configs/rope/ and docs/context-extension.md): the resolved parameters,\n"
    "one row per frequency i (inv_freq, wavelength 2*pi/inv_freq in tokens,\n"
    "ratio to the unscaled frequency), the attention factor a, and\n"
    "a*cos(p*inv_freq_i) and a*sin(p*inv_freq_i) at the given positions p,\n"
    "as applied to q and k.\n"
    "\n"
    "Numbers are printed with %.17g (full double precision). Exit status: 0\n"
    "on success, 1 for a bad config, 2 for bad flags.";

struct RopeOptions {
  std::string config_path;
  std::vector<int64_t> positions;  // empty: 0, 1 and seq_len - 1
  int64_t seq_len = 0;             // 0: max_position_embeddings
  bool json = false;
  std::string plot_path;
};

std::string Number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.17g", value);
  return buffer;
}

std::string JsonString(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buffer[8];
      std::snprintf(buffer, sizeof(buffer), "\\u%04x", c);
      out += buffer;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string JsonList(const std::vector<double>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ", ";
    out += Number(values[i]);
  }
  return out + "]";
}

// What the command shows, computed once for text, JSON and plot.
struct RopeReport {
  train::ModelConfig model;
  int64_t seq_len = 0;
  RopeFrequencies frequencies;
  std::vector<double> unscaled_inv_freq;
  std::vector<int64_t> positions;
  std::vector<std::vector<double>> cos;  // [position][i], times a
  std::vector<std::vector<double>> sin;
};

RopeReport BuildReport(const RopeOptions& options) {
  RopeReport report;
  report.model = train::LoadModelConfig(options.config_path);
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

void PrintJson(const RopeOptions& options, const RopeReport& report) {
  const RopeFrequencies& f = report.frequencies;
  std::ostream& out = std::cout;
  out << "{\n";
  out << "  \"config\": " << JsonString(options.config_path) << ",\n";
  out << "  \"rope_type\": \"" << RopeTypeName(f.rope_type) << "\",\n";
  out << "  \"head_dim\": " << f.head_dim << ",\n";
  out << "  \"rotary_dim\": " << f.rotary_dim << ",\n";
  out << "  \"rope_theta\": " << Number(report.model.rope.rope_theta) << ",\n";
  out << "  \"base\": " << Number(f.base) << ",\n";
  out << "  \"max_position_embeddings\": "
      << report.model.rope.max_position_embeddings << ",\n";
  out << "  \"seq_len\": " << report.seq_len << ",\n";
  out << "  \"attention_factor\": " << Number(f.attention_factor) << ",\n";
  out << "  \"inv_freq\": " << JsonList(f.inv_freq) << ",\n";
  out << "  \"unscaled_inv_freq\": " << JsonList(report.unscaled_inv_freq)
      << ",\n";
  out << "  \"wavelength\": " << JsonList(Wavelengths(f.inv_freq)) << ",\n";
  out << "  \"positions\": [";
  for (size_t k = 0; k < report.positions.size(); ++k) {
    out << (k > 0 ? ", " : "") << report.positions[k];
  }
  out << "],\n";
  for (const char* name : {"cos", "sin"}) {
    const auto& rows = std::string(name) == "cos" ? report.cos : report.sin;
    out << "  \"" << name << "\": [";
    for (size_t k = 0; k < rows.size(); ++k) {
      out << (k > 0 ? ",\n    " : "\n    ") << JsonList(rows[k]);
    }
    out << "\n  ]" << (std::string(name) == "cos" ? "," : "") << "\n";
  }
  out << "}\n";
}

void PrintRow(const std::string& name, const std::string& value) {
  std::string padded = "  " + name;
  while (padded.size() < 36) padded += ' ';
  std::cout << padded << value << "\n";
}

void PrintText(const RopeOptions& options, const RopeReport& report) {
  const RopeScalingConfig& rope = report.model.rope;
  const RopeFrequencies& f = report.frequencies;
  const RopeType type = rope.rope_type;
  std::cout << "RoPE of " << options.config_path << "\n";
  PrintRow("rope_type", RopeTypeName(type));
  PrintRow("head_dim", std::to_string(f.head_dim));
  PrintRow("partial_rotary_factor", Number(rope.partial_rotary_factor));
  PrintRow("rotary_dim r",
           StrCat(f.rotary_dim, " (", f.rotary_dim / 2, " frequencies)"));
  PrintRow("rope_theta", Number(rope.rope_theta));
  PrintRow("max_position_embeddings",
           std::to_string(rope.max_position_embeddings));
  PrintRow("sequence length",
           StrCat(report.seq_len, RopeDependsOnSequenceLength(type)
                                      ? " (fixed per sequence; --seq-len)"
                                      : " (does not affect this rope_type)"));
  const std::vector<std::string> keys = RopeScalingKeys(type);
  auto has = [&](const char* key) {
    for (const std::string& k : keys) {
      if (k == key) return true;
    }
    return false;
  };
  if (rope.factor) PrintRow("factor", Number(*rope.factor));
  if (has("original_max_position_embeddings")) {
    PrintRow("original_max_position_embeddings",
             std::to_string(rope.original_max_position_embeddings.value_or(
                 rope.max_position_embeddings)));
  }
  if (type == RopeType::kNtk || type == RopeType::kDynamic) {
    PrintRow("base in force", Number(f.base));
  }
  if (type == RopeType::kYarn) {
    const YarnRampBounds bounds = ComputeYarnRampBounds(rope);
    PrintRow("beta_fast, beta_slow",
             StrCat(Number(rope.beta_fast), ", ", Number(rope.beta_slow)));
    PrintRow("truncate", rope.truncate ? "true" : "false");
    PrintRow("ramp (pair indices)",
             StrCat(Number(bounds.low), " .. ", Number(bounds.high)));
    if (rope.mscale) PrintRow("mscale", Number(*rope.mscale));
    if (rope.mscale_all_dim) {
      PrintRow("mscale_all_dim", Number(*rope.mscale_all_dim));
    }
  }
  if (type == RopeType::kLlama3) {
    const double original =
        static_cast<double>(*rope.original_max_position_embeddings);
    PrintRow("low_freq_factor", Number(*rope.low_freq_factor));
    PrintRow("high_freq_factor", Number(*rope.high_freq_factor));
    PrintRow("wavelength bands (tokens)",
             StrCat("< ", Number(original / *rope.high_freq_factor),
                    " unchanged, > ", Number(original / *rope.low_freq_factor),
                    " divided by factor"));
  }
  if (type == RopeType::kLongRope) {
    const int64_t original = rope.original_max_position_embeddings.value_or(
        rope.max_position_embeddings);
    PrintRow("factors in use", report.seq_len > original
                                   ? "long_factor (length > original)"
                                   : "short_factor (length <= original)");
  }
  PrintRow("attention_factor a", Number(f.attention_factor));

  std::cout << "\nFrequencies (wavelength = 2*pi/inv_freq tokens; ratio = "
               "inv_freq / unscaled inv_freq):\n";
  std::printf("  %4s  %-24s  %-24s  %s\n", "i", "inv_freq", "wavelength",
              "ratio");
  for (size_t i = 0; i < f.inv_freq.size(); ++i) {
    std::printf("  %4zu  %-24s  %-24s  %s\n", i, Number(f.inv_freq[i]).c_str(),
                Number(2.0 * kPi / f.inv_freq[i]).c_str(),
                Number(f.inv_freq[i] / report.unscaled_inv_freq[i]).c_str());
  }
  std::cout << "\na*cos(p*inv_freq_i) and a*sin(p*inv_freq_i), as applied to "
               "q and k:\n";
  for (size_t k = 0; k < report.positions.size(); ++k) {
    std::cout << "  position " << report.positions[k] << "\n";
    std::printf("  %4s  %-24s  %s\n", "i", "cos", "sin");
    for (size_t i = 0; i < f.inv_freq.size(); ++i) {
      std::printf("  %4zu  %-24s  %s\n", i, Number(report.cos[k][i]).c_str(),
                  Number(report.sin[k][i]).c_str());
    }
  }
  std::fflush(stdout);
}

// gnuplot single-quoted string: a quote is written twice.
std::string GnuplotString(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    out += c;
    if (c == '\'') out += '\'';
  }
  return out + "'";
}

void Plot(const RopeOptions& options, const RopeReport& report) {
  if (std::system("gnuplot --version > /dev/null 2>&1") != 0) {
    throw Error(
        "--plot needs gnuplot, which was not found on PATH; install it with "
        "'sudo apt-get install gnuplot-nox'");
  }
  char data_path[] = "/tmp/rotor-rope-XXXXXX";
  const int fd = mkstemp(data_path);
  ROTOR_CHECK(fd >= 0, "--plot: cannot create a temporary file");
  close(fd);
  {
    FILE* data = std::fopen(data_path, "w");
    ROTOR_CHECK(data != nullptr, "--plot: cannot write ", data_path);
    const std::vector<double>& scaled = report.frequencies.inv_freq;
    for (size_t i = 0; i < scaled.size(); ++i) {
      std::fprintf(data, "%zu %.17g %.17g\n", i,
                   2.0 * kPi / report.unscaled_inv_freq[i],
                   2.0 * kPi / scaled[i]);
    }
    std::fclose(data);
  }
  const RopeScalingConfig& rope = report.model.rope;
  const int64_t original = rope.rope_type == RopeType::kDynamic
                               ? rope.max_position_embeddings
                               : rope.original_max_position_embeddings.value_or(
                                     rope.max_position_embeddings);
  std::ostringstream script;
  script << "set terminal pngcairo size 900,560 font 'sans,11'\n"
         << "set output " << GnuplotString(options.plot_path) << "\n"
         << "set title "
         << GnuplotString(StrCat(
                "RoPE wavelength per frequency: ", RopeTypeName(rope.rope_type),
                " (r = ", report.frequencies.rotary_dim, ", base ",
                rope.rope_theta, ", sequence length ", report.seq_len, ")"))
         << "\n"
         << "set xlabel 'frequency index i'\nset ylabel 'wavelength "
            "2{/Symbol p}/inv\\_freq (tokens)'\n"
         << "set logscale y\nset format y '10^{%L}'\nset grid\n"
         << "set key top left\n"
         << "plot " << GnuplotString(data_path)
         << " using 1:2 with lines lw 2 title 'unscaled', '' using 1:3 with "
            "linespoints lw 2 pt 7 ps 0.5 title "
         << GnuplotString(RopeTypeName(rope.rope_type)) << ", " << original
         << " with lines dt 2 lc rgb 'gray40' title "
         << GnuplotString(StrCat("original context ", original)) << "\n";
  FILE* gnuplot = popen("gnuplot", "w");
  ROTOR_CHECK(gnuplot != nullptr, "--plot: cannot start gnuplot");
  std::fputs(script.str().c_str(), gnuplot);
  const int status = pclose(gnuplot);
  std::remove(data_path);
  ROTOR_CHECK(status == 0, "--plot: gnuplot failed writing '",
              options.plot_path, "' (status ", status, ")");
  std::cerr << "rotor rope: wrote " << options.plot_path << "\n";
}

}  // namespace

void AddRopeCommand(CLI::App& rotor) {
  CLI::App* command = AddCommand(
      rotor, "rope", "show a config's RoPE frequencies, scaling and cos/sin",
      kRopeDetails);
  auto options = std::make_shared<RopeOptions>();
  command->add_option("--config", options->config_path, "the YAML config")
      ->type_name("FILE")
      ->required();
  AddListOption(*command, "--positions", options->positions,
                IntegerAtLeast<int64_t>(0),
                "comma-separated positions, e.g. 0,1,2047\n"
                "(default: 0,1,N-1 with N the sequence length)");
  AddIntegerOption(*command, "--seq-len", options->seq_len, 1,
                   "the sequence length the tables are built for; only\n"
                   "dynamic and longrope depend on it (default:\n"
                   "max_position_embeddings)");
  command->add_flag("--json", options->json,
                    "print one JSON object instead of text: rope_type,\n"
                    "head_dim, rotary_dim, attention_factor, base,\n"
                    "inv_freq, unscaled_inv_freq, wavelength, positions,\n"
                    "cos, sin (one row of r/2 numbers per position)");
  command
      ->add_option("--plot", options->plot_path,
                   "also draw wavelength per frequency index, scaled vs\n"
                   "unscaled, with gnuplot")
      ->type_name("FILE.png")
      ->check(NotEmpty());
  command->callback([options] {
    const RopeReport report = BuildReport(*options);
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
