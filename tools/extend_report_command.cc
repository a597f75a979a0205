// `rotor extend-report CONFIG [key.path=value ...]`: trains (if needed) a
// base model, extends it with every RoPE scaling method with and without a
// short fine-tune, evaluates perplexity against length and passkey
// retrieval, and writes one Markdown report (train/extend/runner.h).
#include <iostream>

#include "tools/commands.h"
#include "tools/flag_parser.h"
#include "train/extend/runner.h"

namespace rotor {
namespace tools {

namespace {

constexpr char kExtendReportHelp[] =
    "Usage: rotor extend-report CONFIG.yaml [key.path=value ...]\n"
    "\n"
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
    "run continues where it stopped.\n"
    "\n"
    "  rotor extend-report configs/extend/report.yaml\n"
    "  rotor extend-report configs/extend/report.yaml finetune.steps=50 \\\n"
    "      factor=8 output_dir=runs/extend-8x\n"
    "\n"
    "configs/extend/report.yaml documents every key;\n"
    "docs/context-extension.md walks through a report.\n";

}  // namespace

int RunExtendReportCommand(const std::vector<std::string>& args) {
  const FlagParser flags(args, {}, {"--help"});
  if (flags.Has("--help")) {
    std::cout << kExtendReportHelp;
    return 0;
  }
  const std::vector<std::string>& positional = flags.positional();
  if (positional.empty()) throw UsageError("a report config is required");
  for (size_t i = 1; i < positional.size(); ++i) {
    if (positional[i].find('=') == std::string::npos) {
      throw UsageError("'" + positional[i] +
                       "' is neither a flag nor a key.path=value override");
    }
  }
  const train::ExtendReportConfig config = train::LoadExtendReportConfig(
      positional[0],
      std::vector<std::string>(positional.begin() + 1, positional.end()));
  const train::ExtendReportSummary summary = RunExtendReport(config, std::cout);
  std::cout << "wrote " << summary.report_path << " in "
            << static_cast<int64_t>(summary.seconds) << " s\n";
  return 0;
}

}  // namespace tools
}  // namespace rotor
