// rotor prepare: text files -> train.bin / val.bin / meta.json (see
// train/data/prepare.h for the pipeline and docs/data.md for the formats).
#include <iostream>

#include "core/error.h"
#include "tools/commands.h"
#include "train/data/prepare.h"

namespace rotor {
namespace tools {

int RunPrepareCommand(const std::vector<std::string>& args) {
  train::PrepareOptions options;
  try {
    options = train::ParsePrepareArgs(args);
  } catch (const Error& error) {
    std::cerr << "rotor prepare: error: " << error.what() << "\n";
    return 2;
  }
  if (options.help) {
    std::cout << train::PrepareUsage();
    return 0;
  }
  const train::PrepareSummary summary = RunPrepare(options);
  for (const std::string& file : summary.skipped_empty) {
    std::cerr << "rotor prepare: warning: skipped empty file " << file << "\n";
  }
  std::cout << "wrote " << options.output << ": train "
            << summary.train.documents << " documents, " << summary.train.tokens
            << " tokens; val " << summary.val.documents << " documents, "
            << summary.val.tokens << " tokens\n";
  return 0;
}

}  // namespace tools
}  // namespace rotor
