// Every rotor command that reads YAML rejects a repeated key, naming the
// file, the line and the key (yaml-cpp alone would keep one of the two
// values without a word). The YAML documents each command reads: a training
// config (train), --rope-from (eval), a checkpoint's config.yaml (eval and
// generate), --config (rope) and a report config (extend-report).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/temp_dir.h"

namespace rotor::tools {
namespace {

struct Outcome {
  int status = -1;
  std::string err;
};

// Runs `build/rotor ARGS` with stdout and stderr captured.
Outcome RunRotor(const test::TempDir& dir, const std::string& args) {
  const std::string err = dir.Path("stderr");
  const std::string command = std::string(ROTOR_BINARY_DIR) + "/rotor " + args +
                              " >/dev/null 2>'" + err + "' </dev/null";
  const int raw = std::system(command.c_str());
  Outcome outcome;
  outcome.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  std::ifstream in(err);
  std::stringstream text;
  text << in.rdbuf();
  outcome.err = text.str();
  return outcome;
}

// A model section with max_position_embeddings given twice (line 4).
constexpr char kModelWithRepeatedKey[] =
    "model:\n"
    "  hidden_size: 16\n"
    "  max_position_embeddings: 64\n"
    "  max_position_embeddings: 128\n"
    "  num_attention_heads: 2\n";

void ExpectRepeatedKeyError(const Outcome& outcome, const std::string& file) {
  EXPECT_EQ(outcome.status, 1) << outcome.err;
  EXPECT_NE(outcome.err.find(file + ":4:"), std::string::npos) << outcome.err;
  EXPECT_NE(outcome.err.find("model.max_position_embeddings: duplicate key"),
            std::string::npos)
      << outcome.err;
}

TEST(RepeatedYamlKey, RejectedByEveryCommandThatReadsYaml) {
  test::TempDir dir;
  const std::string config = dir.Write("config.yaml", kModelWithRepeatedKey);
  // A checkpoint folder whose saved config repeats a key: eval and generate
  // read config.yaml before the weights.
  dir.Write("checkpoint/model.safetensors", "");
  const std::string saved =
      dir.Write("checkpoint/config.yaml", kModelWithRepeatedKey);
  const std::string checkpoint = dir.Path("checkpoint");
  const std::string report = dir.Write(
      "report.yaml",
      "base:\n  config: b.yaml\nfactor: 4\nfactor: 8\nmethods: [yarn]\n");

  ExpectRepeatedKeyError(RunRotor(dir, "train '" + config + "'"), config);
  ExpectRepeatedKeyError(RunRotor(dir, "rope --config '" + config + "'"),
                         config);
  ExpectRepeatedKeyError(
      RunRotor(dir, "eval --checkpoint '" + checkpoint + "'"), saved);
  ExpectRepeatedKeyError(
      RunRotor(dir, "generate --checkpoint '" + checkpoint + "' --prompt x"),
      saved);

  const Outcome extend = RunRotor(dir, "extend-report '" + report + "'");
  EXPECT_EQ(extend.status, 1) << extend.err;
  EXPECT_NE(extend.err.find(report + ":4:"), std::string::npos) << extend.err;
  EXPECT_NE(extend.err.find("factor: duplicate key"), std::string::npos)
      << extend.err;
}

TEST(RepeatedYamlKey, RejectedInEvalRopeFrom) {
  test::TempDir dir;
  const std::string rope_from = dir.Write("yarn.yaml", kModelWithRepeatedKey);
  // --rope-from is read before the checkpoint is loaded.
  dir.Write("checkpoint/model.safetensors", "");
  dir.Write("checkpoint/config.yaml", "model: {}\n");
  ExpectRepeatedKeyError(
      RunRotor(dir, "eval --checkpoint '" + dir.Path("checkpoint") +
                        "' --rope-from '" + rope_from + "'"),
      rope_from);
}

}  // namespace
}  // namespace rotor::tools
