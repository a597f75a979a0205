// Atomic writes: the destination holds the old or the new contents, never a
// partial file, and failures leave no temporaries behind.
#include "train/io/atomic_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/fs.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <thread>

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

// A writer killed while filling DIR.tmp-XXXXXX (or between the two renames
// of the fallback swap, DIR.tmp-XXXXXX.old) leaves it behind: the next
// successful replacement of DIR removes those, and only those: not another
// folder's, not one a live writer still fills (it holds a lock on it).
TEST(ReplaceDirectoryAtomically, RemovesTheLeftoversOfKilledWriters) {
  test::TempDir dir;
  dir.Write("out.tmp-AbC123/model.safetensors", "half of a killed export");
  dir.Write("out.tmp-Q1w2E3.old/model.safetensors", "old");
  dir.Write("outer.tmp-ZzZ999/x", "another folder's");
  dir.Write("out.tmp-Live42/x", "being written");
  const int live = ::open(dir.Path("out.tmp-Live42").c_str(),
                          O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(live, 0);
  ASSERT_EQ(::flock(live, LOCK_EX), 0);
  ReplaceDirectoryAtomically(dir.Path("out"), [](const std::string& temp) {
    WriteFileAtomically(temp + "/a", "1");
  });
  EXPECT_EQ(dir.List(), (std::vector<std::string>{"out", "out.tmp-Live42",
                                                  "outer.tmp-ZzZ999"}));
  ::close(live);
  // With DIR in place, a later call also removes them before it writes.
  dir.Write("out.tmp-XyZ789/b", "half");
  ReplaceDirectoryAtomically(dir.Path("out"), [&](const std::string&) {
    EXPECT_FALSE(std::filesystem::exists(dir.Path("out.tmp-XyZ789")));
    EXPECT_FALSE(std::filesystem::exists(dir.Path("out.tmp-Live42")));
  });
  EXPECT_EQ(dir.List(), (std::vector<std::string>{"out", "outer.tmp-ZzZ999"}));
}

// A writer killed before it committed (SIGKILL mid-write) leaves
// PATH.tmp-XXXXXX behind: the next writer of PATH removes those, and only
// those: not another file's, not a folder, not one a live writer still
// holds a lock on.
TEST(AtomicFile, RemovesTheLeftoversOfKilledWriters) {
  test::TempDir dir;
  dir.Write("out.gguf.tmp-AbC123", "half of a killed export");
  dir.Write("out.gguf.tmp-AbC123.old", "not mkostemp's");
  dir.Write("outer.gguf.tmp-ZzZ999", "another file's");
  dir.Write("out.gguf.tmp-Dir123/x", "a folder");
  dir.Write("out.gguf.tmp-Live42", "being written");
  // mkostemp makes them 0600 (Commit widens the mode only just before the
  // rename).
  ASSERT_EQ(::chmod(dir.Path("out.gguf.tmp-AbC123").c_str(), 0600), 0);
  ASSERT_EQ(::chmod(dir.Path("out.gguf.tmp-Live42").c_str(), 0600), 0);
  const int live =
      ::open(dir.Path("out.gguf.tmp-Live42").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(live, 0);
  ASSERT_EQ(::flock(live, LOCK_EX), 0);
  WriteFileAtomically(dir.Path("out.gguf"), "new");
  EXPECT_EQ(dir.List(),
            (std::vector<std::string>{
                "out.gguf", "out.gguf.tmp-AbC123.old", "out.gguf.tmp-Dir123",
                "out.gguf.tmp-Live42", "outer.gguf.tmp-ZzZ999"}));
  ::close(live);
  // A writer's own temporary is locked while it writes: a second writer of
  // the same path leaves it alone.
  AtomicFileWriter first(dir.Path("out.gguf"));
  first.Write("first");
  AtomicFileWriter second(dir.Path("out.gguf"));
  second.Write("second");
  first.Commit();
  EXPECT_EQ(ReadFile(dir.Path("out.gguf")), "first");
  second.Commit();
  EXPECT_EQ(ReadFile(dir.Path("out.gguf")), "second");
  // The lock gone, the Live42 file is a leftover too.
  EXPECT_EQ(dir.List(), (std::vector<std::string>{
                            "out.gguf", "out.gguf.tmp-AbC123.old",
                            "out.gguf.tmp-Dir123", "outer.gguf.tmp-ZzZ999"}));
}

// Only what mkostemp makes is a killed writer's leftover: six characters
// from [A-Za-z0-9], a regular file of this user with mode 0600. A user's
// own out.gguf.tmp-backup (mode 0644), names with other characters, a FIFO
// (never opened: it would not block, but a device might do anything) and
// another user's file stay.
TEST(AtomicFile, LeavesFilesThatAreNotAWritersLeftoversAlone) {
  test::TempDir dir;
  const std::vector<std::string> kept = {
      "out.gguf.tmp-AbC123", "out.gguf.tmp-ab_cd!", "out.gguf.tmp-backup",
      "out.gguf.tmp-Mode44", "out.gguf.tmp-Other1"};
  ASSERT_EQ(::mkfifo(dir.Path("out.gguf.tmp-AbC123").c_str(), 0600), 0);
  dir.Write("out.gguf.tmp-ab_cd!", "six characters, not mkostemp's");
  ASSERT_EQ(::chmod(dir.Path("out.gguf.tmp-ab_cd!").c_str(), 0600), 0);
  dir.Write("out.gguf.tmp-backup", "a user's backup");
  ASSERT_EQ(::chmod(dir.Path("out.gguf.tmp-backup").c_str(), 0644), 0);
  dir.Write("out.gguf.tmp-Mode44", "readable by others");
  ASSERT_EQ(::chmod(dir.Path("out.gguf.tmp-Mode44").c_str(), 0644), 0);
  dir.Write("out.gguf.tmp-Other1", "another user's");
  ASSERT_EQ(::chmod(dir.Path("out.gguf.tmp-Other1").c_str(), 0600), 0);
  // Only root can give a file away; others test the rest.
  const bool given_away =
      ::geteuid() == 0 &&
      ::chown(dir.Path("out.gguf.tmp-Other1").c_str(), 65534, 65534) == 0;
  if (!given_away) std::filesystem::remove(dir.Path("out.gguf.tmp-Other1"));
  dir.Write("out.gguf.tmp-Dead99", "a killed writer's");
  ASSERT_EQ(::chmod(dir.Path("out.gguf.tmp-Dead99").c_str(), 0600), 0);
  WriteFileAtomically(dir.Path("out.gguf"), "new");
  std::vector<std::string> expected = {"out.gguf"};
  for (const std::string& name : kept) {
    if (name != "out.gguf.tmp-Other1" || given_away) expected.push_back(name);
  }
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(dir.List(), expected);
  EXPECT_EQ(ReadFile(dir.Path("out.gguf")), "new");
}

// Writers of one path in two threads (flock locks belong to open files,
// so to each other they are as two processes): each writer's temporary is
// locked from its creation on, so the other's cleanup never takes it for a
// leftover, and every write succeeds. The window this guards (between
// mkostemp and flock) is too short to hit every run, so this is a stress
// test; the retry when it is hit (the file was unlinked before the lock
// was taken) is checked by reading the code.
TEST(AtomicFile, ConcurrentWritersOfOnePathAllSucceed) {
  test::TempDir dir;
  const std::string path = dir.Path("out.gguf");
  constexpr int kWrites = 200;
  auto write = [&](const std::string& text, std::string& failure) {
    for (int i = 0; i < kWrites && failure.empty(); ++i) {
      try {
        WriteFileAtomically(path, text);
      } catch (const Error& e) {
        failure = e.what();
      }
    }
  };
  std::string first_failure, second_failure;
  std::thread first(write, "first", std::ref(first_failure));
  std::thread second(write, "second", std::ref(second_failure));
  first.join();
  second.join();
  EXPECT_EQ(first_failure, "");
  EXPECT_EQ(second_failure, "");
  EXPECT_EQ(dir.List(), (std::vector<std::string>{"out.gguf"}));
}

// Sets or clears the immutable attribute of `path` (chattr +i: not even
// root may delete the file); false where the file system has none.
bool SetImmutable(const std::string& path, bool on) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  int flags = 0;
  bool ok = ::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;
  flags = on ? (flags | FS_IMMUTABLE_FL) : (flags & ~FS_IMMUTABLE_FL);
  ok = ok && ::ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0;
  ::close(fd);
  return ok;
}

// When the old contents cannot be deleted after the swap, the call fails
// naming where they are, instead of reporting success with them left.
TEST(ReplaceDirectoryAtomically, OldContentsThatCannotBeDeletedAreAnError) {
  test::TempDir dir;
  const std::string target = dir.Path("out");
  ReplaceDirectoryAtomically(target, [](const std::string& temp) {
    WriteFileAtomically(temp + "/stuck", "old");
  });
  if (!SetImmutable(target + "/stuck", true)) {
    GTEST_SKIP() << "no immutable files on this file system";
  }
  std::string message;
  try {
    ReplaceDirectoryAtomically(target, [](const std::string& temp) {
      WriteFileAtomically(temp + "/new", "new");
    });
  } catch (const Error& e) {
    message = e.what();
  }
  std::string leftover;
  for (const std::string& name : dir.List()) {
    if (name != "out") leftover = dir.Path(name);
  }
  if (!leftover.empty()) SetImmutable(leftover + "/stuck", false);
  EXPECT_CONTAINS(message, "cannot delete the old contents of " + target);
  EXPECT_CONTAINS(message, leftover);
  EXPECT_EQ(ReadFile(target + "/new"), "new");  // the new contents are in
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
