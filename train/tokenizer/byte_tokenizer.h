// ByteTokenizer: rotor's default tokenizer. Text is a sequence of bytes, and
// each byte is its own token, so nothing is ever out of vocabulary and
// "context length" counts bytes (about one character of English text).
//
//   id 0..255  the byte with that value (UTF-8 text becomes its bytes; any
//              byte sequence, valid UTF-8 or not, round-trips exactly: unlike
//              HfTokenizer, invalid UTF-8 is kept as it is)
//   id 256     <|endoftext|>: separates documents in token files (it comes
//              before every document) and starts generation: the BOS, which
//              Encode(text, true) and ByteTokenizerJson's post-processor add
//
// kVocabSize = 257 ids in all. A model's vocab_size must be at least the
// tokenizer's vocabulary size (it may be larger, e.g. rounded up for SIMD).
//
// The static helpers (Encode(text), EncodeAppend, Decode(ids)) serve the data
// pipeline, which needs no object; the virtual members implement Tokenizer.
// ByteTokenizerJson writes the same ids as a Hugging Face tokenizer.json, so
// a byte-level model runs in HF's tools too.
#ifndef ROTOR_TRAIN_TOKENIZER_BYTE_TOKENIZER_H_
#define ROTOR_TRAIN_TOKENIZER_BYTE_TOKENIZER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "train/tokenizer/tokenizer.h"

namespace rotor::train {

class ByteTokenizer : public Tokenizer {
 public:
  static constexpr TokenId kEndOfText = 256;
  static constexpr int kVocabSize = 257;
  static constexpr const char* kEndOfTextText = "<|endoftext|>";
  static constexpr const char* kName = "byte";

  // One id per byte (no special tokens: the text "<|endoftext|>" is 13
  // ordinary bytes; callers insert kEndOfText themselves).
  static std::vector<TokenId> Encode(std::string_view text);
  // Appends to `out` (avoids a temporary when building a token stream).
  static void EncodeAppend(std::string_view text, std::vector<TokenId>& out);
  // Bytes back to text; kEndOfText renders as "<|endoftext|>". Throws
  // rotor::Error for ids outside [0, kVocabSize).
  static std::string Decode(const std::vector<TokenId>& ids);

  // Tokenizer: the same ids as the static Encode; add_special_tokens puts
  // kEndOfText first, as the BOS (every document rotor trains on starts
  // with it), as ByteTokenizerJson's post-processor does.
  std::vector<TokenId> Encode(std::string_view text,
                              bool add_special_tokens) const override;
  // The static Decode, leaving out kEndOfText when skip_special_tokens.
  std::string Decode(const std::vector<TokenId>& ids,
                     bool skip_special_tokens) const override;
  // kVocabSize.
  int64_t VocabSize() const override { return kVocabSize; }
  // kEndOfText for "<|endoftext|>"; single bytes are not named tokens.
  std::optional<TokenId> TokenToId(std::string_view token) const override;
  // "byte".
  std::string Name() const override { return kName; }
};

// A Hugging Face tokenizer.json with the byte tokenizer's ids: byte b is id
// b, and "<|endoftext|>" a special added token with id 256. It is a
// byte-level BPE (byte_level_bpe_json.h) without merges, whose vocabulary
// is GPT-2's 256 byte characters with their bytes' values as ids, and
// without a regex: the ByteLevel pre-tokenizer maps the whole text to those
// characters (add_prefix_space false), BPE leaves each one a token, and the
// post-processor puts "<|endoftext|>" first (TokenizerJsonWithBos) when
// special tokens are added. So HF's tokenizers and rotor's HfTokenizer
// encode a text to exactly its UTF-8 bytes (after 256 with special tokens),
// with two differences from ByteTokenizer:
//   - the text "<|endoftext|>" is the one id 256 (HF always cuts special
//     tokens out of a text), where ByteTokenizer encodes its 13 bytes;
//   - text that is not valid UTF-8: HF's tokenizers take only strings
//     (Python str, Rust String), so such bytes never reach it as they are,
//     and rotor's HfTokenizer replaces them with U+FFFD as a TextDecoder
//     does; decoding ids that are not valid UTF-8 together gives U+FFFD too
//     (HF decodes lossily), where ByteTokenizer gives the bytes back.
std::string ByteTokenizerJson();

// The byte tokenizer's tokenizer.json as rotor export wrote it before its
// post-processor added <|endoftext|> (ByteTokenizerJson without that): the
// same ids, so such a folder still reads as "byte" (TokenizerSpecIn).
std::string LegacyByteTokenizerJson();

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_TOKENIZER_BYTE_TOKENIZER_H_
