// `rotor export --format gguf` as a user runs it: from a Hugging Face
// folder (written by `rotor export --random`), with RoPE overrides, an
// existing output refused without --force, and refusals that leave nothing
// behind. What the file holds is checked against llama.cpp in
// tests/train/gguf/.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>

#include "tests/temp_dir.h"
#include "tests/tools/run_rotor.h"
#include "train/io/atomic_file.h"
#include "train/io/json.h"

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

// Sets value `index` of F32 tensor `name` in `folder`/model.safetensors.
void SetWeight(const std::string& folder, const std::string& name, size_t index,
               float value) {
  const std::string path = folder + "/model.safetensors";
  std::string bytes = train::ReadFile(path);
  uint64_t header_length = 0;
  std::memcpy(&header_length, bytes.data(), sizeof(header_length));
  const train::Json header =
      train::ParseJson(bytes.substr(8, header_length), path);
  const size_t at = 8 + header_length +
                    header.at(name).at("data_offsets")[0].get<size_t>() +
                    index * sizeof(float);
  std::memcpy(bytes.data() + at, &value, sizeof(value));
  train::WriteFileAtomically(path, bytes);
}

std::string GgufArgs(const TempDir& dir, const std::string& gguf,
                     const std::string& more) {
  return "export --checkpoint '" + dir.Path("hf") +
         "' --format gguf --output '" + gguf + "' " + more;
}

// A weight the dtype would write as inf (or a q8_0 block as NaN), and a
// NaN weight (q8_0 wrote it as 0 through an undefined cast) are refused,
// naming the tensor, its largest magnitude and the dtypes that hold it;
// nothing is written. They all exited 0 before.
TEST(GgufCommand, WeightsTheDtypeCannotWriteAreRefusedAndNothingWritten) {
  TempDir dir;
  ASSERT_EQ(RandomHfFolder(dir, Tiny()), 0);
  const std::string gguf = dir.Path("w.gguf");
  const std::string up = "model.layers.0.mlp.up_proj.weight";
  SetWeight(dir.Path("hf"), up, 5, 65520.0f);
  test::RotorResult run = RunRotor(dir, GgufArgs(dir, gguf, "--dtype f16"));
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.err.find("GGUF: tensor blk.0.ffn_up.weight holds a value of "
                         "magnitude 65520, more than f16 can write (f16's "
                         "largest value is 65504; it would be written as "
                         "inf): export it with --dtype q8_0, bf16 or f32"),
            std::string::npos)
      << run.err;
  EXPECT_FALSE(std::filesystem::exists(gguf));
  SetWeight(dir.Path("hf"), up, 5, 1e7f);
  run = RunRotor(dir, GgufArgs(dir, gguf, "--dtype q8_0"));
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.err.find("blk.0.ffn_up.weight holds a value of magnitude "
                         "1e+07, more than q8_0 can write"),
            std::string::npos)
      << run.err;
  EXPECT_NE(run.err.find("--dtype bf16 or f32"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(gguf));
  EXPECT_EQ(RunRotor(dir, GgufArgs(dir, gguf, "--dtype bf16")).status, 0);
  SetWeight(dir.Path("hf"), up, 5, std::numeric_limits<float>::quiet_NaN());
  run = RunRotor(dir, GgufArgs(dir, gguf, "--dtype q8_0 --force"));
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.err.find("GGUF: tensor blk.0.ffn_up.weight holds nan at "
                         "index 5: GGUF export writes finite weights only"),
            std::string::npos)
      << run.err;
}

