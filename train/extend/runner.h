// `rotor extend-report CONFIG`: the context-extension papers' tables for
// your own model. For one base model trained at length L it
//
//   1. trains the base model from its config if its output_dir holds no
//      finished run (resuming a partial one); then, with base.practice,
//      continues it for a few steps at length L on a mix of text and passkey
//      rows ("passkey practice", train.init_from the base) so that a small
//      model learns retrieval; that run is the base for what follows;
//   2. for every RoPE scaling method (default, linear, ntk, dynamic, yarn,
//      llama3, longrope) at extension factor s:
//        zero-shot   the base weights with the method's rope_scaling;
//        fine-tuned  train.init_from the base, N steps at length s*L
//                    (methods listed in finetune.skip, e.g. dynamic, are
//                    only evaluated zero-shot);
//      and evaluates each on perplexity against context length
//      (train/eval/length_eval.h) and passkey retrieval over lengths x depths
//      (train/eval/passkey_eval.h);
//   3. writes <output_dir>/results.json and <output_dir>/report.md with the
//      tables, the plots (gnuplot) and the checks of the expected outcome.
//
// Every finished evaluation is stored in <output_dir>/results/*.json and
// every fine-tune is an ordinary rotor run in <output_dir>/finetune/<method>,
// so rerunning the command after an interruption continues where it stopped
// (and, after changing a setting, delete the folder to start over: a
// finished practice run or fine-tune whose starting weights, steps or data
// differ from what the report asks for is an error, not reused).
//
// The pieces: the settings, train/config/report_config.h (and
// configs/extend/report.yaml, which documents every key); what each run and
// evaluation is, recipe.h; the measurements and their files, results.h;
// report.md, writer.h; this file runs them in order.
#ifndef ROTOR_TRAIN_EXTEND_RUNNER_H_
#define ROTOR_TRAIN_EXTEND_RUNNER_H_

#include <ostream>
#include <string>

#include "train/config/report_config.h"

namespace rotor::train {

struct ExtendReportSummary {
  std::string report_path;  // <output_dir>/report.md
  double seconds = 0.0;
};

// Runs everything (see the top of this file); progress lines go to `log`.
ExtendReportSummary RunExtendReport(const ExtendReportConfig& config,
                                    std::ostream& log);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_EXTEND_RUNNER_H_
