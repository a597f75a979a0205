#include "train/io/atomic_file.h"

#include <fcntl.h>
#include <stdio.h>  // renameat2 (glibc >= 2.28)
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string_view>
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

// mkostemp's and mkdtemp's temporaries of PATH: PATH + kTemporaryInfix +
// kTemporaryRandomCharacters characters from [A-Za-z0-9].
constexpr char kTemporaryInfix[] = ".tmp-";
constexpr size_t kTemporaryRandomCharacters = 6;

// How many times AtomicFileWriter makes a new temporary file when other
// writers' cleanup removed the one it made before it locked it (a window
// of two system calls; more than a few in a row means something else
// deletes the folder's files).
constexpr int kMaxTemporaryFileAttempts = 10;

// Whether `suffix` is what mkostemp puts in place of the X's.
bool IsRandomPart(std::string_view suffix) {
  if (suffix.size() != kTemporaryRandomCharacters) return false;
  for (const char c : suffix) {
    const bool alphanumeric = (c >= 'a' && c <= 'z') ||
                              (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alphanumeric) return false;
  }
  return true;
}

// An exclusive flock on a folder for the life of the object; `held()` is
// false when another process holds it (or the path cannot be opened as a
// folder).
class FolderFlock {
 public:
  FolderFlock(const std::string& path, bool wait)
      : fd_(::open(path.c_str(),
                   O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_DIRECTORY)) {
    held_ = fd_ >= 0 && ::flock(fd_, LOCK_EX | (wait ? 0 : LOCK_NB)) == 0;
  }
  ~FolderFlock() {
    if (fd_ >= 0) ::close(fd_);
  }
  FolderFlock(const FolderFlock&) = delete;
  FolderFlock& operator=(const FolderFlock&) = delete;
  bool held() const { return held_; }

 private:
  int fd_;
  bool held_ = false;
};

// A path next to `path` whose name is its name + ".tmp-" + `suffix`
// (ReplaceDirectoryAtomically's and AtomicFileWriter's temporaries), and
// its type (a symbolic link's own).
struct Temporary {
  std::string path;
  std::string suffix;
  std::filesystem::file_type type;
};

// The temporaries of `path`. Never throws (it runs in AtomicFileWriter's
// constructor): a folder that cannot be read yields what was read.
std::vector<Temporary> TemporariesOf(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  const std::string prefix = path.filename().string() + kTemporaryInfix;
  std::vector<Temporary> found;
  std::error_code error;
  for (fs::directory_iterator it(ParentDirectory(path.string()), error);
       !error && it != fs::directory_iterator(); it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    std::error_code type_error;
    const fs::file_type type = it->symlink_status(type_error).type();
    if (!type_error) {
      found.push_back({it->path().string(), name.substr(prefix.size()), type});
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

std::string TemporaryTemplate(const std::string& path) {
  return path + kTemporaryInfix + std::string(kTemporaryRandomCharacters, 'X');
}

AtomicFileWriter::AtomicFileWriter(std::string path) : path_(std::move(path)) {
  ROTOR_CHECK(!path_.empty() && path_.back() != '/', "cannot write a file at '",
              path_, "': not a file name");
  // The lock tells RemoveStaleTemporaryFiles in other processes that the
  // file is not a leftover. Until it is taken, another writer's cleanup
  // may remove the fresh file (it waits for that cleanup to let go): a
  // file with no name left is made again.
  for (int attempt = 1;; ++attempt) {
    std::string name = TemporaryTemplate(path_);
    fd_ = ::mkostemp(name.data(), O_CLOEXEC);
    ROTOR_CHECK(fd_ >= 0, "cannot create a temporary file for ", path_, ": ",
                SystemError());
    temp_path_ = std::move(name);
    int status;
    do {
      status = ::flock(fd_, LOCK_EX);
    } while (status != 0 && errno == EINTR);
    struct stat info {};
    if (status != 0 || ::fstat(fd_, &info) != 0) {
      const std::string error = SystemError();
      ::close(fd_);
      ::unlink(temp_path_.c_str());
      throw Error(StrCat("cannot lock ", temp_path_, ": ", error));
    }
    if (info.st_nlink > 0) break;
    ::close(fd_);
    fd_ = -1;
    ROTOR_CHECK(attempt < kMaxTemporaryFileAttempts,
                "cannot create a temporary file for ", path_, ": ",
                kMaxTemporaryFileAttempts,
                " in a row were deleted before they could be locked");
  }
  RemoveStaleTemporaryFiles(path_, temp_path_);
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
  // Renamed while still open, so still locked: no other writer's cleanup
  // takes it for a leftover (with a umask of 077 it is still 0600).
  ROTOR_CHECK(::rename(temp_path_.c_str(), path_.c_str()) == 0,
              "cannot rename ", temp_path_, " to ", path_, ": ", SystemError());
  committed_ = true;
  const int status = ::close(fd_);
  fd_ = -1;
  ROTOR_CHECK(status == 0, "cannot close ", path_, ": ", SystemError());
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
  std::string name = TemporaryTemplate(trimmed);
  ROTOR_CHECK(::mkdtemp(name.data()) != nullptr,
              "cannot create a temporary directory next to ", trimmed, ": ",
              SystemError());
  const std::string temp_dir = name.data();
  // mkdtemp creates 0700; give the directory the usual 0755 (minus umask).
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::chmod(temp_dir.c_str(), 0777 & ~mask);
  const FolderFlock filling(temp_dir, /*wait=*/true);
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
  for (const Temporary& leftover : TemporariesOf(path)) {
    if (leftover.type != fs::file_type::directory) continue;
    const FolderFlock unused(leftover.path, /*wait=*/false);
    if (unused.held()) fs::remove_all(leftover.path, error);
  }
}

void RemoveStaleTemporaryFiles(const std::string& path,
                               const std::string& own_temporary) {
  for (const Temporary& leftover : TemporariesOf(path)) {
    // Only what mkostemp makes (the type checked before opening, so no
    // FIFO or device is ever opened): PATH.tmp-XXXXXX.old, a user's
    // PATH.tmp-backup (not 0600) and the like are not a writer's.
    if (leftover.type != std::filesystem::file_type::regular ||
        !IsRandomPart(leftover.suffix) || leftover.path == own_temporary) {
      continue;
    }
    const int fd = ::open(leftover.path.c_str(),
                          O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat info {};
    struct stat named {};
    // mkostemp's mode 0600 (Commit widens it just before the rename, and
    // holds the lock until then), this user's, unlocked, and still the
    // file of that name.
    if (::fstat(fd, &info) == 0 && S_ISREG(info.st_mode) &&
        (info.st_mode & 07777) == 0600 && info.st_uid == ::geteuid() &&
        ::flock(fd, LOCK_EX | LOCK_NB) == 0 &&
        ::lstat(leftover.path.c_str(), &named) == 0 &&
        named.st_dev == info.st_dev && named.st_ino == info.st_ino) {
      ::unlink(leftover.path.c_str());
    }
    ::close(fd);
  }
}

}  // namespace rotor::train
