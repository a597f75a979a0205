// Loading a Hugging Face model folder: SmolLM2-135M's shape (134.5M weights:
// 269 MB of bfloat16 in two shards with their index, as save_pretrained
// writes them; 538 MB as float32) read by rotor's one model loader,
// train::LoadCheckpointModel (config.json, then every tensor converted from
// the memory-mapped shards into the model's freshly allocated float32
// parameters). Figures, at 1 and 2 threads, each the best of several runs:
//   memcpy ms       copying the folder's byte count between two buffers
//                   already in memory (bench::CopyBandwidthGBs)
//   fresh copy ms   the same copy into freshly allocated memory: what reading
//                   the files into new memory costs, page faults included
//   fault-in ms     writing zeros into fresh float32 tensors of the model's
//                   shapes: the page faults any load into new memory pays,
//                   whatever it reads
//   load ms         the load; load/memcpy and load/fresh copy are its cost
//                   in copies of the folder
//   peak growth     the process's peak resident memory during a load (VmHWM)
//                   minus its resident memory before, over the float32 bytes:
//                   1.0 is the weights alone, 1.5 would be the whole bfloat16
//                   folder held as well
// Targets (issue #11): load <= 2x memcpy, peak growth <= 1.15x.
//
// The folder is written to a fresh folder under $TMPDIR (or /tmp), read once
// so the page cache holds it (a load is then bound by memory and page faults,
// not the disk), and removed at the end. Each run is a forked child process:
// its tensors come from the system rather than rotor's buffer pool, and its
// VmHWM covers that one load. The parent never starts rotor's thread pool,
// so each child starts its own.
//
// Usage: build/bench/hf_load_bench
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "core/error.h"
#include "core/kernels/row_split.h"
#include "core/parallel.h"
#include "core/tensor.h"
#include "nn/transformer.h"
#include "train/checkpoint.h"
#include "train/config/model_config.h"
#include "train/hf/hf_model.h"

namespace rotor {
namespace {

constexpr int kLoadRuns = 7;
constexpr int kCopyRepeats = 5;

// Reads every file of `folder` through read(2), so that the page cache
// holds them; returns their bytes.
double WarmPageCache(const std::string& folder) {
  double bytes = 0;
  std::vector<char> buffer(1 << 20);
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    std::ifstream in(entry.path(), std::ios::binary);
    while (in.read(buffer.data(), buffer.size()) || in.gcount() > 0) {
    }
    bytes += static_cast<double>(entry.file_size());
  }
  return bytes;
}

// A field of /proc/self/status in bytes ("VmRSS", "VmHWM"; the file gives
// kB).
double StatusBytes(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.compare(0, field.size() + 1, field + ":") == 0) {
      return 1024.0 * std::stod(line.substr(field.size() + 1));
    }
  }
  throw Error("no " + field + " in /proc/self/status");
}

// What a child process measured.
struct Figures {
  double seconds = 0;
  double peak_growth_bytes = 0;
};

// Runs `measure` in a forked child process at `threads` threads and returns
// its figures.
Figures InChildProcess(int threads, const std::function<Figures()>& measure) {
  int pipe_fds[2];
  ROTOR_CHECK(::pipe(pipe_fds) == 0, "pipe failed");
  const pid_t pid = ::fork();
  ROTOR_CHECK(pid >= 0, "fork failed");
  if (pid == 0) {
    ::close(pipe_fds[0]);
    SetNumThreads(threads);
    const Figures figures = measure();
    const bool sent =
        ::write(pipe_fds[1], &figures, sizeof(figures)) == sizeof(figures);
    ::_exit(sent ? 0 : 1);
  }
  ::close(pipe_fds[1]);
  Figures figures;
  const bool received =
      ::read(pipe_fds[0], &figures, sizeof(figures)) == sizeof(figures);
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ROTOR_CHECK(received && WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "the measuring child process failed");
  return figures;
}

// Fresh float32 tensors of the model's shapes.
std::vector<Tensor> AllocateWeights(const std::vector<Shape>& shapes) {
  std::vector<Tensor> weights;
  for (const Shape& shape : shapes) weights.push_back(Tensor::Empty(shape));
  return weights;
}

// Writes zeros into `weights`, split over threads like the load.
void Touch(std::vector<Tensor>& weights) {
  for (Tensor& weight : weights) {
    float* data = weight.data();
    ParallelFor(weight.numel(), kernels::kMinFloatsPerTask,
                [&](int64_t begin, int64_t end) {
                  std::memset(data + begin, 0, (end - begin) * sizeof(float));
                });
  }
}

// Fault-in: fresh tensors of the model's shapes written once (zeros), the
// page faults any load into new memory pays.
Figures FaultIn(const std::vector<Shape>& shapes) {
  const double start = bench::NowSeconds();
  std::vector<Tensor> weights = AllocateWeights(shapes);
  Touch(weights);
  return {bench::NowSeconds() - start, 0};
}

