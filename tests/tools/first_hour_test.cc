// The first hour of a new user (issue #29): build/rotor run as a user runs
// it, on the mistakes a newcomer makes first, checking that each message
// points the right way; `rotor rope` on real models; the flag names shared
// with Hugging Face.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/temp_dir.h"
#include "tests/test_util.h"
#include "tests/tools/run_rotor.h"
#include "tests/train/train_test_util.h"
#include "train/io/atomic_file.h"
#include "train/io/plot.h"

namespace rotor::tools {
namespace {

namespace fs = std::filesystem;

using Result = test::RotorResult;

std::string Quote(const std::string& text) { return "'" + text + "'"; }

class FirstHour : public test::PreparedDataTest {
 protected:
  Result Run(const std::string& args) const {
    return test::RunRotor(dir_, args);
  }

  // `rotor train` on the tiny config for `steps` steps into dir/NAME,
  // saving every `every` steps.
  Result Train(const std::string& name, int steps = 4, int every = 0) const {
    return Run("train " + Quote(test::TinyConfigPath()) + " " +
               Quote("data.path=" + data_) + " " +
               Quote("output_dir=" + dir_.Path(name)) +
               " train.max_steps=" + std::to_string(steps) +
               " checkpoint.every_n_steps=" + std::to_string(every) +
               " checkpoint.keep_last_n=10 --samples 0");
  }
};

// A tokenizer.json whose post-processor adds <|begin_of_text|> (id 260), as
// Llama's does.
std::string BosTokenizer() {
  return std::string(ROTOR_SOURCE_DIR) +
         "/tests/fuzz/corpus/tokenizer_json/byte_level_bpe.json";
}

// HF's add_special_tokens=False is --no-add-special-tokens in every command;
// tokenizer encode's former --no-special-tokens still works.
TEST_F(FirstHour, NoAddSpecialTokensIsOneFlagEverywhere) {
  const std::string encode =
      "tokenizer encode --tokenizer " + Quote(BosTokenizer()) + " --text hell";
  Result r = Run(encode);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "260 258\n");
  for (const char* flag :
       {" --no-add-special-tokens", " --no-special-tokens"}) {
    SCOPED_TRACE(flag);
    r = Run(encode + flag);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, "258\n");
  }
  r = Run("tokenizer encode --help");
  EXPECT_CONTAINS(r.out, "--no-add-special-tokens");
  r = Run("score --help");
  EXPECT_CONTAINS(r.out, "--no-add-special-tokens");
  EXPECT_CONTAINS(r.out, "--no-special-tokens");
}

// What a message must not say.
#define EXPECT_LACKS(text, part) \
  EXPECT_EQ(std::string(text).find(part), std::string::npos) << (text)

// A Hugging Face folder that is not there is named as such: it is not a
// base model to train first.
TEST_F(FirstHour, AMissingInitFromFolderIsCalledMissing) {
  const std::string folder = dir_.Path("models/SmolLM2-135M");
  const Result r = Run("train " + Quote(test::TinyConfigPath()) + " " +
                       Quote("data.path=" + data_) + " " +
                       Quote("output_dir=" + dir_.Path("new")) + " " +
                       Quote("train.init_from=" + folder));
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "train.init_from: ");
  EXPECT_CONTAINS(r.err, folder + " does not exist");
  EXPECT_CONTAINS(r.err, "check the path");
  EXPECT_LACKS(r.err, "train the base model first");
}

// A folder of text given as data.path: prepare it into another folder.
TEST_F(FirstHour, AFolderOfTextAsDataPathIsToldWhereToPrepareIt) {
  dir_.Write("my_texts/a.txt", "one text\n");
  dir_.Write("my_texts/b.txt", "another text\n");
  const std::string texts = dir_.Path("my_texts");
  const Result r = Run("train " + Quote(test::TinyConfigPath()) + " " +
                       Quote("data.path=" + texts) + " " +
                       Quote("output_dir=" + dir_.Path("new")));
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, texts + " has no train.bin/val.bin");
  EXPECT_CONTAINS(r.err,
                  "rotor prepare --input " + texts + " --output data/my_texts");
  EXPECT_CONTAINS(r.err, "data.path=data/my_texts");
  EXPECT_LACKS(r.err, "--output " + texts);
}

// --tokenizer DIR without DIR/tokenizer.json names the file and what DIR
// should be, in prepare and tokenizer encode alike.
TEST_F(FirstHour, ATokenizerFolderWithoutTokenizerJsonIsExplained) {
  ASSERT_EQ(Train("run").status, 0);
  dir_.Write("my_texts/a.txt", "one text\n");
  dir_.Write("my_texts/b.txt", "another text\n");
  const std::string run = dir_.Path("run");
  for (const std::string& args :
       {"prepare --input " + Quote(dir_.Path("my_texts")) + " --output " +
            Quote(dir_.Path("data/mine")) + " --tokenizer " + Quote(run),
        "tokenizer encode --text hi --tokenizer " + Quote(run)}) {
    SCOPED_TRACE(args);
    const Result r = Run(args);
    EXPECT_EQ(r.status, 1);
    EXPECT_CONTAINS(r.err, run + "/tokenizer.json does not exist");
    EXPECT_CONTAINS(r.err, "Hugging Face model folder");
    EXPECT_CONTAINS(r.err, "'byte'");
    EXPECT_LACKS(r.err, "cannot open");
  }
}

