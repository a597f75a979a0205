// Helpers shared by the benchmark programs in bench/: a wall-clock timer,
// best-of-N timing, the machine's memory copy bandwidth measured in the
// same run (the yardstick for memory-bound kernels), and OpenBLAS sgemm at
// a training step's own matmul shapes (the yardstick for a whole step).
#ifndef ROTOR_BENCH_BENCH_UTIL_H_
#define ROTOR_BENCH_BENCH_UTIL_H_

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

#include "core/autograd.h"
#include "core/ops/ops.h"
#include "core/parallel.h"
#include "core/tensor.h"

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

// The GFLOP/s OpenBLAS sgemm reaches on a step's linear layers at the
// current thread count: each shape's three products (y = x W^T, dx = dy W,
// dW = dy^T x, through rotor's MatMul and Linear, so with its row-block
// split) timed best of 3, then all their FLOPs over all their time, each
// shape weighted by its count. That is the rate the step would run at if
// nothing but its matmuls took time.
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

}  // namespace bench
}  // namespace rotor

#endif  // ROTOR_BENCH_BENCH_UTIL_H_
