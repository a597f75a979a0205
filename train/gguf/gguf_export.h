// `rotor export --format gguf`: a model as one GGUF file for llama.cpp
// (and what runs on it: ollama, LM Studio, node-llama-cpp), with the
// `llama` architecture's keys, its RoPE scaling in llama.cpp's terms
// (gguf_rope.h) and its tokenizer (gguf_tokenizer.h). docs/gguf.md has the
// key mapping.
//
// Tensors, named as llama.cpp's loader expects (rotor's HF name ->):
//   model.embed_tokens.weight                  token_embd.weight
//   model.norm.weight                          output_norm.weight
//   lm_head.weight (absent when tied: llama.cpp then uses token_embd)
//                                              output.weight
//   model.layers.N.input_layernorm.weight      blk.N.attn_norm.weight
//   model.layers.N.self_attn.{q,k,v,o}_proj    blk.N.attn_{q,k,v,output}
//   model.layers.N.post_attention_layernorm    blk.N.ffn_norm
//   model.layers.N.mlp.{gate,up,down}_proj     blk.N.ffn_{gate,up,down}
//   (the RoPE factors, when the method needs them) rope_freqs.weight
// A weight [out, in] is written with ggml dimensions {in, out}, the same
// bytes. llama.cpp's llama architecture rotates pairs (2i, 2i+1) (ggml's
// NORMAL mode) and HF's Llama pairs (i, i + D/2), so the rows of q_proj
// and k_proj are permuted within each head as llama.cpp's converter does:
//   new row 2j + k of a head = old row j + k * D/2   (j < D/2, k in {0,1})
// which makes q.k, and so attention, the same. 1-D tensors (norms,
// rope_freqs) stay F32 in every dtype, as llama.cpp's converter writes them.
#ifndef ROTOR_TRAIN_GGUF_GGUF_EXPORT_H_
#define ROTOR_TRAIN_GGUF_GGUF_EXPORT_H_

#include <cstdint>
#include <optional>
#include <string>

#include "nn/transformer.h"
#include "train/config/model_config.h"
#include "train/gguf/gguf_file.h"
#include "train/tokenizer/tokenizer.h"

namespace rotor::train {

struct GgufExportOptions {
  GgmlType dtype = GgmlType::kF32;  // the matrices' type
  // rope.scaling.finetuned: the checkpoint was trained with its scaling.
  bool rope_finetuned = false;
  // The length a dynamic RoPE is frozen at (gguf_rope.h).
  std::optional<int64_t> rope_static_length;
  // What a text starts with (tokenizer.ggml.add_bos_token, bos_token_id):
  // a model rotor trained starts with the document separator; a Hugging
  // Face folder exported as it is, as its tokenizer says.
  PromptStart prompt_start = PromptStart::kDocumentSeparator;
  std::string name;    // general.name ("rotor model" when empty)
  std::string source;  // what the model is, for messages ("the model")
  bool force = false;  // replace an existing file (train/io/output_file.h)
};

// "f32", "f16", "bf16", "q8_0" -> the type; throws naming the choices.
GgmlType GgmlTypeFromName(const std::string& name);

// Writes `model` (configured by `config`, tokenized by `tokenizer_spec`)
// to `path` atomically. Everything is checked before the file is opened:
// an architecture, RoPE method or tokenizer llama.cpp cannot run the same
// way, a RoPE scaling that leaves float32 or rotor's positions
// (LintRopeRange, train/config/extension_lint.h), a float32 key float32
// cannot hold, or a weight the dtype cannot write as a finite number
// (gguf_tensors.h) throws rotor::Error naming the key or tensor, and
// nothing is written. Returns
// a one-line summary for the command to print.
std::string WriteGgufModel(const std::string& path,
                           const nn::Transformer& model,
                           const ModelConfig& config,
                           const std::string& tokenizer_spec,
                           const GgufExportOptions& options);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_GGUF_GGUF_EXPORT_H_
