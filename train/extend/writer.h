// report.md (and report.html) of rotor extend-report (train/extend/runner.h):
// the perplexity, passkey and retrieval tables with their plots (gnuplot,
// train/io/plot.h), the checks of the expected outcome against the thresholds
// of the report config's `checks:`, the time of each piece and each method's
// settings.
#ifndef ROTOR_TRAIN_EXTEND_WRITER_H_
#define ROTOR_TRAIN_EXTEND_WRITER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "train/config/report_config.h"
#include "train/extend/recipe.h"
#include "train/extend/results.h"

namespace rotor::train {

// What the runner did besides the measurements.
struct ReportRun {
  std::string base_checkpoint;      // the weights every variant starts from
  std::string val_path;             // the validation tokens scored
  double base_train_seconds = 0.0;  // the base run's elapsed_seconds
  double practice_seconds = 0.0;    // the passkey practice's, if any
  double invocation_seconds = 0.0;  // this invocation's, so far
};

// Writes <config.output_dir>/report.md and its plots (a plot gnuplot cannot
// draw is named in the settings instead), and report.html: the same text
// and tables with the plots drawn by the RoPE explorer
// (train/extend/rope_explorer.h), which it embeds, in one self-contained
// file. Returns report.md's path.
// `results` in the order of the tables: the zero-shot ones, then the
// fine-tuned ones.
std::string WriteReport(const ExtendReportConfig& config,
                        const ReportPlan& plan, const ReportRun& run,
                        const std::vector<VariantResult>& results);

// One line on a finished variant for the progress log: "perplexity 3.972
// at 1024, passkey 96% (0m08s to evaluate)".
std::string VariantSummary(const VariantResult& result, int64_t length);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_EXTEND_WRITER_H_
