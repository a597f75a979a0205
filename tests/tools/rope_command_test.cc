// `rotor rope` end to end: runs build/rotor (ROTOR_BINARY_DIR/rotor) and
// checks its JSON and text output, exit statuses, error messages and --plot.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "nn/rope_scaling.h"
#include "train/config/model_config.h"

namespace rotor::tools {
namespace {

struct RunResult {
  int status = -1;
  std::string output;  // stdout and stderr
};

RunResult RunRotor(const std::string& args) {
  const std::string command =
      std::string("'") + ROTOR_BINARY_DIR + "/rotor' " + args + " 2>&1";
  RunResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) {
    result.output.append(buffer, n);
  }
  const int status = pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::string ConfigPath(const std::string& name) {
  return std::string(ROTOR_SOURCE_DIR) + "/configs/rope/" + name + ".yaml";
}

// The numbers of the JSON value at `"key":`: a list gives one row, a list of
// lists one row per inner list, a number a single row of one.
std::vector<std::vector<double>> JsonNumbers(const std::string& json,
                                             const std::string& key) {
  std::vector<std::vector<double>> rows;
  size_t p = json.find("\"" + key + "\":");
  if (p == std::string::npos) return rows;
  p += key.size() + 3;
  int depth = 0;
  const char* text = json.c_str();
  while (p < json.size()) {
    const char c = json[p];
    if (c == '[') {
      ++depth;
      if (depth == 1 || depth == 2) rows.emplace_back();
      if (depth == 2 && rows.size() == 2 && rows[0].empty()) {
        rows.erase(rows.begin());  // the outer list holds only rows
      }
      ++p;
    } else if (c == ']') {
      if (--depth == 0) break;
      ++p;
    } else if (c == ',' || c == ' ' || c == '\n') {
      if (depth == 0 && c == ',') break;
      ++p;
    } else {
      char* end = nullptr;
      const double value = std::strtod(text + p, &end);
      if (end == text + p) break;
      if (rows.empty()) rows.emplace_back();
      rows.back().push_back(value);
      p = end - text;
      if (depth == 0) break;
    }
  }
  return rows;
}

TEST(RopeCommand, JsonMatchesTheLibraryAndHandValues) {
  const RunResult run = RunRotor("rope --config '" + ConfigPath("yarn") +
                                 "' --positions 0,1,2047 --json");
  ASSERT_EQ(run.status, 0) << run.output;
  EXPECT_NE(run.output.find("\"rope_type\": \"yarn\""), std::string::npos);
  EXPECT_EQ(JsonNumbers(run.output, "head_dim")[0][0], 128.0);
  EXPECT_EQ(JsonNumbers(run.output, "rotary_dim")[0][0], 128.0);
  const double a = JsonNumbers(run.output, "attention_factor")[0][0];
  EXPECT_NEAR(a, 0.1 * std::log(8.0) + 1.0, 1e-15);
  EXPECT_EQ(JsonNumbers(run.output, "positions"),
            (std::vector<std::vector<double>>{{0, 1, 2047}}));

  // %.17g round-trips: the printed frequencies are the library's, bit for bit.
  const train::ModelConfig config = train::LoadModelConfig(ConfigPath("yarn"));
  const RopeFrequencies f = ComputeRopeFrequencies(config.rope, 65536);
  const std::vector<std::vector<double>> inv_freq =
      JsonNumbers(run.output, "inv_freq");
  ASSERT_EQ(inv_freq.size(), 1u);
  EXPECT_EQ(inv_freq[0], f.inv_freq);

  const std::vector<std::vector<double>> cos = JsonNumbers(run.output, "cos");
  const std::vector<std::vector<double>> sin = JsonNumbers(run.output, "sin");
  ASSERT_EQ(cos.size(), 3u);
  ASSERT_EQ(sin.size(), 3u);
  for (size_t row = 0; row < 3; ++row) {
    ASSERT_EQ(cos[row].size(), 64u);
    ASSERT_EQ(sin[row].size(), 64u);
  }
  // Position 0: a and 0; position 2047, pair 0 (inv_freq 1): a cos(2047).
  EXPECT_EQ(cos[0][10], a);
  EXPECT_EQ(sin[0][10], 0.0);
  EXPECT_NEAR(cos[2][0], a * std::cos(2047.0), 1e-15);
  EXPECT_NEAR(sin[2][0], a * std::sin(2047.0), 1e-15);
  // The slowest pair is interpolated: angle 2047 * theta_63 / 8.
  const double theta63 = std::pow(5e5, -126.0 / 128.0);
  EXPECT_NEAR(sin[2][63], a * std::sin(2047.0 * theta63 / 8.0), 1e-15);
}

TEST(RopeCommand, TextShowsResolvedParametersAndTables) {
  const RunResult yarn =
      RunRotor("rope --config '" + ConfigPath("yarn") + "' --positions 5");
  ASSERT_EQ(yarn.status, 0) << yarn.output;
  EXPECT_NE(yarn.output.find("ramp (pair indices)               18 .. 35"),
            std::string::npos)
      << yarn.output;
  EXPECT_NE(yarn.output.find("attention_factor a                "
                             "1.2079441541679836"),
            std::string::npos);
  // The effective scale per pair: theta_i / inv_freq_i, 1 for pair 0
  // (kept), 8 for pair 63 (fully interpolated).
  EXPECT_NE(yarn.output.find("Effective scale per pair"), std::string::npos);
  EXPECT_NE(yarn.output.find("\n     0  1             1             1  "),
            std::string::npos)
      << yarn.output;
  const size_t row63 = yarn.output.find("\n    63  ");
  ASSERT_NE(row63, std::string::npos);
  const std::string line =
      yarn.output.substr(row63 + 1, yarn.output.find('\n', row63 + 1) - row63);
  EXPECT_NE(line.find("  8           "), std::string::npos) << line;
  EXPECT_NE(yarn.output.find("Context-extension checks"), std::string::npos);
  EXPECT_NE(yarn.output.find("  position 5\n"), std::string::npos);

  const RunResult llama3 =
      RunRotor("rope --config '" + ConfigPath("llama3") + "'");
  ASSERT_EQ(llama3.status, 0) << llama3.output;
  EXPECT_NE(llama3.output.find("< 2048 unchanged, > 8192 divided by factor"),
            std::string::npos)
      << llama3.output;
  // Default positions 0, 1, N-1 with N = max_position_embeddings.
  EXPECT_NE(llama3.output.find("  position 131071\n"), std::string::npos);
}

TEST(RopeCommand, SeqLenDrivesDynamicAndLongRope) {
  const RunResult at_l0 =
      RunRotor("rope --config '" + ConfigPath("dynamic") + "' --json");
  const RunResult longer = RunRotor("rope --config '" + ConfigPath("dynamic") +
                                    "' --seq-len 65536 --json");
  ASSERT_EQ(at_l0.status, 0) << at_l0.output;
  ASSERT_EQ(longer.status, 0) << longer.output;
  EXPECT_EQ(JsonNumbers(at_l0.output, "base")[0][0], 500000.0);
  // 5e5 * (8 * 65536/8192 - 7)^(128/126) = 5e5 * 57^(128/126).
  EXPECT_NEAR(JsonNumbers(longer.output, "base")[0][0],
              5e5 * std::pow(57.0, 128.0 / 126.0), 1e-6);

  const RunResult short_run =
      RunRotor("rope --config '" + ConfigPath("longrope") + "' --seq-len 8192");
  const RunResult long_run =
      RunRotor("rope --config '" + ConfigPath("longrope") + "' --seq-len 8193");
  EXPECT_NE(short_run.output.find("short_factor (length <= original)"),
            std::string::npos);
  EXPECT_NE(long_run.output.find("long_factor (length > original)"),
            std::string::npos);
}

TEST(RopeCommand, HelpAndFlagErrors) {
  const RunResult help = RunRotor("rope --help");
  EXPECT_EQ(help.status, 0);
  for (const char* flag :
       {"--config PATH", "--positions", "--seq-len", "--json", "--plot"}) {
    EXPECT_NE(help.output.find(flag), std::string::npos) << flag;
  }
  const RunResult listed = RunRotor("--help");
  EXPECT_NE(listed.output.find("  rope "), std::string::npos) << listed.output;

  struct Case {
    const char* args;
    const char* message;
  };
  for (const Case& c : {
           Case{"rope --frobnicate", "unknown flag '--frobnicate'"},
           Case{"rope --config", "--config: 1 required PATH missing"},
           Case{"rope --config x.yaml --seq-len",
                "--seq-len: 1 required N missing"},
           Case{"rope --config x.yaml --seq-len 12k",
                "--seq-len: expects an integer in [1, 16777216], got '12k'"},
           Case{"rope --config x.yaml --positions 0,-3",
                "--positions: expects an integer in [0, 16777215], got '-3'"},
           Case{"rope --config x.yaml --positions -1",
                "--positions: expects an integer in [0, 16777215], got '-1'"},
           Case{"rope --config x.yaml --positions 1,x",
                "--positions: expects an integer in [0, 16777215], got 'x'"},
           Case{"rope --config x.yaml --plot ''", "--plot: needs a value"},
           Case{"rope --config x.yaml --json=1",
                "json was given a disallowed flag override"},
           Case{"rope --positions 1",
                "--config (or --report with --html) is required"},
       }) {
    const RunResult run = RunRotor(c.args);
    EXPECT_EQ(run.status, 2) << c.args << "\n" << run.output;
    EXPECT_NE(run.output.find(c.message), std::string::npos) << c.args << "\n"
                                                             << run.output;
    EXPECT_NE(run.output.find("(see 'rotor rope --help')"), std::string::npos);
  }
}

TEST(RopeCommand, ConfigErrorsExitOneWithFileLineAndKey) {
  char path[] = "/tmp/rotor-rope-test-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  {
    std::ofstream out(path);
    out << "model:\n  head_dim: 64\n  max_position_embeddings: 2048\n"
           "  rope_scaling:\n    rope_type: llama3\n    factor: 0.5\n";
  }
  const RunResult run = RunRotor(std::string("rope --config ") + path);
  std::remove(path);
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.output.find(std::string(path) +
                            ":6:13: model.rope_scaling.factor: must be a "
                            "finite number >= 1, got 0.5"),
            std::string::npos)
      << run.output;
  const RunResult missing = RunRotor("rope --config /nonexistent.yaml");
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.output.find("cannot read config file"), std::string::npos);
}

