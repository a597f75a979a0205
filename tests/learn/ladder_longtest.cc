// Rungs 06-09 of docs/learn.md, in order in one work folder (each reads the
// previous one's model): every claim the page makes about their figures,
// checked. The figures themselves depend on the kernels (the page shows one
// set's, and tests/docs/docs_test.cc compares them there); these claims hold
// on every set, and ctest runs this once per OpenBLAS kernel set and with
// oneDNN's AVX2 kernels (LadderKernels.*, tests/CMakeLists.txt). About a
// minute on two cores (more on a loaded machine), hence label `long`.
#include <map>
#include <string>
#include <vector>

#include "tests/learn/run_example.h"

namespace rotor::test {
namespace {

TEST(Learn, Rungs06To09TrainExtendAndFineTune) {
  TempDir dir;
  const std::string work = "work";

  // 06: the loss falls, the text is learned and so is retrieval at 128
  // (chance: 1%).
  const ExampleRun lm = RunExample("06_tiny_lm", work, &dir);
  if (lm.missing) GTEST_SKIP() << lm.out;
  ASSERT_EQ(lm.status, 0) << lm.out;
  EXPECT_GT(Figure(lm.out, "step    1  loss "),
            2 * Figure(lm.out, "step  700  loss "));
  const double ppl = Figure(lm.out, "validation perplexity at 128 bytes: ");
  EXPECT_LT(ppl, 1.6);
  // Phase 1 (passkeys only) forms the copying, phase 2 (text) keeps most of
  // it.
  EXPECT_GE(Figure(lm.out,
                   "after phase 1 (passkeys only): passkey "
                   "retrieval "),
            70);
  const double retrieved = Figure(lm.out, "passkey retrieval at 128 bytes: ");
  EXPECT_GE(retrieved, 50);

  // 07: columns ppl@128, @256, @512, key@128, @256, @512.
  const ExampleRun zero = RunExample("07_zero_shot", work, &dir);
  ASSERT_EQ(zero.status, 0) << zero.out;
  std::map<std::string, std::vector<double>> rows;
  for (const char* method :
       {"default", "linear", "ntk", "dynamic", "yarn", "llama3", "longrope"}) {
    rows[method] = Row(zero.out, std::string(method) + " ");
    ASSERT_EQ(rows[method].size(), 6u) << zero.out;
  }
  const std::vector<double>& plain = rows["default"];
  // Unscaled RoPE at 128 is the model of rung 06; dynamic NTK is unscaled
  // up to the trained length.
  EXPECT_NEAR(plain[0], ppl, 1e-3);
  EXPECT_EQ(plain[3], retrieved);
  EXPECT_EQ(rows["dynamic"][0], plain[0]);
  // Past its length, unscaled RoPE degrades: perplexity x3 or more at 512,
  // retrieval down 30 points or more.
  EXPECT_GT(plain[2], 3 * plain[0]);
  EXPECT_LE(plain[5], plain[3] - 30);
  // YaRN and Llama 3 pay at L for a flatter curve.
  EXPECT_GT(rows["yarn"][0], plain[0]);
  EXPECT_GT(rows["llama3"][0], plain[0]);
  // Linear interpolation, untrained, breaks a byte model at every length.
  for (int i = 0; i < 3; ++i) EXPECT_GT(rows["linear"][i], 40) << i;
  // Every other method is below unscaled RoPE's perplexity at 512, and the
  // ones that slow the slowest pairs most keep 20 points more keys there.
  for (const char* method : {"ntk", "dynamic", "yarn", "llama3", "longrope"}) {
    EXPECT_LT(rows[method][2], plain[2]) << method;
  }
  for (const char* method : {"linear", "dynamic", "yarn", "llama3"}) {
    EXPECT_GE(rows[method][5], plain[5] + 20) << method;
  }

  // 08: the YaRN fine-tune to 256 lowers perplexity there, below zero-shot
  // YaRN's and below the base's at 128.
  const ExampleRun yarn = RunExample("08_yarn_finetune", work, &dir);
  ASSERT_EQ(yarn.status, 0) << yarn.out;
  const std::vector<double> before = Row(yarn.out, "before (zero-shot yarn):");
  const std::vector<double> after = Row(yarn.out, "after 150 steps at 256:");
  ASSERT_EQ(before.size(), 4u) << yarn.out;  // 256, ppl, 256, passkey
  ASSERT_EQ(after.size(), 4u) << yarn.out;
  EXPECT_LT(after[1], before[1] - 0.05);
  EXPECT_LT(after[1], ppl);

  // 09: LoRA trains a small share and closes most of the perplexity gap the
  // full fine-tune closes.
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
  EXPECT_GT(base[1] - adapted[1], 0.75 * (base[1] - full[1]));
}

}  // namespace
}  // namespace rotor::test
