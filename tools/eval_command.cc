// `rotor eval --checkpoint DIR`: validation loss, perplexity and bits per
// byte of a trained model on its validation split.
#include <cstdio>
#include <iostream>

#include "core/parallel.h"
#include "tools/commands.h"
#include "tools/flag_parser.h"
#include "train/token_file.h"
#include "train/trainer.h"

namespace rotor {
namespace tools {

namespace {

constexpr char kEvalHelp[] =
    "Usage: rotor eval --checkpoint DIR [--data PATH] [--seq-len N]\n"
    "                  [--batch-size N] [--max-batches N] [--threads N]\n"
    "\n"
    "Evaluates a checkpoint on the validation split (val.bin) of its data:\n"
    "the mean cross-entropy per token, perplexity exp(loss) and bits per\n"
    "byte loss/ln 2 (tokens are bytes). Windows of seq-len tokens walk the\n"
    "file in order without overlap, so the number is reproducible.\n"
    "\n"
    "Options:\n"
    "  --checkpoint DIR  a checkpoint folder (required)\n"
    "  --data PATH       data folder (default: the checkpoint config's)\n"
    "  --seq-len N       context length (default: the training seq_len)\n"
    "  --batch-size N    windows per batch (default: training batch_size)\n"
    "  --max-batches N   stop after N batches; 0 = the whole file (default)\n"
    "  --threads N       0 = all cores (default)\n";

}  // namespace

int RunEvalCommand(const std::vector<std::string>& args) {
  const FlagParser flags(args,
                         {"--checkpoint", "--data", "--seq-len",
                          "--batch-size", "--max-batches", "--threads"},
                         {"--help"});
  if (flags.Has("--help")) {
    std::cout << kEvalHelp;
    return 0;
  }
  if (!flags.positional().empty()) {
    throw UsageError("unexpected argument '" + flags.positional()[0] + "'");
  }
  // Every flag is checked before any work; 0 stands for "the checkpoint
  // config's value".
  const std::string dir = flags.Required("--checkpoint");
  const int64_t threads = flags.Int("--threads", 0, 0);
  const int64_t seq_len_flag = flags.Int("--seq-len", 0, 1);
  const int64_t batch_size_flag = flags.Int("--batch-size", 0, 1);
  const int64_t max_batches = flags.Int("--max-batches", 0, 0);
  SetNumThreads(static_cast<int>(threads));
  TrainConfig config;
  auto model = LoadModelFromCheckpoint(dir, &config);
  const std::string data_dir =
      ResolveDataDir(flags.String("--data", config.data.path));
  const int64_t seq_len =
      seq_len_flag > 0 ? seq_len_flag : config.train.seq_len;
  const int64_t batch_size =
      batch_size_flag > 0 ? batch_size_flag : config.train.batch_size;

  const TokenFile val(data_dir + "/val.bin");
  const ValidationResult result =
      Evaluate(*model, val, batch_size, seq_len, max_batches);
  std::printf("checkpoint   %s\n", dir.c_str());
  std::printf("data         %s (%lld tokens evaluated, seq_len %lld)\n",
              (data_dir + "/val.bin").c_str(),
              static_cast<long long>(result.tokens),
              static_cast<long long>(seq_len));
  std::printf("val_loss     %.4f nats/token\n", result.loss);
  std::printf("perplexity   %.3f\n", result.perplexity);
  std::printf("bits/byte    %.4f\n", result.bits_per_byte);
  return 0;
}

}  // namespace tools
}  // namespace rotor
