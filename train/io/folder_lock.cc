#include "train/io/folder_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "train/io/output_file.h"

namespace rotor::train {

namespace {

// The pid that holds a flock on the file open as `fd`, from /proc/locks
// (lines like "1: FLOCK  ADVISORY  WRITE 1234 fe:00:10954843 0 EOF", the
// device's major and minor in hex); "(unknown)" if none is listed.
std::string LockHolder(int fd) {
  struct stat info;
  if (::fstat(fd, &info) != 0) return "(unknown)";
  char file[64];
  std::snprintf(file, sizeof(file), "%02x:%02x:%llu", major(info.st_dev),
                minor(info.st_dev),
                static_cast<unsigned long long>(info.st_ino));
  std::ifstream locks("/proc/locks");
  std::string line;
  while (std::getline(locks, line)) {
    std::istringstream fields(line);
    std::string id, kind, mode, access, pid, where;
    fields >> id >> kind >> mode >> access >> pid >> where;
    if (kind == "FLOCK" && where == file) return pid;  // "->": a waiter
  }
  return "(unknown)";
}

}  // namespace

FolderLock::FolderLock(const std::string& dir, const std::string& file,
                       const std::string& what) {
  const std::string path = (std::filesystem::path(dir) / file).string();
  // O_NOFOLLOW: a symbolic link planted in place of the lock file is not
  // followed. O_NONBLOCK: a FIFO planted there opens at once instead of
  // waiting for a writer, and is refused below. The file is never written:
  // the lock is what counts, and who holds it comes from the kernel.
  fd_ = ::open(path.c_str(),
               O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0666);
  const int open_errno = errno;
  // A folder or socket fails the open itself (EISDIR, ENXIO); a FIFO or a
  // device opens, and fails the type check.
  const std::string kind = NonRegularFileKind(path);
  const std::string not_a_lock_file =
      StrCat("lock file ", path, " is ",
             kind.empty() ? std::string("not a regular file")
                          : kind + ", not a regular file",
             "; remove it and run again");
  ROTOR_CHECK(fd_ >= 0 || kind.empty(), not_a_lock_file);
  ROTOR_CHECK(fd_ >= 0, "cannot open lock file ", path, ": ",
              std::strerror(open_errno));
  struct stat info {};
  if (::fstat(fd_, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    throw Error(not_a_lock_file);
  }
  int status;
  while ((status = ::flock(fd_, LOCK_EX | LOCK_NB)) != 0 && errno == EINTR) {
  }
  if (status != 0) {
    const int lock_errno = errno;
    const std::string holder =
        lock_errno == EWOULDBLOCK ? LockHolder(fd_) : std::string();
    ::close(fd_);
    fd_ = -1;
    ROTOR_CHECK(lock_errno != EWOULDBLOCK, what, " ", dir, " is in use by pid ",
                holder, " (", path,
                " is locked); wait for that run to end, or choose another "
                "folder");
    throw Error(StrCat("cannot lock ", path, ": ", std::strerror(lock_errno)));
  }
}

FolderLock::~FolderLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

}  // namespace rotor::train
