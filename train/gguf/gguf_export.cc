#include "train/gguf/gguf_export.h"

#include <cmath>
#include <map>
#include <utility>
#include <vector>

#include "core/error.h"
#include "nn/rope_methods.h"
#include "train/config/extension_lint.h"
#include "train/gguf/gguf_rope.h"
#include "train/gguf/gguf_tensors.h"
#include "train/gguf/gguf_tokenizer.h"
#include "train/io/output_file.h"

namespace rotor::train {

namespace {

constexpr char kArchitecture[] = "llama";

// The metadata keys that mirror config.json fields, one row each: the key
// after "llama.", its GGUF type (u32 or f32), the HF name and the value.
struct ArchitectureKey {
  const char* key;
  GgufValueType type;
  const char* hf_name;
  double (*value)(const nn::TransformerConfig&);
};
const ArchitectureKey kArchitectureKeys[] = {
    {"vocab_size", GgufValueType::kUint32, "vocab_size",
     [](const nn::TransformerConfig& c) { return double(c.vocab_size); }},
    {"context_length", GgufValueType::kUint32, "max_position_embeddings",
     [](const nn::TransformerConfig& c) {
       return double(c.rope.max_position_embeddings);
     }},
    {"embedding_length", GgufValueType::kUint32, "hidden_size",
     [](const nn::TransformerConfig& c) { return double(c.hidden_size); }},
    {"block_count", GgufValueType::kUint32, "num_hidden_layers",
     [](const nn::TransformerConfig& c) {
       return double(c.num_hidden_layers);
     }},
    {"feed_forward_length", GgufValueType::kUint32, "intermediate_size",
     [](const nn::TransformerConfig& c) {
       return double(c.intermediate_size);
     }},
    {"attention.head_count", GgufValueType::kUint32, "num_attention_heads",
     [](const nn::TransformerConfig& c) {
       return double(c.num_attention_heads);
     }},
    {"attention.head_count_kv", GgufValueType::kUint32, "num_key_value_heads",
     [](const nn::TransformerConfig& c) {
       return double(c.num_key_value_heads);
     }},
    {"attention.key_length", GgufValueType::kUint32, "head_dim",
     [](const nn::TransformerConfig& c) { return double(c.head_dim); }},
    {"attention.value_length", GgufValueType::kUint32, "head_dim",
     [](const nn::TransformerConfig& c) { return double(c.head_dim); }},
    {"rope.dimension_count", GgufValueType::kUint32, "head_dim",
     [](const nn::TransformerConfig& c) { return double(RotaryDim(c.rope)); }},
    {"rope.freq_base", GgufValueType::kFloat32, "rope_theta",
     [](const nn::TransformerConfig& c) { return c.rope.rope_theta; }},
    {"attention.layer_norm_rms_epsilon", GgufValueType::kFloat32,
     "rms_norm_eps",
     [](const nn::TransformerConfig& c) { return c.rms_norm_eps; }},
};

std::string LlamaKey(const std::string& suffix) {
  return std::string(kArchitecture) + "." + suffix;
}

// llama.cpp's name of a rotor (HF) parameter name, "" for none.
std::string GgufTensorName(const std::string& name) {
  static const std::map<std::string, std::string> kTop = {
      {"model.embed_tokens.weight", "token_embd.weight"},
      {"model.norm.weight", "output_norm.weight"},
      {"lm_head.weight", "output.weight"},
  };
  static const std::map<std::string, std::string> kLayer = {
      {"input_layernorm.weight", "attn_norm.weight"},
      {"self_attn.q_proj.weight", "attn_q.weight"},
      {"self_attn.k_proj.weight", "attn_k.weight"},
      {"self_attn.v_proj.weight", "attn_v.weight"},
      {"self_attn.o_proj.weight", "attn_output.weight"},
      {"post_attention_layernorm.weight", "ffn_norm.weight"},
      {"mlp.gate_proj.weight", "ffn_gate.weight"},
      {"mlp.up_proj.weight", "ffn_up.weight"},
      {"mlp.down_proj.weight", "ffn_down.weight"},
  };
  if (const auto top = kTop.find(name); top != kTop.end()) return top->second;
  const std::string prefix = "model.layers.";
  if (name.rfind(prefix, 0) != 0) return "";
  const size_t dot = name.find('.', prefix.size());
  if (dot == std::string::npos) return "";
  const auto layer = kLayer.find(name.substr(dot + 1));
  if (layer == kLayer.end()) return "";
  return "blk." + name.substr(prefix.size(), dot - prefix.size()) + "." +
         layer->second;
}

// Rows of a [heads * D, in] projection reordered from HF's rotate-half pairs
// (j, j + D/2) to ggml's adjacent pairs (2j, 2j + 1), head by head.
std::vector<float> InterleaveRopePairs(const float* w, int64_t rows,
                                       int64_t columns, int64_t head_dim) {
  std::vector<float> out(static_cast<size_t>(rows * columns));
  const int64_t half = head_dim / 2;
  for (int64_t head = 0; head < rows / head_dim; ++head) {
    for (int64_t j = 0; j < half; ++j) {
      for (int64_t k = 0; k < 2; ++k) {
        const float* from = w + (head * head_dim + k * half + j) * columns;
        float* to = out.data() + (head * head_dim + 2 * j + k) * columns;
        std::copy(from, from + columns, to);
      }
    }
  }
  return out;
}

void CheckArchitecture(const nn::TransformerConfig& c,
                       const ModelConfig& config, const std::string& source) {
  ROTOR_CHECK(config.model_type != ModelType::kQwen2, source,
              ": model_type qwen2: rotor writes GGUF for llama and mistral "
              "models (llama.cpp's llama architecture); export qwen2 as a "
              "Hugging Face folder and convert it with llama.cpp");
  ROTOR_CHECK(!c.qkv_bias && !c.o_proj_bias && !c.mlp_bias, source,
              ": attention_bias / mlp_bias: rotor writes GGUF for Llama "
              "models without biases");
  ROTOR_CHECK(c.sliding_window == 0 ||
                  c.sliding_window >= c.rope.max_position_embeddings,
              source, ": sliding_window ", c.sliding_window,
              ": llama.cpp's llama architecture attends to every earlier "
              "position; the window is shorter than max_position_embeddings ",
              c.rope.max_position_embeddings);
}

}  // namespace

GgmlType GgmlTypeFromName(const std::string& name) {
  for (GgmlType type :
       {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0}) {
    if (name == GgmlTypeName(type)) return type;
  }
  throw Error(
      StrCat("--dtype ", name, ": GGUF export writes f32, f16, bf16 or q8_0"));
}

std::string WriteGgufModel(const std::string& path,
                           const nn::Transformer& model,
                           const ModelConfig& config,
                           const std::string& tokenizer_spec,
                           const GgufExportOptions& options) {
  const nn::TransformerConfig& c = model.config();
  const std::string source =
      options.source.empty() ? "the model" : options.source;
  CheckArchitecture(c, config, source);
  for (const LintFinding& finding : LintRopeRange(c.rope)) {
    throw Error(StrCat(source, ": ", finding.message));
  }
  const GgufRope rope = GgufRopeFor(c.rope, options.rope_static_length, source);
  const GgufVocab vocab =
      GgufVocabFor(tokenizer_spec, c.vocab_size, config, options.prompt_start);

  GgufWriter writer;
  writer.AddString("general.architecture", kArchitecture);
  writer.AddString("general.name",
                   options.name.empty() ? "rotor model" : options.name);
  // LLAMA_FTYPE: ALL_F32 0, MOSTLY_F16 1, MOSTLY_Q8_0 7, MOSTLY_BF16 32.
  const std::map<GgmlType, uint32_t> file_type = {{GgmlType::kF32, 0},
                                                  {GgmlType::kF16, 1},
                                                  {GgmlType::kQ8_0, 7},
                                                  {GgmlType::kBF16, 32}};
  writer.AddUint32("general.file_type", file_type.at(options.dtype));
  writer.AddUint32("general.quantization_version", 2);
  for (const ArchitectureKey& key : kArchitectureKeys) {
    const double value = key.value(c);
    if (key.type == GgufValueType::kUint32) {
      writer.AddUint32(LlamaKey(key.key), static_cast<uint32_t>(value));
    } else {
      const std::string name = LlamaKey(key.key);
      writer.AddFloat32(name, ToFloat32(value, StrCat(source, ": ", name, " (",
                                                      key.hf_name, ")")));
    }
  }
  writer.AddString(LlamaKey("rope.scaling.type"), rope.scaling_type);
  if (rope.factor) {
    const std::string name = LlamaKey("rope.scaling.factor");
    writer.AddFloat32(
        name, ToFloat32(*rope.factor,
                        StrCat(source, ": ", name, " (rope_scaling.factor)")));
  }
  if (rope.original_context_length) {
    writer.AddUint32(LlamaKey("rope.scaling.original_context_length"),
                     static_cast<uint32_t>(*rope.original_context_length));
  }
  if (rope.attn_factor) {
    const std::string name = LlamaKey("rope.scaling.attn_factor");
    writer.AddFloat32(
        name, ToFloat32(*rope.attn_factor,
                        StrCat(source, ": ", name, " (the attention factor)")));
  }
  if (RopeMethodOf(c.rope.rope_type).scales()) {
    writer.AddBool(LlamaKey("rope.scaling.finetuned"), options.rope_finetuned);
  }
  AddGgufVocab(vocab, writer);

  const bool permute = c.rope_layout == RopeLayout::kSplitHalf;
  for (const auto& [name, parameter] : model.NamedParameters()) {
    const std::string gguf_name = GgufTensorName(name);
    ROTOR_CHECK(!gguf_name.empty(), "GGUF export: parameter ", name,
                " has no llama.cpp tensor");
    const std::vector<float> values = parameter.ToVector();  // row-major
    const auto& shape = parameter.shape();
    std::vector<uint64_t> ne(shape.rbegin(), shape.rend());
    const int64_t columns = shape.back();
    const bool matrix = shape.size() == 2;
    const GgmlType type = matrix ? options.dtype : GgmlType::kF32;
    const bool rotated = gguf_name.find("attn_q.") != std::string::npos ||
                         gguf_name.find("attn_k.") != std::string::npos;
    if (permute && rotated) {
      const std::vector<float> interleaved =
          InterleaveRopePairs(values.data(), shape[0], columns, c.head_dim);
      writer.AddTensor(gguf_name, ne, type,
                       EncodeGgmlTensor(interleaved.data(), interleaved.size(),
                                        columns, type, gguf_name));
    } else {
      writer.AddTensor(gguf_name, ne, type,
                       EncodeGgmlTensor(values.data(), values.size(), columns,
                                        type, gguf_name));
    }
  }
  if (rope.rope_freqs) {
    writer.AddTensor(
        "rope_freqs.weight", {rope.rope_freqs->size()}, GgmlType::kF32,
        EncodeGgmlTensor(rope.rope_freqs->data(), rope.rope_freqs->size(),
                         rope.rope_freqs->size(), GgmlType::kF32,
                         "rope_freqs.weight"));
  }
  CheckOutputFile(path, options.force, "--output");
  writer.Write(path);
  return StrCat("wrote ", path, ": llama, ", c.num_hidden_layers, " layers, ",
                GgmlTypeName(options.dtype), ", RoPE ",
                RopeTypeName(c.rope.rope_type), " as ", rope.how,
                ", tokenizer ", vocab.model,
                vocab.pre.empty() ? "" : " (pre " + vocab.pre + ")", ", ",
                writer.num_keys(), " keys");
}

}  // namespace rotor::train
