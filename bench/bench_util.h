// Helpers shared by the benchmark programs in bench/: a wall-clock timer,
// best-of-N timing, the machine's own limits measured in the same run (its
// float32 FMA peak, the yardstick for every compute-bound figure, and its
// memory copy bandwidth, the one for memory-bound kernels), the matmul
// backend at a training step's own shapes (the yardstick for a whole
// step), a step's model FLOPs, the SmolLM2-135M shape and the benchmarks'
// step configs, and main()'s error handling and flag lists.
#ifndef ROTOR_BENCH_BENCH_UTIL_H_
#define ROTOR_BENCH_BENCH_UTIL_H_

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "core/autograd.h"
#include "core/error.h"
#include "core/ops/ops.h"
#include "core/parallel.h"
#include "core/tensor.h"
#include "nn/transformer.h"

namespace rotor {
namespace bench {

inline double NowSeconds() {
  using Clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

// Runs fn once to warm up, then `repeats` times; returns the fastest run in
// seconds (the least disturbed by the other core, page faults, etc.).
inline double BestSeconds(const std::function<void()>& fn, int repeats = 5) {
  fn();
  double best = std::numeric_limits<double>::infinity();
  for (int i = 0; i < repeats; ++i) {
    const double start = NowSeconds();
    fn();
    best = std::min(best, NowSeconds() - start);
  }
  return best;
}

// The float32 multiply-add limit of one thread (bench/util/fma_peak.cc):
// independent FMA chains of the widest vector Highway dispatches to (the
// `target`, `lanes` floats wide), timed in thread CPU time, best of three.
// hwy::DisableTargets before the first call measures a narrower target's.
// n threads on n cores reach at most n times this.
struct FmaPeak {
  double gflops = 0.0;
  int lanes = 0;
  const char* target = "";
};
FmaPeak MeasureFmaPeak();
// MeasureFmaPeak's GFLOP/s, measured once per process.
double FmaPeakGflops();
// The same for bf16 dot products (bench/util/bf16_dot_peak.cc: 512-bit
// VDPBF16PS chains, 64 FLOPs each), or 0 on a CPU without AVX512_BF16.
// Twice the FMA peak where the CPU runs them as fast as FMAs; the AMX
// matmuls of oneDNN are not bound by it.
double Bf16DotPeakGflops();

// The processor's model name (/proc/cpuinfo), for the lines that say where
// a figure was measured.
inline std::string CpuModelName() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown";
}

// A benchmark's main(): runs `body` and returns its exit status, or prints
// a rotor::Error it throws as "NAME: message" and returns 1.
inline int RunMain(const char* name, const std::function<int()>& body) {
  try {
    return body();
  } catch (const Error& error) {
    std::fprintf(stderr, "%s: %s\n", name, error.what());
    return 1;
  }
}

// "2048,8192" -> {"2048", "8192"}: a flag's list of values.
inline std::vector<std::string> SplitCommas(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  for (std::string part; std::getline(stream, part, ',');) {
    parts.push_back(part);
  }
  return parts;
}

// Copy bandwidth in GB/s (bytes read + bytes written, 1e9 bytes per GB) for
// a `bytes`-sized buffer copied with memcpy, split over the current thread
// count (SetNumThreads) like rotor's kernels. Use a buffer much larger than
// the last-level cache to measure main memory.
inline double CopyBandwidthGBs(size_t bytes, int repeats = 5) {
  const int64_t n = static_cast<int64_t>(bytes / sizeof(float));
  Tensor src = Tensor::Full({n}, 1.0f);
  Tensor dst = Tensor::Zeros({n});
  const float* s = src.data();
  float* d = dst.data();
  const double seconds = BestSeconds(
      [&] {
        ParallelFor(n, 1 << 16, [&](int64_t begin, int64_t end) {
          std::memcpy(d + begin, s + begin, (end - begin) * sizeof(float));
        });
      },
      repeats);
  return 2.0 * n * sizeof(float) / seconds / 1e9;
}

// `count` linear layers y = x W^T of a step: x [rows, in], W [out, in].
struct LinearShape {
  int64_t rows, in, out, count;
};

// The GFLOP/s the matmul backend (core/ops/gemm.h, in the active precision)
// reaches on a step's linear layers at the current thread count: each shape's
// three products (y = x W^T, dx = dy W, dW = dy^T x, through rotor's MatMul and
// Linear, so with its row-block split) timed best of 3, then all their FLOPs
// over all their time, each shape weighted by its count. That is the rate the
// step would run at if nothing but its matmuls took time.
inline double StepSgemmGflops(const std::vector<LinearShape>& shapes) {
  NoGradGuard no_grad;
  double flops = 0.0, seconds = 0.0;
  for (const LinearShape& s : shapes) {
    const Tensor x = Tensor::Full({s.rows, s.in}, 0.5f);
    const Tensor w = Tensor::Full({s.out, s.in}, 0.25f);
    const Tensor dy = Tensor::Full({s.rows, s.out}, 0.125f);
    const double product =
        BestSeconds([&] { Linear(x, w); }, 3) +
        BestSeconds([&] { MatMul(dy, w); }, 3) +
        BestSeconds([&] { MatMul(Transpose(dy, 0, 1), x); }, 3);
    flops += 3.0 * 2.0 * s.rows * s.in * s.out * s.count;
    seconds += product * s.count;
  }
  return flops / seconds / 1e9;
}

// The `count` linear layers of one training step of `m` over `rows` token
// rows, as they run: per layer q, k and v as one product and gate and up as
// another when m.fuse_projections (nn/transformer.h), else each alone; then
// o_proj, down_proj and the output head (tied or not, one [vocab, hidden]
// matmul).
inline std::vector<LinearShape> StepShapes(const nn::TransformerConfig& m,
                                           int64_t rows) {
  const int64_t h = m.hidden_size, f = m.intermediate_size;
  const int64_t q = m.num_attention_heads * m.head_dim;
  const int64_t kv = m.num_key_value_heads * m.head_dim;
  const int64_t layers = m.num_hidden_layers;
  if (m.fuse_projections) {
    return {{rows, h, q + 2 * kv, layers},  // q, k, v
            {rows, q, h, layers},           // o_proj
            {rows, h, 2 * f, layers},       // gate, up
            {rows, f, h, layers},           // down_proj
            {rows, h, m.vocab_size, 1}};    // the head
  }
  return {{rows, h, q, 2 * layers},     // q_proj, and o_proj (q -> h)
          {rows, h, kv, 2 * layers},    // k_proj, v_proj
          {rows, h, f, 2 * layers},     // gate_proj, up_proj
          {rows, f, h, layers},         // down_proj
          {rows, h, m.vocab_size, 1}};  // the head
}

// Model FLOPs per token of a training step of `m` on rows of `seq` tokens:
// 6 per matmul weight (forward, dx and dW; the head counted once whether
// tied or not, the embedding lookup being no matmul) plus causal
// attention's 6 * layers * (query width) * seq: q k^T and p v over half the
// seq x seq square, forward 4 * width * seq / 2 per token, backward twice
// that, over the query heads (grouped-query sharing of kv heads saves no
// attention FLOPs). Recomputation is not counted, as in MFU.
inline double ModelFlopsPerToken(const nn::TransformerConfig& m, int64_t seq) {
  const double h = static_cast<double>(m.hidden_size);
  const double q = static_cast<double>(m.num_attention_heads * m.head_dim);
  const double kv = static_cast<double>(m.num_key_value_heads * m.head_dim);
  const double per_layer =
      h * (2 * q + 2 * kv) + 3 * h * static_cast<double>(m.intermediate_size);
  const double layers = static_cast<double>(m.num_hidden_layers);
  const double matmul_weights =
      layers * per_layer + static_cast<double>(m.vocab_size) * h;
  return 6 * matmul_weights + 6 * layers * q * static_cast<double>(seq);
}

// SmolLM2-135M's shape (HuggingFaceTB/SmolLM2-135M's config.json, as in
// configs/models/smollm2-135m.yaml: hidden 576, 30 layers, 9 query heads
// sharing 3 kv heads of dim 64, FFN 1536, vocabulary 49,152, tied
// embeddings, rms eps 1e-5, rope theta 100000) with `seq` positions.
inline nn::TransformerConfig SmolLm2Shape(int64_t seq) {
  nn::TransformerConfig config;
  config.vocab_size = 49152;
  config.hidden_size = 576;
  config.intermediate_size = 1536;
  config.num_hidden_layers = 30;
  config.num_attention_heads = 9;
  config.num_key_value_heads = 3;
  config.head_dim = 64;
  config.rms_norm_eps = 1e-5;
  config.tie_word_embeddings = true;
  config.initializer_range = 0.041666666666666664;
  config.rope.head_dim = 64;
  config.rope.rope_theta = 100000.0;
  config.rope.max_position_embeddings = seq;
  return config;
}

struct BenchConfig {
  std::string name;
  nn::TransformerConfig model;
  int64_t seq, batch;
};

// A Llama-style model of head_dim 32 (hidden / heads), tied embeddings.
inline nn::TransformerConfig SmallModel(int64_t hidden, int64_t layers,
                                        int64_t heads, int64_t kv_heads,
                                        int64_t ffn, int64_t vocab) {
  nn::TransformerConfig config;
  config.vocab_size = vocab;
  config.hidden_size = hidden;
  config.intermediate_size = ffn;
  config.num_hidden_layers = layers;
  config.num_attention_heads = heads;
  config.num_key_value_heads = kv_heads;
  config.head_dim = hidden / heads;
  config.tie_word_embeddings = true;
  config.rope.head_dim = config.head_dim;
  return config;
}

// The configs of train_bench and gemm_bench (bench/train_bench.cc lists
// them): a model, and the step's rows as batch sequences of seq tokens.
inline std::vector<BenchConfig> Configs() {
  return {
      {"tiny", SmallModel(128, 4, 4, 4, 344, 256), 256, 8},
      {"small", SmallModel(256, 6, 8, 8, 688, 256), 512, 8},
      // configs/default.yaml's model and batch (grouped-query attention).
      {"default", SmallModel(192, 4, 6, 2, 512, 257), 256, 16},
      {"smol", SmolLm2Shape(2048), 2048, 1},
  };
}

}  // namespace bench
}  // namespace rotor

#endif  // ROTOR_BENCH_BENCH_UTIL_H_
