// ByteTokenizer: rotor's default tokenizer. Text is a sequence of bytes, and
// each byte is its own token, so nothing is ever out of vocabulary and
// "context length" counts bytes (about one character of English text).
//
//   id 0..255  the byte with that value (UTF-8 text becomes its bytes; any
//              byte sequence, valid UTF-8 or not, round-trips exactly)
//   id 256     <|endoftext|>: separates documents in token files (it comes
//              before every document) and starts generation (BOS)
//
// kByteVocabSize = 257 ids in all. A model's vocab_size must be at least the
// tokenizer's vocabulary size (it may be larger, e.g. rounded up for SIMD).
#ifndef ROTOR_TRAIN_DATA_TOKENIZER_H_
#define ROTOR_TRAIN_DATA_TOKENIZER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rotor::train {

using TokenId = int32_t;

class ByteTokenizer {
 public:
  static constexpr TokenId kEndOfText = 256;
  static constexpr int kVocabSize = 257;
  static constexpr const char* kEndOfTextText = "<|endoftext|>";

  // One id per byte (no special tokens: the text "<|endoftext|>" is 13
  // ordinary bytes; callers insert kEndOfText themselves).
  static std::vector<TokenId> Encode(std::string_view text);
  // Appends to `out` (avoids a temporary when building a token stream).
  static void EncodeAppend(std::string_view text, std::vector<TokenId>& out);
  // Bytes back to text; kEndOfText renders as "<|endoftext|>". Throws
  // rotor::Error for ids outside [0, kVocabSize).
  static std::string Decode(const std::vector<TokenId>& ids);
  // "byte"
  static const char* Name() { return "byte"; }
};

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_DATA_TOKENIZER_H_
