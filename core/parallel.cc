#include "core/parallel.h"

#include <cblas.h>
#include <sys/resource.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>

#include "core/error.h"

namespace rotor {

namespace {

struct ThreadState {
  std::mutex mutex;
  int threads = 0;
  std::unique_ptr<tbb::task_arena> arena;
};

ThreadState& State() {
  static ThreadState* state = [] {
    auto* s = new ThreadState;
    s->threads = HardwareThreads();
    openblas_set_num_threads(1);  // see SetNumThreads
    return s;
  }();
  return *state;
}

}  // namespace

int HardwareThreads() {
  return std::max(1, tbb::this_task_arena::max_concurrency());
}

void SetNumThreads(int threads) {
  ROTOR_CHECK(threads >= 0, "thread count must be >= 0 (0 = all), got ",
              threads);
  ThreadState& state = State();
  std::lock_guard<std::mutex> lock(state.mutex);
  state.threads = threads == 0 ? HardwareThreads() : threads;
  state.arena.reset();
  // OpenBLAS stays single-threaded: matrix products are split over rows by
  // ParallelFor (core/ops/matmul.cc), so one thread pool serves everything.
  openblas_set_num_threads(1);
}

int NumThreads() { return State().threads; }

void ParallelFor(int64_t n, int64_t grain,
                 const std::function<void(int64_t, int64_t)>& body) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  ThreadState& state = State();
  if (state.threads <= 1 || n <= grain) {
    body(0, n);
    return;
  }
  tbb::task_arena* arena;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    if (!state.arena) {
      state.arena = std::make_unique<tbb::task_arena>(state.threads);
    }
    arena = state.arena.get();
  }
  arena->execute([&] {
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, n, grain),
                      [&](const tbb::blocked_range<int64_t>& range) {
                        body(range.begin(), range.end());
                      });
  });
}

void RestartWithoutBlasThreadsUnderAddressLimit(char** argv) {
  rlimit address_space{};
  if (getrlimit(RLIMIT_AS, &address_space) != 0 ||
      address_space.rlim_cur == RLIM_INFINITY ||
      std::getenv("OPENBLAS_NUM_THREADS") != nullptr) {
    return;
  }
  setenv("OPENBLAS_NUM_THREADS", "1", /*overwrite=*/1);
  execv("/proc/self/exe", argv);
  unsetenv("OPENBLAS_NUM_THREADS");  // exec failed: go on unchanged
}

}  // namespace rotor
