// Memory-efficient attention (core/kernels/attention.h): forward and
// forward + backward time and GFLOP/s at the shapes of rotor's small models,
// at 1 and 2 threads, plus the scalar reference (which materialises each
// query's row of scores) at the smallest length for comparison.
//
// FLOPs counted are the algorithmic ones over the visible (causal) query-key
// pairs P = batch * q_heads * sum_i (i + 1):
//   forward   4 D P   (q k^T and p v)
//   backward  8 D P   (dp = dout v^T, dv, dq, dk)
// The backward kernel executes 10 D P when it runs in one pass (when the
// kv heads spread well over the threads, as in every shape here) and 14 D P in
// two passes, which compute q k^T and dout v^T twice (docs/attention.md, part
// 5). Compare with bench/attention_torch.py, which runs
// PyTorch's eager matmul + mask + softmax + matmul attention.
//
// A last table times forward and backward separately at one thread in
// thread CPU time, which stays meaningful on a machine shared with other
// jobs; then one KV-cache decoding step; then packed documents: one row of
// T = 4096 holding 1 to 32 documents, attended within each document
// (key_start) against the plain causal kernel, forward + backward at one
// thread in CPU time, with the ratio of the visible pairs for comparison.
//
// Last, RoPE inside attention (core/ops/attention.h RopeCausalAttention)
// against what the model ran before: the projections viewed as heads, the
// Rope op, CausalAttention and the heads merged back (with their layout
// copies), both as autograd ops, forward + backward at one thread in CPU
// time, at configs/default.yaml's shape and SmolLM2-135M's at 4k tokens;
// with the peak bytes of live tensors each needs.
//
// Table mode prints one markdown table instead: causal attention at
// batch 1 with 16 query heads on 16 kv heads (B * Hq = 16; no grouped-query
// sharing, and the 16 kv heads split evenly over 1 or 2 threads, so the
// backward runs in one pass), T = 256, 1024, 4096, 16384, D = 32, 64, 128,
// at 1 and 2 threads: forward and backward separately in wall time (the
// fastest of a few calls after a warm-up one; a single timed call at T =
// 16384), each as a share of the machine's FMA peak (bench_util.h
// FmaPeakGflops, times the thread count) and of the matmul backend's rate
// at the same thread count, both measured in the same run: the forward, dx
// and dW products of a 1024 x 1024 x 1024 linear layer (bench_util.h
// StepSgemmGflops), the GEMM-class rate a matmul-heavy kernel can be held
// to. On a CPU whose bf16 tiles outrun float32 ones
// (kernels::Bf16DotOutrunsFloat32: AVX512_BF16 on AMD), the same calls with
// bf16 tile products (AttentionShape::bf16, what a train.precision: bf16
// run uses) follow, each as a multiple of the float32 rate. At T = 16384
// one thread needs about a minute per call at D = 128; --quick skips T =
// 16384.
//
// Tiles mode times the tile products alone, the kernels' two shapes of
// product (S = Q K^T: 64 x 64 over depth D; P V: 64 x D over depth 64) at D
// = 32, 64 and 128, one thread in thread CPU time, against the FMA peak: the
// float32 TileProduct, and the bf16 one on packed operands and with its
// packing (what a product that packs both operands costs), where bf16 tiles
// run. What a kernel loses below these rates is the softmax and the moving
// of tiles around the products.
//
// Usage: build/bench/attention_bench [max_len]   (default 1024)
//        build/bench/attention_bench packed      (the packed table only)
//        build/bench/attention_bench rope        (the RoPE table only)
//        build/bench/attention_bench table [--quick]
//        build/bench/attention_bench tiles
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "bench/bench_util.h"
#include "core/kernels/attention.h"
#include "core/kernels/attention_scalar.h"
#include "core/kernels/bf16_tile_product.h"
#include "core/kernels/tile_product.h"
#include "core/ops/attention.h"
#include "core/ops/gemm.h"
#include "core/ops/ops.h"
#include "core/ops/rope.h"
#include "core/parallel.h"
#include "core/tensor.h"

