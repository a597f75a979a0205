#include "train/metrics.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "train/io/atomic_file.h"
#include "train/io/json.h"
#include "train/io/plot.h"

namespace rotor::train {

namespace {

void AppendLine(const std::string& path, const std::string& line) {
  std::ofstream out(path, std::ios::app);
  out << line << "\n";
}

}  // namespace

MetricsLog::MetricsLog(const std::string& output_dir)
    : output_dir_(output_dir), path_(output_dir + "/metrics.jsonl") {}

void MetricsLog::TrimAfter(int64_t step) const {
  if (!std::filesystem::exists(path_)) return;
  const std::string text = ReadFile(path_);
  std::string kept;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    try {
      if (JsonMember<int64_t>(ParseJson(line, path_), "step", path_) <= step) {
        kept += line + "\n";
      }
    } catch (const Error&) {  // half-written: dropped
    }
  }
  if (kept != text) WriteFileAtomically(path_, kept);
}

void MetricsLog::LogStep(const StepMetrics& metrics) const {
  const Json line = {{"step", metrics.step},
                     {"loss", FiniteOrNull(metrics.loss)},
                     {"lr", metrics.lr},
                     {"grad_norm", FiniteOrNull(metrics.grad_norm)},
                     {"tokens_per_second", metrics.tokens_per_second},
                     {"tokens_seen", metrics.tokens_seen}};
  AppendLine(path_, line.dump());
}

void MetricsLog::LogEvaluation(int64_t step,
                               const ValidationResult& result) const {
  const Json line = {{"step", step},
                     {"val_loss", result.loss},
                     {"val_perplexity", result.perplexity},
                     {"val_bits_per_byte", result.bits_per_byte}};
  AppendLine(path_, line.dump());
}

std::string MetricsLog::PlotLossCurve() const {
  LineSeries train{"train", {}, {}, false, /*points=*/false};
  LineSeries validation{"validation", {}, {}, false, /*points=*/true};
  std::ifstream in(path_);
  for (std::string line; std::getline(in, line);) {
    const Json json = ParseJson(line, path_);
    const double step = JsonMember<double>(json, "step", path_);
    if (json.contains("loss") && !json["loss"].is_null()) {
      train.x.push_back(step);
      train.y.push_back(JsonMember<double>(json, "loss", path_));
    }
    if (json.contains("val_loss")) {
      validation.x.push_back(step);
      validation.y.push_back(JsonMember<double>(json, "val_loss", path_));
    }
  }
  LineChart chart;
  chart.title = "rotor training loss";
  chart.x_label = "step";
  chart.y_label = "loss (nats/token)";
  chart.series = {train, validation};
  const std::string png = output_dir_ + "/loss.png";
  const std::string problem = DrawLineChart(chart, png);
  return problem.empty() ? "loss curve: " + png : problem;
}

double SteadySeconds() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  char buffer[32];
  if (s >= 3600) {
    std::snprintf(buffer, sizeof(buffer), "%lldh%02lldm",
                  static_cast<long long>(s / 3600),
                  static_cast<long long>(s % 3600 / 60));
  } else {
    std::snprintf(buffer, sizeof(buffer), "%lldm%02llds",
                  static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  }
  return buffer;
}

}  // namespace rotor::train
