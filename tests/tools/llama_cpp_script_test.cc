// scripts/llama_cpp.sh as a user runs it, and the same text in rotor and in
// llama.cpp: a model rotor trained (byte and BPE), exported with rotor
// export --format gguf, continues a prompt given as TEXT with the same
// greedy text in `rotor generate` as in llama.cpp; so does a Hugging Face
// folder whose tokenizer adds no BOS (SmolLM's convention), which neither
// starts with one. The text tests skip, naming scripts/fetch_llama_cpp.sh,
// when node-llama-cpp is not installed; the script's refusals need neither.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "tests/temp_dir.h"
#include "tests/test_util.h"
#include "tests/tools/run_rotor.h"
#include "tests/train/gguf/llama_cpp_reference.h"
#include "tests/train/train_test_util.h"
#include "train/io/atomic_file.h"

namespace rotor::tools {
namespace {

using test::RotorResult;
using test::TempDir;

std::string Quote(const std::string& text) { return "'" + text + "'"; }

// `bash scripts/llama_cpp.sh ARGS` (already quoted), with `environment`
// (e.g. "ROTOR_CACHE_DIR=/x") before it.
RotorResult RunScript(const TempDir& dir, const std::string& args,
                      const std::string& environment = "") {
  return test::RunCommand(dir, environment + " bash '" +
                                   std::string(ROTOR_SOURCE_DIR) +
                                   "/scripts/llama_cpp.sh' " + args);
}

constexpr int kNewTokens = 24;

class LlamaCppScript : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string missing = test::MissingLlamaCpp();
    if (!missing.empty()) GTEST_SKIP() << missing;
  }

  RotorResult Rotor(const std::string& args) const {
    return test::RunRotor(dir_, args);
  }

  // configs/tiny.yaml trained on `data` into dir/NAME (seconds), then
  // exported to dir/NAME.gguf.
  std::string TrainAndExport(const std::string& name, const std::string& data,
                             const std::string& extra = "") const {
    const RotorResult trained =
        Rotor("train " + Quote(test::TinyConfigPath()) + " " +
              Quote("data.path=" + data) + " " +
              Quote("output_dir=" + dir_.Path(name)) +
              " train.max_steps=150 --samples 0 " + extra);
    EXPECT_EQ(trained.status, 0) << trained.err;
    return Export(dir_.Path(name), name + ".gguf");
  }

  // rotor export --format gguf of `checkpoint` to dir/FILE.
  std::string Export(const std::string& checkpoint,
                     const std::string& file) const {
    const RotorResult exported =
        Rotor("export --checkpoint " + Quote(checkpoint) +
              " --format gguf --output " + Quote(dir_.Path(file)));
    EXPECT_EQ(exported.status, 0) << exported.err;
    return dir_.Path(file);
  }

  // rotor generate's greedy text from `prompt`, and llama.cpp's.
  void ExpectSameText(const std::string& checkpoint, const std::string& gguf,
                      const std::string& prompt) const {
    const RotorResult rotor =
        Rotor("generate --checkpoint " + Quote(checkpoint) + " --prompt " +
              Quote(prompt) + " --temperature 0 --threads 1 " +
              "--max-new-tokens " + std::to_string(kNewTokens));
    ASSERT_EQ(rotor.status, 0) << rotor.err;
    const RotorResult llama_cpp = RunScript(
        dir_, "complete " + Quote(gguf) + " --threads 1 " + "--max-tokens " +
                  std::to_string(kNewTokens) + " " + Quote(prompt));
    ASSERT_EQ(llama_cpp.status, 0) << llama_cpp.err;
    std::printf("rotor:     %s", rotor.out.c_str());
    std::printf("llama.cpp: %s", llama_cpp.out.c_str());
    EXPECT_EQ(llama_cpp.out, rotor.out);
    EXPECT_GT(rotor.out.size(), prompt.size() + 8) << rotor.out;
  }

  // The ids rotor generate starts `prompt` from (a JSON array).
  std::string PromptIdsOf(const std::string& checkpoint,
                          const std::string& prompt) const {
    const RotorResult r =
        Rotor("generate --checkpoint " + Quote(checkpoint) + " --prompt " +
              Quote(prompt) + " --max-new-tokens 0 --token-ids");
    EXPECT_EQ(r.status, 0) << r.err;
    return r.out.substr(0, r.out.find('\n'));
  }

