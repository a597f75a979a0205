// A fine-tuning step at long context on a real model shape: SmolLM2-135M
// (hidden 576, 30 layers, 9 query heads sharing 3 key-value heads of dim 64,
// FFN 1536, vocabulary 49,152, tied embeddings; bench_util.h SmolLm2Shape,
// as configs/models/smollm2-135m.yaml, and train_bench's smol config) with
// random weights, batch 1, one step = forward, backward, gradient clipping
// and AdamW, built as the trainer builds it.
//
// Each row is one (sequence length, fine-tuning mode, activation
// checkpointing, threads) case in its own process, so its peak RSS (VmHWM:
// weights, gradients, moments, activations, library code) is its own. Printed
// per case:
//   tok/s            batch * seq / the step's wall time
//   peak RSS         the process's peak resident set, in GiB
//   peak live        the peak of bytes held by live tensors (the rest of
//                    the RSS is code, thread stacks, OpenBLAS's buffers and
//                    buffers the pool keeps for reuse; core/tensor.h)
//   model TFLOP      per step (bench_util.h ModelFlopsPerToken times T):
//                    6 * (matmul weights) * T (the matmuls, forward and
//                    backward) + 6 * layers * width * T^2
//                    (causal attention: QK^T and PV over half the T x T
//                    square, 4 * width * T^2 / 2 forward, twice that
//                    backward); recomputation is not counted, as in MFU
//   % of peak        model FLOP/s over the machine's FMA peak times the
//                    thread count (bench_util.h FmaPeakGflops, measured in
//                    the same run)
//   % sgemm          model FLOP/s over the rate the matmul backend
//                    (core/ops/gemm.h) reaches on the step's own linear
//                    layers (forward and backward, up to 4,096 rows;
//                    bench_util.h StepSgemmGflops) at this thread count,
//                    measured in the same process right after the step (so
//                    that its operands are not in the peaks)
//   step in sgemm,   shares of the step's wall time in the matmuls and in
//   in attention     the attention kernels (core/profile.h), recomputation
//                    included
//
// Modes: full (every weight trains: gradients and AdamW moments for all
// 134.5M) and lora (the LongLoRA setting: a frozen base, adapters
// of rank 8, alpha 16, on all seven projections of every layer, and the
// embeddings and every norm trained in full; nn/lora.h). Model FLOPs count
// the same 6 per weight in both, as MFU does, although the frozen weights
// take no dW product.
//
// Usage: build/bench/long_context_bench [--seqs 2048,8192,16384,32768]
//          [--modes full,lora] [--checkpointing none,layers]
//          [--threads 1,2] [--steps N] [--warmup N]
//        build/bench/long_context_bench --case SEQ MODE CHECKPOINTING THREADS
//          (one case, one machine-readable line)
// A step at 32,768 tokens takes tens of minutes on a 2-core machine: pick
// the lengths to run with --seqs. Cases that cannot fit the machine's
// memory (rotor's own estimate, train/config/memory_estimate.h) print
// "does not fit" instead of running.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "core/autograd.h"
#include "core/memory_limit.h"
#include "core/ops/gemm.h"
#include "core/ops/ops.h"
#include "core/parallel.h"
#include "core/profile.h"
#include "core/tensor.h"
#include "nn/lora.h"
#include "nn/transformer.h"
#include "train/config/memory_estimate.h"
#include "train/config/train_config.h"
#include "train/optim/adamw.h"

