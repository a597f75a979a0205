// The phase profiler (core/profile.h): off by default, exclusive charging of
// nested scopes, only the recording thread counts, and real ops land in
// their phases.
#include "core/profile.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "core/ops/ops.h"
#include "core/tensor.h"

namespace rotor {
namespace {

using profile::Phase;

void SleepMs(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

// Enables recording for one test and leaves it off afterwards.
class ProfileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    profile::Reset();
    profile::Enable(true);
  }
  void TearDown() override {
    profile::Enable(false);
    profile::Reset();
  }
};

TEST(Profile, RecordsNothingUnlessEnabled) {
  profile::Reset();
  {
    profile::Scope scope(Phase::kMatmul);
    MatMul(Tensor::Ones({8, 8}), Tensor::Ones({8, 8}));
  }
  const profile::Totals totals = profile::Snapshot();
  for (int p = 0; p < profile::kNumPhases; ++p) {
    EXPECT_EQ(totals.scopes[p], 0) << profile::PhaseName(Phase(p));
    EXPECT_EQ(totals.wall_seconds[p], 0.0);
  }
}

TEST_F(ProfileTest, NestedScopesChargeTheInnermostOnly) {
  {
    profile::Scope outer(Phase::kKernels);
    SleepMs(30);
    {
      profile::Scope inner(Phase::kCopies);
      SleepMs(60);
    }
    SleepMs(30);
  }
  const profile::Totals totals = profile::Snapshot();
  EXPECT_EQ(totals.scopes[int(Phase::kKernels)], 1);
  EXPECT_EQ(totals.scopes[int(Phase::kCopies)], 1);
  // 60 ms each; sleeping may overshoot, never undershoot.
  EXPECT_GE(totals.wall(Phase::kKernels), 0.059);
  EXPECT_LT(totals.wall(Phase::kKernels), 0.090);
  EXPECT_GE(totals.wall(Phase::kCopies), 0.059);
  EXPECT_LT(totals.wall(Phase::kCopies), 0.090);
  // Sleeping costs next to no CPU time.
  EXPECT_LT(totals.cpu(Phase::kKernels), 0.02);
}

TEST_F(ProfileTest, OtherThreadsDoNotRecord) {
  std::thread([] {
    profile::Scope scope(Phase::kOptimizer);
    SleepMs(5);
  }).join();
  EXPECT_EQ(profile::Snapshot().scopes[int(Phase::kOptimizer)], 0);
}

TEST_F(ProfileTest, OpsLandInTheirPhases) {
  const Tensor a = Tensor::Ones({64, 64}, true);
  const Tensor b = Tensor::Ones({64, 64}, true);
  Sum(MatMul(a, b)).Backward();
  const profile::Totals totals = profile::Snapshot();
  EXPECT_EQ(totals.scopes[int(Phase::kMatmul)], 3);  // forward, da, db
  EXPECT_GT(totals.wall(Phase::kMatmul), 0.0);
  EXPECT_GT(totals.scopes[int(Phase::kAllocator)], 0);
  EXPECT_GT(totals.scopes[int(Phase::kKernels)], 0);  // Sum and backward
  EXPECT_GT(totals.scopes[int(Phase::kCopies)], 0);   // the zeroed gradients
}

}  // namespace
}  // namespace rotor
