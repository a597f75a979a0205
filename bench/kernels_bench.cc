// Throughput of the row-wise Highway kernels against their scalar
// references: softmax, RMSNorm and SiLU forward, on a buffer far larger than
// the caches (memory-bound: the yardstick is the copy bandwidth measured in
// the same run) and on one that stays in L2 (compute-bound).
//
// GB/s counts the bytes each kernel must move once (input read + output
// written, 1e9 bytes per GB) divided by the best of several runs. The scalar
// reference runs through the same ParallelFor split as the kernel, so both
// columns use the same number of threads.
//
// Usage: build/bench/kernels_bench
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "core/kernels/activations.h"
#include "core/kernels/activations_scalar.h"
#include "core/kernels/rmsnorm.h"
#include "core/kernels/rmsnorm_scalar.h"
#include "core/kernels/row_split.h"
#include "core/kernels/softmax.h"
#include "core/kernels/softmax_scalar.h"
#include "core/parallel.h"
#include "core/tensor.h"

namespace rotor {
namespace {

struct Size {
  const char* name;
  int64_t rows;
  int64_t cols;
  int repeats;
};

struct Kernel {
  const char* name;
  std::function<void()> highway;
  std::function<void()> scalar;
  double bytes;
};

void Run() {
  const Size sizes[] = {
      {"4096 x 4096 (64 MiB, main memory)", 4096, 4096, 10},
      {"64 x 1024 (256 KiB, in L2)", 64, 1024, 200},
  };
  std::printf("Highway target: %s; hardware threads: %d\n",
              kernels::SoftmaxTarget(), HardwareThreads());
  for (const Size& size : sizes) {
    const int64_t rows = size.rows, cols = size.cols, n = rows * cols;
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
    Tensor x = Tensor::Zeros({rows, cols});
    for (int64_t i = 0; i < n; ++i) x.data()[i] = dist(rng);
    Tensor weight = Tensor::Full({cols}, 1.1f);
    Tensor y = Tensor::Zeros({rows, cols});
    Tensor rstd = Tensor::Zeros({rows});
    const float* px = x.data();
    const float* pw = weight.data();
    float* py = y.data();
    float* pr = rstd.data();
    const int64_t grain = kernels::RowsPerTask(cols);
    const double in_out = 2.0 * n * sizeof(float);

    const std::vector<Kernel> kernel_list = {
        {"softmax fwd", [&] { kernels::SoftmaxForward(px, py, rows, cols); },
         [&] {
           ParallelFor(rows, grain, [&](int64_t begin, int64_t end) {
             kernels::SoftmaxForwardRef(px + begin * cols, py + begin * cols,
                                        end - begin, cols);
           });
         },
         in_out},
        {"rmsnorm fwd",
         [&] { kernels::RmsNormForward(px, pw, py, pr, rows, cols, 1e-5f); },
         [&] {
           ParallelFor(rows, grain, [&](int64_t begin, int64_t end) {
             kernels::RmsNormForwardRef(px + begin * cols, pw,
                                        py + begin * cols, pr + begin,
                                        end - begin, cols, 1e-5);
           });
         },
         in_out + (cols + rows) * sizeof(float)},
        {"silu fwd", [&] { kernels::SiluForward(px, py, n); },
         [&] {
           ParallelFor(
               n, kernels::kMinFloatsPerTask, [&](int64_t begin, int64_t end) {
                 kernels::SiluForwardRef(px + begin, py + begin, end - begin);
               });
         },
         in_out},
    };

    std::printf("\n%s\n", size.name);
    std::printf("%-12s %7s %12s %12s %8s %10s %12s\n", "kernel", "threads",
                "highway GB/s", "scalar GB/s", "speedup", "copy GB/s",
                "% of copy");
    for (int threads : {1, 2}) {
      SetNumThreads(threads);
      const double copy =
          bench::CopyBandwidthGBs(n * sizeof(float), size.repeats);
      for (const Kernel& kernel : kernel_list) {
        const double highway =
            kernel.bytes / bench::BestSeconds(kernel.highway, size.repeats) /
            1e9;
        const double scalar = kernel.bytes /
                              bench::BestSeconds(kernel.scalar, size.repeats) /
                              1e9;
        std::printf("%-12s %7d %12.2f %12.2f %7.2fx %10.2f %11.0f%%\n",
                    kernel.name, threads, highway, scalar, highway / scalar,
                    copy, 100.0 * highway / copy);
      }
    }
  }
}

}  // namespace
}  // namespace rotor

int main() {
  rotor::Run();
  return 0;
}
