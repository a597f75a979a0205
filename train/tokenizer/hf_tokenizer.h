// HfTokenizer: a Hugging Face tokenizer.json, encoded and decoded as HF's
// tokenizers library (Rust) does, for BPE models: byte-level BPE (GPT-2,
// Llama 3, Qwen2/3, SmolLM) and SentencePiece-style BPE (Llama 2,
// TinyLlama, Mistral, Gemma). docs/tokenizers.md lists what is supported.
//
// Encode runs HF's pipeline, one file per step:
//   text -> (invalid UTF-8 repaired, unicode.h)
//        -> added tokens found (added_tokens.h)
//        -> normalizer (normalizers.h) -> pre-tokenizer (pre_tokenizers.h)
//        -> BPE on each piece (bpe.h) -> post-processor (post_processors.h)
// Decode: ids -> token strings -> decoder (decoders.h) -> text.
// tokenizer_json.cc reads the file into these steps.
//
// Encode and Decode are const and thread-safe: documents can be encoded on
// several threads at once (the BPE cache is per thread).
#ifndef ROTOR_TRAIN_TOKENIZER_HF_TOKENIZER_H_
#define ROTOR_TRAIN_TOKENIZER_HF_TOKENIZER_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "train/tokenizer/added_tokens.h"
#include "train/tokenizer/bpe.h"
#include "train/tokenizer/decoders.h"
#include "train/tokenizer/normalizers.h"
#include "train/tokenizer/post_processors.h"
#include "train/tokenizer/pre_tokenizers.h"
#include "train/tokenizer/tokenizer.h"

namespace rotor::train {

// The steps of a tokenizer, as read from its file; a null step is skipped
// (a null decoder joins the tokens with spaces, as HF's).
struct HfTokenizerParts {
  std::unique_ptr<Normalizer> normalizer;
  std::unique_ptr<PreTokenizer> pre_tokenizer;
  std::unique_ptr<BpeModel> model;
  std::unique_ptr<PostProcessor> post_processor;
  std::unique_ptr<Decoder> decoder;
  AddedVocabulary added;
};

class HfTokenizer : public Tokenizer {
 public:
  // Reads the tokenizer.json at `path` (at most
  // limits::kMaxTokenizerJsonBytes). Throws rotor::Error naming the file
  // and the JSON path of anything malformed or unsupported.
  static std::unique_ptr<HfTokenizer> Load(const std::string& path);
  // The same from the file's text; `name` stands for the file in messages
  // and is what Name() returns.
  static std::unique_ptr<HfTokenizer> Parse(std::string_view json,
                                            const std::string& name);

  HfTokenizer(HfTokenizerParts parts, std::string name);

  std::vector<TokenId> Encode(std::string_view text,
                              bool add_special_tokens) const override;
  // Ids in range that no token has are skipped, as in HF.
  std::string Decode(const std::vector<TokenId>& ids,
                     bool skip_special_tokens) const override;
  int64_t VocabSize() const override { return vocab_size_; }
  std::optional<TokenId> TokenToId(std::string_view token) const override;
  std::string Name() const override { return name_; }

 private:
  // Appends the ids of `text` (between raw-matched added tokens; valid
  // UTF-8) to `ids`: normalize, normalized added tokens, pre-tokenize, BPE.
  void EncodeSegment(std::string_view text, bool at_start,
                     std::vector<TokenId>& ids) const;

  HfTokenizerParts parts_;
  std::string name_;
  int64_t vocab_size_;
};

// "byte" -> ByteTokenizer; a folder -> its tokenizer.json; otherwise the
// path of a tokenizer.json (declared in tokenizer.h).

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_TOKENIZER_HF_TOKENIZER_H_
