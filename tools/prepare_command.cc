// `rotor prepare`: text files -> train.bin / val.bin / meta.json (see
// train/data/prepare.h for the pipeline and docs/data.md for the formats).
#include <iostream>
#include <memory>
#include <string>

#include "core/parallel.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "train/data/prepare.h"

namespace rotor {
namespace tools {

namespace {

struct PrepareCommandOptions {
  train::PrepareOptions prepare;
  int64_t threads = 0;
};

void PrepareAndReport(const PrepareCommandOptions& command_options) {
  SetNumThreads(static_cast<int>(command_options.threads));
  const train::PrepareOptions& options = command_options.prepare;
  const train::PrepareSummary summary = train::RunPrepare(options);
  for (const std::string& file : summary.skipped_empty) {
    std::cerr << "rotor prepare: warning: skipped empty file " << file << "\n";
  }
  std::cout << "wrote " << options.output << ": train "
            << summary.train.documents << " documents, " << summary.train.tokens
            << " tokens; val " << summary.val.documents << " documents, "
            << summary.val.tokens << " tokens\n";
}

}  // namespace

void AddPrepareCommand(CLI::App& rotor) {
  CLI::App* command = AddCommand(
      rotor, "prepare", "turn text files into train/validation token files",
      "Turns text files into token files for training: DIR/train.bin,\n"
      "DIR/val.bin, DIR/meta.json and, with a tokenizer.json, its copy\n"
      "DIR/tokenizer.json.\n"
      "Each file is one document; the train/validation split is by\n"
      "document. See docs/data.md.");
  auto command_options = std::make_shared<PrepareCommandOptions>();
  train::PrepareOptions* options = &command_options->prepare;
  command
      ->add_option("--input", options->inputs,
                   "files and/or folders (searched recursively,\n"
                   "sorted, hidden files skipped)")
      ->type_name("PATH")
      ->required()
      ->check(NotEmpty());
  command->add_option("--output", options->output, "where to write")
      ->type_name("DIR")
      ->required()
      ->check(NotEmpty());
  AddNumberOption(*command, "--val-fraction", options->val_fraction, 0.0, 1.0,
                  "share of documents for validation, 0 < X < 1\n"
                  "(default 0.05; at least one document each)",
                  /*open=*/true);
  AddIntegerOption(*command, "--seed", options->seed, 0,
                   "seed of the split's shuffle (default 1)");
  command
      ->add_option("--format", options->format,
                   "text: files as they are (default);\n"
                   "brown: tagged Brown corpus files ca01..cr09,\n"
                   "cleaned to plain English")
      ->type_name("FORMAT")
      ->check(CLI::IsMember({"text", "brown"}));
  command->add_flag("--force", options->force,
                    "replace DIR if it already holds files");
  command
      ->add_option("--tokenizer", options->tokenizer,
                   "byte (default: one token per byte) or a\n"
                   "tokenizer.json, or a folder holding one")
      ->type_name("FILE");
  AddThreadsOption(*command, command_options->threads);
  command->callback([command_options] { PrepareAndReport(*command_options); });
}

}  // namespace tools
}  // namespace rotor
