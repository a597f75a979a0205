// Helpers shared by the benchmark programs in bench/: a wall-clock timer,
// best-of-N timing, and the machine's memory copy bandwidth measured in the
// same run (the yardstick for memory-bound kernels).
#ifndef ROTOR_BENCH_BENCH_UTIL_H_
#define ROTOR_BENCH_BENCH_UTIL_H_

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>

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

}  // namespace bench
}  // namespace rotor

#endif  // ROTOR_BENCH_BENCH_UTIL_H_
