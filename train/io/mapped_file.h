// A whole file mapped into memory read-only (mmap PROT_READ, MAP_PRIVATE):
// its bytes come from the page cache when first touched, with no copy into
// the heap, and the pages are file-backed, so the kernel can drop and reload
// them instead of the process's memory growing.
//
// The mapping keeps the file alive: deleting or renaming the path (as an
// atomic rewrite does) leaves the mapped bytes as they were. Truncating the
// file in place while it is mapped is not safe: touching a page past the new
// end raises SIGBUS.
#ifndef ROTOR_TRAIN_IO_MAPPED_FILE_H_
#define ROTOR_TRAIN_IO_MAPPED_FILE_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace rotor::train {

class MappedFile {
 public:
  // No file: bytes() is empty.
  MappedFile() = default;
  // Maps `path`; throws rotor::Error naming it if it cannot be opened, is not
  // a regular file or cannot be mapped. An empty file maps to no bytes.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  // The file's bytes, valid while this object lives.
  std::string_view bytes() const {
    return {static_cast<const char*>(mapping_), size_};
  }

  // Drops the pages that hold bytes [offset, offset + size) of the file,
  // rounded out to whole pages, from this process (madvise MADV_DONTNEED):
  // its memory use falls by them, while the page cache keeps them, so
  // touching them again reads them back from it (or from disk). bytes()
  // stays valid and unchanged.
  void ReleasePages(size_t offset, size_t size) const;

 private:
  void Unmap();

  void* mapping_ = nullptr;
  size_t size_ = 0;
};

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_IO_MAPPED_FILE_H_