// RoPE settings that leave float32 (rope_theta 1e300 was written as
// freq_base inf) or rotor's positions, or make the attention factor
// overflow, are refused as `rotor rope --check` reports them.
TEST(GgufCommand, RopeSettingsBeyondFloat32OrThePositionsAreRefused) {
  TempDir dir;
  ASSERT_EQ(RandomHfFolder(dir, Tiny()), 0);
  const std::string gguf = dir.Path("r.gguf");
  const std::string yarn =
      " model.max_position_embeddings=256 'model.rope_scaling={rope_type: "
      "yarn, original_max_position_embeddings: 64, ";
  const struct {
    std::string overrides;
    std::string message;
  } cases[] = {
      {"model.rope_theta=1e300",
       ": model.rope_theta 1e+300 is beyond float32's largest value "
       "3.40282e+38"},
      {yarn + "factor: 1.0e+30}'",
       ": model.rope_scaling.factor 1e+30 x "
       "model.rope_scaling.original_max_position_embeddings 64 = 6.4e+31 "
       "positions, beyond rotor's longest sequence of 16777216 positions"},
      {yarn + "factor: 4, mscale: 1.0e+30, mscale_all_dim: 1}'",
       ": the attention factor 1.21751e+29 that model.rope_scaling.mscale / "
       "model.rope_scaling.mscale_all_dim gives is beyond 2^64"},
  };
  for (const auto& c : cases) {
    const test::RotorResult run =
        RunRotor(dir, GgufArgs(dir, gguf, c.overrides));
    EXPECT_EQ(run.status, 1) << c.overrides;
    EXPECT_NE(run.err.find(dir.Path("hf") + c.message), std::string::npos)
        << run.err;
    EXPECT_FALSE(std::filesystem::exists(gguf));
  }
}

// Flags export would have ignored are refused, saying why.
TEST(GgufCommand, FlagsThatWouldBeIgnoredAreRefused) {
  TempDir dir;
  ASSERT_EQ(RandomHfFolder(dir, Tiny()), 0);
  const std::string gguf = dir.Path("f.gguf");
  test::RotorResult run =
      RunRotor(dir, GgufArgs(dir, gguf, "--rope-static-length 100"));
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.err.find("--rope-static-length 100: rope_scaling.rope_type "
                         "is 'default', not dynamic"),
            std::string::npos)
      << run.err;
  run = RunRotor(dir, GgufArgs(dir, gguf, "--max-shard-size 1000"));
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.err.find("--max-shard-size is for --format hf"),
            std::string::npos)
      << run.err;
  run = RunRotor(dir, GgufArgs(dir, gguf,
                               "'model.rope_scaling={rope_type: dynamic, "
                               "factor: 4}' --rope-static-length 16777217"));
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.err.find("--rope-static-length 16777217 is beyond rotor's "
                         "longest sequence of 16777216 positions"),
            std::string::npos)
      << run.err;
  EXPECT_FALSE(std::filesystem::exists(gguf));
}

// GGUF's string value: u64 length, then the bytes.
std::string GgufString(const std::string& text) {
  std::string out(sizeof(uint64_t), '\0');
  const uint64_t length = text.size();
  std::memcpy(out.data(), &length, sizeof(length));
  return out + text;
}

size_t Count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos;
       at = text.find(part, at + 1)) {
    ++n;
  }
  return n;
}

// general.name is the checkpoint folder's name, not the path given.
TEST(GgufCommand, GeneralNameIsTheFoldersName) {
  TempDir dir;
  ASSERT_EQ(RandomHfFolder(dir, Tiny()), 0);
  const std::string gguf = dir.Path("n.gguf");
  ASSERT_EQ(RunRotor(dir, "export --checkpoint '" + dir.Path("hf") +
                              "/' --format gguf --output '" + gguf + "'")
                .status,
            0);
  const std::string bytes = train::ReadFile(gguf);
  const uint32_t string_type = 8;
  std::string value(sizeof(string_type), '\0');
  std::memcpy(value.data(), &string_type, sizeof(string_type));
  EXPECT_NE(bytes.find(GgufString("general.name") + value + GgufString("hf")),
            std::string::npos);
  EXPECT_EQ(bytes.find(dir.Path("hf")), std::string::npos);
}

// A tokenizer.json: rotor's byte tokenizer's (dir/hf's), with `extra`
// tokens after its 257, `merges` and GPT-2's split (ByteLevel use_regex).
std::string Tokenizer(const TempDir& dir, const std::vector<std::string>& extra,
                      const train::Json& merges) {
  train::Json json = train::ParseJson(
      train::ReadFile(dir.Path("hf") + "/tokenizer.json"), "tokenizer.json");
  int64_t id = 257;
  for (const std::string& token : extra) json["model"]["vocab"][token] = id++;
  json["model"]["merges"] = merges;
  json["pre_tokenizer"]["use_regex"] = true;
  return dir.Write("tokenizer-" + std::to_string(extra.size()) + ".json",
                   json.dump());
}

