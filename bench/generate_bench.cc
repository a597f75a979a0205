// Generation speed against llama.cpp: for the same model with random
// weights, at its context length L and at 4L, on one thread (--threads),
//   prefill  tokens/s of one prompt of L (or 4L) random ids through the
//            model, filling the KV cache: the prompt's length over the time
//            from the call to the first generated token
//   decode   tokens/s of greedy decoding after that prompt: N - 1 over the
//            time from the first generated token to the N-th (each a
//            one-token forward over the cache, and its argmax)
// for rotor (train/eval/generate.h GenerateTokens, what rotor generate and
// the passkey and retrieval evaluations run) and for llama.cpp through
// node-llama-cpp (bench/generate_llama_cpp.mjs: sequence.evaluate, timed the
// same way) on rotor's own f32 GGUF export of the model (WriteGgufModel, what
// `rotor export --format gguf` writes; docs/gguf.md). llama.cpp runs with a
// float32 KV cache and no flash attention (--llama-kv f32, the arithmetic of
// rotor's cache), and on request with node-llama-cpp's defaults (--llama-kv
// default: F16 cache, flash attention "auto"). Each llama.cpp setting has
// two rows: the wall time through node-llama-cpp's API ("node-llama-cpp"),
// and llama.cpp's own record of the time inside llama_decode
// (llama_perf_context_print: "inside llama_decode", without the JavaScript
// around each call, which costs a tiny model more than its forward).
//
// Every figure is the median of --runs runs after one warm-up run; the
// ratios are rotor's tokens/s over the row's, measured in the same run. "%
// of peak" is the forward's FLOPs over the time, against the machine's
// float32 FMA peak times the thread count (bench_util.h FmaPeakGflops,
// measured in the same run): per layer 2 FLOPs per matmul weight per token,
// and causal attention's 4 * (query width) FLOPs per (query, key) pair (q
// k^T and p v); the output head (2 * vocab * hidden) runs on the prompt's
// last position only (LastLogits; llama.cpp too asks for that one row of
// logits), and on every decoded token.
//
// The models are the `model:` sections of the config files given (--models,
// relative to the source tree): configs/brown-bpe.yaml (the BPE worked
// example of scripts/extend_hf_report.sh: 8,192 ids, hidden 192, 4 layers,
// L = 256) by default, and e.g. configs/models/smollm2-135m.yaml
// (SmolLM2-135M's shape, L = 512). L is the config's pre-training length
// (max_position_embeddings). The GGUF file carries rotor's byte tokenizer
// (padded to the model's vocabulary): the prompts are ids, no text is
// tokenized, and rotor's argmax runs over the tokenizer's 257 ids where
// llama.cpp's runs over every id (8,192 comparisons, microseconds).
//
// Usage: build/bench/generate_bench [--models A.yaml,B.yaml] [--decode N]
//          [--runs R] [--threads T] [--llama-kv f32,default]
// Needs node and scripts/fetch_llama_cpp.sh's install for the llama.cpp
// rows; without them it prints rotor's and says what is missing.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "core/error.h"
#include "core/ops/gemm.h"
#include "core/parallel.h"
#include "nn/transformer.h"
#include "train/config/model_config.h"
#include "train/data/data_dir.h"
#include "train/eval/generate.h"
#include "train/gguf/gguf_export.h"
#include "train/io/atomic_file.h"
#include "train/tokenizer/tokenizer.h"

