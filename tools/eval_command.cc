// `rotor eval --checkpoint DIR`: validation loss, perplexity and bits per
// byte of a trained model on its validation split; with --lengths,
// perplexity against context length, and with --passkey, passkey-retrieval
// accuracy over lengths x depths (train/eval/length_eval.h, train/data/passkey.h).
#include <cstdio>
#include <iostream>

#include "core/parallel.h"
#include "tools/commands.h"
#include "tools/flag_parser.h"
#include "train/checkpoint.h"
#include "train/eval/length_eval.h"
#include "train/data/passkey.h"
#include "train/io/plot.h"
#include "train/data/token_file.h"
#include "train/trainer.h"
#include "train/data/data_dir.h"
#include "train/eval/passkey_eval.h"
#include "train/eval/validation.h"
#include "train/config/model_config.h"

namespace rotor {
namespace tools {

namespace {

constexpr char kEvalHelp[] =
    "Usage: rotor eval --checkpoint DIR [options] [model.key=value ...]\n"
    "\n"
    "Evaluates a checkpoint on the validation split (val.bin) of its data:\n"
    "the mean cross-entropy per token, perplexity exp(loss) and bits per\n"
    "byte loss/ln 2 (tokens are bytes). Windows of seq-len tokens walk the\n"
    "file in order without overlap, so the number is reproducible.\n"
    "\n"
    "Context length (docs/context-extension.md, part 2):\n"
    "  rotor eval --checkpoint runs/default --lengths 256,512,1024,2048 \\\n"
    "      model.rope_scaling.rope_type=yarn model.rope_scaling.factor=4\n"
    "evaluates the same validation documents at each length and prints a\n"
    "table and draws a plot; key=value pairs override the checkpoint's\n"
    "config (RoPE settings only), which measures zero-shot extension.\n"
    "--rope-from FILE takes the RoPE settings of another config instead\n"
    "(e.g. configs/extend/dynamic-4x.yaml). --passkey adds passkey\n"
    "retrieval over --passkey-lengths x --depths.\n"
    "\n"
    "Options:\n"
    "  --checkpoint DIR  a checkpoint folder, or a run's output_dir (its\n"
    "                    newest checkpoint) (required)\n"
    "  --data PATH       data folder (default: the checkpoint config's)\n"
    "  --seq-len N       context length (default: the training seq_len)\n"
    "  --batch-size N    windows per batch (default: training batch_size)\n"
    "  --max-batches N   stop after N batches; 0 = the whole file (default)\n"
    "  --lengths LIST    perplexity at each context length, e.g. 256,1024\n"
    "  --method M        truncate (default): each document cut to L tokens,\n"
    "                    one window; sliding: windows of L slide by --stride\n"
    "                    over the first max(lengths) tokens of each document\n"
    "  --stride N        sliding stride (default: the shortest length / 2)\n"
    "  --documents N     validation documents (default 10)\n"
    "  --plot FILE       perplexity plot (default ppl_by_length.png)\n"
    "  --passkey         also measure passkey retrieval\n"
    "  --passkey-lengths LIST  (default: --lengths)\n"
    "  --depths LIST     key depths in [0, 1] (default 0,0.25,0.5,0.75,1)\n"
    "  --trials N        examples per length and depth (default 10)\n"
    "  --passkey-plot FILE  heat map (default passkey.png)\n"
    "  --rope-from FILE  use the max_position_embeddings, rope_theta and\n"
    "                    rope_scaling of FILE's model: section\n"
    "  --threads N       0 = all cores (default)\n";

std::vector<double> ParseDepths(const std::string& text) {
  std::vector<double> depths;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    char* end = nullptr;
    const double value = std::strtod(item.c_str(), &end);
    if (item.empty() || *end != '\0' || !(value >= 0.0 && value <= 1.0)) {
      throw UsageError("--depths: '" + item +
                       "' is not a number in [0, 1] (e.g. 0,0.5,1)");
    }
    depths.push_back(value);
    start = comma + 1;
  }
  return depths;
}

void PrintPerplexityTable(const std::vector<train::LengthPerplexity>& results) {
  std::printf("%8s  %10s  %9s  %11s\n", "length", "tokens", "loss",
              "perplexity");
  for (const train::LengthPerplexity& r : results) {
    std::printf("%8lld  %10lld  %9.4f  %11.3f\n",
                static_cast<long long>(r.length),
                static_cast<long long>(r.tokens), r.loss, r.perplexity);
  }
}

void PrintPasskeyTable(const std::vector<train::PasskeyCell>& cells,
                       const std::vector<int64_t>& lengths,
                       const std::vector<double>& depths) {
  std::printf(
      "passkey accuracy (rows: context length, columns: depth; digits: the "
      "share of answer digits right, chance 10%%)\n");
  std::printf("%8s", "length");
  for (double depth : depths) std::printf("  %6.2f", depth);
  std::printf("  %6s  %6s\n", "mean", "digits");
  for (size_t l = 0; l < lengths.size(); ++l) {
    std::printf("%8lld", static_cast<long long>(lengths[l]));
    for (size_t d = 0; d < depths.size(); ++d) {
      std::printf("  %5.0f%%", 100.0 * cells[l * depths.size() + d].accuracy());
    }
    std::printf("  %5.0f%%  %5.0f%%\n",
                100.0 * train::PasskeyAccuracyAt(cells, lengths[l]),
                100.0 * train::PasskeyDigitAccuracyAt(cells, lengths[l]));
  }
}

}  // namespace

int RunEvalCommand(const std::vector<std::string>& args) {
  const FlagParser flags(
      args,
      {"--checkpoint", "--data", "--seq-len", "--batch-size", "--max-batches",
       "--threads", "--lengths", "--method", "--stride", "--documents",
       "--plot", "--passkey-lengths", "--depths", "--trials", "--passkey-plot",
       "--rope-from"},
      {"--help", "--passkey"});
  if (flags.Has("--help")) {
    std::cout << kEvalHelp;
    return 0;
  }
  for (const std::string& arg : flags.positional()) {
    if (arg.find('=') == std::string::npos) {
      throw UsageError("unexpected argument '" + arg +
                       "' (overrides look like model.rope_scaling.factor=4)");
    }
  }
  // Every flag is checked before any work; 0 stands for "the checkpoint
  // config's value".
  const std::string dir = flags.Required("--checkpoint");
  const int64_t threads = flags.Int("--threads", 0, 0);
  const int64_t seq_len_flag = flags.Int("--seq-len", 0, 1);
  const int64_t batch_size_flag = flags.Int("--batch-size", 0, 1);
  const int64_t max_batches = flags.Int("--max-batches", 0, 0);
  SetNumThreads(static_cast<int>(threads));
  train::TrainConfig config;
  std::vector<std::string> overrides;
  if (flags.Has("--rope-from")) {
    overrides = train::RopeOverridesFromConfig(flags.String("--rope-from"));
  }
  overrides.insert(overrides.end(), flags.positional().begin(),
                   flags.positional().end());
  auto model = train::LoadCheckpointModel(dir, overrides, &config);
  const std::string data_dir =
      train::ResolveDataDir(flags.String("--data", config.data.path));
  const int64_t seq_len =
      seq_len_flag > 0 ? seq_len_flag : config.train.seq_len;
  const int64_t batch_size =
      batch_size_flag > 0 ? batch_size_flag : config.train.batch_size;

  const train::TokenFile val(data_dir + "/val.bin");

  if (!flags.Has("--lengths") && !flags.Has("--passkey")) {
    const train::ValidationResult result =
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

  const RopeScalingConfig& rope = config.model.rope;
  std::printf("checkpoint   %s\n", dir.c_str());
  std::printf("rope         %s (max_position_embeddings %lld)\n",
              RopeTypeName(rope.rope_type),
              static_cast<long long>(rope.max_position_embeddings));
  std::vector<int64_t> lengths;
  if (flags.Has("--lengths")) {
    lengths = train::ParseLengthList(flags.String("--lengths"), "--lengths");
    train::LengthEvalOptions options;
    options.lengths = lengths;
    options.num_documents = flags.Int("--documents", 10, 1);
    options.method =
        train::LengthEvalMethodFromName(flags.String("--method", "truncate"));
    const int64_t shortest = *std::min_element(lengths.begin(), lengths.end());
    options.stride =
        flags.Int("--stride", std::max<int64_t>(shortest / 2, 1), 1);
    const std::vector<train::LengthPerplexity> results =
        train::PerplexityByLength(*model, val, options);
    std::printf(
        "perplexity   %s, %lld documents of %s\n",
        options.method == train::LengthEvalMethod::kTruncate
            ? "truncate (each document cut to L tokens)"
            : ("sliding, stride " + std::to_string(options.stride)).c_str(),
        static_cast<long long>(options.num_documents),
        (data_dir + "/val.bin").c_str());
    PrintPerplexityTable(results);
    train::LineChart chart;
    chart.title = std::string("perplexity against context length (") +
                  RopeTypeName(rope.rope_type) + ")";
    chart.x_label = "context length (tokens)";
    chart.y_label = "perplexity";
    chart.log_x = true;
    chart.log_y = true;
    train::LineSeries series;
    series.title = RopeTypeName(rope.rope_type);
    for (const train::LengthPerplexity& r : results) {
      series.x.push_back(static_cast<double>(r.length));
      series.y.push_back(r.perplexity);
    }
    chart.series.push_back(series);
    chart.vertical_lines.push_back(
        {static_cast<double>(config.train.seq_len), "training length"});
    const std::string png = flags.String("--plot", "ppl_by_length.png");
    const std::string problem = train::DrawLineChart(chart, png);
    std::printf("%s\n", problem.empty() ? ("plot         " + png).c_str()
                                        : problem.c_str());
  }
  if (flags.Has("--passkey")) {
    train::PasskeyEvalOptions options;
    options.lengths = flags.Has("--passkey-lengths")
                          ? train::ParseLengthList(flags.String("--passkey-lengths"),
                                            "--passkey-lengths")
                          : lengths;
    if (options.lengths.empty()) {
      throw UsageError("--passkey needs --passkey-lengths or --lengths");
    }
    if (flags.Has("--depths"))
      options.depths = ParseDepths(flags.String("--depths"));
    options.trials = flags.Int("--trials", 10, 1);
    const std::vector<train::PasskeyCell> cells = train::EvaluatePasskey(*model, options);
    PrintPasskeyTable(cells, options.lengths, options.depths);
    train::HeatMap map;
    map.title =
        std::string("passkey retrieval (") + RopeTypeName(rope.rope_type) + ")";
    map.x_label = "depth of the key (0 = start, 1 = end)";
    map.y_label = "context length";
    for (double depth : options.depths) {
      char label[16];
      std::snprintf(label, sizeof(label), "%g", depth);
      map.column_labels.push_back(label);
    }
    for (size_t l = 0; l < options.lengths.size(); ++l) {
      map.row_labels.push_back(std::to_string(options.lengths[l]));
      std::vector<double> row;
      for (size_t d = 0; d < options.depths.size(); ++d) {
        row.push_back(cells[l * options.depths.size() + d].accuracy());
      }
      map.values.push_back(row);
    }
    const std::string png = flags.String("--passkey-plot", "passkey.png");
    const std::string problem = train::DrawHeatMap(map, png);
    std::printf("%s\n", problem.empty() ? ("plot         " + png).c_str()
                                        : problem.c_str());
  }
  return 0;
}

}  // namespace tools
}  // namespace rotor
