// `rotor train CONFIG [key.path=value ...]`: trains a model from a YAML
// config (train/config/train_config.h), resuming from output_dir's newest
// checkpoint when there is one, then prints two samples.
#include <exception>
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
    "<output_dir>/loss.png when gnuplot is installed.";

struct TrainOptions {
  std::string config_path;
  std::vector<std::string> overrides;
  int64_t samples = 2;
};

// Trains; `out` is std::cout on rank 0 and a stream that prints nothing on
// the other ranks of a data-parallel job.
void Train(const TrainOptions& options, train::Communicator& communicator,
           std::ostream& out) {
  const train::TrainConfig config =
      train::LoadTrainConfig(options.config_path, options.overrides);
  out << "# resolved config (" << options.config_path << ")\n"
      << train::TrainConfigToYaml(config) << std::flush;
  train::Trainer trainer(config, out, communicator);
  out << "model: " << trainer.model().NumParameters()
      << " parameters; output_dir: " << config.output_dir << "\n";
  const train::TrainSummary summary = trainer.Run();
  if (summary.steps_run == 0) {
    out << "nothing to train: " << config.output_dir << " is already at step "
        << summary.steps << " of " << config.train.max_steps
        << " (raise train.max_steps to continue)\n";
  } else {
    out << "done: " << summary.steps << " steps, final train loss "
        << summary.train_loss << ", validation loss " << summary.val_loss
        << ", " << summary.tokens_per_second << " tokens/s over "
        << summary.seconds << " s, peak memory "
        << FormatBytes(static_cast<double>(PeakResidentBytes())) << "\n";
  }
  out << "checkpoint: " << summary.checkpoint << "\n";
  if (communicator.rank() != 0) return;  // rank 0 alone prints samples

  trainer.model().Eval();  // sampling drops nothing (LoRA's dropout)
  const char* prompts[] = {"The ", "In the morning"};
  for (int64_t i = 0; i < options.samples; ++i) {
    train::SamplingOptions sampling;
    sampling.max_new_tokens = 300;
    sampling.temperature = 0.8;
    sampling.seed = static_cast<uint64_t>(i + 1);
    const std::string prompt = prompts[i % 2];
    std::cout << "\n--- sample " << i + 1 << " (prompt \"" << prompt
              << "\") ---\n"
              << prompt
              << train::EscapeControlBytes(train::GenerateText(
                     trainer.model(), trainer.tokenizer(), prompt, sampling))
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
  command->callback([options] { RunTrain(*options); });
}

}  // namespace tools
}  // namespace rotor
