// `rotor train CONFIG [key.path=value ...]`: trains a model from a YAML
// config (train/config/train_config.h), resuming from output_dir's newest
// checkpoint when there is one, then prints two short samples. It prints a
// three-line summary of the run first; the whole resolved config goes to
// <output_dir>/resolved_config.yaml, and `--print-config` prints it instead
// of training.
#include <exception>
#include <iomanip>
#include <iostream>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/memory_limit.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "train/distributed/communicator.h"
#include "train/eval/generate.h"
#include "train/io/atomic_file.h"
#include "train/io/message.h"
#include "train/metrics.h"
#include "train/trainer.h"

namespace rotor {
namespace tools {

namespace {

constexpr char kTrainDetails[] =
    "Trains the model a YAML config describes (see configs/default.yaml for\n"
    "every key). key.path=value pairs override the config, e.g.\n"
    "  rotor train configs/default.yaml train.max_steps=200 train.lr=3e-4\n"
    "Checkpoints go to <output_dir>/checkpoints/step_N/; rerunning the same\n"
    "command resumes from the newest one (train.resume=auto). Metrics are\n"
    "appended to <output_dir>/metrics.jsonl, the loss curve is drawn to\n"
    "<output_dir>/loss.png when gnuplot is installed, and the resolved\n"
    "config (every key, defaults included) to\n"
    "<output_dir>/resolved_config.yaml; --print-config prints it and exits.";

struct TrainOptions {
  std::string config_path;
  std::vector<std::string> overrides;
  int64_t samples = 2;
  int64_t sample_chars = 200;
  bool print_config = false;
};

// The first `chars` bytes of `text`, cut at a character boundary, with "..."
// when something was cut.
std::string Shortened(const std::string& text, size_t chars) {
  if (text.size() <= chars) return text;
  return std::string(train::Utf8Prefix(text, chars)) + "...";
}

// Trains; `out` is std::cout on rank 0 and a stream that prints nothing on
// the other ranks of a data-parallel job.
void Train(const TrainOptions& options, train::Communicator& communicator,
           std::ostream& out) {
  const train::TrainConfig config =
      train::LoadTrainConfig(options.config_path, options.overrides);
  const std::string resolved = train::TrainConfigToYaml(config);
  if (options.print_config) {
    out << "# " << options.config_path << ", resolved\n" << resolved;
    return;
  }
  // Before anything is built: a context extension that would be wrong is
  // refused, a suspicious one warned about (rank 0 alone prints).
  std::ostream silent(nullptr);
  EnforceLintFindings(
      train::LintContextExtension(config.model, TrainingLengths(config)),
      options.config_path, "train",
      communicator.rank() == 0 ? std::cerr : silent);
  train::Trainer trainer(config, out, communicator);
  out << trainer.Summary() << std::flush;
  if (communicator.rank() == 0) {
    train::WriteFileAtomically(config.output_dir + "/resolved_config.yaml",
                               resolved);
  }
  const train::TrainSummary summary = trainer.Run();
  if (summary.steps_run == 0) {
    out << "nothing to train: " << config.output_dir << " is already at step "
        << summary.steps << " of " << config.train.max_steps
        << " (raise train.max_steps to continue)\n";
  } else {
    out << "done: " << summary.steps << " steps in "
        << train::FormatDuration(summary.seconds) << " ("
        << static_cast<int64_t>(summary.tokens_per_second + 0.5)
        << " tokens/s), train loss " << std::fixed << std::setprecision(4)
        << summary.train_loss << ", validation loss " << summary.val_loss
        << std::defaultfloat << ", peak memory "
        << FormatBytes(static_cast<double>(PeakResidentBytes())) << "\n";
  }
  out << "checkpoint: " << summary.checkpoint << "\n";
  if (communicator.rank() != 0) return;  // rank 0 alone prints samples

  trainer.model().Eval();  // sampling drops nothing (LoRA's dropout)
  const char* prompts[] = {"The ", "In the morning"};
  for (int64_t i = 0; i < options.samples; ++i) {
    train::SamplingOptions sampling;
    sampling.max_new_tokens = options.sample_chars;
    sampling.temperature = 0.8;
    sampling.seed = static_cast<uint64_t>(i + 1);
    const std::string prompt = prompts[i % 2];
    std::cout << "\n--- sample " << i + 1 << " (prompt \"" << prompt
              << "\") ---\n"
              << Shortened(train::EscapeControlBytes(
                               prompt + train::GenerateText(trainer.model(),
                                                            trainer.tokenizer(),
                                                            prompt, sampling)),
                           static_cast<size_t>(options.sample_chars))
              << "\n";
  }
}

// Under mpirun or srun each process is one rank (train/distributed/). An
// error on any rank ends the whole job at once (the others would wait for
// it until their timeout), printed with the rank that hit it.
void RunTrain(const TrainOptions& options) {
  const std::unique_ptr<train::Communicator> communicator =
      train::StartCommunicator();
  if (communicator->size() == 1) {
    Train(options, *communicator, std::cout);
    return;
  }
  std::ostream silent(nullptr);  // a stream without a buffer drops output
  try {
    Train(options, *communicator,
          communicator->rank() == 0 ? std::cout : silent);
  } catch (const std::exception& error) {
    std::cout << std::flush;
    communicator->Abort(StrCat("rotor train: error on rank ",
                               communicator->rank(), " of ",
                               communicator->size(), ": ", error.what()));
  }
}

}  // namespace

void AddTrainCommand(CLI::App& rotor) {
  CLI::App* command =
      AddCommand(rotor, "train",
                 "train a model from a YAML config (resumes automatically)",
                 kTrainDetails);
  auto options = std::make_shared<TrainOptions>();
  AddConfigWithOverrides(*command, options->config_path, "the training config",
                         options->overrides,
                         "config keys to override, e.g. train.max_steps=200");
  AddIntegerOption(*command, "--samples", options->samples, 0,
                   "text samples printed after training (default 2)");
  AddIntegerOption(*command, "--sample-chars", options->sample_chars, 1,
                   "characters of each sample, at most (default 200)");
  command->add_flag("--print-config", options->print_config,
                    "print the resolved config (every key, defaults "
                    "included) and exit without training");
  command->callback([options] { RunTrain(*options); });
}

}  // namespace tools
}  // namespace rotor
