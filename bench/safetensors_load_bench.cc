// Loading a bfloat16 checkpoint: SafetensorsFile::Read, then ReadAsF32 of
// every tensor into a freshly allocated float32 tensor (as a model loader
// does), for a file with the tensors of SmolLM2-135M (134.5M weights: 269 MB
// of bfloat16, 538 MB as float32). Figures, at 1 and 2 threads, each the
// best of several runs:
//   memcpy ms       copying the file's byte count between two buffers already
//                   in memory (bench::CopyBandwidthGBs): the yardstick
//   fault-in ms     writing zeros into fresh float32 tensors of the model's
//                   shapes: the page faults that any load into new memory
//                   pays, whatever it reads
//   load ms         the load; load/memcpy is its cost in copies of the file
//   touched ms      the same load into tensors allocated and written before
//                   the clock starts: the reading and converting alone
//   peak growth     the process's peak resident memory during a load (VmHWM)
//                   minus its resident memory before, over the float32 bytes:
//                   1.0 is the weights alone, 1.5 would be the whole bfloat16
//                   file held as well
// Targets: load <= 2x memcpy, peak growth <= 1.15x.
//
// The file is written to a fresh folder under $TMPDIR (or /tmp), read once
// so the page cache holds it (a load is then bound by memory and page faults,
// not the disk), and removed at the end. Each run is a forked child process:
// its tensors come from the system rather than rotor's buffer pool, and its
// VmHWM covers that one load. The parent never starts rotor's thread pool,
// so each child starts its own.
//
// Usage: build/bench/safetensors_load_bench
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
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "core/error.h"
#include "core/kernels/convert.h"
#include "core/kernels/convert_scalar.h"
#include "core/kernels/row_split.h"
#include "core/parallel.h"
#include "core/tensor.h"
#include "train/io/safetensors.h"

