#include "train/data/token_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/error.h"
#include "train/io/atomic_file.h"

namespace rotor::train {

// Token payloads are written and mapped in the machine's byte order.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "rotor token files are little-endian");

namespace {

void PutU32(unsigned char* at, uint32_t value) {
  for (int i = 0; i < 4; ++i)
    at[i] = static_cast<unsigned char>(value >> (8 * i));
}
void PutU64(unsigned char* at, uint64_t value) {
  for (int i = 0; i < 8; ++i)
    at[i] = static_cast<unsigned char>(value >> (8 * i));
}
uint32_t GetU32(const unsigned char* at) {
  uint32_t value = 0;
  for (int i = 3; i >= 0; --i) value = (value << 8) | at[i];
  return value;
}
uint64_t GetU64(const unsigned char* at) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | at[i];
  return value;
}

constexpr uint32_t kMaxVocabSize = 65536;  // ids must fit uint16

}  // namespace

void WriteTokenFile(const std::string& path,
                    const std::vector<uint16_t>& tokens, uint32_t vocab_size,
                    uint64_t document_count) {
  ROTOR_CHECK(vocab_size >= 1 && vocab_size <= kMaxVocabSize, path,
              ": vocab_size ", vocab_size, " is not in [1, ", kMaxVocabSize,
              "]");
  for (size_t i = 0; i < tokens.size(); ++i) {
    ROTOR_CHECK(tokens[i] < vocab_size, path, ": token ", i, " is ", tokens[i],
                ", not < vocab_size ", vocab_size);
  }
  unsigned char header[kTokenFileHeaderSize] = {};
  std::memcpy(header, kTokenFileMagic, 8);
  PutU32(header + 8, kTokenFileVersion);
  PutU32(header + 12, kTokenDtypeUint16);
  PutU32(header + 16, vocab_size);
  PutU64(header + 24, tokens.size());
  PutU64(header + 32, document_count);
  AtomicFileWriter out(path);
  out.Write(header, sizeof(header));
  out.Write(tokens.data(), tokens.size() * sizeof(uint16_t));
  out.Commit();
}

TokenFile::TokenFile(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ROTOR_CHECK(fd >= 0, "token file ", path,
              ": cannot open: ", std::strerror(errno));
  struct stat info;
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    throw Error(StrCat("token file ", path, ": not a regular file"));
  }
  const size_t file_size = static_cast<size_t>(info.st_size);
  if (file_size < kTokenFileHeaderSize) {
    ::close(fd);
    throw Error(StrCat("token file ", path, ": truncated header (", file_size,
                       " bytes, the header alone is ", kTokenFileHeaderSize,
                       ")"));
  }
  mapping_ = ::mmap(nullptr, file_size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int map_errno = errno;
  ::close(fd);  // the mapping keeps the file alive
  if (mapping_ == MAP_FAILED) {
    mapping_ = nullptr;
    throw Error(StrCat("token file ", path,
                       ": mmap failed: ", std::strerror(map_errno)));
  }
  mapping_size_ = file_size;
  try {
    const auto* header = static_cast<const unsigned char*>(mapping_);
    ROTOR_CHECK(std::memcmp(header, kTokenFileMagic, 8) == 0, "token file ",
                path,
                ": wrong magic (not a rotor token file; expected \"ROTORTOK\" "
                "- make one with 'rotor prepare')");
    const uint32_t version = GetU32(header + 8);
    ROTOR_CHECK(version == kTokenFileVersion, "token file ", path,
                ": format version ", version,
                " is not supported (this rotor "
                "reads version ",
                kTokenFileVersion, ")");
    const uint32_t dtype = GetU32(header + 12);
    ROTOR_CHECK(dtype == kTokenDtypeUint16, "token file ", path,
                ": token dtype code ", dtype, " is not supported (1 = uint16)");
    vocab_size_ = GetU32(header + 16);
    ROTOR_CHECK(vocab_size_ >= 1 && vocab_size_ <= kMaxVocabSize, "token file ",
                path, ": vocab_size ", vocab_size_, " is not in [1, ",
                kMaxVocabSize, "]");
    for (size_t i = 20; i < kTokenFileHeaderSize; ++i) {
      if (i >= 24 && i < 40) continue;  // token_count, document_count
      ROTOR_CHECK(header[i] == 0, "token file ", path,
                  ": reserved header byte ", i, " is not zero");
    }
    const uint64_t token_count = GetU64(header + 24);
    document_count_ = GetU64(header + 32);
    const uint64_t payload = file_size - kTokenFileHeaderSize;
    const bool fits = token_count <= payload / 2;  // (no overflow in 2 * N)
    ROTOR_CHECK(fits && payload == token_count * 2, "token file ", path,
                ": header says ", token_count, " tokens (2 bytes each) but ",
                payload, " bytes follow the header (",
                fits ? "trailing bytes" : "truncated", ")");
    ROTOR_CHECK(document_count_ <= token_count, "token file ", path,
                ": document_count ", document_count_,
                " exceeds the token count ", token_count);
    token_count_ = static_cast<size_t>(token_count);
    tokens_ = reinterpret_cast<const uint16_t*>(header + kTokenFileHeaderSize);
    for (size_t i = 0; i < token_count_; ++i) {
      ROTOR_CHECK(tokens_[i] < vocab_size_, "token file ", path, ": token ", i,
                  " is ", tokens_[i], ", not < vocab_size ", vocab_size_);
    }
  } catch (...) {
    Unmap();
    throw;
  }
}

void TokenFile::Unmap() {
  if (mapping_ != nullptr) ::munmap(mapping_, mapping_size_);
  mapping_ = nullptr;
  mapping_size_ = 0;
  tokens_ = nullptr;
  token_count_ = 0;
}

TokenFile::~TokenFile() { Unmap(); }

TokenFile::TokenFile(TokenFile&& other) noexcept { *this = std::move(other); }

TokenFile& TokenFile::operator=(TokenFile&& other) noexcept {
  if (this != &other) {
    Unmap();
    path_ = std::move(other.path_);
    mapping_ = std::exchange(other.mapping_, nullptr);
    mapping_size_ = std::exchange(other.mapping_size_, 0);
    tokens_ = std::exchange(other.tokens_, nullptr);
    token_count_ = std::exchange(other.token_count_, 0);
    vocab_size_ = other.vocab_size_;
    document_count_ = other.document_count_;
  }
  return *this;
}

}  // namespace rotor::train
