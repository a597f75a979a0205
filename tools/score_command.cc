// `rotor score --checkpoint DIR (--tokens FILE | --text TEXT)`: the
// log-probability the model gives each token after the ones before it
// (train/eval/score.h), as a table or JSON, and optionally the logits as a
// safetensors file, to check rotor against another implementation token by
// token.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "core/parallel.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "train/checkpoint.h"
#include "train/eval/generate.h"
#include "train/eval/score.h"
#include "train/io/atomic_file.h"
#include "train/io/json.h"
#include "train/io/output_file.h"
#include "train/io/safetensors.h"

namespace rotor {
namespace tools {

namespace {

constexpr char kScoreDetails[] =
    "Runs the model of a checkpoint once over a token sequence and prints,\n"
    "for each token after the first, its log-probability (natural log)\n"
    "given the tokens before it, computed in double from the float32\n"
    "logits; then their sum, the mean negative log-likelihood (the loss HF\n"
    "reports for labels = input_ids) and the perplexity exp(mean).\n"
    "\n"
    "--tokens FILE reads the ids: a JSON array, or integers separated by\n"
    "spaces, commas or newlines. --text TEXT is encoded with the\n"
    "checkpoint's tokenizer after the BOS the model's texts started with\n"
    "in training, as rotor generate starts a prompt: a model rotor trained\n"
    "starts every document with the document separator (<|endoftext|>,\n"
    "256 for the byte tokenizer, or Llama's BOS); a Hugging Face folder\n"
    "with the BOS its tokenizer adds, or none (HF's tokenizer(text) adds\n"
    "the same, for a folder rotor export wrote too). --no-add-special-tokens\n"
    "leaves the BOS out.\n"
    "\n"
    "--rope-from PATH and model.key=value overrides score the model with\n"
    "other RoPE settings, as in rotor eval (e.g. the zero-shot scaling a\n"
    "GGUF was exported with), checked as eval checks them.\n"
    "\n"
    "--json prints one object: ids, log_probs (null first), sum_log_prob,\n"
    "mean_nll, perplexity, at full precision. --logits FILE writes the\n"
    "float32 logits [T, vocab] as tensor \"logits\" and the ids as the I32\n"
    "tensor \"input_ids\" [T] of a safetensors file (an existing FILE\n"
    "only with --force, and never one the command read).";

struct ScoreOptions {
  std::string checkpoint;
  // Exactly one of the two.
  std::string tokens;
  std::string text;
  bool no_add_special_tokens = false;
  std::string logits;
  bool force = false;
  bool json = false;
  int64_t threads = 0;
  std::string precision;  // "": the run's train.precision
  RopeOverrides rope;     // none: the checkpoint's own RoPE settings
};

// A token's text for the table, in quotes so its spaces show: newline, tab
// and the other control bytes escaped (as generate escapes them), and when
// the token alone is not valid UTF-8 (one byte of a multi-byte character),
// its bytes above 0x7f as \xNN too.
std::string ShowToken(const std::string& text) {
  const bool valid = train::IsValidUtf8(text);
  std::string shown;
  for (const unsigned char c : text) {
    if (c == '\n') {
      shown += "\\n";
    } else if (c == '\t') {
      shown += "\\t";
    } else if (c >= 0x80 && !valid) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\x%02x", c);
      shown += escaped;
    } else {
      shown += static_cast<char>(c);
    }
  }
  return "\"" + train::EscapeControlBytes(shown) + "\"";
}

void PrintTable(const ScoreOptions& options, const train::Tokenizer& tokenizer,
                const std::vector<train::TokenId>& ids,
                const train::TokenScores& scores) {
  std::printf("checkpoint   %s\n", options.checkpoint.c_str());
  std::printf("tokens       %zu (%zu scored: the first is only context)\n",
              ids.size(), ids.size() - 1);
  std::printf("%8s  %8s  %12s  %s\n", "position", "id", "log-prob", "token");
  for (size_t t = 0; t < ids.size(); ++t) {
    // Ids a model.vocab_size rounded up adds have no text.
    const std::string token = ids[t] < tokenizer.VocabSize()
                                  ? ShowToken(tokenizer.Decode({ids[t]}, false))
                                  : "(no token)";
    if (t == 0) {
      std::printf("%8zu  %8d  %12s  %s\n", t, ids[t], "-", token.c_str());
    } else {
      std::printf("%8zu  %8d  %12.6f  %s\n", t, ids[t], scores.log_probs[t],
                  token.c_str());
    }
  }
  std::printf("sum          %.6f nats\n", scores.sum_log_prob);
  std::printf("mean nll     %.6f nats/token\n", scores.mean_nll);
  std::printf("perplexity   %.6g\n", scores.perplexity);
  if (!options.logits.empty()) {
    std::printf("logits       %s\n", options.logits.c_str());
  }
}

// One line of JSON; NaN and infinity (the first token's log-prob, the mean
// of a single token, an overflowing perplexity) become null.
void PrintJson(const ScoreOptions& options,
               const std::vector<train::TokenId>& ids,
               const train::TokenScores& scores) {
  train::Json log_probs = train::Json::array();
  for (const double log_prob : scores.log_probs) {
    log_probs.push_back(train::FiniteOrNull(log_prob));
  }
  const train::Json report = {
      {"checkpoint", options.checkpoint},
      {"ids", ids},
      {"log_probs", std::move(log_probs)},
      {"sum_log_prob", scores.sum_log_prob},
      {"mean_nll", train::FiniteOrNull(scores.mean_nll)},
      {"perplexity", train::FiniteOrNull(scores.perplexity)}};
  std::cout << report.dump() << "\n";
}

void RunScore(const ScoreOptions& options) {
  const bool from_file = !options.tokens.empty();
  if (from_file && options.no_add_special_tokens) {
    throw CLI::ValidationError(
        "--no-add-special-tokens: goes with --text; --tokens are used as "
        "they are");
  }
  SetNumThreads(static_cast<int>(options.threads));
  train::TrainConfig config;
  auto model = LoadModelWithRopeOverrides(options.checkpoint, options.rope,
                                          "score", &config);
  const auto precision =
      UsePrecision(options.precision, config, options.checkpoint);
  const auto tokenizer = train::LoadCheckpointTokenizer(options.checkpoint);
  const std::vector<train::TokenId> ids =
      from_file ? ReadTokenIdsFile(options.tokens)
      : options.no_add_special_tokens
          ? tokenizer->Encode(options.text, false)
          : train::PromptIds(*tokenizer,
                             train::CheckpointPromptStart(options.checkpoint),
                             options.text);
  const std::string source = from_file ? options.tokens : "--text";
  CheckModelInputIds(ids, model->config().vocab_size, source);
  // The first token is only context: one token leaves nothing to score
  // (a perplexity of nan).
  ROTOR_CHECK(ids.size() >= 2, source, ": ", ids.size(),
              " token; score needs at least 2 (each token after the first is "
              "scored given those before it)");
  if (!options.logits.empty()) {
    train::CheckOutputFile(options.logits, options.force, "--logits");
  }
  const train::TokenScores scores =
      train::ScoreTokens(*model, ids, !options.logits.empty());
  if (!options.logits.empty()) {
    const int64_t length = static_cast<int64_t>(ids.size());
    train::WriteSafetensors(
        options.logits,
        {{"logits",
          train::SafetensorsDtype::kF32,
          {length, model->config().vocab_size},
          scores.logits.data()},
         {"input_ids", train::SafetensorsDtype::kI32, {length}, ids.data()}},
        {{"checkpoint", options.checkpoint}});
  }
  if (options.json) {
    PrintJson(options, ids, scores);
  } else {
    PrintTable(options, *tokenizer, ids, scores);
  }
}

}  // namespace

void AddScoreCommand(CLI::App& rotor) {
  CLI::App* command =
      AddCommand(rotor, "score", "log-probability of each token of a sequence",
                 kScoreDetails);
  auto options = std::make_shared<ScoreOptions>();
  AddCheckpointOption(*command, options->checkpoint);
  CLI::Option_group* source = command->add_option_group("source");
  source
      ->add_option("--tokens", options->tokens,
                   "a file of token ids (JSON array, or separated by\n"
                   "spaces or commas)")
      ->type_name("FILE")
      ->check(NotEmpty());
  source
      ->add_option("--text", options->text,
                   "a text, encoded with the checkpoint's tokenizer")
      ->type_name("TEXT");
  source->require_option(1);
  // HF's add_special_tokens=False; --no-special-tokens is an alias.
  command->add_flag("--no-add-special-tokens,--no-special-tokens",
                    options->no_add_special_tokens,
                    "encode --text without special tokens");
  command
      ->add_option("--logits", options->logits,
                   "also write the logits to a safetensors file")
      ->type_name("FILE")
      ->check(NotEmpty());
  AddForceOption(*command, options->force);
  command->add_flag("--json", options->json,
                    "print one JSON object instead of a table");
  AddThreadsOption(*command, options->threads);
  AddPrecisionOption(*command, options->precision);
  AddRopeOverrideOptions(*command, options->rope);
  command->callback([options] { RunScore(*options); });
}

}  // namespace tools
}  // namespace rotor
