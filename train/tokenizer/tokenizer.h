// Tokenizer: text -> the token ids a model was trained on, and back.
//
// Two implementations share this interface:
//   - ByteTokenizer (train/tokenizer/byte_tokenizer.h): one id per byte, plus
//     <|endoftext|>; rotor's default for models trained from scratch;
//   - HfTokenizer (train/tokenizer/hf_tokenizer.h): a Hugging Face
//     `tokenizer.json`, encoded and decoded exactly as HF's tokenizers
//     library does (byte-level BPE as in GPT-2, Llama 3, Qwen2 and SmolLM;
//     SentencePiece-style BPE as in Llama 2, TinyLlama, Mistral and Gemma).
//
// LoadTokenizer picks one from a spec: "byte", or the path of a
// tokenizer.json (or of a folder that holds one).
#ifndef ROTOR_TRAIN_TOKENIZER_TOKENIZER_H_
#define ROTOR_TRAIN_TOKENIZER_TOKENIZER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rotor::train {

using TokenId = int32_t;

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // The ids of `text` (UTF-8). With add_special_tokens, the post-processor
  // adds what the model expects around a sequence (e.g. Llama's BOS), as
  // HF's `tokenizer.encode(text)` does by default; without, only the text's
  // own tokens. HfTokenizer first replaces invalid UTF-8 as a WHATWG
  // TextDecoder does (each maximal invalid subpart becomes U+FFFD), so the
  // ids equal those of tools that read the same bytes as text;
  // ByteTokenizer keeps every byte as it is.
  virtual std::vector<TokenId> Encode(std::string_view text,
                                      bool add_special_tokens) const = 0;

  // The text of `ids`, as HF's `tokenizer.decode(ids)`; with
  // skip_special_tokens, special added tokens are left out. Throws
  // rotor::Error naming the position of an id outside [0, VocabSize()).
  virtual std::string Decode(const std::vector<TokenId>& ids,
                             bool skip_special_tokens) const = 0;

  // One more than the largest id this tokenizer produces (the model's
  // vocabulary and the added tokens); a model's vocab_size must be at least
  // this.
  virtual int64_t VocabSize() const = 0;

  // The id of a token given by its text in the vocabulary or the added
  // tokens (e.g. "<|endoftext|>", "</s>"), if there is one.
  virtual std::optional<TokenId> TokenToId(std::string_view token) const = 0;

  // What the tokenizer is, for messages and metadata: "byte", or the path
  // of the tokenizer.json it was loaded from.
  virtual std::string Name() const = 0;
};

// "byte" -> the byte tokenizer; otherwise a tokenizer.json file, or a folder
// holding one. Throws rotor::Error naming the file and the JSON path of
// whatever it cannot read or does not support.
std::unique_ptr<Tokenizer> LoadTokenizer(const std::string& spec);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_TOKENIZER_TOKENIZER_H_
