// What a run reports as it trains: <output_dir>/metrics.jsonl (one JSON
// object per line, a step's or an evaluation's), the loss curve drawn from it
// (loss.png), and the clock and duration format of the progress lines.
//
//   {"step":10,"loss":2.71,"lr":0.0001,"grad_norm":0.93,"tokens_per_second":16500,"tokens_seen":40960}
//   (a data-parallel run adds "allreduce_wait_share":0.08)
//   {"step":100,"val_loss":2.05,"val_perplexity":7.77,"val_bits_per_byte":2.96}
#ifndef ROTOR_TRAIN_METRICS_H_
#define ROTOR_TRAIN_METRICS_H_

#include <cstdint>
#include <string>

#include "train/eval/validation.h"

namespace rotor::train {

struct StepMetrics {
  int64_t step = 0;
  double loss = 0.0;
  double lr = 0.0;
  double grad_norm = 0.0;
  double tokens_per_second = 0.0;
  int64_t tokens_seen = 0;
  // Data-parallel runs only (logged when >= 0): the share of the time since
  // the last logged step spent waiting for the gradient sums.
  double allreduce_wait_share = -1.0;
};

class MetricsLog {
 public:
  // Logs to <output_dir>/metrics.jsonl.
  explicit MetricsLog(const std::string& output_dir);

  // Keeps the lines up to `step` (the step a run starts from) and drops the
  // rest: a run killed after its last checkpoint logged steps that the
  // resumed run logs again, and may have left half a line.
  void TrimAfter(int64_t step) const;

  // Append one line each, whole or not at all: a failed write (a full disk)
  // throws rotor::Error naming metrics.jsonl and leaves it as it was.
  void LogStep(const StepMetrics& metrics) const;
  void LogEvaluation(int64_t step, const ValidationResult& result) const;

  // Draws <output_dir>/loss.png (every step's training loss, and the
  // validation losses as points, against the step) titled `title` (the run
  // and its config) and returns a line saying where, or why there is no
  // plot. Never throws: malformed lines are skipped, and a failed plot is a
  // warning in the returned line, never a failed run.
  std::string PlotLossCurve(const std::string& title) const;

 private:
  std::string output_dir_;
  std::string path_;
};

// Seconds on a monotonic clock, for durations.
double SteadySeconds();

// "4m07s", "1h02m"; "?" for a negative or non-finite duration.
std::string FormatDuration(double seconds);

// A count for a person to read: exact below 10,000 ("9999"), else three
// significant digits with k, M or G ("12.3 k", "1.62 M", "6.14 G").
std::string FormatCount(int64_t count);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_METRICS_H_
