// Throughput of the tensor-level ops of core/ops/ops.h: elementwise arithmetic
// on each of its paths (dense vector kernel, broadcast, strided), reductions
// in both loop orders, sgemm-backed MatMul / Linear, and LayerNorm.
//
// Memory-bound ops report GB/s: the bytes an op must move once (inputs read
// + output written, 1e9 bytes per GB) over the best of several runs, next to
// the copy bandwidth measured in the same run. Matrix products report
// GFLOP/s (2 n k m per product).
//
// Usage: build/bench/ops_bench [threads]   (default: every hardware thread)
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "bench/bench_util.h"
#include "core/autograd.h"
#include "core/ops/ops.h"
#include "core/parallel.h"
#include "core/tensor.h"

namespace rotor {
namespace {

Tensor Random(const Shape& shape, std::mt19937& rng, bool requires_grad) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  Tensor t = Tensor::Empty(shape, requires_grad);
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = dist(rng);
  return t;
}

void Report(const char* name, double amount, const char* unit,
            const std::function<void()>& fn, int repeats = 5) {
  const double seconds = bench::BestSeconds(fn, repeats);
  std::printf("  %-44s %8.2f %s  (%.3f ms)\n", name, amount / seconds / 1e9,
              unit, seconds * 1e3);
}

void Run() {
  std::printf("threads: %d (hardware: %d)\n", NumThreads(), HardwareThreads());
  std::mt19937 rng(1);
  // Forward-only figures: nothing recorded for autograd.
  auto no_grad = std::make_unique<NoGradGuard>();

  const int64_t n = 4096;
  const double bytes = n * n * 4.0;  // one [4096, 4096] float tensor
  std::printf("memory-bound, [%lld, %lld] floats (64 MiB per tensor):\n",
              static_cast<long long>(n), static_cast<long long>(n));
  std::printf("  %-44s %8.2f GB/s\n", "memcpy (yardstick)",
              bench::CopyBandwidthGBs(static_cast<size_t>(bytes)));
  const Tensor a = Random({n, n}, rng, false);
  const Tensor b = Random({n, n}, rng, false);
  const Tensor row = Random({n}, rng, false);
  const Tensor column = Random({n, 1}, rng, false);
  Report("Add dense (vector kernel)", 3 * bytes, "GB/s", [&] { Add(a, b); });
  Report("Add [n, n] + [n] (broadcast row)", 2 * bytes, "GB/s",
         [&] { Add(a, row); });
  Report("Mul [n, n] * [n, 1] (broadcast column)", 2 * bytes, "GB/s",
         [&] { Mul(a, column); });
  Report("Add a^T + b (strided)", 3 * bytes, "GB/s",
         [&] { Add(Transpose(a, 0, 1), b); });
  Report("Exp", 2 * bytes, "GB/s", [&] { Exp(a); });
  Report("Contiguous(a^T) (transposing copy)", 2 * bytes, "GB/s",
         [&] { Contiguous(Transpose(a, 0, 1)); });
  Report("Sum over dim 0 (column blocks)", bytes, "GB/s", [&] { Sum(a, {0}); });
  Report("Sum over dim 1 (per-row slices)", bytes, "GB/s",
         [&] { Sum(a, {1}); });

  std::printf("matrix products (sgemm):\n");
  {
    const Tensor x = Random({512, 512}, rng, false);
    const Tensor y = Random({512, 512}, rng, false);
    Report("MatMul [512, 512] x [512, 512]", 2.0 * 512 * 512 * 512, "GFLOP/s",
           [&] { MatMul(x, y); });
    Report("MatMul [512, 512] x [512, 512]^T (CblasTrans)",
           2.0 * 512 * 512 * 512, "GFLOP/s",
           [&] { MatMul(x, Transpose(y, 0, 1)); });
    const Tensor q = Random({16, 128, 64}, rng, false);
    const Tensor k = Random({16, 128, 64}, rng, false);
    Report("MatMul [16, 128, 64] x [16, 128, 64]^T", 2.0 * 16 * 128 * 128 * 64,
           "GFLOP/s", [&] { MatMul(q, Transpose(k, 1, 2)); });
  }
  no_grad.reset();  // the rest runs forward + backward

  {
    // Three products of 2 * rows * in * out flops: y = x W^T, dx = dy W,
    // dW = dy^T x.
    const int64_t rows = 2048, in = 512, out = 512;
    Tensor x = Random({rows, in}, rng, true);
    Tensor w = Random({out, in}, rng, true);
    Tensor bias = Random({out}, rng, true);
    const Tensor seed = Tensor::Full({rows, out}, 1.0f);
    Report("Linear [2048, 512] -> 512, forward + backward",
           3 * 2.0 * rows * in * out, "GFLOP/s",
           [&] { Linear(x, w, bias).Backward(seed); });
  }
  {
    // configs/default.yaml's q, k and v (192 -> 192, 64, 64 over 4096 rows)
    // as three Linear layers, dx summed by autograd, against one
    // FusedLinear on their weights as row ranges of one storage (one GEMM
    // each for y, dx and dW).
    const int64_t rows = 4096, in = 192;
    const std::vector<int64_t> outs = {192, 64, 64};
    Tensor x = Random({rows, in}, rng, true);
    const Tensor stacked = Random({320, in}, rng, false);
    std::vector<Tensor> weights, separate, seeds;
    int64_t row = 0;
    for (const int64_t out : outs) {
      Tensor view = stacked.ViewAs({out, in}, {in, 1}, row * in);
      weights.push_back(view.set_requires_grad(true));
      separate.push_back(Random({out, in}, rng, true));
      seeds.push_back(Tensor::Full({rows, out}, 1.0f));
      row += out;
    }
    const Tensor fused_seed = Tensor::Full({rows, row}, 1.0f);
    const double flops = 3 * 2.0 * rows * in * row;
    auto clear = [&] {
      x.ZeroGrad();
      for (Tensor& w : weights) w.ZeroGrad();
      for (Tensor& w : separate) w.ZeroGrad();
    };
    Report("q, k, v as 3 Linear, forward + backward", flops, "GFLOP/s", [&] {
      clear();
      for (size_t i = 0; i < outs.size(); ++i) {
        Linear(x, separate[i]).Backward(seeds[i]);
      }
    });
    Report("q, k, v as 1 FusedLinear, forward + backward", flops, "GFLOP/s",
           [&] {
             clear();
             FusedLinear(x, weights).Backward(fused_seed);
           });
  }
  std::printf("row-parallel, forward + backward:\n");
  {
    // Forward reads x, writes y; backward reads x, dy, writes dx.
    const int64_t rows = 4096, dim = 512;
    Tensor x = Random({rows, dim}, rng, true);
    Tensor weight = Random({dim}, rng, true);
    Tensor bias = Random({dim}, rng, true);
    const Tensor seed = Tensor::Full({rows, dim}, 1.0f);
    Report("LayerNorm [4096, 512]", 5.0 * rows * dim * 4, "GB/s",
           [&] { LayerNorm(x, weight, bias).Backward(seed); });
  }
}

}  // namespace
}  // namespace rotor

int main(int argc, char** argv) {
  rotor::SetNumThreads(argc > 1 ? std::atoi(argv[1]) : 0);
  rotor::Run();
  return 0;
}
