// Runs build/rotor (or any command) as a user does, for the CLI tests: exit
// status, stdout and stderr, captured through files in a test's temporary
// folder.
#ifndef ROTOR_TESTS_TOOLS_RUN_ROTOR_H_
#define ROTOR_TESTS_TOOLS_RUN_ROTOR_H_

#include <sys/wait.h>

#include <cstdlib>
#include <string>

#include "tests/temp_dir.h"
#include "train/io/atomic_file.h"

namespace rotor::test {

struct RotorResult {
  int status = -1;  // the exit status; -1 if rotor did not exit normally
  std::string out;
  std::string err;
};

// Runs the shell command `COMMAND </dev/null`, with its output in `dir`.
inline RotorResult RunCommand(const TempDir& dir, const std::string& command) {
  const std::string line = command + " >'" + dir.Path("stdout") + "' 2>'" +
                           dir.Path("stderr") + "' </dev/null";
  const int raw = std::system(line.c_str());
  RotorResult result;
  if (raw != -1 && WIFEXITED(raw)) result.status = WEXITSTATUS(raw);
  result.out = train::ReadFile(dir.Path("stdout"));
  result.err = train::ReadFile(dir.Path("stderr"));
  return result;
}

// Runs `LAUNCHER build/rotor ARGS </dev/null` (ARGS already shell-quoted;
// LAUNCHER e.g. "prlimit --as=N" or empty), with its output in `dir`.
inline RotorResult RunRotor(const TempDir& dir, const std::string& args,
                            const std::string& launcher = "") {
  return RunCommand(dir,
                    launcher + " '" + ROTOR_BINARY_DIR + "/rotor' " + args);
}

}  // namespace rotor::test

#endif  // ROTOR_TESTS_TOOLS_RUN_ROTOR_H_
