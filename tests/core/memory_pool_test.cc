// The caching buffer pool behind Storage: freed buffers are reused for
// requests of the same size, the statistics track live and peak bytes, and
// freeing a buffer never allocates.
#include <gtest/gtest.h>

#include <cstdlib>
#include <new>

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
        // After the cache is returned to the system, live buffers of that
        // size still have their place in the free list.
        Tensor cached = Tensor::Empty({45678});
        Tensor live = Tensor::Empty({45678});
        cached = Tensor();
        ReleaseCachedMemory();
        fail_allocations = true;
        live = Tensor();
        fail_allocations = false;
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
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
