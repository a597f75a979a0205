#include "tools/commands.h"

namespace rotor {
namespace tools {

const std::vector<Command>& Commands() {
  static const std::vector<Command> commands = {
      {"train", "train a model from a YAML config (resumes automatically)",
       RunTrainCommand},
      {"eval", "validation loss, perplexity and bits per byte of a checkpoint",
       RunEvalCommand},
      {"generate", "continue a prompt with a trained model (KV cache)",
       RunGenerateCommand},
      {"prepare", "turn text files into train/validation token files",
       RunPrepareCommand},
      {"extend-report",
       "compare RoPE context-extension methods on a model (Markdown report)",
       RunExtendReportCommand},
      {"rope", "show a config's RoPE frequencies, scaling and cos/sin",
       RunRopeCommand},
  };
  return commands;
}

}  // namespace tools
}  // namespace rotor
