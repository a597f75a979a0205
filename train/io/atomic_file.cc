#include "train/io/atomic_file.h"

#include <fcntl.h>
#include <stdio.h>  // renameat2 (glibc >= 2.28)
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>
#include <vector>

#include "core/error.h"
#include "train/io/output_file.h"

namespace rotor::train {
namespace {

std::string ParentDirectory(const std::string& path) {
  const std::filesystem::path parent =
      std::filesystem::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

std::string SystemError() { return std::strerror(errno); }

// `dir` without trailing slashes.
std::string TrimmedDirectory(const std::string& dir) {
  std::string trimmed = dir;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
  ROTOR_CHECK(!trimmed.empty(), "empty directory name");
  return trimmed;
}

// An exclusive flock on a folder (or, with `directory` false, a regular
// file) for the life of the object; `held()` is false when another process
// holds it (or the path cannot be opened as one).
class PathFlock {
 public:
  PathFlock(const std::string& path, bool wait, bool directory = true)
      : fd_(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC |
                                     (directory ? O_DIRECTORY : O_NONBLOCK))) {
    struct stat info {};
    held_ = fd_ >= 0 && ::fstat(fd_, &info) == 0 &&
            (directory || S_ISREG(info.st_mode)) &&
            ::flock(fd_, LOCK_EX | (wait ? 0 : LOCK_NB)) == 0;
  }
  ~PathFlock() {
    if (fd_ >= 0) ::close(fd_);
  }
  PathFlock(const PathFlock&) = delete;
  PathFlock& operator=(const PathFlock&) = delete;
  bool held() const { return held_; }

 private:
  int fd_;
  bool held_ = false;
};

// The paths next to `path` whose names are its name + ".tmp-" + something
// (ReplaceDirectoryAtomically's and AtomicFileWriter's temporaries), with
// what follows ".tmp-".
std::vector<std::pair<std::string, std::string>> TemporariesOf(
    const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  const std::string prefix = path.filename().string() + ".tmp-";
  std::vector<std::pair<std::string, std::string>> found;
  std::error_code error;
  for (const fs::directory_entry& entry :
       fs::directory_iterator(ParentDirectory(path.string()), error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && !entry.is_symlink(error)) {
      found.emplace_back(entry.path().string(), name.substr(prefix.size()));
    }
  }
  return found;
}

// Deletes `old`, the previous contents of `dir` after a swap; an error
// names both, since the call has replaced `dir` but not cleaned up.
void RemoveOldContents(const std::string& dir, const std::string& old) {
  std::error_code error;
  std::filesystem::remove_all(old, error);
  ROTOR_CHECK(!error, "replaced ", dir,
              ", but cannot delete the old contents of ", dir, ", left in ",
              old, ": ", error.message(), " (delete that folder yourself)");
}

// Writes all `size` bytes to `fd`, retrying short writes; false (errno set)
// on failure.
bool WriteAll(int fd, const char* bytes, size_t size) {
  while (size > 0) {
    const ssize_t written = ::write(fd, bytes, size);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return false;
    bytes += written;
    size -= static_cast<size_t>(written);
  }
  return true;
}

}  // namespace

void SyncDirectory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ROTOR_CHECK(fd >= 0, "cannot open directory ", dir, ": ", SystemError());
  const int status = ::fsync(fd);
  const std::string error = status == 0 ? "" : SystemError();
  ::close(fd);
  ROTOR_CHECK(status == 0, "cannot fsync directory ", dir, ": ", error);
}

AtomicFileWriter::AtomicFileWriter(std::string path) : path_(std::move(path)) {
  ROTOR_CHECK(!path_.empty() && path_.back() != '/', "cannot write a file at '",
              path_, "': not a file name");
  std::vector<char> name(path_.begin(), path_.end());
  const std::string suffix = ".tmp-XXXXXX";
  name.insert(name.end(), suffix.begin(), suffix.end());
  name.push_back('\0');
  fd_ = ::mkostemp(name.data(), O_CLOEXEC);
  ROTOR_CHECK(fd_ >= 0, "cannot create a temporary file for ", path_, ": ",
              SystemError());
  temp_path_ = name.data();
  // A fresh file: the lock is free. It tells RemoveStaleTemporaryFiles in
  // other processes that this one is not a leftover.
  ::flock(fd_, LOCK_EX | LOCK_NB);
  RemoveStaleTemporaryFiles(path_);
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_path_.c_str());
}

void AtomicFileWriter::Write(const void* data, size_t size) {
  ROTOR_CHECK(fd_ >= 0 && !committed_, "write to ", path_,
              " after it was committed");
  ROTOR_CHECK(WriteAll(fd_, static_cast<const char*>(data), size),
              "cannot write ", temp_path_, ": ", SystemError());
}

void AppendToFile(const std::string& path, std::string_view data) {
  const int fd =
      ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
  ROTOR_CHECK(fd >= 0, "cannot open ", path, " to append: ", SystemError());
  struct stat before {};
  bool ok = ::fstat(fd, &before) == 0 && WriteAll(fd, data.data(), data.size());
  std::string error = ok ? "" : SystemError();
  // A partial write (a full disk) is cut off again, so no half line stays.
  if (!ok && S_ISREG(before.st_mode)) {
    static_cast<void>(::ftruncate(fd, before.st_size));
  }
  if (::close(fd) != 0 && ok) {
    ok = false;
    error = SystemError();
  }
  ROTOR_CHECK(ok, "cannot append to ", path, ": ", error,
              " (the file is left as it was)");
}

