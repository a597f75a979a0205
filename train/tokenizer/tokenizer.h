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

// The tokenizer.json file a spec names: "" for "byte", FOLDER/tokenizer.json
// for a folder, the spec itself otherwise.
std::string TokenizerFile(const std::string& spec);

// Where a prepared data folder or a checkpoint keeps its tokenizer: its own
// copy, DIR/tokenizer.json, when there is one; "byte" otherwise, and also
// when that file is the byte tokenizer's (ByteTokenizerJson, as rotor
// export writes it for a byte-level model).
std::string TokenizerSpecIn(const std::string& dir);

// Whether two specs name the same tokenizer: both "byte", or two
// tokenizer.json files with the same bytes (a copy is the same tokenizer,
// an edited file is not), or one of them the copy rotor export wrote of the
// other (WriteHfTokenizerFiles: the other with its document separator
// added as the BOS, which makes the same token files).
bool SameTokenizer(const std::string& a, const std::string& b);

// Copies the tokenizer.json of `spec` to DIR/tokenizer.json (nothing for
// "byte"), atomically.
void CopyTokenizerInto(const std::string& spec, const std::string& dir);

// The token that starts every document in rotor's token files: the first
// token the post-processor puts around an empty text (the BOS of
// Llama-style tokenizers: <s>, <|begin_of_text|>; the byte tokenizer's
// <|endoftext|>), else the first of <|begin_of_text|>, <s>, <bos> and
// <|endoftext|> (GPT-2 style, SmolLM, the BPE trainer's default) it has.
// Throws naming the tokenizer when it has none.
TokenId DocumentSeparator(const Tokenizer& tokenizer);

// What a model's texts started with in training, and so what a prompt
// starts with (rotor generate and score, the BOS keys of an export):
//   kDocumentSeparator  a model rotor trained: rotor prepare puts the
//                       DocumentSeparator before every document, whatever
//                       the tokenizer's post-processor does;
//   kTokenizerBos       a Hugging Face model as it was published: the BOS
//                       its tokenizer's post-processor adds (Llama's <s>),
//                       or none (GPT-2, SmolLM and Qwen2 add none).
enum class PromptStart { kDocumentSeparator, kTokenizerBos };

// The id a prompt starts with under `start`, or none.
std::optional<TokenId> PromptBos(const Tokenizer& tokenizer, PromptStart start);

// `tokenizer_json` (a tokenizer.json's text, `where` naming it) with a
// post-processor that puts `bos` (an added token) before every text, as
// Llama's TemplateProcessing does: a TemplateProcessing after the existing
// post-processor (in a Sequence), for a file whose post-processor adds no
// BOS (the caller checks). HF's tokenizers, transformers and rotor then all
// add it.
std::string TokenizerJsonWithBos(const std::string& tokenizer_json,
                                 const std::string& where, TokenId bos);

// Writes the tokenizer files of a Hugging Face model folder into the
// existing folder DIR, each atomically: DIR/tokenizer.json (for "byte",
// ByteTokenizerJson; otherwise the file `tokenizer_spec` names, with the
// BOS of `start` added by TokenizerJsonWithBos) and
// DIR/tokenizer_config.json, with which transformers' AutoTokenizer loads
// it as a PreTrainedTokenizerFast that decodes as the tokenizer.json does
// (clean_up_tokenization_spaces false) and adds the BOS as the model was
// trained (add_bos_token, bos_token); for "byte" it also names
// "<|endoftext|>" as the eos token.
void WriteHfTokenizerFiles(const std::string& tokenizer_spec,
                           const std::string& dir, PromptStart start);

// The ids that end a generated text: the document separator and whichever of
// <|endoftext|>, </s>, <|end_of_text|>, <|eot_id|>, <|im_end|>, <eos> the
// tokenizer has.
std::vector<TokenId> EndOfTextIds(const Tokenizer& tokenizer);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_TOKENIZER_TOKENIZER_H_
