#include "train/data/token_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <utility>

#include "core/error.h"
#include "core/limits.h"
#include "train/io/atomic_file.h"
#include "train/io/output_file.h"

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

constexpr uint32_t kMaxVocabSize = limits::kMaxVocabSize;
constexpr uint32_t kMaxUint16Vocab = 65536;  // ids 0 .. 65535 fit uint16

size_t TokenBytes(uint32_t dtype) {
  return dtype == kTokenDtypeUint16 ? sizeof(uint16_t) : sizeof(uint32_t);
}

// The first token of `tokens` (read as T) that is >= vocab_size, or count.
template <typename T>
size_t FirstOutOfRange(const unsigned char* tokens, size_t count,
                       uint32_t vocab_size) {
  const T* ids = reinterpret_cast<const T*>(tokens);
  for (size_t i = 0; i < count; ++i) {
    if (ids[i] >= vocab_size) return i;
  }
  return count;
}

}  // namespace

void WriteTokenFile(const std::string& path, const std::vector<int32_t>& tokens,
                    const TokenStreamInfo& info) {
  const uint32_t vocab_size = info.vocab_size;
  const int32_t separator_id = info.separator_id;
  ROTOR_CHECK(vocab_size >= 1 && vocab_size <= kMaxVocabSize, path,
              ": vocab_size ", vocab_size, " is not in [1, ", kMaxVocabSize,
              "]");
  ROTOR_CHECK(
      separator_id >= 0 && static_cast<uint32_t>(separator_id) < vocab_size,
      path, ": separator id ", separator_id, " is not in [0, vocab_size ",
      vocab_size, ")");
  for (size_t i = 0; i < tokens.size(); ++i) {
    ROTOR_CHECK(tokens[i] >= 0 && static_cast<uint32_t>(tokens[i]) < vocab_size,
                path, ": token ", i, " is ", tokens[i],
                ", not in [0, vocab_size ", vocab_size, ")");
  }
  const uint32_t dtype =
      vocab_size <= kMaxUint16Vocab ? kTokenDtypeUint16 : kTokenDtypeUint32;
  unsigned char header[kTokenFileHeaderSize] = {};
  std::memcpy(header, kTokenFileMagic, 8);
  PutU32(header + 8, kTokenFileVersion);
  PutU32(header + 12, dtype);
  PutU32(header + 16, vocab_size);
  PutU32(header + 20, static_cast<uint32_t>(separator_id));
  PutU64(header + 24, tokens.size());
  PutU64(header + 32, info.document_count);
  PutU64(header + 40, info.text_bytes);
  AtomicFileWriter out(path);
  out.Write(header, sizeof(header));
  // The payload in chunks, narrowed to the file's dtype.
  constexpr size_t kChunk = size_t{1} << 16;
  std::vector<unsigned char> chunk(kChunk * TokenBytes(dtype));
  for (size_t start = 0; start < tokens.size(); start += kChunk) {
    const size_t count = std::min(kChunk, tokens.size() - start);
    for (size_t i = 0; i < count; ++i) {
      const auto id = static_cast<uint32_t>(tokens[start + i]);
      if (dtype == kTokenDtypeUint16) {
        const auto narrow = static_cast<uint16_t>(id);
        std::memcpy(chunk.data() + 2 * i, &narrow, 2);
      } else {
        std::memcpy(chunk.data() + 4 * i, &id, 4);
      }
    }
    out.Write(chunk.data(), count * TokenBytes(dtype));
  }
  out.Commit();
}

