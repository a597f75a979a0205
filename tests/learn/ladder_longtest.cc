// Rungs 06-09 of docs/learn.md, in order in one work folder (each reads the
// previous one's model): the figures the course shows, checked. Minutes on
// two cores, hence label `long`.
#include "tests/learn/run_example.h"

namespace rotor::test {
namespace {

TEST(Learn, Rungs06To09TrainExtendAndFineTune) {
  TempDir dir;
  const std::string work = "work";

  const ExampleRun lm = RunExample("06_tiny_lm", work, &dir);
  if (lm.missing) GTEST_SKIP() << lm.out;
  ASSERT_EQ(lm.status, 0) << lm.out;
  EXPECT_GT(Figure(lm.out, "step    1  loss "),
            2 * Figure(lm.out, "step 1000  loss "));
  const double ppl = Figure(lm.out, "validation perplexity at 128 bytes: ");
  EXPECT_LT(ppl, 2.0);
  Figure(lm.out, "passkey retrieval at 128 bytes: ");  // printed

  const ExampleRun zero = RunExample("07_zero_shot", work, &dir);
  ASSERT_EQ(zero.status, 0) << zero.out;
  // Unscaled RoPE at 128 is the model of rung 06.
  EXPECT_NEAR(Figure(zero.out, "default   "), ppl, 1e-3);
  EXPECT_GT(Figure(zero.out, "unscaled RoPE at 512 vs 128: x"), 1.0);
  EXPECT_LT(Figure(zero.out, "best scaling method at 512: "),
            Figure(zero.out, "(unscaled "));

  const ExampleRun yarn = RunExample("08_yarn_finetune", work, &dir);
  ASSERT_EQ(yarn.status, 0) << yarn.out;
  const double before = Figure(yarn.out, "perplexity@512 ");  // the first line
  const double after = Figure(yarn.out, "perplexity@512 ", "", /*last=*/true);
  EXPECT_LT(after, before);

  const ExampleRun lora = RunExample("09_lora", work, &dir);
  ASSERT_EQ(lora.status, 0) << lora.out;
  EXPECT_LT(Figure(lora.out, "train (", "%)"), 50);
  // The last row is LoRA's, the first the base's (zero-shot yarn).
  EXPECT_LT(Figure(lora.out, "perplexity@512 ", "", /*last=*/true),
            Figure(lora.out, "perplexity@512 "));
}

}  // namespace
}  // namespace rotor::test
