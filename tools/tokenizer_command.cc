// `rotor tokenizer train|encode|decode`: trains a byte-level BPE tokenizer
// (train/tokenizer/bpe_trainer.h) into a Hugging Face tokenizer.json, and
// encodes or decodes text with any tokenizer LoadTokenizer reads ("byte" or
// a tokenizer.json). docs/tokenizers.md explains the training.
#include <chrono>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/parallel.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "train/data/text_corpus.h"
#include "train/io/atomic_file.h"
#include "train/io/output_file.h"
#include "train/tokenizer/bpe_trainer.h"
#include "train/tokenizer/tokenizer.h"

namespace rotor {
namespace tools {

namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct TrainOptions {
  std::string input;
  std::string output;
  train::BpeTrainerOptions trainer;
  bool force = false;
  int64_t threads = 0;
};

// The checks that need more than one flag (usage errors, status 2), and the
// output (status 1), before the slow reading.
void CheckTrainOptions(const TrainOptions& options) {
  const auto& specials = options.trainer.special_tokens;
  CheckDistinctValues("--special-token", specials);
  const int64_t min_vocab = 256 + static_cast<int64_t>(specials.size());
  if (options.trainer.vocab_size < min_vocab) {
    throw CLI::ValidationError(StrCat(
        "--vocab-size: expects at least ", min_vocab, " (256 bytes + ",
        specials.size(), " special tokens), got ", options.trainer.vocab_size));
  }
  train::CheckOutputFile(options.output, options.force, "--output");
}

// Reads the corpus, counts its words, learns the merges and writes the
// tokenizer.json atomically, printing each stage and a summary.
void RunTrain(const TrainOptions& options) {
  CheckTrainOptions(options);
  SetNumThreads(static_cast<int>(options.threads));
  const Clock::time_point start = Clock::now();
  const train::TextCorpus corpus = train::ReadTextCorpus(options.input);
  // Again now that the inputs are known: never one of them.
  train::CheckOutputFile(options.output, options.force, "--output");
  const double megabytes = static_cast<double>(corpus.bytes) / 1e6;
  std::cout << std::fixed << std::setprecision(2) << "read "
            << corpus.documents.size() << " documents, " << megabytes << " MB ("
            << corpus.description << ")" << std::endl;

  const std::vector<std::string_view> documents(corpus.documents.begin(),
                                                corpus.documents.end());
  const std::vector<train::WordCount> words =
      train::CountWords(documents, options.trainer.split_pattern);
  std::cout << "counted " << words.size() << " distinct words on "
            << NumThreads() << " thread(s) (" << SecondsSince(start) << " s)"
            << std::endl;

  const int64_t target = options.trainer.vocab_size;
  int64_t reported = 0;
  const train::BpeModel model = train::TrainBpe(
      words, options.trainer, [&](int64_t merges, int64_t vocab_size) {
        if (vocab_size - reported < target / 8 && vocab_size < target) return;
        reported = vocab_size;
        std::cout << "vocab " << vocab_size << "/" << target << ", " << merges
                  << " merges (" << SecondsSince(start) << " s)" << std::endl;
      });
  train::WriteFileAtomically(options.output,
                             train::BpeTokenizerJson(model, options.trainer));
  const double seconds = SecondsSince(start);
  std::cout << "wrote " << options.output << ": vocab " << model.vocab.size()
            << " (" << model.special_token_count << " special, 256 bytes, "
            << model.merges.size() << " merges), " << megabytes
            << " MB of input in " << seconds << " s (" << megabytes / seconds
            << " MB/s)" << std::endl;
  if (static_cast<int64_t>(model.vocab.size()) < target) {
    std::cerr << "rotor tokenizer train: warning: stopped at "
              << model.vocab.size() << " tokens, before --vocab-size " << target
              << ": no pair left occurs "
              << std::max<uint64_t>(1, options.trainer.min_frequency)
              << " times or more\n";
  }
}

void AddTrainSubcommand(CLI::App& tokenizer) {
  CLI::App* command = AddCommand(
      tokenizer, "train",
      "train a byte-level BPE tokenizer into a tokenizer.json",
      "Trains byte-level BPE as Hugging Face's BpeTrainer does (Llama 3's\n"
      "split regex, GPT-2's byte alphabet, special tokens first) and writes\n"
      "a tokenizer.json that HF's tokenizers and transformers.js load.\n"
      "--input: a folder prepared by 'rotor prepare' (its training split),\n"
      "or a text file or folder of text files (one document each).\n"
      "The same input gives the same file at any --threads.\n"
      "See docs/tokenizers.md.");
  auto options = std::make_shared<TrainOptions>();
  command
      ->add_option("--input", options->input,
                   "a prepared data folder, a text file or a folder")
      ->type_name("PATH")
      ->required()
      ->check(NotEmpty());
  AddIntegerOption(*command, "--vocab-size", options->trainer.vocab_size,
                   int64_t{257}, train::MaxBpeVocabSize(),
                   "tokens in the result, special tokens and the 256\n"
                   "bytes included")
      ->required();
  command
      ->add_option("--output", options->output, "the tokenizer.json to write")
      ->type_name("FILE")
      ->required()
      ->check(NotEmpty());
  command
      ->add_option("--special-token", options->trainer.special_tokens,
                   "a special token (repeat for more; ids 0, 1, ... in\n"
                   "order; default <|endoftext|>)")
      ->type_name("TEXT")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  AddIntegerOption(*command, "--min-frequency", options->trainer.min_frequency,
                   uint64_t{0},
                   "stop when the most frequent pair occurs fewer times\n"
                   "(default 0)");
  command
      ->add_option("--split-pattern", options->trainer.split_pattern,
                   "the pre-tokenizer regex (default: Llama 3's)")
      ->type_name("REGEX")
      ->check(NotEmpty());
  AddThreadsOption(*command, options->threads);
  AddForceOption(*command, options->force);
  command->callback([options] { RunTrain(*options); });
}

// --tokenizer FILE (required), and the two ways to give what to work on:
// the value of flag `direct` (e.g. --text) or the file of --input.
void AddTokenizerAndSourceOptions(CLI::App& command, std::string& tokenizer,
                                  const std::string& direct,
                                  std::string& direct_value,
                                  const std::string& direct_type,
                                  const std::string& direct_help,
                                  std::string& input,
                                  const std::string& input_help) {
  command
      .add_option("--tokenizer", tokenizer,
                  "\"byte\", a tokenizer.json or a folder holding one")
      ->type_name("FILE")
      ->required()
      ->check(NotEmpty());
  // Exactly one source; the direct one may be empty (the empty text has
  // ids too: a BOS, or none).
  CLI::Option_group* source = command.add_option_group("source");
  source->add_option(direct, direct_value, direct_help)->type_name(direct_type);
  source->add_option("--input", input, input_help)
      ->type_name("FILE")
      ->check(NotEmpty());
  source->require_option(1);
}

struct EncodeOptions {
  std::string tokenizer;
  std::string text;
  std::string input;
  bool json = false;
  bool no_add_special_tokens = false;
};

// The ids of --text or of the --input file, space-separated or as a JSON
// array, on one line.
void RunEncode(const EncodeOptions& options) {
  const std::unique_ptr<train::Tokenizer> tokenizer =
      train::LoadTokenizer(options.tokenizer);
  const std::string text =
      options.input.empty() ? options.text : train::ReadFile(options.input);
  const std::vector<train::TokenId> ids =
      tokenizer->Encode(text, !options.no_add_special_tokens);
  std::cout << FormatTokenIds(ids, options.json) << "\n";
}

void AddEncodeSubcommand(CLI::App& tokenizer) {
  CLI::App* command = AddCommand(
      tokenizer, "encode", "print the token ids of a text",
      "Prints the ids of --text (or of the --input file) as the tokenizer\n"
      "encodes it: space-separated, or a JSON array with --json.");
  auto options = std::make_shared<EncodeOptions>();
  AddTokenizerAndSourceOptions(*command, options->tokenizer, "--text",
                               options->text, "TEXT", "the text to encode",
                               options->input, "a file to encode instead");
  command->add_flag("--json", options->json, "print a JSON array");
  // HF's name (add_special_tokens=False), as in rotor score; the older
  // --no-special-tokens still works.
  command->add_flag("--no-add-special-tokens,--no-special-tokens",
                    options->no_add_special_tokens,
                    "only the text's own tokens (no BOS and the like)");
  command->callback([options] { RunEncode(*options); });
}

struct DecodeOptions {
  std::string tokenizer;
  std::string ids;
  std::string input;
  bool skip_special_tokens = false;
};

// Prints the text of the ids exactly, with no newline added, so that
// decoding the ids of a file gives the file back.
void RunDecode(const DecodeOptions& options) {
  std::vector<train::TokenId> ids;
  if (options.input.empty()) {
    try {
      ids = ParseTokenIds(options.ids, "--ids");
    } catch (const Error& error) {
      throw CLI::ValidationError(error.what());
    }
  } else {
    ids = ReadTokenIdsFile(options.input);
  }
  const std::unique_ptr<train::Tokenizer> tokenizer =
      train::LoadTokenizer(options.tokenizer);
  std::cout << tokenizer->Decode(ids, options.skip_special_tokens);
  std::cout.flush();
}

void AddDecodeSubcommand(CLI::App& tokenizer) {
  CLI::App* command = AddCommand(
      tokenizer, "decode", "print the text of token ids",
      "Prints the text of --ids (or of the ids in the --input file): a JSON\n"
      "array, or integers separated by spaces or commas. The text is printed\n"
      "as decoded, with no newline added.");
  auto options = std::make_shared<DecodeOptions>();
  AddTokenizerAndSourceOptions(*command, options->tokenizer, "--ids",
                               options->ids, "IDS", "the ids, e.g. \"1 2 3\"",
                               options->input, "a file of ids instead");
  command->add_flag("--skip-special-tokens", options->skip_special_tokens,
                    "leave special tokens out");
  command->callback([options] { RunDecode(*options); });
}

}  // namespace

void AddTokenizerCommand(CLI::App& rotor) {
  CLI::App* tokenizer = AddCommand(
      rotor, "tokenizer", "train a BPE tokenizer, encode and decode text",
      "rotor tokenizer train|encode|decode; run 'rotor tokenizer COMMAND\n"
      "--help' for each one's options. See docs/tokenizers.md.");
  tokenizer->require_subcommand(1);
  AddTrainSubcommand(*tokenizer);
  AddEncodeSubcommand(*tokenizer);
  AddDecodeSubcommand(*tokenizer);
}

}  // namespace tools
}  // namespace rotor
