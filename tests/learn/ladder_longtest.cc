// Rungs 06-09 of docs/learn.md, in order in one work folder (each reads the
// previous one's model): the figures the course shows, checked. About a
// minute on two cores (more on a loaded machine), hence label `long`.
#include "tests/learn/run_example.h"

namespace rotor::test {
namespace {

TEST(Learn, Rungs06To09TrainExtendAndFineTune) {
  TempDir dir;
  const std::string work = "work";

  // 06: the loss falls, the text is learned and so is retrieval at 128.
  const ExampleRun lm = RunExample("06_tiny_lm", work, &dir);
  if (lm.missing) GTEST_SKIP() << lm.out;
  ASSERT_EQ(lm.status, 0) << lm.out;
  EXPECT_GT(Figure(lm.out, "step    1  loss "),
            2 * Figure(lm.out, "step  700  loss "));
  const double ppl = Figure(lm.out, "validation perplexity at 128 bytes: ");
  EXPECT_LT(ppl, 2.0);
  // Phase 1 (passkeys only) forms the copying, phase 2 (text) keeps it.
  EXPECT_GE(Figure(lm.out,
                   "after phase 1 (passkeys only): passkey "
                   "retrieval "),
            80);
  // The bounds hold on every OpenBLAS kernel set (OPENBLAS_CORETYPE
  // Haswell, SkylakeX, Sandybridge, Nehalem: 62-90% here; chance is 1%).
  const double retrieved = Figure(lm.out, "passkey retrieval at 128 bytes: ");
  EXPECT_GE(retrieved, 50);

  // 07: columns ppl@128, @256, @512, key@128, @256, @512.
  const ExampleRun zero = RunExample("07_zero_shot", work, &dir);
  ASSERT_EQ(zero.status, 0) << zero.out;
  const std::vector<double> plain = Row(zero.out, "default ");
  ASSERT_EQ(plain.size(), 6u) << zero.out;
  // Unscaled RoPE at 128 is the model of rung 06.
  EXPECT_NEAR(plain[0], ppl, 1e-3);
  EXPECT_EQ(plain[3], retrieved);
  // Past its length, unscaled retrieval falls (to 16-48% at 512 on the
  // four kernel sets).
  EXPECT_LT(plain[5], retrieved - 10);
  EXPECT_GT(Figure(zero.out, "unscaled RoPE at 512 vs 128: x"), 1.0);
  EXPECT_LT(Figure(zero.out, "best scaling method at 512: "),
            Figure(zero.out, "(unscaled "));

  // 08: the YaRN fine-tune to 256 lowers perplexity and improves retrieval
  // there (before: zero-shot YaRN).
  const ExampleRun yarn = RunExample("08_yarn_finetune", work, &dir);
  ASSERT_EQ(yarn.status, 0) << yarn.out;
  const std::vector<double> before = Row(yarn.out, "before (zero-shot yarn):");
  const std::vector<double> after = Row(yarn.out, "after 150 steps at 256:");
  ASSERT_EQ(before.size(), 4u) << yarn.out;  // 256, ppl, 256, passkey
  ASSERT_EQ(after.size(), 4u) << yarn.out;
  EXPECT_LT(after[1], before[1]);
  EXPECT_GT(after[3], before[3]);  // +8 to +16 points on the kernel sets

  // 09: LoRA trains a small share and does the same, less far.
  const ExampleRun lora = RunExample("09_lora", work, &dir);
  ASSERT_EQ(lora.status, 0) << lora.out;
  EXPECT_LT(Figure(lora.out, "train (", "%)"), 50);
  const std::vector<double> base = Row(lora.out, "zero-shot yarn (base)");
  const std::vector<double> full = Row(lora.out, "full fine-tune (rung 08)");
  const std::vector<double> adapted = Row(lora.out, "LoRA fine-tune");
  ASSERT_EQ(base.size(), 4u) << lora.out;
  ASSERT_EQ(full.size(), 4u) << lora.out;
  ASSERT_EQ(adapted.size(), 4u) << lora.out;
  EXPECT_EQ(base[3], before[3]);
  EXPECT_EQ(full[3], after[3]);
  EXPECT_LT(adapted[1], base[1]);
  EXPECT_GT(adapted[3], base[3]);  // +6 to +20 points on the kernel sets
}

}  // namespace
}  // namespace rotor::test
