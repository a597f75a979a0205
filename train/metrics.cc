#include "train/metrics.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "core/error.h"
#include "train/io/atomic_file.h"
#include "train/io/json.h"
#include "train/io/plot.h"

namespace rotor::train {

namespace {

// {"step": step, key: value, ...}. JSON has no NaN or infinity, so such a
// value is written as null and named with what it was in "non_finite":
//   {"step":10,"val_loss":812.5,"val_perplexity":null,...,
//    "non_finite":{"val_perplexity":"inf"}}
Json Record(int64_t step,
            std::initializer_list<std::pair<const char*, double>> values) {
  Json record = {{"step", step}};
  Json non_finite = Json::object();
  for (const auto& [key, value] : values) {
    record[key] = FiniteOrNull(value);
    if (!std::isfinite(value)) {
      non_finite[key] = NonFiniteName(value);
    }
  }
  if (!non_finite.empty()) record["non_finite"] = std::move(non_finite);
  return record;
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
  Json line =
      Record(metrics.step, {{"loss", metrics.loss},
                            {"lr", metrics.lr},
                            {"grad_norm", metrics.grad_norm},
                            {"tokens_per_second", metrics.tokens_per_second}});
  line["tokens_seen"] = metrics.tokens_seen;
  if (metrics.allreduce_wait_share >= 0) {
    line["allreduce_wait_share"] = metrics.allreduce_wait_share;
  }
  AppendToFile(path_, line.dump() + "\n");
}

void MetricsLog::LogEvaluation(int64_t step,
                               const ValidationResult& result) const {
  const Json line = Record(step, {{"val_loss", result.loss},
                                  {"val_perplexity", result.perplexity},
                                  {"val_bits_per_byte", result.bits_per_byte}});
  AppendToFile(path_, line.dump() + "\n");
}

std::string MetricsLog::PlotLossCurve(const std::string& title) const {
  LineSeries train{"train", {}, {}, false, /*points=*/false};
  LineSeries validation{"validation", {}, {}, false, /*points=*/true};
  int64_t malformed = 0;
  std::ifstream in(path_);
  for (std::string line; std::getline(in, line);) {
    try {
      const Json json = ParseJson(line, path_);
      const double step = JsonMember<double>(json, "step", path_);
      if (json.contains("loss") && !json["loss"].is_null()) {
        train.x.push_back(step);
        train.y.push_back(JsonMember<double>(json, "loss", path_));
      }
      if (json.contains("val_loss") && !json["val_loss"].is_null()) {
        validation.x.push_back(step);
        validation.y.push_back(JsonMember<double>(json, "val_loss", path_));
      }
    } catch (const Error&) {
      ++malformed;
    }
  }
  LineChart chart;
  chart.title = title;
  chart.x_label = "step";
  chart.y_label = "loss (nats/token)";
  chart.series = {train, validation};
  const std::string png = output_dir_ + "/loss.png";
  // The plot is a convenience: no failure of it may fail a finished run.
  std::string problem;
  try {
    problem = DrawLineChart(chart, png);
  } catch (const Error& e) {
    problem = StrCat("warning: no loss curve: ", e.what());
  }
  const std::string result = problem.empty() ? "loss curve: " + png : problem;
  return malformed == 0 ? result
                        : StrCat(result, " (warning: skipped ", malformed,
                                 " malformed line(s) of ", path_, ")");
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

std::string FormatCount(int64_t count) {
  if (count < 10000 && count > -10000) return std::to_string(count);
  const char* units[] = {"k", "M", "G", "T"};
  double value = static_cast<double>(count) / 1000.0;
  int unit = 0;
  while (std::abs(value) >= 999.5 && unit < 3) {
    value /= 1000.0;
    ++unit;
  }
  char buffer[32];
  const int decimals = std::abs(value) >= 99.95   ? 0
                       : std::abs(value) >= 9.995 ? 1
                                                  : 2;
  std::snprintf(buffer, sizeof(buffer), "%.*f %s", decimals, value,
                units[unit]);
  return buffer;
}

}  // namespace rotor::train