namespace rotor {
namespace {

namespace fs = std::filesystem;

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

// Seconds of a prefill and of the N - 1 decode steps after it.
struct Times {
  double prefill = 0.0, decode = 0.0;
};

// Forward FLOPs (see the header): a prefill of `prompt` tokens, and the
// `steps` decoded tokens after it, at positions prompt .. prompt + steps - 1
// (0-based; position i attends i + 1 keys).
struct Flops {
  double prefill = 0.0, decode = 0.0;
};
Flops ForwardFlops(const nn::TransformerConfig& m, int64_t prompt,
                   int64_t steps) {
  const double h = static_cast<double>(m.hidden_size);
  const double q = static_cast<double>(m.num_attention_heads * m.head_dim);
  const double kv = static_cast<double>(m.num_key_value_heads * m.head_dim);
  const double layers = static_cast<double>(m.num_hidden_layers);
  const double layer_weights =
      layers * (h * (2 * q + 2 * kv) + 3 * h * m.intermediate_size);
  const double head = 2.0 * static_cast<double>(m.vocab_size) * h;
  // The (query, key) pairs of queries first..last: the sum of i + 1.
  const auto pairs = [](double first, double last) {
    return (last + first + 2) * (last - first + 1) / 2;
  };
  const double p = static_cast<double>(prompt), s = static_cast<double>(steps);
  Flops f;
  f.prefill = 2 * layer_weights * p + head + 4 * q * layers * pairs(0, p - 1);
  f.decode =
      (2 * layer_weights + head) * s + 4 * q * layers * pairs(p, p + s - 1);
  return f;
}

// Rotor: GenerateTokens with greedy sampling, timed at each new token.
Times TimeRotor(nn::Transformer& model, const train::Tokenizer& tokenizer,
                const std::vector<train::TokenId>& prompt, int64_t decode,
                int runs) {
  train::SamplingOptions options;
  options.max_new_tokens = decode;
  options.temperature = 0.0;
  options.stop_at_end_of_text = false;
  std::vector<double> prefill, steps;
  for (int run = 0; run <= runs; ++run) {  // run 0 warms up
    int64_t count = 0;
    double first = 0.0, last = 0.0;
    const double start = bench::NowSeconds();
    train::GenerateTokens(model, tokenizer, prompt, options,
                          [&](train::TokenId) {
                            last = bench::NowSeconds();
                            if (++count == 1) first = last;
                          });
    ROTOR_CHECK(count == decode, "rotor generated ", count, " tokens, not ",
                decode);
    if (run == 0) continue;
    prefill.push_back(first - start);
    steps.push_back(last - first);
  }
  return {Median(prefill), Median(steps)};
}

std::string LlamaCppPackages() {
  return train::CacheDir() + "/llama-cpp-3.21.1";
}

// "" when node and scripts/fetch_llama_cpp.sh's packages are there;
// otherwise what is missing.
std::string MissingLlamaCpp() {
  if (std::system("node --version >/dev/null 2>&1") != 0) {
    return "node is not on the PATH (sudo apt-get install npm), then run: "
           "bash scripts/fetch_llama_cpp.sh";
  }
  if (!fs::is_directory(LlamaCppPackages() + "/node_modules/node-llama-cpp")) {
    return LlamaCppPackages() +
           " is missing; install it with: bash scripts/fetch_llama_cpp.sh";
  }
  return "";
}

// llama.cpp's figures from one generate_llama_cpp.mjs run.
struct LlamaCppTimes {
  Times wall;    // through node-llama-cpp
  Times inside;  // inside llama_decode
  std::string backend;
};

LlamaCppTimes TimeLlamaCpp(const std::string& gguf,
                           const std::string& prompt_file, int64_t decode,
                           int runs, int threads, const std::string& kv) {
  const std::string command =
      "node '" ROTOR_SOURCE_DIR "/bench/generate_llama_cpp.mjs' '" +
      LlamaCppPackages() + "' '" + gguf + "' '" + prompt_file + "' " +
      std::to_string(decode) + " " + std::to_string(runs) + " " +
      std::to_string(threads) + " " + kv;
  FILE* pipe = popen(command.c_str(), "r");
  char line[512] = {0};
  if (pipe == nullptr || std::fgets(line, sizeof(line), pipe) == nullptr) {
    if (pipe) pclose(pipe);
    throw Error("llama.cpp failed (see above); command: " + command);
  }
  // A line followed by a failure (node exiting non-zero after printing) is
  // not a measurement either.
  const int status = pclose(pipe);
  ROTOR_CHECK(status == 0, "llama.cpp exited with status ", status,
              " after printing: ", line, "command: ", command);
  LlamaCppTimes t;
  char backend[64] = {0};
  ROTOR_CHECK(
      std::sscanf(line, "%lf %lf %lf %lf %63s", &t.wall.prefill, &t.wall.decode,
                  &t.inside.prefill, &t.inside.decode, backend) == 5,
      "unexpected output of generate_llama_cpp.mjs: ", line);
  t.backend = backend;
  return t;
}

struct Options {
  std::vector<std::string> models = {"configs/brown-bpe.yaml"};
  int64_t decode = 128;
  int runs = 5;
  int threads = 1;
  std::vector<std::string> llama_kv = {"f32"};
};

void RunModel(const std::string& config_path, const Options& options,
              const std::string& missing_llama_cpp, double peak) {
  const std::string path =
      fs::path(config_path).is_absolute()
          ? config_path
          : std::string(ROTOR_SOURCE_DIR "/") + config_path;
  const train::ModelConfig model_config = train::LoadModelConfig(path);
  const nn::TransformerConfig config =
      train::ResolveTransformerConfig(model_config);
  nn::Transformer model(config, /*seed=*/1);
  const std::unique_ptr<train::Tokenizer> tokenizer =
      train::LoadTokenizer("byte");
  const int64_t length = train::PretrainedLength(model_config);
  const std::string name = fs::path(config_path).stem().string();

  std::string dir =
      fs::temp_directory_path().string() + "/rotor_generate_bench_XXXXXX";
  ROTOR_CHECK(::mkdtemp(dir.data()) != nullptr, "cannot make ", dir);
  // Removed however this function ends (the GGUF file of SmolLM2's shape
  // is 540 MB).
  const std::unique_ptr<const std::string, void (*)(const std::string*)>
      remove_dir(&dir, [](const std::string* d) { fs::remove_all(*d); });
  const std::string gguf = dir + "/model.gguf";
  if (missing_llama_cpp.empty()) {
    train::GgufExportOptions write;
    write.force = true;
    train::WriteGgufModel(gguf, model, model_config, "byte", write);
  }

  std::mt19937 rng(7);
  std::uniform_int_distribution<train::TokenId> id(
      0, static_cast<train::TokenId>(config.vocab_size - 1));
  for (const int64_t prompt_length : {length, 4 * length}) {
    std::vector<train::TokenId> prompt(prompt_length);
    for (train::TokenId& t : prompt) t = id(rng);
    const Flops flops = ForwardFlops(config, prompt_length, options.decode - 1);
    const auto row = [&](const std::string& engine, const Times& t,
                         const Times* rotor) {
      const double prefill = prompt_length / t.prefill;
      const double decode = (options.decode - 1) / t.decode;
      std::printf(
          "| %s | %s = %lld | %s | %.0f | %.1f | %.1f%% | %.2f%% |",
          name.c_str(), prompt_length == length ? "L" : "4L",
          static_cast<long long>(prompt_length), engine.c_str(), prefill,
          decode,
          100 * flops.prefill / t.prefill / 1e9 / (peak * options.threads),
          100 * flops.decode / t.decode / 1e9 / (peak * options.threads));
      if (rotor == nullptr) {
        std::printf(" | |\n");
      } else {
        std::printf(" %.2f | %.2f |\n", t.prefill / rotor->prefill,
                    t.decode / rotor->decode);
      }
      std::fflush(stdout);
    };
    const Times rotor =
        TimeRotor(model, *tokenizer, prompt, options.decode, options.runs);
    row("rotor", rotor, nullptr);
    if (!missing_llama_cpp.empty()) continue;
    std::string ids;
    for (train::TokenId t : prompt) ids += std::to_string(t) + " ";
    const std::string prompt_file = dir + "/prompt.txt";
    train::WriteFileAtomically(prompt_file, ids);
    for (const std::string& kv : options.llama_kv) {
      const LlamaCppTimes llama = TimeLlamaCpp(
          gguf, prompt_file, options.decode, options.runs, options.threads, kv);
      const std::string setting =
          "llama.cpp " + llama.backend + ", " +
          (kv == "f32" ? "f32 KV" : "default KV, flash attention auto");
      row(setting + " (node-llama-cpp)", llama.wall, &rotor);
      row(setting + " (inside llama_decode)", llama.inside, &rotor);
    }
  }
}

int Main(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    ROTOR_CHECK(i + 1 < argc, flag, " needs a value");
    const std::string value = argv[++i];
    if (flag == "--models") {
      options.models = bench::SplitCommas(value);
    } else if (flag == "--decode") {
      options.decode = std::atoll(value.c_str());
    } else if (flag == "--runs") {
      options.runs = std::atoi(value.c_str());
    } else if (flag == "--threads") {
      options.threads = std::atoi(value.c_str());
    } else if (flag == "--llama-kv") {
      options.llama_kv = bench::SplitCommas(value);
    } else {
      throw Error("unknown flag " + flag +
                  " (flags: --models --decode --runs --threads --llama-kv)");
    }
  }
  ROTOR_CHECK(options.decode >= 2, "--decode must be at least 2");
  ROTOR_CHECK(options.runs >= 1, "--runs must be at least 1");
  ROTOR_CHECK(options.threads >= 1, "--threads must be at least 1");
  for (const std::string& kv : options.llama_kv) {
    ROTOR_CHECK(kv == "f32" || kv == "default",
                "--llama-kv takes f32 and/or default, got ", kv);
  }
  SetNumThreads(options.threads);
  const bench::FmaPeak peak = bench::MeasureFmaPeak();
  const std::string missing = MissingLlamaCpp();
  std::printf(
      "Generation, prefill then %lld greedy tokens, %d thread(s), median of "
      "%d runs after a warm-up, on %s; rotor's kernels: Highway %s (%d "
      "floats), matmuls %s; FMA peak %.1f GFLOP/s per thread\n",
      static_cast<long long>(options.decode), options.threads, options.runs,
      bench::CpuModelName().c_str(), peak.target, peak.lanes,
      GemmDescription().c_str(), peak.gflops);
  if (!missing.empty()) std::printf("no llama.cpp rows: %s\n", missing.c_str());
  std::printf(
      "| model | prompt | engine | prefill tok/s | decode tok/s | prefill %% "
      "of peak | decode %% of peak | rotor / this, prefill | rotor / this, "
      "decode |\n| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | "
      "---: |\n");
  std::fflush(stdout);
  for (const std::string& config : options.models) {
    RunModel(config, options, missing, peak.gflops);
  }
  return 0;
}

}  // namespace
}  // namespace rotor

int main(int argc, char** argv) {
  return rotor::bench::RunMain("generate_bench",
                               [&] { return rotor::Main(argc, argv); });
}
