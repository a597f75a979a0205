// A rotor tokenizer as GGUF's tokenizer.ggml.* keys, in the form llama.cpp
// tokenizes with the same ids (docs/gguf.md):
//
//   byte-level BPE (GPT-2, Llama 3, Qwen2, rotor's trained BPE)
//     model "gpt2": tokens (byte-level strings), merges ("a b", rank
//     order; a merge whose left token is empty or has a space after its
//     first byte is refused: llama.cpp splits "a b" at the first space
//     after the first byte), token_type, and pre = the llama.cpp pre-tokenizer
//     whose regex (and ignore_merges) is the tokenizer.json's Split regex:
//       Llama 3's regex, ignore_merges true   -> "llama-bpe"
//       Llama 3's regex, ignore_merges false  -> "smaug-bpe"
//       GPT-2's (ByteLevel use_regex)         -> "gpt-2"
//       Qwen2's                               -> "qwen2"
//     any other regex is refused, naming it;
//   SentencePiece-style BPE (Llama 2, Mistral: the Prepend/Replace U+2581
//     normalizer or a Metaspace pre-tokenizer, byte fallback)
//     model "llama": tokens, scores (-rank of the first merge that makes the
//     token: llama.cpp's SPM merges the highest score first, as BPE merges
//     the lowest rank), token_type (<0xXX> byte, unknown, control);
//   the byte tokenizer: "gpt2" with its 256 byte characters and no merges
//     (each byte one token, whatever the split), <|endoftext|> control.
//
// Token types: 1 normal, 2 unknown, 3 control (special added tokens),
// 4 user-defined (other added tokens), 5 unused (padding up to the model's
// vocab_size: "[PAD<id>]", or "[PAD<id>.1]", "[PAD<id>.2]", ... when a
// token already has that text), 6 byte. BOS and EOS ids, the padding id, and
// add_bos_token: whether a text starts with the BOS, as the model's texts
// did in training (PromptStart, train/tokenizer/tokenizer.h), so that
// llama.cpp starts a prompt as rotor generate does.
#ifndef ROTOR_TRAIN_GGUF_GGUF_TOKENIZER_H_
#define ROTOR_TRAIN_GGUF_GGUF_TOKENIZER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "train/config/model_config.h"
#include "train/gguf/gguf_file.h"
#include "train/tokenizer/tokenizer.h"

namespace rotor::train {

struct GgufVocab {
  std::string model;  // tokenizer.ggml.model: "gpt2" or "llama"
  std::string pre;    // tokenizer.ggml.pre ("" for llama)
  std::vector<std::string> tokens;
  std::vector<int32_t> token_types;
  std::vector<float> scores;        // llama only
  std::vector<std::string> merges;  // gpt2 only
  int32_t bos_id = -1;
  int32_t eos_id = -1;
  std::optional<int32_t> unknown_id;
  std::optional<int32_t> padding_id;
  bool add_bos = false;
  bool add_eos = false;
};

// The vocabulary of `tokenizer_spec` ("byte" or a tokenizer.json) for a
// model of `vocab_size` ids; `model` gives the bos/eos/pad ids a folder
// declared, `start` what a text starts with (its BOS is the bos id).
// Throws rotor::Error naming the file and JSON key of anything llama.cpp
// cannot tokenize the same way.
GgufVocab GgufVocabFor(const std::string& tokenizer_spec, int64_t vocab_size,
                       const ModelConfig& model,
                       PromptStart start = PromptStart::kDocumentSeparator);

// Adds the tokenizer.ggml.* keys of `vocab`.
void AddGgufVocab(const GgufVocab& vocab, GgufWriter& writer);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_GGUF_GGUF_TOKENIZER_H_
