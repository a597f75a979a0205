// Every rotor command that reads YAML rejects a repeated key, naming the
// file, the line and the key (yaml-cpp alone would keep one of the two
// values without a word), and refuses anchors at once, naming file:line
// (nested aliases, the "billion laughs", kept them busy for minutes). The YAML
// documents each command reads: a training config (train), --rope-from (eval),
// a checkpoint's config.yaml (eval and generate), --config (rope) and a report
// config (extend-report).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/temp_dir.h"
#include "tests/train/train_test_util.h"

namespace rotor::tools {
namespace {

struct Outcome {
  int status = -1;
  std::string err;
};

// Runs `build/rotor ARGS` with stdout and stderr captured.
// `prefix` goes before the program (e.g. "timeout 30 ").
Outcome RunRotor(const test::TempDir& dir, const std::string& args,
                 const std::string& prefix = "") {
  const std::string err = dir.Path("stderr");
  const std::string command = prefix + std::string(ROTOR_BINARY_DIR) +
                              "/rotor " + args + " >/dev/null 2>'" + err +
                              "' </dev/null";
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

TEST(HostileYaml, BillionLaughsRefusedAtOnceByEveryCommand) {
  test::TempDir dir;
  const std::string laughs =
      dir.Write("laughs.yaml", test::BillionLaughsYaml());
  dir.Write("checkpoint/model.safetensors", "");
  const std::string saved =
      dir.Write("checkpoint/config.yaml", test::BillionLaughsYaml());
  const std::string checkpoint = dir.Path("checkpoint");
  dir.Write("plain/model.safetensors", "");
  dir.Write("plain/config.yaml", "model: {}\n");
  // `timeout` turns a hang into a failure instead of a stuck suite.
  const std::vector<std::pair<std::string, std::string>> runs = {
      {"train '" + laughs + "'", laughs},
      {"rope --config '" + laughs + "'", laughs},
      {"extend-report '" + laughs + "'", laughs},
      {"eval --checkpoint '" + checkpoint + "'", saved},
      {"generate --checkpoint '" + checkpoint + "' --prompt x", saved},
      {"eval --checkpoint '" + dir.Path("plain") + "' --rope-from '" + laughs +
           "'",
       laughs},
  };
  for (const auto& [args, file] : runs) {
    SCOPED_TRACE(args);
    const Outcome outcome = RunRotor(dir, args, "timeout 30 ");
    EXPECT_EQ(outcome.status, 1) << outcome.err;
    EXPECT_NE(outcome.err.find(file + ":1:4: an anchor (&name)"),
              std::string::npos)
        << outcome.err;
  }
}

}  // namespace
}  // namespace rotor::tools
