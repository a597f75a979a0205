// Token files: a prepared data split (train.bin / val.bin) as one flat
// stream of token ids (uint16, or uint32 when the vocabulary needs it), read by
// memory mapping: no copy into the heap, and the pages are file-backed, so the
// kernel can drop and reload them instead of the process's memory growing.
// Opening a file makes one sequential pass to check every token id.
//
// Layout (all integers little-endian):
//
//   offset  size  field
//        0     8  magic "ROTORTOK"
//        8     4  format version (kTokenFileVersion = 2; version 1, which
//                  had 0 at offset 20 and always separator 256, still reads)
//       12     4  token dtype: 1 = uint16 (vocab_size <= 65536),
//                  2 = uint32 (larger vocabularies, e.g. Llama 3's 128256)
//       16     4  vocab_size: every token id is < vocab_size (<= 2^20,
//                  limits::kMaxVocabSize)
//       20     4  separator_id: the token that starts every document
//       24     8  token_count
//       32     8  document_count
//       40     8  text_bytes: the UTF-8 bytes of the documents' text, so
//                  that a loss per token converts to bits per byte
//                  (version 1: token_count - document_count, byte tokens)
//       48    16  reserved, 0
//       64  2*N   the tokens (4*N for uint32)
//
// Each document is preceded by the tokenizer's document separator (for the
// byte tokenizer <|endoftext|>, for Llama-style tokenizers their BOS; see
// train/data/prepare.h), so the stream reads <sep> doc1 <sep> doc2 ...
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
inline constexpr uint32_t kTokenFileVersion = 2;
inline constexpr uint32_t kTokenDtypeUint16 = 1;
inline constexpr uint32_t kTokenDtypeUint32 = 2;
inline constexpr size_t kTokenFileHeaderSize = 64;

// What a token file's header says about its stream.
struct TokenStreamInfo {
  uint32_t vocab_size = 0;
  uint64_t document_count = 0;
  int32_t separator_id = 0;
  uint64_t text_bytes = 0;
};

// Writes a token file atomically (temporary file, then rename), as uint16
// when vocab_size <= 65536 and as uint32 above. Throws rotor::Error if a
// token or the separator is not in [0, vocab_size) or vocab_size is not in
// [1, 2^20].
void WriteTokenFile(const std::string& path, const std::vector<int32_t>& tokens,
                    const TokenStreamInfo& info);

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
  size_t size() const { return token_count_; }
  int32_t operator[](size_t i) const {
    return dtype_ == kTokenDtypeUint16
               ? static_cast<int32_t>(
                     reinterpret_cast<const uint16_t*>(payload_)[i])
               : static_cast<int32_t>(
                     reinterpret_cast<const uint32_t*>(payload_)[i]);
  }
  // out[0 .. count) = tokens [start, start + count); the caller keeps the
  // range inside size().
  void Copy(size_t start, size_t count, int32_t* out) const;
  uint32_t dtype() const { return dtype_; }
  uint32_t vocab_size() const { return vocab_size_; }
  uint64_t document_count() const { return document_count_; }
  int32_t separator_id() const { return separator_id_; }
  uint64_t text_bytes() const { return text_bytes_; }
  // Bits per byte of a mean loss per token in nats over this stream:
  // loss * tokens / text_bytes / ln 2.
  double BitsPerByte(double loss_nats_per_token) const;

 private:
  void Unmap();

  std::string path_;
  void* mapping_ = nullptr;
  size_t mapping_size_ = 0;
  const unsigned char* payload_ = nullptr;  // the tokens, after the header
  uint32_t dtype_ = kTokenDtypeUint16;
  size_t token_count_ = 0;
  uint32_t vocab_size_ = 0;
  uint64_t document_count_ = 0;
  int32_t separator_id_ = 0;
  uint64_t text_bytes_ = 0;
};

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_DATA_TOKEN_FILE_H_
