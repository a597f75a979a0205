// rotor eval --passkey and --retrieval on models whose tokenizer is not
// bytes: a Hugging Face folder with Llama 3's tokenizer.json and random
// weights, evaluated on data prepared with that tokenizer, prints the grids
// and their JSON.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "tests/temp_dir.h"
#include "tests/test_util.h"
#include "tests/tools/run_rotor.h"
#include "tests/train/tokenizer/hf_reference.h"
#include "train/io/atomic_file.h"

namespace rotor::tools {
namespace {

namespace fs = std::filesystem;

std::string Quote(const std::string& text) { return "'" + text + "'"; }

// A small random Llama with Llama 3's vocabulary and tokenizer in dir/NAME,
// and text prepared with that tokenizer in dir/data.
class Llama3FolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string tokenizer = test::Llama3Reference().TokenizerJson();
    const std::string config = dir_.Write("model.yaml", R"(model:
  vocab_size: 128256
  hidden_size: 16
  intermediate_size: 32
  num_hidden_layers: 1
  num_attention_heads: 2
  num_key_value_heads: 1
  max_position_embeddings: 256
)");
    test::RotorResult r =
        test::RunRotor(dir_, "export --random " + Quote(config) +
                                 " --seed 5 --output " + Quote(folder_));
    ASSERT_EQ(r.status, 0) << r.err;
    fs::copy_file(tokenizer, folder_ + "/tokenizer.json",
                  fs::copy_options::overwrite_existing);
    std::string text;
    for (int i = 0; i < 40; ++i) {
      text += "The quick brown fox " + std::to_string(i) +
              " jumps over the lazy dog.\n";
    }
    dir_.Write("text/a.txt", text);
    dir_.Write("text/b.txt", text);
    r = test::RunRotor(dir_, "prepare --input " + Quote(dir_.Path("text")) +
                                 " --output " + Quote(data_) +
                                 " --val-fraction 0.5 --tokenizer " +
                                 Quote(tokenizer));
    ASSERT_EQ(r.status, 0) << r.err;
  }

  // rotor eval of the folder on the data, with `args`.
  std::string Eval(const std::string& args) const {
    return "eval --checkpoint " + Quote(folder_) + " --data " + Quote(data_) +
           " --force --passkey-plot " + Quote(dir_.Path("passkey.png")) +
           " --retrieval-plot " + Quote(dir_.Path("retrieval.png")) + " " +
           args;
  }

  test::TempDir dir_;
  const std::string folder_ = dir_.Path("llama3");
  const std::string data_ = dir_.Path("data");
};

// With no lengths given, passkey retrieval runs at the model's pre-training
// length and its max_position_embeddings (docs/learn.md's
// `rotor eval --checkpoint runs/learn/08_yarn --passkey` once failed).
TEST_F(Llama3FolderTest, PasskeyDefaultsToTheModelsLengths) {
  for (const auto& [overrides, lengths] :
       std::vector<std::pair<std::string, std::string>>{
           {"", "[256]"},
           {"model.max_position_embeddings=512 "
            "'model.rope_scaling={rope_type: yarn, factor: 2, "
            "original_max_position_embeddings: 256}'",
            "[256, 512]"}}) {
    const test::RotorResult r = test::RunRotor(
        dir_, Eval("--passkey --depths 1 --trials 1 --json " + overrides));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out).at("passkey").at("lengths"),
              nlohmann::json::parse(lengths));
  }
}

// A downloaded model without data: passkey and retrieval run alone on the
// fixed filler; what needs the data (perplexity, the validation filler)
// asks for --data.
TEST_F(Llama3FolderTest, PasskeyAndRetrievalNeedNoData) {
  const std::string eval =
      "eval --checkpoint " + Quote(folder_) + " --force --passkey-plot " +
      Quote(dir_.Path("passkey.png")) + " --retrieval-plot " +
      Quote(dir_.Path("retrieval.png")) + " --depths 1 --trials 1 --json ";
  test::RotorResult r =
      test::RunRotor(dir_, eval + "--passkey --retrieval niah_single");
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json report = nlohmann::json::parse(r.out);
  EXPECT_TRUE(report.contains("passkey"));
  EXPECT_TRUE(report.contains("retrieval"));
  r = test::RunRotor(dir_, eval + "--passkey --passkey-filler validation");
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "which names no data; give --data DIR");
}

TEST_F(Llama3FolderTest, PasskeyRunsInTheModelsTokens) {
  const std::string eval =
      Eval("--passkey --passkey-lengths 64,128 --depths 0,1 --trials 2");
  test::RotorResult r = test::RunRotor(dir_, eval);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_CONTAINS(r.out, "passkey accuracy");
  for (const char* filler : {"landmark", "validation"}) {
    r = test::RunRotor(
        dir_, eval + " --json --passkey-filler " + std::string(filler));
    ASSERT_EQ(r.status, 0) << r.err;
    const nlohmann::json passkey = nlohmann::json::parse(r.out).at("passkey");
    EXPECT_EQ(passkey.at("lengths"), nlohmann::json::parse("[64, 128]"));
    ASSERT_EQ(passkey.at("cells").size(), 4u);
    for (const nlohmann::json& cell : passkey.at("cells")) {
      EXPECT_EQ(cell.at("trials"), 2);
      EXPECT_GE(cell.at("digit_accuracy").get<double>(), 0.0);
      EXPECT_LE(cell.at("digit_accuracy").get<double>(), 1.0);
    }
  }
}

TEST_F(Llama3FolderTest, RetrievalTasksRunWithThePasskey) {
  const std::string eval = Eval(
      "--passkey --retrieval "
      "niah_single,niah_multikey,niah_multivalue,variable_tracking "
      "--passkey-lengths 256 --depths 0,1 --trials 1");
  test::RotorResult r = test::RunRotor(dir_, eval);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_CONTAINS(r.out, "passkey accuracy");
  EXPECT_CONTAINS(r.out, "niah_multivalue accuracy");
  EXPECT_CONTAINS(r.out, "variable_tracking accuracy");
  r = test::RunRotor(dir_, eval + " --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json report = nlohmann::json::parse(r.out);
  EXPECT_TRUE(report.contains("passkey"));
  const nlohmann::json& retrieval = report.at("retrieval");
  EXPECT_EQ(retrieval.at("tasks"),
            nlohmann::json::parse(R"(["niah_single", "niah_multikey",
                "niah_multivalue", "variable_tracking"])"));
  ASSERT_EQ(retrieval.at("cells").size(), 8u);
  EXPECT_EQ(retrieval.at("cells")[7].at("task"), "variable_tracking");
  EXPECT_EQ(retrieval.at("cells")[7].at("depth"), 1.0);
  for (const nlohmann::json& cell : retrieval.at("cells")) {
    EXPECT_EQ(cell.at("length"), 256);
    EXPECT_GE(cell.at("string_match_all").get<double>(), 0.0);
  }
  r = test::RunRotor(dir_, eval + " --retrieval niah_double");
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "unknown retrieval task 'niah_double'");
}

}  // namespace
}  // namespace rotor::tools
