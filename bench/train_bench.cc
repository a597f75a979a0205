// Training throughput and peak memory of a whole step, forward + backward +
// gradient clipping + AdamW, built exactly as the trainer builds it
// (nn::Transformer, AdamW over NamedParameters, clipping), on random
// token batches. Four Llama-style configs with tied embeddings, the first
// three of head_dim 32:
//
//   tiny:    hidden 128, 4 layers, 4 heads, FFN 344, seq 256, batch 8,
//            vocabulary 256
//   small:   hidden 256, 6 layers, 8 heads, FFN 688, seq 512, batch 8,
//            vocabulary 256
//   default: configs/default.yaml: hidden 192, 4 layers, 6 query heads
//            sharing 2 kv heads, FFN 512, seq 256, batch 16, vocabulary 257
//   smol:    SmolLM2-135M's shape (bench_util.h SmolLm2Shape): hidden 576,
//            30 layers, 9 query heads sharing 3 kv heads of dim 64, FFN
//            1536, seq 2048, batch 1, vocabulary 49,152, rope theta 100000
//            (a step is about 2.1 model TFLOP, tens of seconds: its pairs
//            take most of the sweep's time; --steps 1 --repeats 2 shortens it)
//
// tokens/s counts batch * seq tokens per step; model GF/s is tokens/s times
// the model FLOPs per token (bench_util.h ModelFlopsPerToken: 6 per matmul
// weight, the tied head once, + 6 * layers * query width * seq for causal
// attention). Two shares of it, both measured in the same process: % peak
// over the machine's float32 FMA peak at that thread count (threads times
// bench_util.h FmaPeakGflops; in bf16 the limit is higher, twice that
// with AVX512_BF16's dot products and more with AMX, and the share is still
// given over the float32 peak), and % matmul over what the
// matmul backend reaches on the step's own linear layers at that thread
// count (bench_util.h StepSgemmGflops). tok/CPU-s divides by the
// process's CPU time instead of wall time (user + system, all threads), a
// figure less sensitive to other jobs on a shared machine. Peak memory: the
// process's peak resident set (VmHWM in /proc/self/status: model, optimizer
// state, activations, library code and thread stacks) and rotor's own peak of
// bytes held by live tensors (GetMemoryStats().peak_live_bytes).
//
// Each (config, threads) pair runs in its own process, so peak RSS is that
// pair's alone and thread pools start fresh. After the timed steps, one
// more step runs under the phase profiler (core/profile.h), and a second
// table shows where its time went. Without arguments the program
// re-runs itself for every pair and prints one table; compare with
// bench/train_torch.py, the same model in PyTorch eager.
//
// Usage: build/bench/train_bench [--steps N] [--repeats R] [--simd avx2]
//          [--gemm onednn|openblas] [--precision fp32|bf16]
//        build/bench/train_bench --config tiny|small|default|smol --threads T
//        [--steps N] [--gemm onednn|openblas] [--precision fp32|bf16]
//          [--repeats R] [--seq S] [--batch B] [--documents K]
//          [--rope inside|separate] [--projections fused|separate]
//          [--simd best|avx2]
//          (one pair, one result line; --seq and --batch replace the
//          config's; --documents K cuts each row into K equal packed
//          documents that neither attend to each other nor share positions,
//          as data.document_mask and data.document_positions do; --rope
//          separate runs RoPE as its own op before attention, with the
//          layout copies around it, instead of inside the attention kernels:
//          TransformerConfig::rope_inside_attention; --projections
//          separate runs each of q, k, v, gate and up as its own GEMM
//          instead of one GEMM for q, k, v and one for gate, up:
//          TransformerConfig::fuse_projections (the sgemm reference
//          follows: bench_util.h StepShapes); --simd avx2 runs
//          Highway's AVX2 code on an AVX-512 CPU, and with
//          OPENBLAS_CORETYPE=Haswell and --gemm openblas, or
//          DNNL_MAX_CPU_ISA=AVX2 with oneDNN, the whole step is an AVX2
//          CPU's; --gemm picks the matmul backend (core/ops/gemm.h;
//          default: the build's, or ROTOR_GEMM) and --precision the
//          matmuls' precision, as train.precision does)
// Steps are timed in R groups of N steps after two warm-up steps; the
// figure is the fastest group (the least disturbed on a shared machine) and
// the slowest is printed beside it as a noise gauge.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "core/error.h"
#include "core/ops/attention.h"
#include "core/ops/gemm.h"
#include "core/ops/ops.h"
#include "core/parallel.h"
#include "core/profile.h"
#include "core/tensor.h"
#include "hwy/targets.h"
#include "nn/transformer.h"
#include "train/optim/adamw.h"

