// build/rotor prepare as a user runs it: exit status 0 on success, 2 for
// bad flags, 1 for bad data, with the message on stderr.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <string>

#include "tests/temp_dir.h"
#include "train/io/atomic_file.h"

namespace rotor::tools {
namespace {

struct Result {
  int status = -1;
  std::string out;
  std::string err;
};

// Runs `build/rotor prepare ARGS` (ARGS already shell-quoted).
Result RunRotorPrepare(const test::TempDir& dir, const std::string& args) {
  const std::string command =
      std::string("'") + ROTOR_BINARY_DIR + "/rotor' prepare " + args + " >'" +
      dir.Path("stdout") + "' 2>'" + dir.Path("stderr") + "'";
  const int raw = std::system(command.c_str());
  Result result;
  if (raw != -1 && WIFEXITED(raw)) result.status = WEXITSTATUS(raw);
  result.out = train::ReadFile(dir.Path("stdout"));
  result.err = train::ReadFile(dir.Path("stderr"));
  return result;
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
  EXPECT_NE(r.err.find("rotor prepare: error: unknown flag '--bogus'"),
            std::string::npos)
      << r.err;

  r = RunRotorPrepare(
      dir, "--input " + in + " --output " + out + " --val-fraction 2");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--val-fraction must be greater than 0"),
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

}  // namespace
}  // namespace rotor::tools
