// `rotor train CONFIG [key.path=value ...]`: trains a model from a YAML
// config (train/config/train_config.h), resuming from output_dir's newest
// checkpoint when there is one, then prints two samples.
#include <iostream>

#include "core/error.h"
#include "tools/commands.h"
#include "tools/flag_parser.h"
#include "train/eval/generate.h"
#include "train/trainer.h"

namespace rotor {
namespace tools {

namespace {

constexpr char kTrainHelp[] =
    "Usage: rotor train CONFIG.yaml [key.path=value ...] [--samples N]\n"
    "\n"
    "Trains the model a YAML config describes (see configs/default.yaml for\n"
    "every key). key.path=value pairs override the config, e.g.\n"
    "  rotor train configs/default.yaml train.max_steps=200 train.lr=3e-4\n"
    "Checkpoints go to <output_dir>/checkpoints/step_N/; rerunning the same\n"
    "command resumes from the newest one (train.resume=auto). Metrics are\n"
    "appended to <output_dir>/metrics.jsonl, the loss curve is drawn to\n"
    "<output_dir>/loss.png when gnuplot is installed.\n"
    "\n"
    "Options:\n"
    "  --samples N   text samples printed after training (default 2)\n"
    "  --help        this text\n";

}  // namespace

int RunTrainCommand(const std::vector<std::string>& args) {
  const FlagParser flags(args, {"--samples"}, {"--help"});
  if (flags.Has("--help")) {
    std::cout << kTrainHelp;
    return 0;
  }
  const std::vector<std::string>& positional = flags.positional();
  if (positional.empty()) throw UsageError("a config file is required");
  const std::string config_path = positional[0];
  for (size_t i = 1; i < positional.size(); ++i) {
    if (positional[i].find('=') == std::string::npos) {
      throw UsageError("'" + positional[i] +
                       "' is neither a flag nor a key.path=value override");
    }
  }
  const std::vector<std::string> overrides(positional.begin() + 1,
                                           positional.end());
  const int64_t samples = flags.Int("--samples", 2, 0);

  const train::TrainConfig config = train::LoadTrainConfig(config_path, overrides);
  std::cout << "# resolved config (" << config_path << ")\n"
            << train::TrainConfigToYaml(config) << std::flush;
  train::Trainer trainer(config, std::cout);
  std::cout << "model: " << trainer.model().NumParameters()
            << " parameters; output_dir: " << config.output_dir << "\n";
  const train::TrainSummary summary = trainer.Run();
  if (summary.steps_run == 0) {
    std::cout << "nothing to train: " << config.output_dir
              << " is already at step " << summary.steps << " of "
              << config.train.max_steps
              << " (raise train.max_steps to continue)\n";
  } else {
    std::cout << "done: " << summary.steps << " steps, final train loss "
              << summary.train_loss << ", validation loss " << summary.val_loss
              << ", " << summary.tokens_per_second << " tokens/s over "
              << summary.seconds << " s\n";
  }
  std::cout << "checkpoint: " << summary.checkpoint << "\n";

  const char* prompts[] = {"The ", "In the morning"};
  for (int64_t i = 0; i < samples; ++i) {
    train::SamplingOptions options;
    options.max_new_tokens = 300;
    options.temperature = 0.8;
    options.seed = static_cast<uint64_t>(i + 1);
    const std::string prompt = prompts[i % 2];
    std::cout << "\n--- sample " << i + 1 << " (prompt \"" << prompt
              << "\") ---\n"
              << prompt
              << train::EscapeControlBytes(
                     train::GenerateText(trainer.model(), prompt, options))
              << "\n";
  }
  return 0;
}

}  // namespace tools
}  // namespace rotor
