// One process at a time in a folder (train/io/folder_lock.h): a second lock
// on the same file is refused naming the holder's pid; once the first is
// released (or its process is gone) the next one succeeds.
#include "train/io/folder_lock.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "tests/temp_dir.h"
#include "tests/test_util.h"
#include "train/io/atomic_file.h"

namespace rotor::train {
namespace {

TEST(FolderLock, ASecondHolderIsRefusedNamingTheFirst) {
  test::TempDir dir;
  const std::string pid = std::to_string(::getpid());
  auto first =
      std::make_unique<FolderLock>(dir.path(), "train.lock", "output_dir");
  EXPECT_EQ(ReadFile(dir.Path("train.lock")), "");  // never written
  // flock locks belong to an open file, so this process conflicts with
  // itself as another process would.
  ROTOR_EXPECT_ERROR(FolderLock(dir.path(), "train.lock", "output_dir"),
                     "output_dir " + dir.path() + " is in use by pid " + pid +
                         " (" + dir.Path("train.lock") + " is locked)");
  first.reset();
  // The file stays; it does not block.
  EXPECT_TRUE(std::filesystem::exists(dir.Path("train.lock")));
  const FolderLock second(dir.path(), "train.lock", "output_dir");
}

TEST(FolderLock, AStaleFileFromADeadRunDoesNotBlock) {
  test::TempDir dir;
  dir.Write("train.lock", "999999999\n");
  const FolderLock lock(dir.path(), "train.lock", "output_dir");
  EXPECT_EQ(ReadFile(dir.Path("train.lock")), "999999999\n");
}

TEST(FolderLock, ASymbolicLinkIsNotFollowed) {
  test::TempDir dir;
  const std::string target = dir.Write("precious.txt", "keep");
  std::filesystem::create_symlink(target, dir.Path("train.lock"));
  ROTOR_EXPECT_ERROR(FolderLock(dir.path(), "train.lock", "output_dir"),
                     "cannot open lock file " + dir.Path("train.lock"));
  EXPECT_EQ(ReadFile(target), "keep");
}

// A FIFO named train.lock once blocked `rotor train` forever in open(2),
// waiting for a writer. The lock is taken in a child process, so that a
// regression fails here after 10 s instead of hanging the suite.
TEST(FolderLock, AFifoIsRefusedWithoutBlocking) {
  test::TempDir dir;
  ASSERT_EQ(::mkfifo(dir.Path("train.lock").c_str(), 0600), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    try {
      FolderLock(dir.path(), "train.lock", "output_dir");
    } catch (const Error& error) {
      const bool named =
          std::string(error.what())
              .find(dir.Path("train.lock") +
                    " is a FIFO, not a regular file") != std::string::npos;
      ::_exit(named ? 0 : 2);
    }
    ::_exit(1);
  }
  int status = 0;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (::waitpid(child, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(child, SIGKILL);
      ::waitpid(child, &status, 0);
      FAIL() << "FolderLock blocked on a FIFO for 10 s";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "1: no error, 2: an error that does not name the FIFO";
}

TEST(FolderLock, AFolderOrSocketIsNamed) {
  test::TempDir dir;
  std::filesystem::create_directory(dir.Path("train.lock"));
  ROTOR_EXPECT_ERROR(FolderLock(dir.path(), "train.lock", "output_dir"),
                     "lock file " + dir.Path("train.lock") +
                         " is a folder, not a regular file");
}

}  // namespace
}  // namespace rotor::train