namespace rotor {
namespace {

using bench::BenchConfig;
using bench::Configs;

// User + system CPU seconds this process has used so far (all threads).
double CpuSeconds() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
         1e-6 * (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

// Peak resident set size of this process in MiB (VmHWM), or -1.
double PeakRssMiB() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) {
      return std::atof(line.c_str() + 6) / 1024.0;  // the value is in kB
    }
  }
  return -1.0;
}

// Each row of `c` cut into `documents` equal packed documents (the last one
// takes the rest), attended within each and with positions restarting.
nn::PackedDocuments EqualDocuments(const BenchConfig& c, int64_t documents) {
  const int64_t length = c.seq / documents;
  std::vector<std::vector<int64_t>> starts(static_cast<size_t>(c.batch));
  for (std::vector<int64_t>& row : starts) {
    for (int64_t d = 0; d < documents; ++d) row.push_back(d * length);
  }
  nn::PackedDocuments packed;
  packed.document_start = DocumentKeyStarts(starts, c.seq);
  packed.restart_positions = true;
  return packed;
}

// One (config, threads) measurement; prints one machine-readable line.
// documents > 0: each row packs that many documents (EqualDocuments).
void RunOne(const BenchConfig& c, int threads, int steps, int repeats,
            int64_t documents, bool rope_inside_attention,
            bool fuse_projections) {
  SetNumThreads(threads);
  nn::TransformerConfig config = c.model;
  config.rope.max_position_embeddings = c.seq;
  config.rope_inside_attention = rope_inside_attention;
  config.fuse_projections = fuse_projections;
  nn::Transformer model(config, /*seed=*/1);
  model.SetSequenceLength(c.seq);
  train::AdamW optimizer(model.NamedParameters(), train::AdamWSettings{});
  const std::vector<Tensor> parameters = model.Parameters();
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> token(0, config.vocab_size - 1);
  std::vector<int32_t> inputs(c.batch * c.seq), targets(c.batch * c.seq);
  const nn::PackedDocuments packed =
      documents > 0 ? EqualDocuments(c, documents) : nn::PackedDocuments{};

  auto step = [&] {
    for (int32_t& id : inputs) id = token(rng);
    for (int32_t& id : targets) id = token(rng);
    model.ZeroGrad();
    const Tensor loss = model.Loss(inputs, targets, c.batch, c.seq,
                                   nn::Transformer::kIgnoreIndex,
                                   documents > 0 ? &packed : nullptr);
    Mul(loss, 1.0f).Backward();  // as the trainer (micro-batch weight 1)
    optimizer.Step(1e-3,
                   train::ClipScale(train::GlobalGradNorm(parameters), 1.0));
  };
  step();
  step();
  double best = 1e30, worst = 0.0;
  const double cpu_start = CpuSeconds();
  for (int r = 0; r < repeats; ++r) {
    const double start = bench::NowSeconds();
    for (int s = 0; s < steps; ++s) step();
    const double seconds = (bench::NowSeconds() - start) / steps;
    best = std::min(best, seconds);
    worst = std::max(worst, seconds);
  }
  const double tokens = static_cast<double>(c.batch * c.seq);
  const double cpu_per_step = (CpuSeconds() - cpu_start) / (steps * repeats);
  const double rss = PeakRssMiB();
  const double live = GetMemoryStats().peak_live_bytes / 1048576.0;

  // One more step, profiled (core/profile.h): where its time goes.
  profile::Reset();
  profile::Enable(true);
  const double wall_start = bench::NowSeconds();
  const double cpu_step_start = profile::ThreadCpuSeconds();
  const double process_cpu_start = profile::ProcessCpuSeconds();
  step();
  const double step_wall = bench::NowSeconds() - wall_start;
  const double step_cpu = profile::ThreadCpuSeconds() - cpu_step_start;
  const double step_process_cpu =
      profile::ProcessCpuSeconds() - process_cpu_start;
  profile::Enable(false);
  const profile::Totals phases = profile::Snapshot();

  std::printf(
      "%s %d %.0f %.0f %.0f %.1f %.1f %lld %.2f %.2f %.2f\n", c.name.c_str(),
      threads, tokens / best, tokens / worst, tokens / cpu_per_step, rss, live,
      static_cast<long long>(model.NumParameters()),
      bench::ModelFlopsPerToken(config, c.seq) * tokens / best / 1e9,
      bench::StepSgemmGflops(bench::StepShapes(config, c.batch * c.seq)),
      threads * bench::FmaPeakGflops());
  std::printf("%.6f %.6f %.6f", step_wall, step_cpu, step_process_cpu);
  for (int p = 0; p < profile::kNumPhases; ++p) {
    std::printf(" %.6f %.6f", phases.wall_seconds[p], phases.cpu_seconds[p]);
  }
  std::printf("\n");
}