namespace rotor {
namespace {

double PeakRssGiB() {
  return static_cast<double>(PeakResidentBytes()) / (1024.0 * 1024 * 1024);
}

// One case; prints "seq mode checkpointing threads tok/s rss_gib live_gib
// tflop sgemm_gflops matmul_share attention_share", or "seq mode
// checkpointing threads nofit estimate_gib".
int RunCase(int64_t seq, const std::string& mode,
            const std::string& checkpointing, int threads, int warmup,
            int steps) {
  SetNumThreads(threads);
  const nn::TransformerConfig config = bench::SmolLm2Shape(seq);
  train::TrainSection section;
  section.batch_size = 1;
  section.seq_len = seq;
  section.activation_checkpointing_every = checkpointing == "layers" ? 1 : 0;
  train::FinetuneSection finetune;
  if (mode == "lora") {
    finetune.lora.enabled = true;
    finetune.lora.r = 8;
    finetune.lora.alpha = 16.0;
    finetune.lora.target_modules = train::LoraTargetModuleNames();
    finetune.trainable = {"embed_tokens", "norm"};
  }
  const auto print_case = [&] {
    std::printf("%lld %s %s %d", static_cast<long long>(seq), mode.c_str(),
                checkpointing.c_str(), threads);
  };
  const double estimate =
      train::EstimateTrainingMemory(config, section, finetune).total();
  if (estimate > static_cast<double>(UsableMemory().bytes)) {
    print_case();
    std::printf(" nofit %.1f\n", estimate / (1024.0 * 1024 * 1024));
    return 0;
  }
  nn::Transformer model(config, /*seed=*/1);
  if (finetune.freezes_base()) {
    nn::SetUpFinetuning(model, train::FinetuneSettingsOf(finetune),
                        /*seed=*/2);
  }
  model.SetSequenceLength(seq);
  model.SetActivationCheckpointing(section.activation_checkpointing_every);
  train::AdamW optimizer(model.NamedTrainableParameters(),
                         train::AdamWSettings{});
  const std::vector<Tensor> parameters = model.TrainableParameters();
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> token(0, config.vocab_size - 1);
  std::vector<int32_t> inputs(seq), targets(seq);
  const auto step = [&] {
    for (int32_t& id : inputs) id = token(rng);
    for (int32_t& id : targets) id = token(rng);
    model.ZeroGrad();
    Mul(model.Loss(inputs, targets, 1, seq), 1.0f).Backward();
    optimizer.Step(1e-4,
                   train::ClipScale(train::GlobalGradNorm(parameters), 1.0));
  };
  for (int i = 0; i < warmup; ++i) step();
  // Timed under the phase profiler (core/profile.h): its cost, a few
  // microseconds per op, is nothing next to a step of seconds.
  double best = 1e30;
  profile::Totals phases;
  profile::Enable(true);
  for (int i = 0; i < steps; ++i) {
    profile::Reset();
    const double start = bench::NowSeconds();
    step();
    const double seconds = bench::NowSeconds() - start;
    if (seconds < best) {
      best = seconds;
      phases = profile::Snapshot();
    }
  }
  profile::Enable(false);
  // The step's peaks, then sgemm's rate: its own large operands must not
  // count in them.
  const double rss = PeakRssGiB();
  const double live = GetMemoryStats().peak_live_bytes / (1024.0 * 1024 * 1024);
  // Up to 4,096 rows: sgemm's rate no longer depends on the row count there.
  const double sgemm = bench::StepSgemmGflops(
      bench::StepShapes(config, std::min<int64_t>(seq, 4096)));
  print_case();
  std::printf(" %.2f %.2f %.2f %.2f %.1f %.3f %.3f\n", seq / best, rss, live,
              bench::ModelFlopsPerToken(config, seq) * seq / 1e12, sgemm,
              phases.wall(profile::Phase::kMatmul) / best,
              phases.wall(profile::Phase::kAttention) / best);
  return 0;
}

int Main(int argc, char** argv) {
  std::string seqs = "2048,8192,16384,32768", modes = "full,lora";
  std::string checkpointing = "none,layers", thread_counts = "1,2";
  int warmup = 1, steps = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--case" && i + 4 < argc) {
      return RunCase(std::atoll(argv[i + 1]), argv[i + 2], argv[i + 3],
                     std::atoi(argv[i + 4]), warmup, steps);
    }
    if (i + 1 >= argc) break;
    const std::string value = argv[++i];
    if (flag == "--seqs") {
      seqs = value;
    } else if (flag == "--modes") {
      modes = value;
    } else if (flag == "--checkpointing") {
      checkpointing = value;
    } else if (flag == "--threads") {
      thread_counts = value;
    } else if (flag == "--warmup") {
      warmup = std::atoi(value.c_str());
    } else if (flag == "--steps") {
      steps = std::atoi(value.c_str());
    } else {
      std::fprintf(stderr, "long_context_bench: unknown flag %s\n",
                   flag.c_str());
      return 2;
    }
  }
  const double peak = bench::FmaPeakGflops();
  std::printf(
      "rotor fine-tuning step at the SmolLM2-135M shape, batch 1 (forward + "
      "backward + clip + AdamW; %d warm-up, best of %d) on %s; FMA peak "
      "%.1f GFLOP/s per thread; matmuls %s\n"
      "| seq | mode | checkpointing | threads | tok/s | peak RSS GiB | peak "
      "live GiB | model "
      "TFLOP | model GFLOP/s | %% of peak | sgemm GFLOP/s | %% of sgemm | "
      "step in sgemm | step in attention |\n"
      "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- "
      "| --- | --- |\n",
      warmup, steps, bench::CpuModelName().c_str(), peak,
      GemmDescription().c_str());
  std::fflush(stdout);
  for (const std::string& seq : bench::SplitCommas(seqs)) {
    for (const std::string& mode : bench::SplitCommas(modes)) {
      for (const std::string& ckpt : bench::SplitCommas(checkpointing)) {
        for (const std::string& threads : bench::SplitCommas(thread_counts)) {
          const std::string command =
              "'/proc/" + std::to_string(getpid()) + "/exe' --warmup " +
              std::to_string(warmup) + " --steps " + std::to_string(steps) +
              " --case " + seq + " " + mode + " " + ckpt + " " + threads;
          FILE* pipe = popen(command.c_str(), "r");
          char line[256] = {0};
          if (pipe == nullptr ||
              std::fgets(line, sizeof(line), pipe) == nullptr) {
            std::fprintf(stderr, "long_context_bench: %s failed\n",
                         command.c_str());
            if (pipe) pclose(pipe);
            return 1;
          }
          pclose(pipe);
          long long got_seq;
          char got_mode[16], got_ckpt[16], word[16];
          int got_threads;
          double tok, rss, live, tflop, sgemm, estimate, matmul, attention;
          if (std::sscanf(line, "%lld %15s %15s %d %15s %lf", &got_seq,
                          got_mode, got_ckpt, &got_threads, word,
                          &estimate) == 6 &&
              std::string(word) == "nofit") {
            std::printf(
                "| %lld | %s | %s | %d | does not fit: needs %.1f GiB | | | | "
                "| | | | | |\n",
                got_seq, got_mode, got_ckpt, got_threads, estimate);
          } else if (std::sscanf(
                         line, "%lld %15s %15s %d %lf %lf %lf %lf %lf %lf %lf",
                         &got_seq, got_mode, got_ckpt, &got_threads, &tok, &rss,
                         &live, &tflop, &sgemm, &matmul, &attention) == 11) {
            const double gflops = tflop * 1e3 * tok / got_seq;
            std::printf(
                "| %lld | %s | %s | %d | %.1f | %.2f | %.2f | %.1f | %.1f | "
                "%.0f%% | %.1f | %.0f%% | %.0f%% | %.0f%% |\n",
                got_seq, got_mode, got_ckpt, got_threads, tok, rss, live, tflop,
                gflops, 100 * gflops / (peak * got_threads), sgemm,
                100 * gflops / sgemm, 100 * matmul, 100 * attention);
          } else {
            std::fprintf(stderr, "long_context_bench: unexpected output '%s'\n",
                         line);
            return 1;
          }
          std::fflush(stdout);
        }
      }
    }
  }
  return 0;
}

}  // namespace
}  // namespace rotor

int main(int argc, char** argv) { return rotor::Main(argc, argv); }
