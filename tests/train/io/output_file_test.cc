// The rule for output files (train/io/output_file.h): a new path is
// written; an existing regular file only with --force and never when the
// command read it; a folder, device or FIFO never.
#include "train/io/output_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "tests/temp_dir.h"
#include "tests/test_util.h"
#include "train/io/atomic_file.h"
#include "train/io/mapped_file.h"

namespace rotor::train {
namespace {

namespace fs = std::filesystem;

TEST(OutputFile, NewPathsAndForcedRegularFiles) {
  test::TempDir dir;
  CheckOutputFile(dir.Path("new.png"), /*force=*/false, "--plot");
  const std::string old = dir.Write("old.png", "old");
  ROTOR_EXPECT_ERROR(
      CheckOutputFile(old, false, "--plot"),
      "--plot " + old + " already exists; pass --force to replace it");
  CheckOutputFile(old, /*force=*/true, "--plot");
  // A dangling symbolic link is a new file; one to a file is that file.
  fs::create_symlink(dir.Path("nowhere"), dir.Path("dangling"));
  CheckOutputFile(dir.Path("dangling"), false, "--plot");
  fs::create_symlink(old, dir.Path("link"));
  ROTOR_EXPECT_ERROR(CheckOutputFile(dir.Path("link"), false, "--plot"),
                     "already exists");
}

TEST(OutputFile, FoldersDevicesAndFifosAreNeverReplaced) {
  test::TempDir dir;
  ROTOR_EXPECT_ERROR(CheckOutputFile(dir.path(), true, "--logits"),
                     "--logits " + dir.path() + " is a folder");
  ROTOR_EXPECT_ERROR(CheckOutputFile("/dev/null", true, "--logits"),
                     "--logits /dev/null is a device");
  ASSERT_EQ(::mkfifo(dir.Path("fifo").c_str(), 0600), 0);
  ROTOR_EXPECT_ERROR(CheckOutputFile(dir.Path("fifo"), true, "--logits"),
                     "is a FIFO; rotor writes only regular files");
}

TEST(OutputFile, InputsOfTheProcessAreNeverReplaced) {
  test::TempDir dir;
  const std::string read = dir.Write("read.txt", "input");
  const std::string mapped = dir.Write("mapped.bin", "weights");
  const std::string other = dir.Write("other.txt", "not read");
  EXPECT_FALSE(IsInputFile(read));
  EXPECT_EQ(ReadFile(read), "input");
  const MappedFile mapping(mapped);
  EXPECT_TRUE(IsInputFile(read));
  EXPECT_TRUE(IsInputFile(mapped));
  EXPECT_FALSE(IsInputFile(other));
  ROTOR_EXPECT_ERROR(CheckOutputFile(mapped, true, "--logits"),
                     "--logits " + mapped + " is an input of this command");
  // Another name of the same file is the same input.
  fs::create_hard_link(read, dir.Path("hard"));
  fs::create_symlink(read, dir.Path("soft"));
  ROTOR_EXPECT_ERROR(CheckOutputFile(dir.Path("hard"), true, "--plot"),
                     "is an input of this command");
  ROTOR_EXPECT_ERROR(CheckOutputFile(dir.Path("soft"), true, "--plot"),
                     "is an input of this command");
  CheckOutputFile(other, true, "--plot");
}

TEST(OutputDir, NeverTheInputFolderOrInsideIt) {
  test::TempDir dir;
  fs::create_directories(dir.Path("data/sub"));
  fs::create_directories(dir.Path("data2"));
  fs::create_directory_symlink(dir.Path("data"), dir.Path("link"));
  const InputFolder data{dir.Path("data"), "the data folder", "data.path",
                         "harm"};
  ROTOR_EXPECT_ERROR(CheckOutputDirOutside("c.yaml", dir.Path("data"), data),
                     "c.yaml: output_dir " + dir.Path("data") +
                         " is the data folder " + dir.Path("data") +
                         " (data.path): harm; name another folder");
  ROTOR_EXPECT_ERROR(CheckOutputDirOutside("c.yaml", dir.Path("data/"), data),
                     " is the data folder ");
  ROTOR_EXPECT_ERROR(CheckOutputDirOutside("c.yaml", dir.Path("link"), data),
                     " is the data folder ");
  ROTOR_EXPECT_ERROR(
      CheckOutputDirOutside("c.yaml", dir.Path("data/sub/new"), data),
      " is inside the data folder ");
  ROTOR_EXPECT_ERROR(
      CheckOutputDirOutside("c.yaml", dir.Path("link/new"), data),
      " is inside the data folder ");
  // A sibling whose name begins the same, the parent, a folder beside it.
  CheckOutputDirOutside("c.yaml", dir.Path("data2"), data);
  CheckOutputDirOutside("c.yaml", dir.path(), data);
  CheckOutputDirOutside("c.yaml", dir.Path("runs/new"), data);
  CheckOutputDirOutside("c.yaml", dir.Path("data"), {});
}

}  // namespace
}  // namespace rotor::train
