// One process at a time in a folder (train/io/folder_lock.h): a second lock
// on the same file is refused naming the holder's pid; once the first is
// released (or its process is gone) the next one succeeds.
#include "train/io/folder_lock.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

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

}  // namespace
}  // namespace rotor::train
