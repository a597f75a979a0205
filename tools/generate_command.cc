// `rotor generate --checkpoint DIR --prompt TEXT`: samples a continuation
// with a KV cache, printing tokens as they come; with --prompt-ids, from
// ids given as they are, and with --token-ids, printing ids instead of text.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

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
  // Exactly one of the two: a text, or ids as another tool gives them.
  std::string prompt;
  std::string prompt_ids;
  bool token_ids = false;
  train::SamplingOptions sampling;
  int64_t threads = 0;
  std::string precision;  // "": the run's train.precision
  RopeOverrides rope;     // none: the checkpoint's own RoPE settings
};

void RunGenerate(const GenerateOptions& options) {
  const bool from_ids = !options.prompt_ids.empty();
  std::vector<train::TokenId> prompt_ids;
  if (from_ids) {
    try {
      prompt_ids = ParseTokenIds(options.prompt_ids, "--prompt-ids");
      ROTOR_CHECK(!prompt_ids.empty(), "--prompt-ids: no token ids");
    } catch (const Error& error) {
      throw CLI::ValidationError(error.what());
    }
  }
  SetNumThreads(static_cast<int>(options.threads));
  train::TrainConfig config;
  auto model = LoadModelWithRopeOverrides(options.checkpoint, options.rope,
                                          "generate", &config);
  const auto precision =
      UsePrecision(options.precision, config, options.checkpoint);
  const auto tokenizer = train::LoadCheckpointTokenizer(options.checkpoint);
  if (from_ids) {
    CheckModelInputIds(prompt_ids, model->config().vocab_size, "--prompt-ids");
  } else {
    prompt_ids = train::PromptIds(
        *tokenizer, train::CheckpointPromptStart(options.checkpoint),
        options.prompt);
  }
  if (options.token_ids) {
    // Like HF's model.generate: the prompt's ids, then the new ones.
    std::vector<train::TokenId> ids = prompt_ids;
    const std::vector<train::TokenId> generated =
        train::GenerateTokens(*model, *tokenizer, prompt_ids, options.sampling);
    ids.insert(ids.end(), generated.begin(), generated.end());
    std::cout << FormatTokenIds(ids, /*json=*/true) << "\n";
    return;
  }
  std::cout << (from_ids ? train::EscapeControlBytes(tokenizer->Decode(
                               prompt_ids, /*skip_special_tokens=*/true))
                         : options.prompt)
            << std::flush;
  train::GenerateText(*model, *tokenizer, prompt_ids, options.sampling,
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
      "text as it is generated. The model starts from the BOS its texts\n"
      "started with in training (a model rotor trained: the document\n"
      "separator, e.g. <|endoftext|>, 256 for the byte tokenizer; a Hugging\n"
      "Face folder: the BOS its tokenizer adds, or none), then TEXT encoded\n"
      "without special tokens, as llama.cpp does with the GGUF file rotor\n"
      "export writes (scripts/llama_cpp.sh complete FILE.gguf TEXT prints\n"
      "the same greedy text as --temperature 0);\n"
      "--prompt-ids gives the ids instead, used exactly as given (a JSON\n"
      "array, or ids separated by spaces or commas), e.g. those another\n"
      "tool generated from. --token-ids prints one JSON array of the\n"
      "prompt's ids followed by the new ones, as HF's model.generate\n"
      "returns them, instead of text.\n"
      "--rope-from PATH and model.key=value overrides run the model with\n"
      "other RoPE settings, as in rotor eval (e.g. the zero-shot scaling a\n"
      "GGUF was exported with, to compare its text with llama.cpp's).");
  auto options = std::make_shared<GenerateOptions>();
  train::SamplingOptions& sampling = options->sampling;
  AddCheckpointOption(*command, options->checkpoint);
  CLI::Option_group* prompt = command->add_option_group("prompt");
  prompt->add_option("--prompt", options->prompt, "the start of the text")
      ->type_name("TEXT");
  prompt
      ->add_option("--prompt-ids", options->prompt_ids,
                   "the prompt as token ids, e.g. \"[256, 84, 104]\"")
      ->type_name("IDS")
      ->check(NotEmpty());
  prompt->require_option(1);
  command->add_flag("--token-ids", options->token_ids,
                    "print the prompt's and the new token ids (a JSON\n"
                    "array) instead of text");
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
  AddPrecisionOption(*command, options->precision);
  AddRopeOverrideOptions(*command, options->rope);
  command->callback([options] { RunGenerate(*options); });
}

}  // namespace tools
}  // namespace rotor
