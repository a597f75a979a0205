// `rotor export --format gguf` as a user runs it: from a Hugging Face
// folder (written by `rotor export --random`), with RoPE overrides, an
// existing output refused without --force, and refusals that leave nothing
// behind. What the file holds is checked against llama.cpp in
// tests/train/gguf/.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/temp_dir.h"
#include "tests/tools/run_rotor.h"
#include "train/io/atomic_file.h"

namespace rotor {
namespace {

using test::RunRotor;
using test::TempDir;

// `rotor export --random CONFIG` into dir/hf; the exit status.
int RandomHfFolder(const TempDir& dir, const std::string& config) {
  return RunRotor(dir, "export --random '" + config + "' --output '" +
                           dir.Path("hf") + "'")
      .status;
}

std::string Tiny() {
  return std::string(ROTOR_SOURCE_DIR) + "/configs/tiny.yaml";
}

TEST(GgufCommand, ExportsAFolderWithOverridesAndRefusesToOverwrite) {
  TempDir dir;
  ASSERT_EQ(RandomHfFolder(dir, Tiny()), 0);
  const std::string gguf = dir.Path("tiny.gguf");
  const std::string args = "export --checkpoint '" + dir.Path("hf") +
                           "' --format gguf --dtype q8_0 --output '" + gguf +
                           "' model.max_position_embeddings=256 "
                           "'model.rope_scaling={rope_type: yarn, factor: 4, "
                           "original_max_position_embeddings: 64}'";
  const test::RotorResult first = RunRotor(dir, args);
  ASSERT_EQ(first.status, 0) << first.err;
  EXPECT_NE(first.out.find("q8_0, RoPE yarn as yarn keys"), std::string::npos)
      << first.out;
  const std::string bytes = train::ReadFile(gguf);
  EXPECT_EQ(bytes.substr(0, 4), "GGUF");
  // Again: refused, the file untouched; with --force, replaced.
  const test::RotorResult second = RunRotor(dir, args);
  EXPECT_EQ(second.status, 1);
  EXPECT_NE(second.err.find("--force"), std::string::npos) << second.err;
  EXPECT_EQ(train::ReadFile(gguf), bytes);
  EXPECT_EQ(RunRotor(dir, args + " --force").status, 0);
}

TEST(GgufCommand, DynamicIsRefusedWithTheStaticEquivalentAndNothingWritten) {
  TempDir dir;
  ASSERT_EQ(RandomHfFolder(dir, Tiny()), 0);
  const std::string gguf = dir.Path("dynamic.gguf");
  const std::string args =
      "export --checkpoint '" + dir.Path("hf") + "' --format gguf --output '" +
      gguf + "' 'model.rope_scaling={rope_type: dynamic, factor: 4}'";
  const test::RotorResult refused = RunRotor(dir, args);
  EXPECT_EQ(refused.status, 1);
  EXPECT_NE(refused.err.find("llama.cpp has no dynamic NTK"), std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("--rope-static-length 256"), std::string::npos)
      << refused.err;
  EXPECT_FALSE(std::filesystem::exists(gguf));
  const test::RotorResult frozen =
      RunRotor(dir, args + " --rope-static-length 256");
  EXPECT_EQ(frozen.status, 0) << frozen.err;
  EXPECT_NE(frozen.out.find("rope_freqs (dynamic frozen at 256)"),
            std::string::npos)
      << frozen.out;
}

TEST(GgufCommand, Q8_0RefusesRowsThatAreNotBlocksAndWritesNothing) {
  TempDir dir;
  // hidden_size 48: rows of 48 values are not whole blocks of 32.
  const std::string config = dir.Write("odd.yaml", R"(model:
  vocab_size: 257
  hidden_size: 48
  intermediate_size: 64
  num_hidden_layers: 1
  num_attention_heads: 4
  num_key_value_heads: 2
  max_position_embeddings: 64
)");
  ASSERT_EQ(RandomHfFolder(dir, config), 0);
  const std::string gguf = dir.Path("odd.gguf");
  const test::RotorResult refused =
      RunRotor(dir, "export --checkpoint '" + dir.Path("hf") +
                        "' --format gguf --dtype q8_0 --output '" + gguf + "'");
  EXPECT_EQ(refused.status, 1);
  EXPECT_NE(refused.err.find("rows of 48 values; q8_0 needs a multiple of 32"),
            std::string::npos)
      << refused.err;
  EXPECT_FALSE(std::filesystem::exists(gguf));
}

}  // namespace
}  // namespace rotor