  // That the BOS matters to the model, so that a test of the same text
  // fails when rotor and llama.cpp disagree on it: llama.cpp continues
  // `ids` (a JSON array whose first id is the BOS) otherwise without it.
  void ExpectTheBosMatters(const std::string& gguf,
                           const std::string& ids) const {
    const size_t comma = ids.find(',');
    ASSERT_NE(comma, std::string::npos) << ids;
    const std::string without = "[" + ids.substr(comma + 1);
    const std::string with_bos = LlamaCppFromIds(gguf, ids);
    const std::string without_bos = LlamaCppFromIds(gguf, without);
    std::printf("llama.cpp from %s: %s", without.c_str(), without_bos.c_str());
    EXPECT_NE(with_bos, without_bos);
  }

  // llama.cpp's continuation of `ids`, as they are.
  std::string LlamaCppFromIds(const std::string& gguf,
                              const std::string& ids) const {
    const RotorResult r = RunScript(
        dir_, "complete " + Quote(gguf) + " --threads 1 --max-tokens " +
                  std::to_string(kNewTokens) + " --prompt-ids " + Quote(ids));
    EXPECT_EQ(r.status, 0) << r.err;
    return r.out;
  }

  TempDir dir_;
};

// rotor trained every document after 256; "T" is 84. (These small models
// continue most prompts alike with and without the BOS; "T" they do not.)
TEST_F(LlamaCppScript, ByteModelContinuesATextAsRotorGenerateDoes) {
  const std::string data = test::PrepareTextData(dir_);
  const std::string gguf = TrainAndExport("byte", data);
  ExpectSameText(dir_.Path("byte"), gguf, "T");
  const std::string ids = PromptIdsOf(dir_.Path("byte"), "T");
  EXPECT_EQ(ids, "[256, 84]");
  ExpectTheBosMatters(gguf, ids);
}

TEST_F(LlamaCppScript, BpeModelContinuesATextAsRotorGenerateDoes) {
  test::PrepareTextData(dir_);
  const std::string tokenizer = dir_.Path("tokenizer.json");
  RotorResult r = Rotor("tokenizer train --input " + Quote(dir_.Path("text")) +
                        " --vocab-size 300 --output " + Quote(tokenizer));
  ASSERT_EQ(r.status, 0) << r.err;
  r = Rotor("prepare --input " + Quote(dir_.Path("text")) + " --output " +
            Quote(dir_.Path("bpe")) + " --val-fraction 0.25 --tokenizer " +
            Quote(tokenizer));
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string gguf = TrainAndExport(
      "run", dir_.Path("bpe"),
      "model.vocab_size=300 " + Quote("data.tokenizer=" + tokenizer));
  ExpectSameText(dir_.Path("run"), gguf, "T");
  // <|endoftext|>, the trainer's id 0, first.
  const std::string ids = PromptIdsOf(dir_.Path("run"), "T");
  EXPECT_EQ(ids.substr(0, 3), "[0,") << ids;
  ExpectTheBosMatters(gguf, ids);
}

// A Hugging Face folder whose tokenizer adds no BOS, as SmolLM's and
// GPT-2's: rotor generate starts the prompt without one, and so does
// llama.cpp with the GGUF file exported from it.
TEST_F(LlamaCppScript, AHuggingFaceModelWithoutBosKeepsItsConvention) {
  const std::string data = test::PrepareTextData(dir_);
  TrainAndExport("byte", data);
  RotorResult r = Rotor("export --checkpoint " + Quote(dir_.Path("byte")) +
                        " --output " + Quote(dir_.Path("hf")));
  ASSERT_EQ(r.status, 0) << r.err;
  // The byte tokenizer's tokenizer.json without its post-processor (the one
  // the export writes puts <|endoftext|> first): a tokenizer adding no BOS.
  const std::string file = dir_.Path("hf/tokenizer.json");
  std::string json = train::ReadFile(file);
  const size_t at = json.find("\"post_processor\"");
  const size_t end = json.find("\n  \"decoder\"");
  ASSERT_NE(at, std::string::npos);
  ASSERT_NE(end, std::string::npos);
  json.replace(at, end - at, "\"post_processor\": null,");
  train::WriteFileAtomically(file, json);
  EXPECT_EQ(PromptIdsOf(dir_.Path("hf"), "T"), "[84]");
  const std::string gguf = Export(dir_.Path("hf"), "hf.gguf");
  ExpectSameText(dir_.Path("hf"), gguf, "T");
  ExpectTheBosMatters(gguf, "[256, 84]");
}

