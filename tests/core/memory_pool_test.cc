// The caching buffer pool behind Storage (core/buffer_pool.h): freed buffers
// are reused for requests of the same size, the cached bytes stay under the
// cap by evicting the least recently released buffers first, the statistics
// track live, peak and cached bytes, threads may share the pool, and freeing
// a buffer never allocates.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <random>
#include <thread>
#include <vector>

#include "core/buffer_pool.h"
#include "core/error.h"
#include "core/tensor.h"
#include "tests/test_util.h"

namespace rotor {
namespace {

// While set, operator new (replaced below for this test binary) fails, as
// it does when memory is exhausted.
thread_local bool fail_allocations = false;

}  // namespace
}  // namespace rotor

void* operator new(std::size_t size) {
  if (rotor::fail_allocations) throw std::bad_alloc();
  if (void* memory = std::malloc(size == 0 ? 1 : size)) return memory;
  throw std::bad_alloc();
}
// The nothrow form too (std::stable_sort's buffer uses it): every form this
// binary's deletes free must come from malloc.
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  if (rotor::fail_allocations) return nullptr;
  return std::malloc(size == 0 ? 1 : size);
}
void operator delete(void* memory) noexcept { std::free(memory); }
void operator delete(void* memory, std::size_t) noexcept { std::free(memory); }

