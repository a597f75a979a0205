// Token files: a prepared data split (train.bin / val.bin) as one flat
// stream of uint16 token ids, read by memory mapping: no copy into the heap,
// and the pages are file-backed, so the kernel can drop and reload them
// instead of the process's memory growing. Opening a file makes one
// sequential pass to check every token id.
//
// Layout (all integers little-endian):
//
//   offset  size  field
//        0     8  magic "ROTORTOK"
//        8     4  format version (kTokenFileVersion = 1)
//       12     4  token dtype (1 = uint16; the only one so far)
//       16     4  vocab_size: every token id is < vocab_size (<= 65536)
//       20     4  reserved, 0
//       24     8  token_count
//       32     8  document_count
//       40    24  reserved, 0
//       64  2*N   the tokens
//
// Each document is preceded by the end-of-text token (ByteTokenizer::
// kEndOfText), so the stream reads <|endoftext|> doc1 <|endoftext|> doc2 ...
// TokenFile validates every field and every token when it opens a file.
#ifndef ROTOR_TRAIN_DATA_TOKEN_FILE_H_
#define ROTOR_TRAIN_DATA_TOKEN_FILE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace rotor::train {

inline constexpr char kTokenFileMagic[8] = {'R', 'O', 'T', 'O',
                                            'R', 'T', 'O', 'K'};
inline constexpr uint32_t kTokenFileVersion = 1;
inline constexpr uint32_t kTokenDtypeUint16 = 1;
inline constexpr size_t kTokenFileHeaderSize = 64;

// Writes a token file atomically (temporary file, then rename). Throws
// rotor::Error if a token is >= vocab_size or vocab_size is not in
// [1, 65536].
void WriteTokenFile(const std::string& path,
                    const std::vector<uint16_t>& tokens, uint32_t vocab_size,
                    uint64_t document_count);

// A read-only, memory-mapped token file. Movable, not copyable.
class TokenFile {
 public:
  // Maps and validates `path`; throws rotor::Error naming the file and the
  // problem (missing, truncated header, wrong magic, unsupported version or
  // dtype, size not matching token_count, token >= vocab_size, ...).
  explicit TokenFile(const std::string& path);
  ~TokenFile();
  TokenFile(TokenFile&& other) noexcept;
  TokenFile& operator=(TokenFile&& other) noexcept;
  TokenFile(const TokenFile&) = delete;
  TokenFile& operator=(const TokenFile&) = delete;

  const std::string& path() const { return path_; }
  const uint16_t* tokens() const { return tokens_; }
  size_t size() const { return token_count_; }
  uint16_t operator[](size_t i) const { return tokens_[i]; }
  uint32_t vocab_size() const { return vocab_size_; }
  uint64_t document_count() const { return document_count_; }

 private:
  void Unmap();

  std::string path_;
  void* mapping_ = nullptr;
  size_t mapping_size_ = 0;
  const uint16_t* tokens_ = nullptr;
  size_t token_count_ = 0;
  uint32_t vocab_size_ = 0;
  uint64_t document_count_ = 0;
};

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_DATA_TOKEN_FILE_H_