// A checkpoint that is not there lists the run's newest ones, and the
// run's folder stands for its newest checkpoint in every command.
TEST_F(FirstHour, AMissingCheckpointListsTheRunsCheckpoints) {
  ASSERT_EQ(Train("run", 10, 2).status, 0);
  const std::string run = dir_.Path("run");
  const std::string missing = run + "/checkpoints/step_00001500";
  Result r = Run("eval --checkpoint " + Quote(missing));
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "checkpoint folder " + missing + " does not exist");
  EXPECT_CONTAINS(r.err, run +
                             "/checkpoints holds 5 checkpoints, the newest "
                             "step_00000006, step_00000008, step_00000010");
  EXPECT_CONTAINS(r.err, "the run's folder " + run + " stands for its newest");
  // A mistyped run folder: its nearest neighbour.
  r = Run("generate --prompt a --checkpoint " + Quote(dir_.Path("rnu")));
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, ", did you mean '" + run + "'?");

  for (const std::string& args : std::vector<std::string>{
           "eval --max-batches 1", "generate --prompt a --max-new-tokens 2",
           "score --text 'The jury'",
           "export --output " + Quote(dir_.Path("exported"))}) {
    SCOPED_TRACE(args);
    r = Run(args + " --checkpoint " + Quote(run));
    EXPECT_EQ(r.status, 0) << r.err;
  }
}

// Unknown commands, flags and config keys get the nearest known one.
TEST_F(FirstHour, MisspeltNamesGetADidYouMean) {
  const std::string config = Quote(test::TinyConfigPath());
  const std::string data = Quote("data.path=" + data_);
  struct Case {
    std::string args;
    int status;
    std::string message;
  };
  const Case cases[] = {
      {"evl", 2, "rotor: unknown command 'evl', did you mean 'eval'?"},
      {"tokenizr encode", 2, "did you mean 'tokenizer'?"},
      {"eval --chekpoint x", 2,
       "rotor eval: unknown flag '--chekpoint', did you mean '--checkpoint'? "
       "(see 'rotor eval --help')"},
      {"tokenizer encod --text a", 2, "did you mean 'encode'?"},
      {"train " + config + " " + data + " train.lrr=3", 1,
       "train.lrr: unknown key, did you mean 'lr'? (known keys: "},
      {"train " + config + " " + data + " train.warmup=3", 1,
       "did you mean 'warmup_steps'?"},
      {"train " + config + " " + data + " modle.hidden_size=3", 1,
       "did you mean 'model'?"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args);
    const Result r = Run(c.args);
    EXPECT_EQ(r.status, c.status);
    EXPECT_CONTAINS(r.err, c.message);
  }
  // Nothing close: no guess.
  const Result r = Run("fly");
  EXPECT_CONTAINS(r.err, "rotor: unknown command 'fly' (run 'rotor --help'");
  EXPECT_LACKS(r.err, "did you mean");
  const std::string yaml = dir_.Write(
      "typo.yaml", test::ReplaceOnce(train::ReadFile(test::TinyConfigPath()),
                                     "max_steps:", "max_stesp:"));
  const Result typo = Run("train " + Quote(yaml) + " " + data);
  EXPECT_EQ(typo.status, 1);
  EXPECT_CONTAINS(typo.err,
                  "train.max_stesp: unknown key, did you mean 'max_steps'?");
}

// 0% passkey retrieval from a model that never practised it points to the
// practice recipe.
TEST_F(FirstHour, AnUnpractisedPasskeyScorePointsToThePractice) {
  ASSERT_EQ(Train("run").status, 0);
  const Result r =
      Run("eval --checkpoint " + Quote(dir_.Path("run")) +
          " --passkey --passkey-lengths 128 --trials 1 --depths 0.5 "
          "--passkey-plot " +
          Quote(dir_.Path("passkey.png")));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_CONTAINS(r.out, "     128      0%");
  EXPECT_CONTAINS(r.out, "data.passkey_fraction");
  EXPECT_CONTAINS(r.out, "docs/context-extension.md");
}