// A config file in /tmp with `text`, removed at the end of the scope.
class TempConfig {
 public:
  explicit TempConfig(const std::string& text) {
    const int fd = mkstemp(path_);
    if (fd >= 0) close(fd);
    std::ofstream(path_) << text;
  }
  ~TempConfig() { std::remove(path_); }
  std::string path() const { return path_; }

 private:
  char path_[64] = "/tmp/rotor-rope-check-XXXXXX";
};

// A training config from scratch: YaRN 2x of 16 positions, trained at
// `seq_len` of max_position_embeddings 64.
std::string YarnTrainingConfig(int seq_len) {
  return "output_dir: /tmp/rotor-rope-check-never-written\n"
         "model:\n  vocab_size: 257\n  hidden_size: 32\n"
         "  intermediate_size: 64\n  num_hidden_layers: 1\n"
         "  num_attention_heads: 4\n  max_position_embeddings: 64\n"
         "  rope_scaling: {rope_type: yarn, factor: 2, "
         "original_max_position_embeddings: 16}\n"
         "data:\n  path: brown\ntrain:\n  seq_len: " +
         std::to_string(seq_len) + "\n  batch_size: 1\n  max_steps: 1\n";
}

TEST(RopeCommand, CheckExitsOneOnErrorsAndZeroWithWarnings) {
  // seq_len 64 > 2 x 16: an error (and the factor disagrees with 64 / 16).
  const TempConfig wrong(YarnTrainingConfig(64));
  RunResult run = RunRotor("rope --check " + wrong.path());
  EXPECT_EQ(run.status, 1) << run.output;
  EXPECT_NE(run.output.find("  error: train.seq_len 64 is beyond the 32 "
                            "positions model.rope_scaling.factor 2 x "
                            "model.rope_scaling.original_max_position_"
                            "embeddings 16 covers"),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("set model.rope_scaling.factor: 4"),
            std::string::npos);
  EXPECT_NE(run.output.find("  warning: model.rope_scaling.factor 2 "
                            "disagrees with"),
            std::string::npos);
  EXPECT_NE(run.output.find("rotor rope: error: " + wrong.path() +
                            ": 1 context-extension error"),
            std::string::npos)
      << run.output;
  // seq_len 32: only the warning, status 0.
  const TempConfig suspicious(YarnTrainingConfig(32));
  run = RunRotor("rope --check " + suspicious.path());
  EXPECT_EQ(run.status, 0) << run.output;
  EXPECT_NE(run.output.find("  warning: model.rope_scaling.factor 2"),
            std::string::npos);
  EXPECT_EQ(run.output.find("error"), std::string::npos) << run.output;
  // A consistent shipped config.
  run = RunRotor("rope --check '" + ConfigPath("yarn") + "'");
  EXPECT_EQ(run.status, 0) << run.output;
  EXPECT_NE(run.output.find(": no context-extension findings"),
            std::string::npos)
      << run.output;
  // --seq-len is a length it is used at; --check excludes --config.
  run = RunRotor("rope --check '" + ConfigPath("yarn") + "' --seq-len 70000");
  EXPECT_EQ(run.status, 0);
  EXPECT_NE(run.output.find("warning: --seq-len 70000 is beyond "
                            "model.max_position_embeddings 65536"),
            std::string::npos)
      << run.output;
  run = RunRotor("rope --check x.yaml --config y.yaml");
  EXPECT_EQ(run.status, 2) << run.output;
  // The findings are in --json too.
  run = RunRotor("rope --config " + wrong.path() + " --json");
  EXPECT_EQ(run.status, 0) << run.output;
  EXPECT_NE(run.output.find("\"severity\": \"error\""), std::string::npos);
  EXPECT_NE(run.output.find("\"train.seq_len\""), std::string::npos);
}

