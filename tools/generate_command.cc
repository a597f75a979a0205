// `rotor generate --checkpoint DIR --prompt TEXT`: samples a continuation
// with a KV cache, printing tokens as they come.
#include <iostream>
#include <memory>
#include <string>

#include "core/limits.h"
#include "core/parallel.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "train/checkpoint.h"
#include "train/eval/generate.h"

namespace rotor {
namespace tools {

namespace {

struct GenerateOptions {
  std::string checkpoint;
  std::string prompt;
  train::SamplingOptions sampling;
  int64_t threads = 0;
};

void RunGenerate(const GenerateOptions& options) {
  SetNumThreads(static_cast<int>(options.threads));
  auto model = train::LoadCheckpointModel(options.checkpoint, /*overrides=*/{});
  const auto tokenizer = train::LoadCheckpointTokenizer(options.checkpoint);
  std::cout << options.prompt << std::flush;
  train::GenerateText(*model, *tokenizer, options.prompt, options.sampling,
                      [](const std::string& text) {
                        std::cout << train::EscapeControlBytes(text)
                                  << std::flush;
                      });
  std::cout << "\n";
}

}  // namespace

void AddGenerateCommand(CLI::App& rotor) {
  CLI::App* command = AddCommand(
      rotor, "generate", "continue a prompt with a trained model (KV cache)",
      "Continues TEXT with the model of a checkpoint, one token at a time\n"
      "with a KV cache (in the checkpoint's tokenizer), and prints the\n"
      "text as it is generated.");
  auto options = std::make_shared<GenerateOptions>();
  train::SamplingOptions& sampling = options->sampling;
  AddCheckpointOption(*command, options->checkpoint);
  command->add_option("--prompt", options->prompt, "the start of the text")
      ->type_name("TEXT")
      ->required();
  AddIntegerOption(*command, "--max-new-tokens", sampling.max_new_tokens, 0,
                   limits::kMaxPositions - 1,
                   "tokens to generate (default 200)");
  AddNumberOption(*command, "--temperature", sampling.temperature, 0.0, 100.0,
                  "0 = greedy; higher = more varied (default 0.8)");
  AddIntegerOption(*command, "--top-k", sampling.top_k, 0,
                   "sample among the N likeliest (default 0 = all)");
  AddNumberOption(*command, "--top-p", sampling.top_p, 1e-9, 1.0,
                  "nucleus sampling mass (default 1 = off)");
  AddIntegerOption(*command, "--seed", sampling.seed, 0,
                   "sampling seed (default 0)");
  AddThreadsOption(*command, options->threads);
  command->callback([options] { RunGenerate(*options); });
}

}  // namespace tools
}  // namespace rotor
