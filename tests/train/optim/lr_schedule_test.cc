#include "train/optim/lr_schedule.h"

#include <gtest/gtest.h>

namespace rotor::train {
namespace {

TEST(CosineSchedule, WarmupThenCosineToMinimum) {
  CosineSchedule schedule{/*lr=*/1.0, /*min_lr=*/0.1, /*warmup_steps=*/4,
                          /*total_steps=*/104};
  EXPECT_DOUBLE_EQ(schedule.At(0), 1.0 / 5);
  EXPECT_DOUBLE_EQ(schedule.At(3), 4.0 / 5);
  EXPECT_DOUBLE_EQ(schedule.At(4), 1.0);                 // peak after warm-up
  EXPECT_NEAR(schedule.At(54), 0.1 + 0.9 * 0.5, 1e-12);  // half way
  EXPECT_DOUBLE_EQ(schedule.At(104), 0.1);
  EXPECT_DOUBLE_EQ(schedule.At(500), 0.1);
  for (int64_t step = 5; step <= 104; ++step) {
    EXPECT_LE(schedule.At(step), schedule.At(step - 1)) << "step " << step;
  }
}

TEST(CosineSchedule, NoWarmup) {
  CosineSchedule schedule{2.0, 0.0, 0, 10};
  EXPECT_DOUBLE_EQ(schedule.At(0), 2.0);
  EXPECT_NEAR(schedule.At(10), 0.0, 1e-15);
}

}  // namespace
}  // namespace rotor::train
