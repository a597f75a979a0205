// The first hour of a new user (issue #29): build/rotor run as a user runs
// it, on the mistakes a newcomer makes first, checking that each message
// points the right way; `rotor rope` on real models; the flag names shared
// with Hugging Face.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/temp_dir.h"
#include "tests/test_util.h"
#include "tests/tools/run_rotor.h"
#include "tests/train/train_test_util.h"
#include "train/io/atomic_file.h"

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

}  // namespace
}  // namespace rotor::tools