TokenFile::TokenFile(const std::string& path) : path_(path) {
  // O_NONBLOCK: a FIFO is refused below instead of blocking the open.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ROTOR_CHECK(fd >= 0, "token file ", path,
              ": cannot open: ", std::strerror(errno));
  struct stat info;
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    throw Error(StrCat("token file ", path, ": not a regular file"));
  }
  NoteInputFile(fd);
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
    ROTOR_CHECK(version == 1 || version == kTokenFileVersion, "token file ",
                path, ": format version ", version,
                " is not supported (this rotor reads versions 1 to ",
                kTokenFileVersion, ")");
    dtype_ = GetU32(header + 12);
    ROTOR_CHECK(dtype_ == kTokenDtypeUint16 || dtype_ == kTokenDtypeUint32,
                "token file ", path, ": token dtype code ", dtype_,
                " is not supported (1 = uint16, 2 = uint32)");
    vocab_size_ = GetU32(header + 16);
    ROTOR_CHECK(vocab_size_ >= 1 && vocab_size_ <= kMaxVocabSize, "token file ",
                path, ": vocab_size ", vocab_size_, " is not in [1, ",
                kMaxVocabSize, "]");
    // Version 1 had no separator field: its byte files started every
    // document with <|endoftext|> = 256.
    const uint32_t separator = version == 1 ? 256 : GetU32(header + 20);
    ROTOR_CHECK(separator < vocab_size_, "token file ", path, ": separator id ",
                separator, " is not < vocab_size ", vocab_size_);
    separator_id_ = static_cast<int32_t>(separator);
    for (size_t i = version == 1 ? 20 : 24; i < kTokenFileHeaderSize; ++i) {
      // token_count, document_count and (version 2) text_bytes
      if (i >= 24 && i < (version == 1 ? 40u : 48u)) continue;
      ROTOR_CHECK(header[i] == 0, "token file ", path,
                  ": reserved header byte ", i, " is not zero");
    }
    const uint64_t token_count = GetU64(header + 24);
    document_count_ = GetU64(header + 32);
    const uint64_t payload = file_size - kTokenFileHeaderSize;
    const uint64_t width = TokenBytes(dtype_);
    const bool fits = token_count <= payload / width;  // no overflow in w * N
    ROTOR_CHECK(fits && payload == token_count * width, "token file ", path,
                ": header says ", token_count, " tokens (", width,
                " bytes each) but ", payload, " bytes follow the header (",
                fits ? "trailing bytes" : "truncated", ")");
    ROTOR_CHECK(document_count_ <= token_count, "token file ", path,
                ": document_count ", document_count_,
                " exceeds the token count ", token_count);
    token_count_ = static_cast<size_t>(token_count);
    text_bytes_ =
        version == 1 ? token_count - document_count_ : GetU64(header + 40);
    payload_ = header + kTokenFileHeaderSize;
    const size_t bad =
        dtype_ == kTokenDtypeUint16
            ? FirstOutOfRange<uint16_t>(payload_, token_count_, vocab_size_)
            : FirstOutOfRange<uint32_t>(payload_, token_count_, vocab_size_);
    ROTOR_CHECK(bad == token_count_, "token file ", path, ": token ", bad,
                " is ", bad < token_count_ ? (*this)[bad] : 0,
                ", not < vocab_size ", vocab_size_);
  } catch (...) {
    Unmap();
    throw;
  }
}

double TokenFile::BitsPerByte(double loss_nats_per_token) const {
  ROTOR_CHECK(text_bytes_ > 0, "token file ", path_,
              ": no text bytes recorded, so no bits per byte");
  return loss_nats_per_token * static_cast<double>(token_count_) /
         static_cast<double>(text_bytes_) / std::log(2.0);
}

void TokenFile::Copy(size_t start, size_t count, int32_t* out) const {
  if (dtype_ == kTokenDtypeUint16) {
    const uint16_t* ids = reinterpret_cast<const uint16_t*>(payload_) + start;
    std::copy(ids, ids + count, out);
  } else {
    const uint32_t* ids = reinterpret_cast<const uint32_t*>(payload_) + start;
    std::copy(ids, ids + count, out);
  }
}

void TokenFile::Unmap() {
  if (mapping_ != nullptr) ::munmap(mapping_, mapping_size_);
  mapping_ = nullptr;
  mapping_size_ = 0;
  payload_ = nullptr;
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
    payload_ = std::exchange(other.payload_, nullptr);
    dtype_ = other.dtype_;
    token_count_ = std::exchange(other.token_count_, 0);
    vocab_size_ = other.vocab_size_;
    document_count_ = other.document_count_;
    separator_id_ = other.separator_id_;
    text_bytes_ = other.text_bytes_;
  }
  return *this;
}

}  // namespace rotor::train