// Scalings that leave float32 or rotor's positions fail --check (rope_theta
// 1e300, a yarn factor of 1e30 and mscale 1e30 all passed).
TEST(RopeCommand, CheckFailsOnScalingsBeyondFloat32OrThePositions) {
  const std::string model =
      "model:\n  vocab_size: 257\n  hidden_size: 32\n"
      "  intermediate_size: 64\n  num_hidden_layers: 1\n"
      "  num_attention_heads: 4\n  max_position_embeddings: 256\n";
  const std::string yarn =
      "  rope_scaling: {rope_type: yarn, original_max_position_embeddings: "
      "64, ";
  const struct {
    std::string lines;
    std::string message;
  } cases[] = {
      {"  rope_theta: 1.0e+300\n",
       "error: model.rope_theta 1e+300 is beyond float32's largest value"},
      {yarn + "factor: 1.0e+30}\n",
       "error: model.rope_scaling.factor 1e+30 x "
       "model.rope_scaling.original_max_position_embeddings 64 = 6.4e+31 "
       "positions, beyond rotor's longest sequence of 16777216"},
      {yarn + "factor: 4, mscale: 1.0e+30, mscale_all_dim: 1}\n",
       "gives is beyond 2^64"},
  };
  for (const auto& c : cases) {
    const TempConfig config(model + c.lines);
    const RunResult run = RunRotor("rope --check " + config.path());
    EXPECT_EQ(run.status, 1) << run.output;
    EXPECT_NE(run.output.find(c.message), std::string::npos) << run.output;
  }
}