// The refusals, each with its reason and exit status 1; --help, 0. They
// need no llama.cpp (the install is checked after the arguments).
TEST(LlamaCppScriptArguments, RefusalsNameTheProblem) {
  TempDir dir;
  RotorResult r = RunScript(dir, "--help");
  EXPECT_EQ(r.status, 0);
  EXPECT_CONTAINS(r.out, "llama_cpp.sh complete FILE.gguf [options]");
  EXPECT_CONTAINS(r.out, "llama-cli");
  r = RunScript(dir, "");
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "llama_cpp.sh complete FILE.gguf");
  r = RunScript(dir, "chat x.gguf hello");
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "there is no chat command");
  r = RunScript(dir, "complete " + Quote(dir.Path("missing.gguf")) + " The");
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, dir.Path("missing.gguf") + ": no such file");
  const std::string text = dir.Write("notes.txt", "not a model");
  r = RunScript(dir, "complete " + Quote(text) + " The");
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, text + ": not a GGUF file");
  const std::string gguf = dir.Write("model.gguf", "GGUF and nothing more");
  r = RunScript(dir, "complete " + Quote(gguf) + " --max-tokens lots The");
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "--max-tokens takes a whole number, got 'lots'");
  r = RunScript(dir, "complete " + Quote(gguf) + " --top-k 3 The");
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "unknown option '--top-k'");
  r = RunScript(dir, "complete " + Quote(gguf));
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "no prompt");
  r = RunScript(dir, "complete " + Quote(gguf) + " The --prompt-ids 1");
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "either a prompt text or --prompt-ids");
  // Without the install: where it is missing and how to install it.
  r = RunScript(dir, "complete " + Quote(gguf) + " The",
                "ROTOR_CACHE_DIR=" + Quote(dir.Path("empty-cache")));
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "bash scripts/fetch_llama_cpp.sh");
}

// Files llama.cpp cannot read: a header of garbage (which llama.cpp itself
// read for minutes) and a file cut short. Each is an error naming it, exit
// status 1, in seconds.
TEST_F(LlamaCppScript, AFileOrIdsLlamaCppCannotReadAreAnError) {
  const std::string garbage =
      dir_.Write("garbage.gguf", "GGUF and nothing more");
  RotorResult r =
      RunScript(dir_, "complete " + Quote(garbage) + " --threads 1 The");
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, garbage + " is not a GGUF file llama.cpp can read: ");
  r = Rotor("export --random " + Quote(test::TinyConfigPath()) + " --output " +
            Quote(dir_.Path("hf")));
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string whole = train::ReadFile(Export(dir_.Path("hf"), "w.gguf"));
  const std::string cut =
      dir_.Write("cut.gguf", whole.substr(0, whole.size() / 2));
  r = RunScript(dir_, "complete " + Quote(cut) + " --threads 1 The");
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "llama.cpp could not load " + cut);
  // An id past the vocabulary (llama.cpp aborted the process: status 134)
  // and a context no model uses (node was killed for memory) are refused.
  const std::string gguf = dir_.Path("w.gguf");
  r = RunScript(dir_, "complete " + Quote(gguf) +
                          " --threads 1 --prompt-ids '[256, 300]'");
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "--prompt-ids: 300 is no token id of " + gguf +
                             " (its vocabulary: 257 tokens");
  r = RunScript(dir_, "complete " + Quote(gguf) +
                          " --threads 1 --context 99999999999 The");
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "--context 99999999999 is more than 64 times the");
}

}  // namespace
}  // namespace rotor::tools
