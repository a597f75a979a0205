// The caching buffer pool behind Storage: freed buffers are reused for
// requests of the same size, and the statistics track live and peak bytes.
#include <gtest/gtest.h>

#include "core/tensor.h"

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

}  // namespace
}  // namespace rotor