// rotor train refuses a lint error before it builds anything, naming the
// config file.
TEST(RopeCommand, TrainRefusesALintErrorBeforeTraining) {
  const TempConfig wrong(YarnTrainingConfig(64));
  const RunResult run = RunRotor("train " + wrong.path());
  EXPECT_EQ(run.status, 1) << run.output;
  EXPECT_NE(run.output.find("rotor train: error: " + wrong.path() +
                            ": train.seq_len 64 is beyond the 32 positions"),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("rotor train: warning: " + wrong.path() +
                            ": model.rope_scaling.factor 2 disagrees"),
            std::string::npos)
      << run.output;
  EXPECT_EQ(run.output.find("step"), std::string::npos) << run.output;
  EXPECT_FALSE(std::ifstream("/tmp/rotor-rope-check-never-written/"
                             "resolved_config.yaml")
                   .good());
}

TEST(RopeCommand, PlotWritesAPng) {
  if (std::system("gnuplot --version > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "gnuplot not installed";
  }
  char path[] = "/tmp/rotor-rope-plot-XXXXXX.png";
  const int fd = mkstemps(path, 4);
  ASSERT_GE(fd, 0);
  close(fd);
  const RunResult run = RunRotor("rope --config '" + ConfigPath("llama3") +
                                 "' --json --force --plot " + path);
  EXPECT_EQ(run.status, 0) << run.output;
  std::ifstream png(path, std::ios::binary);
  std::string magic(8, '\0');
  png.read(&magic[0], 8);
  std::remove(path);
  EXPECT_EQ(magic, std::string("\x89PNG\r\n\x1a\n", 8));
}

// --html and --plot never replace a file of the model --config names, --force
// or not: rope reads only its config, but its weights and tokenizer are as
// much the command's inputs (they once were replaced by the page or plot).
TEST(RopeCommand, OutputsNeverReplaceTheNamedModelsFiles) {
  char folder[] = "/tmp/rotor-rope-model-XXXXXX";
  ASSERT_NE(mkdtemp(folder), nullptr);
  const std::string dir = folder;
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name) << text;
    return dir + "/" + name;
  };
  write("config.json",
        R"({"model_type": "llama", "architectures": ["LlamaForCausalLM"],
            "hidden_size": 64, "intermediate_size": 128,
            "num_attention_heads": 4, "num_key_value_heads": 4,
            "num_hidden_layers": 2, "vocab_size": 300,
            "max_position_embeddings": 256, "rope_theta": 10000.0})");
  const std::string weights = write("model.safetensors", "weights");
  const std::string tokenizer = write("tokenizer.json", "tokenizer");
  for (const std::string& config : {dir, dir + "/config.json"}) {
    for (const std::string& target : {weights, tokenizer}) {
      const RunResult html =
          RunRotor("rope --config '" + config + "' --force --html " + target);
      EXPECT_EQ(html.status, 1) << html.output;
      EXPECT_NE(
          html.output.find("--html " + target + " is an input of this command"),
          std::string::npos)
          << html.output;
    }
  }
  std::ifstream in(weights);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "weights");
  // A file a command wrote beside the model is no file of the model.
  const std::string page = write("explorer.json", "an earlier output");
  const RunResult replaced =
      RunRotor("rope --config '" + dir + "' --force --html " + page);
  EXPECT_EQ(replaced.status, 0) << replaced.output;
  std::filesystem::remove_all(dir);
}

