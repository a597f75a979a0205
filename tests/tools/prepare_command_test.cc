// build/rotor prepare as a user runs it: exit status 0 on success, 2 for
// bad flags, 1 for bad data, with the message on stderr.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "tests/temp_dir.h"
#include "tests/tools/run_rotor.h"
#include "train/io/atomic_file.h"

namespace rotor::tools {
namespace {

using Result = test::RotorResult;

// Runs `build/rotor prepare ARGS` (ARGS already shell-quoted).
Result RunRotorPrepare(const test::TempDir& dir, const std::string& args) {
  return test::RunRotor(dir, "prepare " + args);
}

TEST(PrepareCommand, ExitStatusesAndMessages) {
  test::TempDir dir;
  dir.Write("in/a.txt", "alpha");
  dir.Write("in/b.txt", "bravo");
  const std::string in = "'" + dir.Path("in") + "'";
  const std::string out = "'" + dir.Path("out") + "'";

  Result r = RunRotorPrepare(dir, "--help");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("--val-fraction"), std::string::npos);

  r = RunRotorPrepare(dir, "--input " + in + " --output " + out + " --bogus");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("rotor prepare: unknown flag '--bogus' (see 'rotor "
                       "prepare --help')"),
            std::string::npos)
      << r.err;

  r = RunRotorPrepare(
      dir, "--input " + in + " --output " + out + " --val-fraction 2");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--val-fraction: must be greater than 0"),
            std::string::npos)
      << r.err;

  r = RunRotorPrepare(dir,
                      "--input '" + dir.Path("none") + "' --output " + out);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("does not exist"), std::string::npos) << r.err;

  r = RunRotorPrepare(dir, "--input " + in + " --output " + out);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("train 1 documents"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("val 1 documents"), std::string::npos) << r.out;

  // A second run refuses to overwrite and leaves the output as it was.
  const std::string before = train::ReadFile(dir.Path("out/meta.json"));
  r = RunRotorPrepare(dir, "--input " + in + " --output " + out);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("--force"), std::string::npos) << r.err;
  EXPECT_EQ(train::ReadFile(dir.Path("out/meta.json")), before);
}

// Both flag forms, --input with several paths and used twice.
TEST(PrepareCommand, ReadsFlagsInBothForms) {
  test::TempDir dir;
  dir.Write("a", "alpha");
  dir.Write("b/x.txt", "bravo");
  dir.Write("c", "charlie");
  const Result r = RunRotorPrepare(
      dir, "--input '" + dir.Path("a") + "' '" + dir.Path("b/") +
               "' --output='" + dir.Path("out") +
               "' --val-fraction 0.4 --seed=042 --format text --force "
               "--input='" +
               dir.Path("c") + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string meta = train::ReadFile(dir.Path("out/meta.json"));
  for (const std::string& input : {"a", "b/", "c"}) {
    EXPECT_NE(meta.find("\"" + dir.Path(input) + "\""), std::string::npos)
        << meta;
  }
  EXPECT_NE(meta.find("\"val_fraction\": 0.4"), std::string::npos) << meta;
  EXPECT_NE(meta.find("\"seed\": 42,"), std::string::npos) << meta;
  EXPECT_NE(meta.find("\"source_format\": \"text\""), std::string::npos);
}

TEST(PrepareCommand, RejectsBadFlagsNamingThem) {
  test::TempDir dir;
  struct Case {
    std::string args;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {"--input a --ouput o",
            "unknown flag '--ouput', did you mean '--output'?"},
           {"--output o", "--input is required"},
           {"--input a", "--output is required"},
           {"--output o --input", "--input: 1 required PATH missing"},
           {"--input a --output", "--output: 1 required DIR missing"},
           {"--input '' --output o", "--input: needs a value"},
           {"--input a --output o --val-fraction 5%",
            "--val-fraction: expects a number, got '5%'"},
           {"--input a --output o --val-fraction 0",
            "--val-fraction: must be greater than 0 and less than 1, got 0"},
           {"--input a --output o --seed -3",
            "--seed: expects an integer >= 0, got '-3'"},
           {"--input a --output o --format csv",
            "--format: csv not in {text,brown}"},
           {"--input a --output o --force=yes",
            "force was given a disallowed flag override"},
       }) {
    SCOPED_TRACE(c.args);
    const Result r = RunRotorPrepare(dir, c.args);
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find("rotor prepare: " + c.message +
                         " (see 'rotor "
                         "prepare --help')"),
              std::string::npos)
        << r.err;
  }
}

}  // namespace
}  // namespace rotor::tools