namespace rotor {
namespace {

using kernels::AttentionShape;

struct Buffers {
  explicit Buffers(const AttentionShape& s) {
    const size_t nq = s.batch * s.q_heads * s.q_len * s.head_dim;
    const size_t nk = s.batch * s.kv_heads * s.kv_len * s.head_dim;
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    auto random = [&](size_t n) {
      std::vector<float> x(n);
      for (float& value : x) value = dist(rng);
      return x;
    };
    q = random(nq);
    k = random(nk);
    v = random(nk);
    dout = random(nq);
    out.resize(nq);
    dq.resize(nq);
    dk.resize(nk);
    dv.resize(nk);
    lse.resize(s.batch * s.q_heads * s.q_len);
    delta.resize(s.batch * s.q_heads * s.q_len);
  }
  // The kernels' operands over these buffers.
  kernels::AttentionForwardOperands Forward() {
    return {q.data(), k.data(), v.data(), out.data(), lse.data()};
  }
  kernels::AttentionBackwardOperands Backward() {
    return {q.data(),    k.data(),     v.data(),  out.data(), lse.data(),
            dout.data(), delta.data(), dq.data(), dk.data(),  dv.data()};
  }
  std::vector<float> q, k, v, dout, out, lse, delta, dq, dk, dv;
};

AttentionShape TrainShape(size_t batch, size_t q_heads, size_t kv_heads,
                          size_t len, size_t head_dim) {
  AttentionShape s;
  s.batch = batch;
  s.q_heads = q_heads;
  s.kv_heads = kv_heads;
  s.q_len = s.kv_len = len;
  s.head_dim = head_dim;
  s.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  return s;
}

// Fastest of `repeats` runs of fn in CPU time of the calling thread: robust
// to other processes sharing the cores (wall time is not). Single-threaded
// use only (SetNumThreads(1)).
double BestThreadCpuSeconds(const std::function<void()>& fn, int repeats) {
  auto now = [] {
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
  };
  fn();
  double best = 1e30;
  for (int i = 0; i < repeats; ++i) {
    const double start = now();
    fn();
    best = std::min(best, now() - start);
  }
  return best;
}

double CausalPairs(const AttentionShape& s) {
  return double(s.batch * s.q_heads) * s.q_len * (s.q_len + 1) / 2.0;
}

// Packed documents: forward + backward of one row of kLen positions cut
// into equal documents (and one layout of unequal ones), attending within
// each document, against the unmasked causal kernel on the same data.
void RunPacked() {
  constexpr size_t kLen = 4096;
  std::printf("\n%-34s %12s %9s %9s   (1 thread, CPU time)\n",
              "packed row B1 Hq8 Hkv4 T4096 D64", "fwd+bwd ms", "speed-up",
              "pairs/");
  SetNumThreads(1);
  const AttentionShape plain = TrainShape(1, 8, 4, kLen, 64);
  Buffers x(plain);
  auto time_both = [&](const AttentionShape& s) {
    return BestThreadCpuSeconds(
        [&] {
          kernels::AttentionForward(s, x.Forward());
          kernels::AttentionBackward(s, x.Backward());
        },
        2);
  };
  const double unmasked = time_both(plain);
  std::printf("%-34s %12.1f %9s %9s\n", "no mask (causal)", unmasked * 1e3, "1",
              "1");
  // Document lengths of each layout; the last one unequal, none aligned to
  // the 64-key tiles except where they happen to be.
  const std::vector<std::pair<const char*, std::vector<size_t>>> layouts = {
      {"1 document (mask of zeros)", {kLen}},
      {"2 documents of 2048", std::vector<size_t>(2, kLen / 2)},
      {"8 documents of 512", std::vector<size_t>(8, kLen / 8)},
      {"32 documents of 128", std::vector<size_t>(32, kLen / 32)},
      {"8 documents, 100 .. 1000", {1000, 100, 777, 300, 555, 450, 614}},
  };
  for (const auto& [name, lengths] : layouts) {
    std::vector<int32_t> key_start;
    double pairs = 0;
    for (size_t length : lengths) {
      const auto start = static_cast<int32_t>(key_start.size());
      key_start.insert(key_start.end(), length, start);
      pairs += double(length) * (length + 1) / 2;
    }
    // The unequal layout's last document takes the rest of the row.
    const size_t rest = kLen - key_start.size();
    pairs += double(rest) * (rest + 1) / 2;
    key_start.insert(key_start.end(), rest, static_cast<int32_t>(kLen - rest));
    AttentionShape s = plain;
    s.key_start = key_start.data();
    const double seconds = time_both(s);
    std::printf("%-34s %12.1f %9.2f %9.2f\n", name, seconds * 1e3,
                unmasked / seconds, double(kLen) * (kLen + 1) / 2 / pairs);
  }
}

// RoPE inside attention against the separate ops, at one thread.
void RunRope() {
  SetNumThreads(1);
  struct Case {
    const char* name;
    int64_t batch, q_heads, kv_heads, len, head_dim;
  };
  const Case cases[] = {
      {"default.yaml B16 Hq6 Hkv2 T256 D32", 16, 6, 2, 256, 32},
      {"SmolLM2 B1 Hq9 Hkv3 T4096 D64", 1, 9, 3, 4096, 64}};
  std::printf("\n%-36s %12s %12s %7s %13s %13s\n",
              "RoPE + attention, fwd + bwd (1 thr)", "separate ms", "inside ms",
              "ratio", "separate MiB", "inside MiB");
  for (const Case& c : cases) {
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    auto random = [&](int64_t width) {
      Tensor t = Tensor::Empty({c.batch, c.len, width}, true);
      for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = dist(rng);
      return t;
    };
    const int64_t d = c.head_dim;
    Tensor q = random(c.q_heads * d), k = random(c.kv_heads * d),
           v = random(c.kv_heads * d);
    RopeTable table = RopeTable::Default(d, 10000.0);
    AttentionRopeSettings rope;
    rope.table = &table;
    auto heads = [&](const Tensor& x, int64_t h) {
      return Permute(Reshape(x, {c.batch, c.len, h, d}), {0, 2, 1, 3});
    };
    auto separate = [&] {
      auto [q_rot, k_rot] = Rope(heads(q, c.q_heads), heads(k, c.kv_heads),
                                 table, rope.positions, rope.layout);
      const Tensor attended =
          CausalAttention(q_rot, k_rot, Contiguous(heads(v, c.kv_heads)));
      Sum(Reshape(Contiguous(Permute(attended, {0, 2, 1, 3})),
                  {c.batch, c.len, c.q_heads * d}))
          .Backward();
    };
    auto inside = [&] {
      Sum(RopeCausalAttention(q, k, v, d, rope)).Backward();
    };
    // Peak live tensor bytes above what exists before the call.
    auto peak_mib = [](const std::function<void()>& fn) {
      ResetPeakMemory();
      const double before = GetMemoryStats().live_bytes;
      fn();
      return (GetMemoryStats().peak_live_bytes - before) / 1048576.0;
    };
    const int repeats = c.len >= 4096 ? 3 : 10;
    const double separate_s = BestThreadCpuSeconds(separate, repeats);
    const double inside_s = BestThreadCpuSeconds(inside, repeats);
    const double separate_mib = peak_mib(separate);
    const double inside_mib = peak_mib(inside);
    std::printf("%-36s %12.2f %12.2f %7.3f %13.1f %13.1f\n", c.name,
                separate_s * 1e3, inside_s * 1e3, inside_s / separate_s,
                separate_mib, inside_mib);
  }
}

// The markdown table of the header's table mode.
void RunTable(bool quick) {
  const int thread_counts[] = {1, 2};
  double sgemm[2];
  for (int i = 0; i < 2; ++i) {
    SetNumThreads(thread_counts[i]);
    sgemm[i] = bench::StepSgemmGflops({{1024, 1024, 1024, 1}});
  }
  const double peak = bench::FmaPeakGflops();
  std::printf(
      "causal attention, B1 Hq16 Hkv16 (B * Hq = 16), processor %s, "
      "Highway target %s\n"
      "FMA peak %.1f GFLOP/s per thread (bf16 dot products, VDPBF16PS: "
      "%.1f; 0 without AVX512_BF16); matmul reference (%s, 1024 x 1024 "
      "x 1024 linear layer, forward + dx + dW): %.1f GFLOP/s at 1 thread, "
      "%.1f GFLOP/s at 2 threads\n"
      "FLOPs over the causal pairs P: forward 4 D P, backward 8 D P; wall "
      "time, fastest call\n\n"
      "| T | D | threads | fwd ms | fwd GFLOP/s | fwd %% of peak | fwd %% of "
      "matmul | bwd ms | bwd GFLOP/s | bwd %% of peak | bwd %% of matmul | "
      "bf16 fwd GFLOP/s | bf16 / fp32 fwd | bf16 bwd GFLOP/s | bf16 / fp32 "
      "bwd |\n"
      "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
      "| ---: | ---: | ---: | ---: | ---: |\n",
      bench::CpuModelName().c_str(), kernels::AttentionTarget(), peak,
      bench::Bf16DotPeakGflops(), GemmDescription().c_str(), sgemm[0],
      sgemm[1]);
  std::fflush(stdout);
  for (size_t len : {256, 1024, 4096, 16384}) {
    if (quick && len == 16384) break;
    // Fewer calls as they lengthen: a 16384-long one takes seconds to a
    // minute.
    const int repeats = len >= 16384 ? 1 : len >= 4096 ? 2 : 5;
    for (size_t head_dim : {32, 64, 128}) {
      AttentionShape s = TrainShape(1, 16, 16, len, head_dim);
      Buffers x(s);
      const double pairs = CausalPairs(s);
      // Forward and backward seconds in the given tile precision.
      auto time = [&](bool bf16) {
        s.bf16 = bf16;
        const double fwd = bench::BestSeconds(
            [&] { kernels::AttentionForward(s, x.Forward()); }, repeats);
        const double bwd = bench::BestSeconds(
            [&] { kernels::AttentionBackward(s, x.Backward()); }, repeats);
        return std::make_pair(fwd, bwd);
      };
      for (int i = 0; i < 2; ++i) {
        SetNumThreads(thread_counts[i]);
        const auto [fwd, bwd] = time(false);
        const double fwd_gflops = 4.0 * head_dim * pairs / fwd / 1e9;
        const double bwd_gflops = 8.0 * head_dim * pairs / bwd / 1e9;
        const double threads_peak = peak * thread_counts[i];
        std::string bf16_columns = " - | - | - | - |";
        if (kernels::Bf16DotOutrunsFloat32()) {
          const auto [fwd_bf16, bwd_bf16] = time(true);
          char text[128];
          std::snprintf(text, sizeof(text), " %.1f | %.2fx | %.1f | %.2fx |",
                        4.0 * head_dim * pairs / fwd_bf16 / 1e9, fwd / fwd_bf16,
                        8.0 * head_dim * pairs / bwd_bf16 / 1e9,
                        bwd / bwd_bf16);
          bf16_columns = text;
        }
        std::printf(
            "| %zu | %zu | %d | %.2f | %.1f | %.0f%% | %.0f%% | %.2f | %.1f | "
            "%.0f%% | %.0f%% |%s\n",
            len, head_dim, thread_counts[i], fwd * 1e3, fwd_gflops,
            100 * fwd_gflops / threads_peak, 100 * fwd_gflops / sgemm[i],
            bwd * 1e3, bwd_gflops, 100 * bwd_gflops / threads_peak,
            100 * bwd_gflops / sgemm[i], bf16_columns.c_str());
        std::fflush(stdout);
      }
    }
  }
}

void Run(size_t max_len) {
  std::printf("attention kernels, target %s, %d hardware threads\n",
              kernels::AttentionTarget(), HardwareThreads());
  std::printf("%-28s %7s %10s %8s %12s %8s\n", "shape (causal)", "threads",
              "fwd ms", "GFLOP/s", "fwd+bwd ms", "GFLOP/s");
  for (size_t len : {256, 512, 1024, 2048, 4096}) {
    if (len > max_len) break;
    for (size_t head_dim : {32, 64}) {
      for (size_t kv_heads : {8, 4}) {
        const AttentionShape s = TrainShape(8, 8, kv_heads, len, head_dim);
        Buffers x(s);
        const double pairs = CausalPairs(s);
        for (int threads : {1, 2}) {
          SetNumThreads(threads);
          auto forward = [&] { kernels::AttentionForward(s, x.Forward()); };
          const double fwd = bench::BestSeconds(forward, 3);
          const double both = bench::BestSeconds(
              [&] {
                forward();
                kernels::AttentionBackward(s, x.Backward());
              },
              3);
          char name[64];
          std::snprintf(name, sizeof(name), "B8 Hq8 Hkv%zu T%zu D%zu", kv_heads,
                        len, head_dim);
          std::printf("%-28s %7d %10.2f %8.2f %12.2f %8.2f\n", name, threads,
                      fwd * 1e3, 4.0 * head_dim * pairs / fwd / 1e9, both * 1e3,
                      12.0 * head_dim * pairs / both / 1e9);
        }
      }
    }
  }

  // The float scalar reference, single-threaded, at T = 256.
  SetNumThreads(1);
  const AttentionShape s = TrainShape(8, 8, 4, 256, 64);
  Buffers x(s);
  const double pairs = CausalPairs(s);
  const double fwd = bench::BestSeconds(
      [&] { kernels::AttentionForwardRef<float>(s, x.Forward()); }, 1);
  const double bwd = bench::BestSeconds(
      [&] { kernels::AttentionBackwardRef<float>(s, x.Backward()); }, 1);
  std::printf("%-28s %7d %10.2f %8.2f %12.2f %8.2f   (scalar reference)\n",
              "B8 Hq8 Hkv4 T256 D64", 1, fwd * 1e3,
              4.0 * 64 * pairs / fwd / 1e9, (fwd + bwd) * 1e3,
              12.0 * 64 * pairs / (fwd + bwd) / 1e9);

  // Forward and backward separately, one thread, in thread CPU time, with
  // each rate's share of the FMA peak.
  const double peak = bench::FmaPeakGflops();
  std::printf(
      "\n%-28s %10s %8s %7s %10s %8s %7s   (1 thread, CPU time; FMA peak "
      "%.1f GFLOP/s)\n",
      "shape (causal)", "fwd ms", "GFLOP/s", "% peak", "bwd ms", "GFLOP/s",
      "% peak", peak);
  SetNumThreads(1);
  // The small models' shapes, then SmolLM2-135M's at 4,096 tokens (batch 1,
  // 9 query heads sharing 3 kv heads: the long-context case).
  const AttentionShape cpu_shapes[] = {TrainShape(2, 8, 4, 1024, 32),
                                       TrainShape(2, 8, 4, 1024, 64),
                                       TrainShape(1, 9, 3, 4096, 64)};
  for (const AttentionShape& c : cpu_shapes) {
    const size_t head_dim = c.head_dim;
    Buffers z(c);
    const double pairs = CausalPairs(c);
    const double fwd = BestThreadCpuSeconds(
        [&] { kernels::AttentionForward(c, z.Forward()); }, 3);
    const double bwd = BestThreadCpuSeconds(
        [&] { kernels::AttentionBackward(c, z.Backward()); }, 3);
    char name[64];
    std::snprintf(name, sizeof(name), "B%zu Hq%zu Hkv%zu T%zu D%zu", c.batch,
                  c.q_heads, c.kv_heads, c.q_len, head_dim);
    const double fwd_gflops = 4.0 * head_dim * pairs / fwd / 1e9;
    const double bwd_gflops = 8.0 * head_dim * pairs / bwd / 1e9;
    std::printf("%-28s %10.2f %8.2f %6.0f%% %10.2f %8.2f %6.0f%%\n", name,
                fwd * 1e3, fwd_gflops, 100 * fwd_gflops / peak, bwd * 1e3,
                bwd_gflops, 100 * bwd_gflops / peak);
  }

  // One decoding step with a KV cache: a single new query per head against
  // kv_len cached positions (q_offset = kv_len - 1). Memory-bound: the
  // figure that matters is how fast the cached k and v are read.
  std::printf("\n%-28s %7s %10s %12s\n", "decode step (Tq=1)", "threads", "us",
              "k+v GB/s");
  for (size_t kv_len : {1024, 4096}) {
    AttentionShape d = TrainShape(1, 8, 4, 1, 64);
    d.kv_len = kv_len;
    d.q_offset = kv_len - 1;
    Buffers y(d);
    const double kv_bytes = 2.0 * d.kv_heads * kv_len * d.head_dim * 4;
    for (int threads : {1, 2}) {
      SetNumThreads(threads);
      const double step = bench::BestSeconds(
          [&] { kernels::AttentionForward(d, y.Forward()); }, 20);
      char name[64];
      std::snprintf(name, sizeof(name), "B1 Hq8 Hkv4 Tk%zu D64", kv_len);
      std::printf("%-28s %7d %10.1f %12.2f\n", name, threads, step * 1e6,
                  kv_bytes / step / 1e9);
    }
  }
  RunPacked();
  RunRope();
}

// The header's tiles mode.
void RunTiles() {
  SetNumThreads(1);
  const double peak = bench::FmaPeakGflops();
  std::printf(
      "attention tile products alone, one thread, thread CPU time; FMA peak "
      "%.1f GFLOP/s (bf16 dot products: %.1f)\n%-26s %12s %8s %12s %8s %14s "
      "%8s\n",
      peak, bench::Bf16DotPeakGflops(), "product (rows x cols x depth)",
      "fp32 GFLOP/s", "% peak", "bf16 GFLOP/s", "% peak", "+ pack GFLOP/s",
      "% peak");
  constexpr size_t kTile = kernels::kAttentionKeyTile;
  for (size_t dim : {32, 64, 128}) {
    // S = Q K^T and P V: (rows, cols, depth).
    const size_t shapes[2][3] = {{kTile, kTile, dim}, {kTile, dim, kTile}};
    for (const auto& shape : shapes) {
      const size_t rows = shape[0], cols = shape[1], depth = shape[2];
      std::mt19937 rng(3);
      std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
      std::vector<float> a(rows * depth), b(depth * cols), c(rows * cols);
      for (float& x : a) x = dist(rng);
      for (float& x : b) x = dist(rng);
      constexpr int kCalls = 2000;
      const double flops = 2.0 * rows * cols * depth * kCalls;
      auto rate = [&](const std::function<void()>& product) {
        return flops /
               BestThreadCpuSeconds(
                   [&] {
                     for (int i = 0; i < kCalls; ++i) product();
                   },
                   5) /
               1e9;
      };
      const double fp32 = rate([&] {
        kernels::TileProduct(
            true, rows, cols, depth, 1.0f,
            {a.data(), depth, 1, b.data(), cols, c.data(), cols});
      });
      char name[64];
      std::snprintf(name, sizeof(name), "D %zu: %zu x %zu x %zu", dim, rows,
                    cols, depth);
      std::printf("%-26s %12.1f %7.0f%%", name, fp32, 100 * fp32 / peak);
      if (!kernels::Bf16DotSupported()) {
        std::printf(" %12s %8s %14s %8s\n", "-", "-", "-", "-");
        continue;
      }
      const size_t pairs = (depth + 1) / 2;
      const size_t ldb = kernels::Bf16PackedColumns(cols);
      std::vector<uint32_t> pa(rows * pairs), pb(pairs * ldb);
      auto pack = [&] {
        kernels::PackBf16Rows(a.data(), depth, rows, depth, pa.data(), pairs);
        kernels::PackBf16PairRows(b.data(), cols, depth, cols, pb.data(), ldb);
      };
      auto product = [&] {
        kernels::Bf16TileProduct(
            true, rows, cols, pairs, 1.0f,
            {pa.data(), pairs, 1, pb.data(), ldb, c.data(), cols});
      };
      pack();
      const double bf16 = rate(product);
      const double packed = rate([&] {
        pack();
        product();
      });
      std::printf(" %12.1f %7.0f%% %14.1f %7.0f%%\n", bf16, 100 * bf16 / peak,
                  packed, 100 * packed / peak);
    }
  }
}

}  // namespace
}  // namespace rotor

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "tiles") == 0) {
    rotor::RunTiles();
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "packed") == 0) {
    rotor::RunPacked();
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "rope") == 0) {
    rotor::RunRope();
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "table") == 0) {
    rotor::RunTable(argc > 2 && std::strcmp(argv[2], "--quick") == 0);
    return 0;
  }
  const size_t max_len = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 1024;
  rotor::Run(max_len);
  return 0;
}
