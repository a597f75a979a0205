// metrics.jsonl (train/metrics.h): non-finite values are null and named in
// "non_finite"; a failed append (a full disk, a file size limit) is an error
// that leaves no half line; the loss plot skips malformed lines and never
// throws.
#include "train/metrics.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>

#include "tests/temp_dir.h"
#include "tests/test_util.h"
#include "train/io/atomic_file.h"
#include "train/io/json.h"

namespace rotor::train {
namespace {

TEST(MetricsLog, NonFiniteValuesAreNullAndNamed) {
  test::TempDir dir;
  const MetricsLog log(dir.path());
  const double inf = std::numeric_limits<double>::infinity();
  log.LogStep({5, std::nan(""), 0.1, -inf, 100.0, 640});
  log.LogEvaluation(10, {812.5, inf, 1172.2, 128});
  log.LogEvaluation(20, {2.0, std::exp(2.0), 2.9, 128});
  EXPECT_EQ(ReadFile(dir.Path("metrics.jsonl")),
            "{\"step\":5,\"loss\":null,\"lr\":0.1,\"grad_norm\":null,"
            "\"tokens_per_second\":100.0,"
            "\"non_finite\":{\"loss\":\"nan\",\"grad_norm\":\"-inf\"},"
            "\"tokens_seen\":640}\n"
            "{\"step\":10,\"val_loss\":812.5,\"val_perplexity\":null,"
            "\"val_bits_per_byte\":1172.2,"
            "\"non_finite\":{\"val_perplexity\":\"inf\"}}\n"
            "{\"step\":20,\"val_loss\":2.0,\"val_perplexity\":" +
                Json(std::exp(2.0)).dump() + ",\"val_bits_per_byte\":2.9}\n");
}

// /dev/full fails every write with ENOSPC: the append is an error naming
// the file, not a line that silently vanishes.
TEST(MetricsLog, AFullDiskIsAnErrorNamingTheFile) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  test::TempDir dir;
  std::filesystem::create_symlink("/dev/full", dir.Path("metrics.jsonl"));
  const MetricsLog log(dir.path());
  ROTOR_EXPECT_ERROR(log.LogStep({5, 2.0, 0.1, 1.0, 100.0, 640}),
                     "cannot append to ", "metrics.jsonl",
                     "No space left on device");
  ROTOR_EXPECT_ERROR(log.LogEvaluation(10, {2.0, 7.4, 2.9, 128}),
                     "No space left on device");
}

// A file size limit a few bytes above the current size makes the write
// stop halfway through the line (as a disk filling up does): the append
// fails and the file keeps only its complete lines. Runs in a child
// process, whose limit dies with it.
TEST(MetricsLog, AFailedAppendLeavesNoHalfLine) {
  test::TempDir dir;
  const MetricsLog log(dir.path());
  log.LogStep({5, 2.0, 0.1, 1.0, 100.0, 640});
  const std::string before = ReadFile(dir.Path("metrics.jsonl"));
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::signal(SIGXFSZ, SIG_IGN);  // a failed write instead of a signal
    const rlim_t limit = before.size() + 20;
    const rlimit rl = {limit, limit};
    if (::setrlimit(RLIMIT_FSIZE, &rl) != 0) ::_exit(3);
    try {
      log.LogStep({10, 1.5, 0.1, 1.0, 100.0, 1280});
    } catch (const Error& e) {
      ::_exit(std::string(e.what()).find("File too large") != std::string::npos
                  ? 0
                  : 1);
    }
    ::_exit(2);  // no error
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: another error, 2: no error";
  EXPECT_EQ(ReadFile(dir.Path("metrics.jsonl")), before);
}

// A half-written or foreign line does not fail the plot (nor, at the end
// of training, the finished run): it is skipped with a warning.
TEST(MetricsLog, PlotSkipsMalformedLinesAndNeverThrows) {
  test::TempDir dir;
  const MetricsLog log(dir.path());
  log.LogStep({5, 2.0, 0.1, 1.0, 100.0, 640});
  log.LogEvaluation(5, {2.0, 7.4, 2.9, 128});
  WriteFileAtomically(
      dir.Path("metrics.jsonl"),
      ReadFile(dir.Path("metrics.jsonl")) + "{\"step\":10,\"lo\n[1, 2]\n");
  log.LogStep({15, 1.5, 0.1, 1.0, 100.0, 1920});
  std::string line;
  ASSERT_NO_THROW(line = log.PlotLossCurve("a run"));
  EXPECT_NE(line.find("warning: skipped 2 malformed line(s) of "),
            std::string::npos)
      << line;
}

}  // namespace
}  // namespace rotor::train