namespace rotor {
namespace {

using train::SafetensorsDtype;
using train::SafetensorsFile;

constexpr int kLoadRuns = 7;
constexpr int kCopyRepeats = 5;

struct NamedShape {
  std::string name;
  Shape shape;
};

// SmolLM2-135M's weights with their Hugging Face names: hidden 576, 30
// layers, 9 query heads and 3 key/value heads of 64, FFN 1536, vocabulary
// 49152, embeddings tied to the output (no lm_head).
std::vector<NamedShape> SmolLm2Tensors() {
  constexpr int64_t kHidden = 576, kKeyValue = 3 * 64, kFfn = 1536;
  std::vector<NamedShape> tensors = {
      {"model.embed_tokens.weight", {49152, kHidden}},
      {"model.norm.weight", {kHidden}}};
  for (int layer = 0; layer < 30; ++layer) {
    const std::string prefix = "model.layers." + std::to_string(layer) + ".";
    const std::vector<NamedShape> per_layer = {
        {"self_attn.q_proj.weight", {kHidden, kHidden}},
        {"self_attn.k_proj.weight", {kKeyValue, kHidden}},
        {"self_attn.v_proj.weight", {kKeyValue, kHidden}},
        {"self_attn.o_proj.weight", {kHidden, kHidden}},
        {"mlp.gate_proj.weight", {kFfn, kHidden}},
        {"mlp.up_proj.weight", {kFfn, kHidden}},
        {"mlp.down_proj.weight", {kHidden, kFfn}},
        {"input_layernorm.weight", {kHidden}},
        {"post_attention_layernorm.weight", {kHidden}}};
    for (const NamedShape& tensor : per_layer) {
      tensors.push_back({prefix + tensor.name, tensor.shape});
    }
  }
  return tensors;
}

// Writes the model to `path` as BF16. The values are random and shared: every
// tensor's data starts at the same buffer, as large as the largest tensor
// (conversion speed does not depend on the values).
void WriteModel(const std::string& path,
                const std::vector<NamedShape>& tensors) {
  int64_t largest = 0;
  for (const NamedShape& tensor : tensors) {
    largest = std::max(largest, NumElements(tensor.shape));
  }
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-0.1f, 0.1f);
  std::vector<uint16_t> values(largest);
  // The scalar twin, not the kernel, which would start the thread pool here.
  for (uint16_t& value : values) value = kernels::F32ToBF16Ref(dist(rng));
  std::vector<train::SafetensorsEntry> entries;
  for (const NamedShape& tensor : tensors) {
    entries.push_back(
        {tensor.name, SafetensorsDtype::kBF16, tensor.shape, values.data()});
  }
  train::WriteSafetensors(path, entries);
}

// Reads the whole file through read(2), so that the page cache holds it.
void WarmPageCache(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> buffer(1 << 20);
  while (in.read(buffer.data(), buffer.size()) || in.gcount() > 0) {
  }
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
std::vector<Tensor> AllocateWeights(const std::vector<NamedShape>& tensors) {
  std::vector<Tensor> weights;
  for (const NamedShape& tensor : tensors) {
    weights.push_back(Tensor::Empty(tensor.shape));
  }
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
Figures FaultIn(const std::vector<NamedShape>& tensors) {
  const double start = bench::NowSeconds();
  std::vector<Tensor> weights = AllocateWeights(tensors);
  Touch(weights);
  return {bench::NowSeconds() - start, 0};
}

// One load: map the file, then every tensor into a float32 tensor, fresh
// or (`into_touched`) allocated and written before the clock starts.
Figures Load(const std::string& path, const std::vector<NamedShape>& tensors,
             bool into_touched) {
  const double resident_before = StatusBytes("VmRSS");
  std::vector<Tensor> touched;
  if (into_touched) {
    touched = AllocateWeights(tensors);
    Touch(touched);
  }
  const double start = bench::NowSeconds();
  const SafetensorsFile file = SafetensorsFile::Read(path);
  std::vector<Tensor> weights;
  for (size_t i = 0; i < file.tensors().size(); ++i) {
    const SafetensorsFile::TensorInfo& info = file.tensors()[i];
    weights.push_back(into_touched ? touched[i] : Tensor::Empty(info.shape));
    file.ReadAsF32(info, weights.back().data());
  }
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
  std::vector<NamedShape> tensors = SmolLm2Tensors();
  // In file order (by name), so that Load's tensors line up with these.
  std::sort(
      tensors.begin(), tensors.end(),
      [](const NamedShape& a, const NamedShape& b) { return a.name < b.name; });
  const std::string path = folder + "/smollm2_135m_bf16.safetensors";
  WriteModel(path, tensors);
  WarmPageCache(path);
  const double file_bytes = std::filesystem::file_size(path);
  double weights = 0;
  for (const NamedShape& tensor : tensors) weights += NumElements(tensor.shape);
  const double float_bytes = weights * sizeof(float);
  std::printf(
      "SmolLM2-135M as BF16: %zu tensors, %.1fM weights, a %.1f MB file, "
      "%.1f MB as float32\n",
      tensors.size(), weights / 1e6, file_bytes / 1e6, float_bytes / 1e6);
  std::printf("Highway target: %s; hardware threads: %d\n\n",
              kernels::ConvertTarget(), HardwareThreads());

  std::printf("%7s %9s %11s %8s %11s %10s %14s %11s\n", "threads", "memcpy ms",
              "fault-in ms", "load ms", "load/memcpy", "touched ms",
              "touched/memcpy", "peak growth");
  for (int threads : {1, 2}) {
    const Figures copy = InChildProcess(threads, [&] {
      const double gbs = bench::CopyBandwidthGBs(file_bytes, kCopyRepeats);
      return Figures{2.0 * file_bytes / (gbs * 1e9), 0};
    });
    const Figures fault_in =
        BestOf(kLoadRuns, threads, [&] { return FaultIn(tensors); });
    const Figures load =
        BestOf(kLoadRuns, threads, [&] { return Load(path, tensors, false); });
    const Figures touched =
        BestOf(kLoadRuns, threads, [&] { return Load(path, tensors, true); });
    std::printf("%7d %9.1f %11.1f %8.1f %10.2fx %10.1f %13.2fx %10.3fx\n",
                threads, copy.seconds * 1e3, fault_in.seconds * 1e3,
                load.seconds * 1e3, load.seconds / copy.seconds,
                touched.seconds * 1e3, touched.seconds / copy.seconds,
                load.peak_growth_bytes / float_bytes);
  }
}

}  // namespace
}  // namespace rotor

int main() {
  const char* tmpdir = std::getenv("TMPDIR");
  std::string pattern = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") +
                        "/rotor_safetensors_bench_XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  int exit_code = 0;
  try {
    rotor::Run(pattern);
  } catch (const rotor::Error& error) {
    std::fprintf(stderr, "safetensors_load_bench: %s\n", error.what());
    exit_code = 1;
  }
  std::filesystem::remove_all(pattern);
  return exit_code;
}
