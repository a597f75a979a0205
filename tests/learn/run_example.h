// Runs a program of examples/ (build/examples/NAME) as a learner does, and
// reads the figures it prints, for the ladder tests.
#ifndef ROTOR_TESTS_LEARN_RUN_EXAMPLE_H_
#define ROTOR_TESTS_LEARN_RUN_EXAMPLE_H_

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/temp_dir.h"
#include "train/io/atomic_file.h"

namespace rotor::test {

struct ExampleRun {
  bool missing = false;  // not built (out says so)
  int status = -1;
  std::string out;  // stdout and stderr
};

// Runs `build/examples/NAME ARGS` in `dir` (a fresh temporary folder when
// null).
inline ExampleRun RunExample(const std::string& name,
                             const std::string& args = "",
                             const TempDir* dir = nullptr) {
  const std::string program =
      std::string(ROTOR_BINARY_DIR) + "/examples/" + name;
  ExampleRun run;
  if (access(program.c_str(), X_OK) != 0) {
    run.missing = true;
    run.out = program +
              " is not built (configure with "
              "-DROTOR_BUILD_EXAMPLES=ON and build it)";
    return run;
  }
  TempDir own;
  const TempDir& where = dir ? *dir : own;
  const std::string log = where.Path("example.log");
  const std::string command = "cd '" + where.path() + "' && '" + program +
                              "' " + args + " >'" + log + "' 2>&1 </dev/null";
  const int raw = std::system(command.c_str());
  if (raw != -1 && WIFEXITED(raw)) run.status = WEXITSTATUS(raw);
  run.out = train::ReadFile(log);
  return run;
}

// The number printed right after `label` (its first occurrence; with
// `last`, the last one), or right before `suffix` when `label` is followed
// by anything else. Fails the test and returns NaN when there is none.
inline double Figure(const std::string& out, const std::string& label,
                     const std::string& suffix = "", bool last = false) {
  size_t at = last ? out.rfind(label) : out.find(label);
  if (at == std::string::npos) {
    ADD_FAILURE() << "no \"" << label << "\" in:\n" << out;
    return std::nan("");
  }
  at += label.size();
  if (!suffix.empty()) {
    // The number just before `suffix` on the same line.
    const size_t end = out.find(suffix, at);
    const size_t line_end = out.find('\n', at);
    if (end == std::string::npos || end > line_end) {
      ADD_FAILURE() << "no \"" << suffix << "\" after \"" << label << "\"";
      return std::nan("");
    }
    size_t start = out.find_last_of(" (", end - 1);
    return std::strtod(out.c_str() + start + 1, nullptr);
  }
  char* end = nullptr;
  const double value = std::strtod(out.c_str() + at, &end);
  if (end == out.c_str() + at) {
    ADD_FAILURE() << "no number after \"" << label << "\"";
    return std::nan("");
  }
  return value;
}

// Every number on the line that starts with `label` (after it; a "%" after
// a number is skipped), e.g. a row of a table. Fails the test and returns
// none when there is no such line.
inline std::vector<double> Row(const std::string& out,
                               const std::string& label) {
  const size_t at = out.find(label);
  if (at == std::string::npos) {
    ADD_FAILURE() << "no \"" << label << "\" in:\n" << out;
    return {};
  }
  std::vector<double> numbers;
  const size_t line_end = std::min(out.find('\n', at), out.size());
  const char* p = out.c_str() + at + label.size();
  const char* end = out.c_str() + line_end;
  while (p < end) {
    char* next = nullptr;
    const double value = std::strtod(p, &next);
    if (next == p) {
      ++p;
    } else {
      numbers.push_back(value);
      p = next;
    }
  }
  return numbers;
}

}  // namespace rotor::test

#endif  // ROTOR_TESTS_LEARN_RUN_EXAMPLE_H_