// `rotor export --random` of a tiny model with 262 ids and `tokenizer` into
// dir/`folder`; the exit status.
int FolderWithTokenizer(const TempDir& dir, const std::string& tokenizer,
                        const std::string& folder) {
  const std::string config = dir.Write(
      "v262.yaml",
      "model:\n  vocab_size: 262\n  hidden_size: 32\n  intermediate_size: "
      "64\n  num_hidden_layers: 1\n  num_attention_heads: 4\n  "
      "max_position_embeddings: 64\n");
  return RunRotor(dir, "export --random '" + config + "' --tokenizer '" +
                           tokenizer + "' --output '" + dir.Path(folder) + "'")
      .status;
}

// GGUF writes a merge as "left right", which llama.cpp splits at the first
// space after the first byte: a left token with a space in it was written
// as the ambiguous "a b c" and is refused; a right token with one is fine.
// Unused ids are named so that no two ids share a text ("[PAD261]" was
// written twice).
TEST(GgufCommand, MergesGgufCannotSayAreRefusedAndPadNamesAreUnique) {
  TempDir dir;
  ASSERT_EQ(RandomHfFolder(dir, Tiny()), 0);
  const std::string ambiguous =
      Tokenizer(dir, {"a b", "a bc"}, train::Json::parse(R"([["a b", "c"]])"));
  ASSERT_EQ(FolderWithTokenizer(dir, ambiguous, "ambiguous"), 0);
  const std::string gguf = dir.Path("t.gguf");
  const test::RotorResult refused =
      RunRotor(dir, "export --checkpoint '" + dir.Path("ambiguous") +
                        "' --format gguf --output '" + gguf + "'");
  EXPECT_EQ(refused.status, 1);
  EXPECT_NE(refused.err.find("model.merges[0] [\"a b\", \"c\"]: GGUF writes "
                             "a merge as one string \"left right\""),
            std::string::npos)
      << refused.err;
  EXPECT_FALSE(std::filesystem::exists(gguf));

  const std::string fine = Tokenizer(dir, {"b c", "ab c", "[PAD261]"},
                                     train::Json::parse(R"([["a", "b c"]])"));
  ASSERT_EQ(FolderWithTokenizer(dir, fine, "fine"), 0);
  const test::RotorResult written =
      RunRotor(dir, "export --checkpoint '" + dir.Path("fine") +
                        "' --format gguf --output '" + gguf + "'");
  ASSERT_EQ(written.status, 0) << written.err;
  const std::string bytes = train::ReadFile(gguf);
  EXPECT_EQ(Count(bytes, GgufString("[PAD261]")), 1u);
  EXPECT_EQ(Count(bytes, GgufString("[PAD261.1]")), 1u);
  EXPECT_EQ(Count(bytes, GgufString("[PAD260]")), 1u);
  EXPECT_EQ(Count(bytes, GgufString("a b c")), 1u);
}

// An export killed mid-write leaves OUTPUT.tmp-XXXXXX (a SIGKILL cannot be
// caught): the next export of the same file removes it, as a Hugging Face
// folder export removes its own (train/io/atomic_file.h).
TEST(GgufCommand, TheNextExportRemovesTheLeftoverOfAKilledOne) {
  TempDir dir;
  ASSERT_EQ(RandomHfFolder(dir, Tiny()), 0);
  dir.Write("out.gguf.tmp-AbC123", "the first 12 MB of a killed export");
  // mkostemp's mode, kept until the rename that never came.
  ASSERT_EQ(::chmod(dir.Path("out.gguf.tmp-AbC123").c_str(), 0600), 0);
  dir.Write("other.gguf.tmp-AbC123", "another file's");
  ASSERT_EQ(RunRotor(dir, GgufArgs(dir, dir.Path("out.gguf"), "")).status, 0);
  EXPECT_FALSE(std::filesystem::exists(dir.Path("out.gguf.tmp-AbC123")));
  EXPECT_TRUE(std::filesystem::exists(dir.Path("other.gguf.tmp-AbC123")));
}

}  // namespace
}  // namespace rotor
