// Atomic writes: the destination holds the old or the new contents, never a
// partial file, and failures leave no temporaries behind.
#include "train/io/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "tests/temp_dir.h"
#include "tests/test_util.h"
#include "train/io/mapped_file.h"

namespace rotor::train {
namespace {

TEST(AtomicFile, WritesAndReplaces) {
  test::TempDir dir;
  const std::string path = dir.Path("f.txt");
  WriteFileAtomically(path, "first");
  EXPECT_EQ(ReadFile(path), "first");
  WriteFileAtomically(path, "second, longer");
  EXPECT_EQ(ReadFile(path), "second, longer");
  EXPECT_EQ(dir.List(), (std::vector<std::string>{"f.txt"}));
  struct stat info;
  ASSERT_EQ(::stat(path.c_str(), &info), 0);
  EXPECT_NE(info.st_mode & S_IRGRP, 0u) << "should not stay mode 0600";
}

TEST(AtomicFile, UncommittedWriterLeavesTheOldFile) {
  test::TempDir dir;
  const std::string path = dir.Path("f.txt");
  WriteFileAtomically(path, "old");
  {
    AtomicFileWriter writer(path);
    writer.Write("new data that is never committed");
    EXPECT_EQ(dir.List().size(), 2u);  // f.txt and the temporary
  }
  EXPECT_EQ(ReadFile(path), "old");
  EXPECT_EQ(dir.List(), (std::vector<std::string>{"f.txt"}));
}

TEST(AtomicFile, ErrorsNameThePath) {
  ROTOR_EXPECT_ERROR(WriteFileAtomically("/nonexistent-dir/x", "a"),
                     "/nonexistent-dir/x", "temporary file");
  ROTOR_EXPECT_ERROR(ReadFile("/nonexistent-dir/x"), "/nonexistent-dir/x",
                     "cannot open");
  AtomicFileWriter writer(::testing::TempDir() + "rotor_commit_twice");
  writer.Commit();
  ROTOR_EXPECT_ERROR(writer.Commit(), "already committed");
  std::filesystem::remove(writer.path());
}

TEST(ReplaceDirectoryAtomically, CreatesThenSwapsInNewContents) {
  test::TempDir dir;
  const std::string target = dir.Path("ckpt");
  ReplaceDirectoryAtomically(target, [](const std::string& temp) {
    WriteFileAtomically(temp + "/a", "1");
    WriteFileAtomically(temp + "/b", "1");
  });
  EXPECT_EQ(dir.List("ckpt"), (std::vector<std::string>{"a", "b"}));
  ReplaceDirectoryAtomically(target + "/", [](const std::string& temp) {
    WriteFileAtomically(temp + "/c", "2");
  });
  EXPECT_EQ(dir.List("ckpt"), (std::vector<std::string>{"c"}));
  EXPECT_EQ(ReadFile(target + "/c"), "2");
  EXPECT_EQ(dir.List(), (std::vector<std::string>{"ckpt"}));  // no leftovers
}

TEST(ReplaceDirectoryAtomically, FailureKeepsTheOldDirectory) {
  test::TempDir dir;
  const std::string target = dir.Path("ckpt");
  ReplaceDirectoryAtomically(target, [](const std::string& temp) {
    WriteFileAtomically(temp + "/weights", "good");
  });
  ROTOR_EXPECT_ERROR(ReplaceDirectoryAtomically(
                         target,
                         [](const std::string& temp) {
                           WriteFileAtomically(temp + "/weights", "half");
                           throw Error("disk full while writing");
                         }),
                     "disk full");
  EXPECT_EQ(ReadFile(target + "/weights"), "good");
  EXPECT_EQ(dir.List(), (std::vector<std::string>{"ckpt"}));
}

}  // namespace
}  // namespace rotor::train

namespace rotor::train {
namespace {

// A FIFO with no writer in place of a file must not block the reader
// forever: ReadFile reads it as empty, MappedFile refuses it.
TEST(ReadFile, AFifoWithNoWriterDoesNotBlock) {
  test::TempDir dir;
  const std::string fifo = dir.Path("model.safetensors");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(ReadFile(fifo), "");
  ROTOR_EXPECT_ERROR(MappedFile{fifo}, "cannot map " + fifo,
                     "not a regular file");
}

}  // namespace
}  // namespace rotor::train
