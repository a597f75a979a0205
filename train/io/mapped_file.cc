#include "train/io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "core/error.h"
#include "train/io/output_file.h"

namespace rotor::train {

MappedFile::MappedFile(const std::string& path) {
  // O_NONBLOCK: opening a FIFO with no writer returns at once (and is
  // refused below) instead of waiting for one forever.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ROTOR_CHECK(fd >= 0, "cannot open ", path, ": ", std::strerror(errno));
  struct stat info;
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    throw Error(StrCat("cannot map ", path, ": not a regular file"));
  }
  NoteInputFile(fd);
  const size_t size = static_cast<size_t>(info.st_size);
  if (size == 0) {  // mmap refuses a length of 0: no bytes, no mapping
    ::close(fd);
    return;
  }
  void* mapping = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int map_errno = errno;
  ::close(fd);  // the mapping keeps the file alive
  ROTOR_CHECK(mapping != MAP_FAILED, "cannot map ", path, ": ",
              std::strerror(map_errno));
  mapping_ = mapping;
  size_ = size;
}

void MappedFile::ReleasePages(size_t offset, size_t size) const {
  const size_t end = std::min(offset + size, size_);
  if (offset >= end) return;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t first = offset / page * page;
  // Rounding up may pass the end of the file, not of the mapping: it runs to
  // the end of the file's last page.
  const size_t last = (end + page - 1) / page * page;
  // Advice only: if the kernel refuses it, the pages just stay.
  ::madvise(static_cast<char*>(mapping_) + first, last - first, MADV_DONTNEED);
}

void MappedFile::Unmap() {
  if (mapping_ != nullptr) ::munmap(mapping_, size_);
  mapping_ = nullptr;
  size_ = 0;
}

MappedFile::~MappedFile() { Unmap(); }

MappedFile::MappedFile(MappedFile&& other) noexcept {
  *this = std::move(other);
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    Unmap();
    mapping_ = std::exchange(other.mapping_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

}  // namespace rotor::train