int Main(int argc, char** argv) {
  std::string config_name;
  int threads = 0, steps = 3, repeats = 3;
  int64_t seq = 0, batch = 0, documents = 0;
  std::string rope = "inside", simd = "best", projections = "fused";
  std::string gemm, precision = "fp32";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--config") {
      config_name = argv[i + 1];
    } else if (flag == "--threads") {
      threads = std::atoi(argv[i + 1]);
    } else if (flag == "--steps") {
      steps = std::atoi(argv[i + 1]);
    } else if (flag == "--repeats") {
      repeats = std::atoi(argv[i + 1]);
    } else if (flag == "--seq") {
      seq = std::atoll(argv[i + 1]);
    } else if (flag == "--batch") {
      batch = std::atoll(argv[i + 1]);
    } else if (flag == "--documents") {
      documents = std::atoll(argv[i + 1]);
    } else if (flag == "--rope") {
      rope = argv[i + 1];
    } else if (flag == "--projections") {
      projections = argv[i + 1];
    } else if (flag == "--simd") {
      simd = argv[i + 1];
    } else if (flag == "--gemm") {
      gemm = argv[i + 1];
    } else if (flag == "--precision") {
      precision = argv[i + 1];
    } else {
      std::fprintf(stderr, "train_bench: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  if (simd != "best" && simd != "avx2") {
    std::fprintf(stderr, "train_bench: --simd must be best or avx2\n");
    return 2;
  }
  // --simd avx2: Highway's AVX2 code even on an AVX-512 CPU (every target
  // better than AVX2 disabled), to see what an AVX2-only CPU runs; with
  // OPENBLAS_CORETYPE=Haswell the matrix products are those of one too.
  if (simd == "avx2") hwy::DisableTargets(HWY_AVX2 - 1);
  GemmBackend backend = ActiveGemmBackend();
  MatmulPrecision matmul_precision = MatmulPrecision::kFloat32;
  if ((!gemm.empty() && !ParseGemmBackend(gemm, &backend)) ||
      !ParseMatmulPrecision(precision, &matmul_precision)) {
    std::fprintf(stderr,
                 "train_bench: --gemm must be onednn or openblas, "
                 "--precision fp32 or bf16\n");
    return 2;
  }
  try {
    SetGemmBackend(backend);
    SetMatmulPrecision(matmul_precision);
  } catch (const Error& e) {
    std::fprintf(stderr, "train_bench: %s\n", e.what());
    return 1;
  }
  if (!config_name.empty()) {
    for (BenchConfig c : Configs()) {
      if (config_name == c.name && threads > 0 && seq >= 0 && batch >= 0 &&
          documents >= 0 && documents <= (seq > 0 ? seq : c.seq) &&
          (rope == "inside" || rope == "separate") &&
          (projections == "fused" || projections == "separate")) {
        if (seq > 0) c.seq = seq;
        if (batch > 0) c.batch = batch;
        RunOne(c, threads, steps, repeats, documents, rope == "inside",
               projections == "fused");
        return 0;
      }
    }
    std::fprintf(stderr,
                 "train_bench: --config must be tiny, small, default or smol, "
                 "--threads "
                 "positive, --seq, --batch and --documents not negative, "
                 "--documents at most the sequence length, --rope inside or "
                 "separate, --projections fused or separate\n");
    return 2;
  }

  const bench::FmaPeak peak = bench::MeasureFmaPeak();
  std::printf(
      "rotor training step (forward + backward + clip + AdamW) on %s\n"
      "FMA peak, one thread: %.1f GFLOP/s (%s, %d floats); matmuls: %s\n"
      "%-7s %7s %10s %10s %12s %13s %13s %8s %11s %7s %12s %9s\n",
      bench::CpuModelName().c_str(), peak.gflops, peak.target, peak.lanes,
      GemmDescription().c_str(), "config", "threads", "tok/s", "(slowest)",
      "tok/CPU-s", "peak RSS MiB", "peak live MiB", "params", "model GF/s",
      "% peak", "matmul GF/s", "% matmul");
  struct Breakdown {
    std::string name;
    int threads;
    double wall, cpu, process_cpu;
    double phase_wall[profile::kNumPhases], phase_cpu[profile::kNumPhases];
  };
  std::vector<Breakdown> breakdowns;
  for (const BenchConfig& c : Configs()) {
    for (int t : {1, 2}) {
      const std::string command =
          "'/proc/" + std::to_string(getpid()) + "/exe' --config " + c.name +
          " --threads " + std::to_string(t) + " --steps " +
          std::to_string(steps) + " --repeats " + std::to_string(repeats) +
          " --simd " + simd + " --gemm " + GemmBackendName(backend) +
          " --precision " + precision;
      FILE* pipe = popen(command.c_str(), "r");
      char name[16];
      int got_threads;
      double tok, tok_slow, tok_cpu, rss, live, model_gflops, sgemm_gflops,
          peak_gflops;
      long long params;
      Breakdown b;
      bool ok =
          pipe != nullptr &&
          std::fscanf(pipe, "%15s %d %lf %lf %lf %lf %lf %lld %lf %lf %lf",
                      name, &got_threads, &tok, &tok_slow, &tok_cpu, &rss,
                      &live, &params, &model_gflops, &sgemm_gflops,
                      &peak_gflops) == 11 &&
          std::fscanf(pipe, "%lf %lf %lf", &b.wall, &b.cpu, &b.process_cpu) ==
              3;
      for (int p = 0; ok && p < profile::kNumPhases; ++p) {
        ok = std::fscanf(pipe, "%lf %lf", &b.phase_wall[p], &b.phase_cpu[p]) ==
             2;
      }
      if (!ok) {
        std::fprintf(stderr, "train_bench: run %s failed\n", command.c_str());
        if (pipe) pclose(pipe);
        return 1;
      }
      pclose(pipe);
      std::printf(
          "%-7s %7d %10.0f %10.0f %12.0f %13.1f %13.1f %8lld %11.1f %6.0f%% "
          "%12.1f %8.0f%%\n",
          name, got_threads, tok, tok_slow, tok_cpu, rss, live, params,
          model_gflops, 100 * model_gflops / peak_gflops, sgemm_gflops,
          100 * model_gflops / sgemm_gflops);
      std::fflush(stdout);
      b.name = name;
      b.threads = got_threads;
      breakdowns.push_back(b);
    }
  }

  // One profiled step per pair (core/profile.h): each phase's share of the
  // step's wall time and, in brackets, the calling thread's CPU time over
  // that wall time (below 1 where it waits for the other threads). The last
  // row gives the whole step's process CPU time over its wall time.
  std::printf(
      "\nwhere one step's time goes: %% of wall time (the calling thread's "
      "CPU/wall)\n%-32s",
      "phase");
  for (const Breakdown& b : breakdowns) {
    std::printf(" %7s/%d    ", b.name.c_str(), b.threads);
  }
  std::printf("\n");
  const auto row = [&](const char* label, auto wall_of, auto cpu_of) {
    std::printf("%-32s", label);
    for (const Breakdown& b : breakdowns) {
      const double wall = wall_of(b);
      std::printf(" %5.1f%% (%.2f)", 100 * wall / b.wall,
                  wall > 0 ? cpu_of(b) / wall : 0.0);
    }
    std::printf("\n");
  };
  for (int p = 0; p < profile::kNumPhases; ++p) {
    row(
        profile::PhaseName(static_cast<profile::Phase>(p)),
        [p](const Breakdown& b) { return b.phase_wall[p]; },
        [p](const Breakdown& b) { return b.phase_cpu[p]; });
  }
  const auto outside = [](const Breakdown& b, bool cpu) {
    double inside = 0.0;
    for (int p = 0; p < profile::kNumPhases; ++p) {
      inside += cpu ? b.phase_cpu[p] : b.phase_wall[p];
    }
    return (cpu ? b.cpu : b.wall) - inside;
  };
  row(
      "autograd graph, views, other",
      [&](const Breakdown& b) { return outside(b, false); },
      [&](const Breakdown& b) { return outside(b, true); });
  std::printf("%-32s", "step: process CPU / wall");
  for (const Breakdown& b : breakdowns) {
    std::printf(" %13.2f", b.process_cpu / b.wall);
  }
  std::printf("\n");
  return 0;
}

}  // namespace
}  // namespace rotor

int main(int argc, char** argv) { return rotor::Main(argc, argv); }
