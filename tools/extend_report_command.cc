// `rotor extend-report CONFIG [key.path=value ...]`: trains (if needed) a
// base model, extends it with every RoPE scaling method with and without a
// short fine-tune, evaluates perplexity against length and passkey
// retrieval, and writes one Markdown report (train/extend/runner.h).
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "tools/cli.h"
#include "tools/commands.h"
#include "train/extend/runner.h"

namespace rotor {
namespace tools {

namespace {

constexpr char kExtendReportDetails[] =
    "The context-extension papers' tables for your own model, in one\n"
    "command. For the base model of CONFIG's base.config (trained first if\n"
    "its output_dir has no finished run), and for each RoPE scaling method\n"
    "(default, linear, ntk, dynamic, yarn, llama3, longrope) at factor s:\n"
    "  - zero-shot: the base weights with the method's rope_scaling;\n"
    "  - fine-tuned: finetune.steps steps at s times the training length;\n"
    "it measures perplexity against context length on the same validation\n"
    "documents and passkey retrieval over lengths x depths, and writes\n"
    "<output_dir>/report.md with tables, plots (gnuplot) and checks.\n"
    "Finished pieces are kept in <output_dir>/results/, so an interrupted\n"
    "run continues where it stopped; a piece is reused only when its base,\n"
    "tokenizer, data, method settings and evaluation grid are the same.\n"
    "\n"
    "  rotor extend-report configs/extend/report.yaml\n"
    "  rotor extend-report configs/extend/report.yaml finetune.steps=50 \\\n"
    "      factor=8 output_dir=runs/extend-8x\n"
    "\n"
    "configs/extend/report.yaml documents every key;\n"
    "docs/context-extension.md walks through a report.";

struct ExtendReportOptions {
  std::string config_path;
  std::vector<std::string> overrides;
};

void RunExtendReport(const ExtendReportOptions& options) {
  const train::ExtendReportConfig config =
      train::LoadExtendReportConfig(options.config_path, options.overrides);
  const train::ExtendReportSummary summary =
      train::RunExtendReport(config, std::cout);
  std::cout << "wrote " << summary.report_path << " in "
            << static_cast<int64_t>(summary.seconds) << " s\n";
}

}  // namespace

void AddExtendReportCommand(CLI::App& rotor) {
  CLI::App* command = AddCommand(
      rotor, "extend-report",
      "compare RoPE context-extension methods on a model (Markdown report)",
      kExtendReportDetails);
  auto options = std::make_shared<ExtendReportOptions>();
  AddConfigWithOverrides(*command, options->config_path, "the report config",
                         options->overrides,
                         "config keys to override, e.g. finetune.steps=50");
  command->callback([options] { RunExtendReport(*options); });
}

}  // namespace tools
}  // namespace rotor