// Retrieval that fails everywhere says why, as the passkey does, and is
// drawn like the passkey: a heat map of each task's lengths by depth.
TEST_F(FirstHour, AnUnansweredRetrievalSaysWhyAndIsDrawn) {
  ASSERT_EQ(Train("run").status, 0);
  const std::string plot = dir_.Path("retrieval.png");
  const Result r = Run("eval --checkpoint " + Quote(dir_.Path("run")) +
                       " --retrieval niah_single --passkey-lengths 384 "
                       "--trials 1 --depths 0,1 --retrieval-plot " +
                       Quote(plot));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_CONTAINS(r.out, "     384      0%      0%");
  EXPECT_CONTAINS(r.out, "no retrieval question answered");
  EXPECT_CONTAINS(r.out, "--passkey");
  EXPECT_CONTAINS(r.out, "docs/context-extension.md");
  if (train::GnuplotAvailable()) {
    EXPECT_CONTAINS(r.out, "plot         " + plot);
    EXPECT_EQ(train::ReadFile(plot).substr(1, 3), "PNG");
  } else {
    EXPECT_CONTAINS(r.out, "gnuplot is not installed");
  }
  // Its plot is an output like the others: rotor replaces a plot it drew,
  // never a user's file without --force.
  const std::string again = "eval --checkpoint " + Quote(dir_.Path("run")) +
                            " --retrieval niah_single --passkey-lengths 384 "
                            "--trials 1 --depths 0 --retrieval-plot " +
                            Quote(plot);
  if (train::GnuplotAvailable()) {
    EXPECT_EQ(Run(again).status, 0);
    dir_.Write("retrieval.png", "the user's file");
    const Result refused = Run(again);
    EXPECT_EQ(refused.status, 1);
    EXPECT_CONTAINS(refused.err, "--retrieval-plot");
    EXPECT_EQ(train::ReadFile(plot), "the user's file");
  }
}

// Errors are prefixed with the command once.
TEST_F(FirstHour, TheCommandPrefixIsPrintedOnce) {
  ASSERT_EQ(Train("run").status, 0);
  const std::string folder = dir_.Path("exported");
  ASSERT_EQ(Run("export --checkpoint " + Quote(dir_.Path("run")) +
                " --output " + Quote(folder))
                .status,
            0);
  Result r = Run("eval --checkpoint " + Quote(folder));
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "rotor eval: error: " + folder +
                             " is a Hugging Face model folder");
  EXPECT_LACKS(r.err, "rotor eval: error: rotor eval:");
  r = Run("export --output " + Quote(dir_.Path("x")));
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "rotor export: error: give --checkpoint");
}

// `rotor rope --config` takes what train and eval take: a run's folder, a
// checkpoint, a Hugging Face folder or its config.json, and a fine-tuning
// config whose model: section amends train.init_from's config.json, with
// key.path=value overrides as eval has them.
TEST_F(FirstHour, RopeLooksAtRealModels) {
  ASSERT_EQ(Train("run").status, 0);
  const std::string run = dir_.Path("run");
  const std::string hf = dir_.Path("models/tiny");
  ASSERT_EQ(Run("export --checkpoint " + Quote(run) + " --output " + Quote(hf))
                .status,
            0);
  // The tiny model: head_dim 32 / 4 = 8, pre-trained at 64 positions.
  for (const std::string& config :
       {run, run + "/checkpoints/step_00000004", hf, hf + "/config.json"}) {
    SCOPED_TRACE(config);
    const Result r = Run("rope --config " + Quote(config) + " --json");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_CONTAINS(r.out, "\"rope_type\": \"default\"");
    EXPECT_CONTAINS(r.out, "\"head_dim\": 8,");
    EXPECT_CONTAINS(r.out, "\"max_position_embeddings\": 64,");
  }
  // A fine-tune of the folder, 4x with YaRN: the model is config.json's,
  // amended (as configs/extend/hf-yarn-4x.yaml has it).
  const std::string extend = dir_.Write(
      "extend.yaml",
      "output_dir: " + dir_.Path("extended") +
          "\nmodel:\n  max_position_embeddings: 256\n  rope_scaling:\n"
          "    rope_type: yarn\n    factor: 4\n"
          "    original_max_position_embeddings: 64\n"
          "data:\n  path: " +
          data_ + "\ntrain:\n  init_from: " + hf + "\n  seq_len: 256\n");
  Result r = Run("rope --config " + Quote(extend) + " --json");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_CONTAINS(r.out, "\"rope_type\": \"yarn\"");
  EXPECT_CONTAINS(r.out, "\"head_dim\": 8,");
  EXPECT_CONTAINS(r.out, "\"max_position_embeddings\": 256,");
  // Overrides, as eval takes them.
  r = Run("rope --config " + Quote(run) +
          " model.rope_scaling.rope_type=linear model.rope_scaling.factor=2 "
          "--json");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_CONTAINS(r.out, "\"rope_type\": \"linear\"");
  // The explorer too, a model beside its extension.
  r = Run("rope --config " + Quote(run) + " --compare " + Quote(extend) +
          " --html " + Quote(dir_.Path("explorer.html")));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::is_regular_file(dir_.Path("explorer.html")));
  // The recipe's own config names its missing folder, as train does.
  r = Run("rope --config " + Quote(std::string(ROTOR_SOURCE_DIR) +
                                   "/configs/extend/hf-yarn-4x.yaml"));
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "train.init_from: runs/hf-extend/base does not exist");
  EXPECT_LACKS(r.err, "Is a directory");
  // A folder that is none of them says so.
  r = Run("rope --config " + Quote(dir_.Path("models")));
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "is neither a checkpoint folder");
}

}  // namespace
}  // namespace rotor::tools