void AtomicFileWriter::Commit() {
  ROTOR_CHECK(fd_ >= 0 && !committed_, path_, " was already committed");
  ROTOR_CHECK(::fsync(fd_) == 0, "cannot fsync ", temp_path_, ": ",
              SystemError());
  // mkstemp creates 0600; give the file the usual 0644 (minus umask).
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd_, 0666 & ~mask);
  const int status = ::close(fd_);
  fd_ = -1;
  ROTOR_CHECK(status == 0, "cannot close ", temp_path_, ": ", SystemError());
  ROTOR_CHECK(::rename(temp_path_.c_str(), path_.c_str()) == 0,
              "cannot rename ", temp_path_, " to ", path_, ": ", SystemError());
  committed_ = true;
  SyncDirectory(ParentDirectory(path_));
}

void WriteFileAtomically(const std::string& path, std::string_view contents) {
  AtomicFileWriter writer(path);
  writer.Write(contents);
  writer.Commit();
}

std::string ReadFile(const std::string& path, size_t max_bytes) {
  // Opening a FIFO waits for a writer, forever if there is none: open it
  // without waiting, then read as usual (a FIFO with no writer reads as
  // empty; a pipe with one, such as bash's <(...), reads its data).
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ROTOR_CHECK(fd >= 0, "cannot open ", path, ": ", SystemError());
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  NoteInputFile(fd);
  std::string contents;
  char buffer[1 << 16];
  while (true) {
    const ssize_t got = ::read(fd, buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      const std::string error = SystemError();
      ::close(fd);
      throw Error(StrCat("cannot read ", path, ": ", error));
    }
    if (got == 0) break;
    contents.append(buffer, static_cast<size_t>(got));
    if (contents.size() > max_bytes) {
      ::close(fd);
      throw Error(
          StrCat(path, " is larger than the limit of ", max_bytes, " bytes"));
    }
  }
  ::close(fd);
  return contents;
}

void ReplaceDirectoryAtomically(
    const std::string& dir,
    const std::function<void(const std::string& temp_dir)>& fill) {
  const std::string trimmed = TrimmedDirectory(dir);
  RemoveStaleTemporaryDirectories(trimmed);
  std::vector<char> name(trimmed.begin(), trimmed.end());
  const std::string suffix = ".tmp-XXXXXX";
  name.insert(name.end(), suffix.begin(), suffix.end());
  name.push_back('\0');
  ROTOR_CHECK(::mkdtemp(name.data()) != nullptr,
              "cannot create a temporary directory next to ", trimmed, ": ",
              SystemError());
  const std::string temp_dir = name.data();
  // mkdtemp creates 0700; give the directory the usual 0755 (minus umask).
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::chmod(temp_dir.c_str(), 0777 & ~mask);
  const PathFlock filling(temp_dir, /*wait=*/true);
  std::error_code ignored;
  try {
    fill(temp_dir);
    SyncDirectory(temp_dir);
  } catch (...) {
    std::filesystem::remove_all(temp_dir, ignored);
    throw;
  }
  const std::string parent = ParentDirectory(trimmed);
  if (std::filesystem::exists(trimmed)) {
    // Atomic swap: afterwards temp_dir holds the old contents.
    if (::renameat2(AT_FDCWD, temp_dir.c_str(), AT_FDCWD, trimmed.c_str(),
                    RENAME_EXCHANGE) == 0) {
      SyncDirectory(parent);
      RemoveOldContents(trimmed, temp_dir);
      RemoveStaleTemporaryDirectories(trimmed);
      return;
    }
    // File systems without RENAME_EXCHANGE (EINVAL): move the old directory
    // aside, then rename the new one in. Between the two renames `dir` is
    // briefly missing, but it is never half-written.
    const std::string old_dir = temp_dir + ".old";
    if (errno != EINVAL || ::rename(trimmed.c_str(), old_dir.c_str()) != 0) {
      const std::string error = SystemError();
      std::filesystem::remove_all(temp_dir, ignored);
      throw Error(StrCat("cannot replace directory ", trimmed, ": ", error));
    }
    if (::rename(temp_dir.c_str(), trimmed.c_str()) != 0) {
      const std::string error = SystemError();
      ::rename(old_dir.c_str(), trimmed.c_str());  // put the old one back
      std::filesystem::remove_all(temp_dir, ignored);
      throw Error(StrCat("cannot replace directory ", trimmed, ": ", error));
    }
    SyncDirectory(parent);
    RemoveOldContents(trimmed, old_dir);
  } else {
    if (::rename(temp_dir.c_str(), trimmed.c_str()) != 0) {
      const std::string error = SystemError();
      std::filesystem::remove_all(temp_dir, ignored);
      throw Error(StrCat("cannot create directory ", trimmed, ": ", error));
    }
    SyncDirectory(parent);
  }
  RemoveStaleTemporaryDirectories(trimmed);
}

void RemoveStaleTemporaryDirectories(const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path path(TrimmedDirectory(dir));
  std::error_code error;
  if (!fs::is_directory(path, error)) return;
  for (const auto& [leftover, unused_suffix] : TemporariesOf(path)) {
    if (!fs::is_directory(leftover, error)) continue;
    const PathFlock unused(leftover, /*wait=*/false);
    if (unused.held()) fs::remove_all(leftover, error);
  }
}

void RemoveStaleTemporaryFiles(const std::string& path) {
  for (const auto& [leftover, suffix] : TemporariesOf(path)) {
    // mkostemp's six characters, no more: PATH.tmp-XXXXXX.old and the like
    // are not a writer's.
    if (suffix.size() != 6) continue;
    const PathFlock unused(leftover, /*wait=*/false, /*directory=*/false);
    if (unused.held()) ::unlink(leftover.c_str());
  }
}

}  // namespace rotor::train