namespace rotor {
namespace {

TEST(MemoryPool, ReusesFreedBufferOfSameSize) {
  const float* first;
  {
    Tensor t = Tensor::Zeros({123, 7});
    first = t.data();
  }
  Tensor again = Tensor::Empty({7, 123});  // same number of floats
  EXPECT_EQ(again.data(), first);
  Tensor zeroed = Tensor::Zeros({123, 7});  // a different buffer, zeroed
  for (float v : zeroed.ToVector()) ASSERT_EQ(v, 0.0f);
}

TEST(MemoryPool, TracksLiveAndPeakBytes) {
  ResetPeakMemory();
  const MemoryStats before = GetMemoryStats();
  {
    Tensor a = Tensor::Zeros({1000});
    Tensor b = Tensor::Zeros({500});
    const MemoryStats during = GetMemoryStats();
    EXPECT_EQ(during.live_bytes, before.live_bytes + 6000);
  }
  const MemoryStats after = GetMemoryStats();
  EXPECT_EQ(after.live_bytes, before.live_bytes);
  EXPECT_EQ(after.peak_live_bytes, before.live_bytes + 6000);
  EXPECT_GE(after.cached_bytes, 6000u);
  ReleaseCachedMemory();
  EXPECT_EQ(GetMemoryStats().cached_bytes, 0u);
}

TEST(MemoryPool, ViewsKeepTheBufferAlive) {
  Tensor view;
  {
    Tensor t = Tensor::FromVector({4}, {1, 2, 3, 4});
    view = t.ViewAs({2}, {1}, 2);
  }
  EXPECT_EQ(view.ToVector(), (std::vector<float>{3, 4}));
}

// Buffers are freed by destructors, also while an exception (often
// std::bad_alloc) unwinds the stack: a release that allocated would throw
// out of a destructor and abort the program ("terminate called ...").
TEST(MemoryPoolDeathTest, FreeingBuffersAllocatesNothing) {
  EXPECT_EXIT(
      {
        {
          Tensor first_of_its_size = Tensor::Empty({98765});
          fail_allocations = true;
        }
        fail_allocations = false;
        // Releases that evict, and one too large to cache at all.
        BufferPool pool(2 * 1000 * sizeof(float));
        float* first = pool.Allocate(1000);
        float* second = pool.Allocate(1000);
        float* third = pool.Allocate(1000);
        float* too_large = pool.Allocate(5000);
        fail_allocations = true;
        pool.Release(first, 1000);
        pool.Release(second, 1000);
        pool.Release(third, 1000);  // evicts `first`
        pool.Release(too_large, 5000);
        fail_allocations = false;
        std::exit(pool.Stats().evicted == 1 ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

constexpr size_t kFloat = sizeof(float);

// Allocates `size` floats and releases them at once.
void Cycle(BufferPool& pool, size_t size) {
  pool.Release(pool.Allocate(size), size);
}

TEST(BufferPool, ReusesTheSameSizeAndOnlyThatSize) {
  BufferPool pool(1 << 20);
  float* buffer = pool.Allocate(1000);
  pool.Release(buffer, 1000);
  EXPECT_EQ(pool.Allocate(1000), buffer);
  float* other = pool.Allocate(1001);
  EXPECT_NE(other, buffer);
  MemoryStats stats = pool.Stats();
  EXPECT_EQ(stats.fresh, 2u);
  EXPECT_EQ(stats.reused, 1u);
  EXPECT_EQ(stats.cached_bytes, 0u);
  pool.Release(buffer, 1000);
  pool.Release(other, 1001);
}

// Four buffers of one size released in turn under a cap of three: the first
// released goes, and the cache hands out the most recently released first.
TEST(BufferPool, EvictsTheLeastRecentlyReleasedFirst) {
  BufferPool pool(3 * 1000 * kFloat);
  std::vector<float*> buffers;
  for (int i = 0; i < 4; ++i) buffers.push_back(pool.Allocate(1000));
  for (float* buffer : buffers) pool.Release(buffer, 1000);
  EXPECT_EQ(pool.Stats().evicted, 1u);
  EXPECT_EQ(pool.Stats().cached_bytes, 3 * 1000 * kFloat);
  EXPECT_EQ(pool.Allocate(1000), buffers[3]);
  EXPECT_EQ(pool.Allocate(1000), buffers[2]);
  EXPECT_EQ(pool.Allocate(1000), buffers[1]);
  EXPECT_EQ(pool.Stats().fresh, 4u);
  buffers[0] = pool.Allocate(1000);  // the evicted one is not there to reuse
  EXPECT_EQ(pool.Stats().fresh, 5u);
  for (float* buffer : buffers) pool.Release(buffer, 1000);
}

// Across sizes, and "recently" counts from the last release: a buffer that
// is reused and released again is younger than one released before it.
TEST(BufferPool, ReusingABufferMakesItRecent) {
  BufferPool pool(6000 * kFloat);
  float* a = pool.Allocate(1000);
  float* b = pool.Allocate(2000);
  float* c = pool.Allocate(3000);
  pool.Release(a, 1000);
  pool.Release(b, 2000);
  pool.Release(c, 3000);  // the cache is full: a, b, c
  Cycle(pool, 1000);      // a again: b, c, a
  EXPECT_EQ(pool.Stats().evicted, 0u);
  pool.Release(pool.Allocate(1500), 1500);  // 6000 bytes more: b goes
  const MemoryStats stats = pool.Stats();
  EXPECT_EQ(stats.evicted, 1u);
  EXPECT_EQ(stats.cached_bytes, (1000 + 3000 + 1500) * kFloat);
  EXPECT_EQ(pool.Allocate(1000), a);
  EXPECT_EQ(pool.Allocate(3000), c);
  EXPECT_EQ(pool.Stats().fresh, 4u);
  b = pool.Allocate(2000);
  EXPECT_EQ(pool.Stats().fresh, 5u);
  pool.Release(a, 1000);
  pool.Release(b, 2000);
  pool.Release(c, 3000);
}

// A run that never asks for the same size twice (a growing cache, prompts of
// every length) keeps at most the cap, and the sizes it keeps are the
// latest.
TEST(BufferPool, TheCapHoldsOverManyDistinctSizes) {
  const size_t cap = 1 << 20;
  BufferPool pool(cap);
  size_t largest_cached = 0;
  for (size_t size = 1; size <= 4000; ++size) {
    Cycle(pool, size * 16);
    largest_cached = std::max(largest_cached, pool.Stats().cached_bytes);
  }
  const MemoryStats stats = pool.Stats();
  EXPECT_LE(largest_cached, cap);
  EXPECT_GT(stats.cached_bytes, cap - 4000 * 16 * kFloat);
  EXPECT_EQ(stats.live_bytes, 0u);
  EXPECT_EQ(stats.fresh, 4000u);
  EXPECT_EQ(stats.reused, 0u);
  // The cache holds the newest sizes, down to where they fill the cap.
  const uint64_t kept = stats.fresh - stats.evicted;
  Cycle(pool, 4000 * 16);
  Cycle(pool, (4000 - kept + 1) * 16);
  EXPECT_EQ(pool.Stats().reused, 2u);
  Cycle(pool, (4000 - kept) * 16);
  EXPECT_EQ(pool.Stats().fresh, 4001u);
}

TEST(BufferPool, ABufferLargerThanTheCapIsNotCached) {
  BufferPool pool(1000 * kFloat);
  float* small = pool.Allocate(100);
  pool.Release(small, 100);
  Cycle(pool, 1001);
  const MemoryStats stats = pool.Stats();
  EXPECT_EQ(stats.cached_bytes, 100 * kFloat);  // the small one stays
  EXPECT_EQ(stats.evicted, 0u);
  EXPECT_EQ(pool.Allocate(100), small);
  pool.Release(small, 100);
}

TEST(BufferPool, StatsCountLivePeakCachedAndTheCap) {
  BufferPool pool(10000 * kFloat);
  float* a = pool.Allocate(1000);
  float* b = pool.Allocate(0);  // one float, so every buffer is distinct
  MemoryStats stats = pool.Stats();
  EXPECT_EQ(stats.live_bytes, 1001 * kFloat);
  EXPECT_EQ(stats.peak_live_bytes, 1001 * kFloat);
  EXPECT_EQ(stats.cap_bytes, 10000 * kFloat);
  pool.Release(a, 1000);
  pool.Release(b, 0);
  stats = pool.Stats();
  EXPECT_EQ(stats.live_bytes, 0u);
  EXPECT_EQ(stats.peak_live_bytes, 1001 * kFloat);
  EXPECT_EQ(stats.cached_bytes, 1001 * kFloat);
  pool.ResetPeak();
  EXPECT_EQ(pool.Stats().peak_live_bytes, 0u);
  pool.SetCap(500 * kFloat);  // evicts the 1000 floats, keeps the one
  stats = pool.Stats();
  EXPECT_EQ(stats.cap_bytes, 500 * kFloat);
  EXPECT_EQ(stats.cached_bytes, kFloat);
  EXPECT_EQ(stats.evicted, 1u);
  pool.ReleaseCached();
  EXPECT_EQ(pool.Stats().cached_bytes, 0u);
  EXPECT_EQ(pool.Stats().evicted, 2u);
}

// The default cap is 1.5 times the most bytes ever live at once (not reset
// by ResetPeak): after 1000 and 2000 floats, the cap is 3000 and holds both;
// 1500 more makes 4500, and the two older buffers go.
TEST(BufferPool, TheDefaultCapFollowsThePeakOfLiveBytes) {
  BufferPool pool;
  Cycle(pool, 1000);
  EXPECT_EQ(pool.Stats().cap_bytes, 1500 * kFloat);
  pool.ResetPeak();
  EXPECT_EQ(pool.Stats().cap_bytes, 1500 * kFloat);
  Cycle(pool, 2000);
  EXPECT_EQ(pool.Stats().cap_bytes, 3000 * kFloat);
  EXPECT_EQ(pool.Stats().cached_bytes, 3000 * kFloat);
  Cycle(pool, 1500);
  const MemoryStats stats = pool.Stats();
  EXPECT_EQ(stats.cap_bytes, 3000 * kFloat);
  EXPECT_EQ(stats.cached_bytes, 1500 * kFloat);
  EXPECT_EQ(stats.evicted, 2u);
}

// Threads allocate, write, check and release buffers of a few sizes under a
// cap that keeps evicting. A buffer handed to two threads at once would show
// the other's pattern; the counts must add up at the end: every fresh
// buffer was evicted once the cache is emptied.
TEST(BufferPool, ThreadsShareThePool) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 3000;
  const size_t cap = 4 * 4096 * kFloat;
  BufferPool pool(cap);
  std::vector<std::thread> threads;
  std::vector<int> corrupted(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&pool, &corrupted, t] {
      std::mt19937 rng(t);
      for (int round = 0; round < kRounds; ++round) {
        const size_t size = 512 << (rng() % 4);  // 512..4096 floats
        float* buffer = pool.Allocate(size);
        const float mark = static_cast<float>(t * kRounds + round);
        std::fill(buffer, buffer + size, mark);
        std::this_thread::yield();
        corrupted[t] += buffer[0] != mark || buffer[size - 1] != mark;
        pool.Release(buffer, size);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(corrupted[t], 0) << t;
  MemoryStats stats = pool.Stats();
  EXPECT_EQ(stats.live_bytes, 0u);
  EXPECT_LE(stats.cached_bytes, cap);
  EXPECT_EQ(stats.reused + stats.fresh, uint64_t{kThreads} * kRounds);
  EXPECT_GT(stats.reused, 0u);
  pool.ReleaseCached();
  stats = pool.Stats();
  EXPECT_EQ(stats.evicted, stats.fresh);
}

TEST(MemoryPool, ImpossibleSizesAreErrorsNotOverflows) {
  // 2^62 floats are 2^64 bytes: the byte count would wrap to 0.
  ROTOR_EXPECT_ERROR(Tensor::Empty({int64_t{1} << 31, int64_t{1} << 31}),
                     "integer overflow computing the bytes of a tensor");
  ROTOR_EXPECT_ERROR(Tensor::Empty({int64_t{1} << 40, int64_t{1} << 40}),
                     "integer overflow computing the number of elements");
}

}  // namespace
}  // namespace rotor