// Copies `bytes` bytes of a buffer already in memory into fresh memory.
Figures FreshCopy(size_t bytes) {
  std::vector<char> source(bytes, 1);
  const double start = bench::NowSeconds();
  void* fresh = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ROTOR_CHECK(fresh != MAP_FAILED, "mmap failed");
  char* target = static_cast<char*>(fresh);
  ParallelFor(static_cast<int64_t>(bytes), int64_t{1} << 20,
              [&](int64_t begin, int64_t end) {
                std::memcpy(target + begin, source.data() + begin,
                            static_cast<size_t>(end - begin));
              });
  const double seconds = bench::NowSeconds() - start;
  ::munmap(fresh, bytes);
  return {seconds, 0};
}

// One load of the folder through the model loader.
Figures Load(const std::string& folder) {
  const double resident_before = StatusBytes("VmRSS");
  const double start = bench::NowSeconds();
  const auto model = train::LoadCheckpointModel(folder);
  const double seconds = bench::NowSeconds() - start;
  return {seconds, StatusBytes("VmHWM") - resident_before};
}

// The fastest of `runs` runs of `measure`, each in a child process, with the
// largest peak growth among them.
Figures BestOf(int runs, int threads, const std::function<Figures()>& measure) {
  Figures best{std::numeric_limits<double>::infinity(), 0};
  for (int run = 0; run < runs; ++run) {
    const Figures figures = InChildProcess(threads, measure);
    best.seconds = std::min(best.seconds, figures.seconds);
    best.peak_growth_bytes =
        std::max(best.peak_growth_bytes, figures.peak_growth_bytes);
  }
  return best;
}

void Run(const std::string& folder) {
  const train::ModelConfig config = train::LoadModelConfig(
      std::string(ROTOR_SOURCE_DIR) + "/configs/models/smollm2-135m.yaml");
  const std::string model_dir = folder + "/smollm2-135m";
  std::vector<Shape> shapes;
  {
    const nn::Transformer model(train::ResolveTransformerConfig(config),
                                nn::WeightsToBeLoaded{});
    for (const auto& [name, tensor] : model.NamedParameters()) {
      shapes.push_back(tensor.shape());
    }
    train::HfExportOptions options;
    options.dtype = "bfloat16";
    options.max_shard_bytes = 200 * 1000 * 1000;
    // The weights are whatever the fresh memory holds: the conversion's
    // speed does not depend on them.
    train::WriteHfModelFolder(model_dir, model, config, "byte", options);
  }
  const double folder_bytes = WarmPageCache(model_dir);
  double weights = 0;
  for (const Shape& shape : shapes) weights += NumElements(shape);
  const double float_bytes = weights * sizeof(float);
  std::printf(
      "SmolLM2-135M as a BF16 Hugging Face folder: %zu tensors, %.1fM "
      "weights, %.1f MB of files, %.1f MB as float32\n",
      shapes.size(), weights / 1e6, folder_bytes / 1e6, float_bytes / 1e6);
  std::printf("hardware threads: %d\n\n", HardwareThreads());

  std::printf("%7s %9s %13s %11s %8s %11s %16s %11s\n", "threads", "memcpy ms",
              "fresh copy ms", "fault-in ms", "load ms", "load/memcpy",
              "load/fresh copy", "peak growth");
  for (int threads : {1, 2}) {
    const Figures copy = InChildProcess(threads, [&] {
      const double gbs = bench::CopyBandwidthGBs(folder_bytes, kCopyRepeats);
      return Figures{2.0 * folder_bytes / (gbs * 1e9), 0};
    });
    const Figures fresh_copy = BestOf(kLoadRuns, threads, [&] {
      return FreshCopy(static_cast<size_t>(folder_bytes));
    });
    const Figures fault_in =
        BestOf(kLoadRuns, threads, [&] { return FaultIn(shapes); });
    const Figures load =
        BestOf(kLoadRuns, threads, [&] { return Load(model_dir); });
    std::printf("%7d %9.1f %13.1f %11.1f %8.1f %10.2fx %15.2fx %10.3fx\n",
                threads, copy.seconds * 1e3, fresh_copy.seconds * 1e3,
                fault_in.seconds * 1e3, load.seconds * 1e3,
                load.seconds / copy.seconds, load.seconds / fresh_copy.seconds,
                load.peak_growth_bytes / float_bytes);
  }
}

}  // namespace
}  // namespace rotor

int main() {
  const char* tmpdir = std::getenv("TMPDIR");
  std::string pattern = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") +
                        "/rotor_hf_load_bench_XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  int exit_code = 0;
  try {
    rotor::Run(pattern);
  } catch (const rotor::Error& error) {
    std::fprintf(stderr, "hf_load_bench: %s\n", error.what());
    exit_code = 1;
  }
  std::filesystem::remove_all(pattern);
  return exit_code;
}