// rope --check on a fine-tuning config says when it could not read the base
// (a relative train.init_from is taken from the working folder: a shipped
// config checked from elsewhere once passed silently), and flags a
// rope_theta other than the base's (such a run started at loss 2.04 where
// its base ended at 1.41).
TEST(RopeCommand, CheckComparesWithTheBaseOrSaysItCouldNot) {
  char folder[] = "/tmp/rotor-rope-base-XXXXXX";
  ASSERT_NE(mkdtemp(folder), nullptr);
  const std::string dir = folder;
  std::filesystem::create_directories(dir + "/base");
  std::ofstream(dir + "/base/config.json")
      << R"({"model_type": "llama", "architectures": ["LlamaForCausalLM"],
             "hidden_size": 64, "intermediate_size": 128,
             "num_attention_heads": 4, "num_key_value_heads": 4,
             "num_hidden_layers": 2, "vocab_size": 300,
             "max_position_embeddings": 256, "rope_theta": 10000.0})";
  std::ifstream shipped(std::string(ROTOR_SOURCE_DIR) +
                        "/configs/extend/yarn-4x.yaml");
  const std::string text(std::istreambuf_iterator<char>(shipped), {});
  auto check = [&](const std::string& init_from, const std::string& theta) {
    std::string config = text;
    config.replace(config.find("init_from: runs/default"),
                   std::string("init_from: runs/default").size(),
                   "init_from: " + init_from);
    config.replace(config.find("rope_theta: 10000.0"),
                   std::string("rope_theta: 10000.0").size(),
                   "rope_theta: " + theta);
    std::ofstream(dir + "/ft.yaml") << config;
    return RunRotor("rope --check '" + dir + "/ft.yaml'");
  };
  const RunResult relative = check("nowhere/base", "10000.0");
  EXPECT_EQ(relative.status, 0) << relative.output;
  EXPECT_NE(relative.output.find(
                "warning: could not check the scaling against the base "
                "model: train.init_from nowhere/base does not exist (a "
                "relative path is taken from the working folder, "),
            std::string::npos)
      << relative.output;
  const RunResult same = check(dir + "/base", "10000.0");
  EXPECT_EQ(same.output.find("rope_theta"), std::string::npos) << same.output;
  EXPECT_EQ(same.output.find("could not check"), std::string::npos);
  const RunResult other = check(dir + "/base", "500000.0");
  EXPECT_NE(
      other.output.find("warning: model.rope_theta is 500000, but " + dir +
                        "/base/config.json says the base was trained "
                        "with 10000"),
      std::string::npos)
      << other.output;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace rotor::tools
