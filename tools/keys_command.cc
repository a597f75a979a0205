// `rotor keys [SECTION] [--report]`: every key of the YAML config, one per
// line with its help, from the field tables (core/fields.h) the readers
// and writers use, so the list is never out of date: the training config's
// (model: with rope_scaling's, data:, train:, ...), or with --report the
// extend-report config's. SECTION ("model.rope_scaling", "train.lr") keeps
// that key and the keys below it.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/fields.h"
#include "core/suggest.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "train/config/report_config.h"
#include "train/config/train_config.h"
#include "train/io/message.h"

namespace rotor {
namespace tools {

namespace {

constexpr char kKeysDetails[] =
    "Prints every key path of a training config (docs/training.md), or\n"
    "with --report of an extend-report config, with one line on what it\n"
    "sets: the tables the config readers check the keys against. A\n"
    "section's keys follow it; rope_scaling's apply to the methods their\n"
    "help names (docs/context-extension.md). SECTION keeps one key and\n"
    "the keys below it, e.g. rotor keys model.rope_scaling.";

struct KeysOptions {
  std::string section;
  bool report = false;
};

void RunKeys(const KeysOptions& options) {
  const std::vector<KeyPaths::Entry> all =
      options.report ? KeyPathsOf<train::ExtendReportConfig>()
                     : KeyPathsOf<train::TrainConfig>();
  std::vector<KeyPaths::Entry> shown;
  std::vector<std::string> paths;
  for (const KeyPaths::Entry& entry : all) {
    paths.push_back(entry.path);
    if (options.section.empty() || entry.path == options.section ||
        entry.path.rfind(options.section + ".", 0) == 0) {
      shown.push_back(entry);
    }
  }
  ROTOR_CHECK(!shown.empty(), "'", train::Excerpt(options.section),
              "' is no key of ",
              options.report ? "an extend-report" : "a training", " config",
              DidYouMean(options.section, paths));
  size_t width = 0;
  for (const KeyPaths::Entry& entry : shown) {
    width = std::max(width, entry.path.size());
  }
  for (const KeyPaths::Entry& entry : shown) {
    std::printf("%-*s  %s\n", static_cast<int>(width), entry.path.c_str(),
                entry.help);
  }
}

}  // namespace

void AddKeysCommand(CLI::App& rotor) {
  CLI::App* command = AddCommand(
      rotor, "keys", "list the keys of a YAML config, each with its help",
      kKeysDetails);
  auto options = std::make_shared<KeysOptions>();
  command
      ->add_option("section", options->section,
                   "a key path: only it and the keys below it")
      ->type_name("SECTION");
  command->add_flag("--report", options->report,
                    "the extend-report config's keys");
  command->callback([options] { RunKeys(*options); });
}

}  // namespace tools
}  // namespace rotor
