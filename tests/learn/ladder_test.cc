// The ladder of docs/learn.md, rungs 01-05: each program runs and prints
// the figures the course shows, and each figure is checked here, so the
// ladder cannot rot. Rungs 06-09 train models, about a minute together:
// tests/learn/ladder_longtest.cc.
#include "tests/learn/run_example.h"

namespace rotor::test {
namespace {

TEST(Learn, Rung01AutogradMatchesFiniteDifferences) {
  const ExampleRun run = RunExample("01_autograd");
  if (run.missing) GTEST_SKIP() << run.out;
  ASSERT_EQ(run.status, 0) << run.out;
  EXPECT_LT(Figure(run.out, "hand vs finite difference: max difference "),
            1e-8);
  EXPECT_LT(Figure(run.out, "rotor vs hand: max difference "), 1e-6);
  // A gradient printed by hand and by rotor: the same number.
  EXPECT_NEAR(Figure(run.out, "dL/dw1  rotor "),
              Figure(run.out, "dL/dw1  by hand "), 1e-6);
}

TEST(Learn, Rung02MlpLossFallsAndLearnsXor) {
  const ExampleRun run = RunExample("02_mlp");
  if (run.missing) GTEST_SKIP() << run.out;
  ASSERT_EQ(run.status, 0) << run.out;
  const double first = Figure(run.out, "step    1  loss ");
  const double last = Figure(run.out, "step  500  loss ");
  EXPECT_GT(first, 0.1);
  EXPECT_LT(last, 0.01);
  EXPECT_NE(run.out.find("learned XOR"), std::string::npos);
}

TEST(Learn, Rung03BpeMergesMatchRotorsTrainer) {
  const ExampleRun run = RunExample("03_tokenizer");
  if (run.missing) GTEST_SKIP() << run.out;
  ASSERT_EQ(run.status, 0) << run.out;
  EXPECT_EQ(Figure(run.out, "learned the same merges: "), 12);
  // Every merge shortens the paragraph.
  const double start = Figure(run.out, "start: ");
  const double after = Figure(run.out, "merge 12: ", " tokens", true);
  EXPECT_LT(after, start);
  EXPECT_NE(run.out.find("decodes back: yes"), std::string::npos);
}

TEST(Learn, Rung04NaiveAttentionEqualsFusedKernel) {
  const ExampleRun run = RunExample("04_attention");
  if (run.missing) GTEST_SKIP() << run.out;
  ASSERT_EQ(run.status, 0) << run.out;
  EXPECT_LT(
      Figure(run.out, "naive vs fused CausalAttention, max |difference| "),
      1e-5);
  EXPECT_LT(Figure(run.out, "naive vs fused, max |difference| "), 1e-5);
  // Row 0 of the weights: query 0 sees only key 0.
  EXPECT_NE(run.out.find("   1.000 0.000 0.000 0.000 0.000 0.000"),
            std::string::npos);
}

TEST(Learn, Rung05RopeDependsOnlyOnDistance) {
  const ExampleRun run = RunExample("05_rope");
  if (run.missing) GTEST_SKIP() << run.out;
  ASSERT_EQ(run.status, 0) << run.out;
  EXPECT_LT(Figure(run.out, "largest difference at m - n = 3 is "), 1e-12);
  EXPECT_LT(Figure(run.out, "interleaved(q)[perm] at p = 7: max difference "),
            1e-15);
  EXPECT_LT(Figure(run.out, "max difference ", " (float32)", true), 1e-6);
}

}  // namespace
}  // namespace rotor::test
