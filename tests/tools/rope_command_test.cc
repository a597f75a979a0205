// `rotor rope` end to end: runs build/rotor (ROTOR_BINARY_DIR/rotor) and
// checks its JSON and text output, exit statuses, error messages and --plot.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
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
  // Row 63: wavelength and ratio 1/8 (fully interpolated).
  EXPECT_NE(yarn.output.find("    63  "), std::string::npos);
  EXPECT_NE(yarn.output.find("  0.125\n"), std::string::npos);
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

}  // namespace
}  // namespace rotor::tools
