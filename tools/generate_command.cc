// `rotor generate --checkpoint DIR --prompt TEXT`: samples a continuation
// with a KV cache, printing tokens as they come.
#include <iostream>

#include "core/parallel.h"
#include "tools/commands.h"
#include "tools/flag_parser.h"
#include "train/checkpoint.h"
#include "train/eval/generate.h"
#include "train/trainer.h"

namespace rotor {
namespace tools {

namespace {

constexpr char kGenerateHelp[] =
    "Usage: rotor generate --checkpoint DIR --prompt TEXT\n"
    "                      [--max-new-tokens N] [--temperature T]\n"
    "                      [--top-k K] [--top-p P] [--seed S] [--threads N]\n"
    "\n"
    "Continues TEXT with the model of a checkpoint, one byte-token at a time\n"
    "with a KV cache, and prints the text as it is generated.\n"
    "\n"
    "Options:\n"
    "  --checkpoint DIR     a checkpoint folder, or a run's output_dir (its\n"
    "                       newest checkpoint) (required)\n"
    "  --prompt TEXT        the start of the text (required)\n"
    "  --max-new-tokens N   tokens to generate (default 200)\n"
    "  --temperature T      0 = greedy; higher = more varied (default 0.8)\n"
    "  --top-k K            sample among the K likeliest (default 0 = all)\n"
    "  --top-p P            nucleus sampling mass (default 1 = off)\n"
    "  --seed S             sampling seed (default 0)\n"
    "  --threads N          0 = all cores (default)\n";

}  // namespace

int RunGenerateCommand(const std::vector<std::string>& args) {
  const FlagParser flags(
      args,
      {"--checkpoint", "--prompt", "--max-new-tokens", "--temperature",
       "--top-k", "--top-p", "--seed", "--threads"},
      {"--help"});
  if (flags.Has("--help")) {
    std::cout << kGenerateHelp;
    return 0;
  }
  if (!flags.positional().empty()) {
    throw UsageError("unexpected argument '" + flags.positional()[0] + "'");
  }
  const std::string dir = flags.Required("--checkpoint");
  const std::string prompt = flags.Required("--prompt");
  train::SamplingOptions options;
  options.max_new_tokens = flags.Int("--max-new-tokens", 200, 0);
  options.temperature = flags.Double("--temperature", 0.8, 0.0, 100.0);
  options.top_k = flags.Int("--top-k", 0, 0);
  options.top_p = flags.Double("--top-p", 1.0, 1e-9, 1.0);
  options.seed = static_cast<uint64_t>(flags.Int("--seed", 0, 0));
  SetNumThreads(static_cast<int>(flags.Int("--threads", 0, 0)));

  auto model = train::LoadCheckpointModel(dir, /*overrides=*/{});
  std::cout << prompt << std::flush;
  train::GenerateText(*model, prompt, options, [](const std::string& text) {
    std::cout << train::EscapeControlBytes(text) << std::flush;
  });
  std::cout << "\n";
  return 0;
}

}  // namespace tools
}  // namespace rotor
