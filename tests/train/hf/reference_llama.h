// A naive double-precision forward pass of Hugging Face's LlamaForCausalLM,
// MistralForCausalLM and Qwen2ForCausalLM, straight from an HF model folder:
//
//   std::vector<double> logits = ReferenceLogits(folder, ids);  // [T * V]
//
// It is the independent side of the tests of rotor's HF import: it includes
// nothing from core/, nn/ or train/ (only the standard library and
// nlohmann-json), reads config.json and the safetensors files with its own
// reader, and computes every step in double with plain loops, as the
// equations of transformers' modelling code say, not as rotor computes them.
// So agreement with rotor (to float32 rounding) means both follow HF, and a
// misreading shared by rotor's code cannot pass unnoticed.
//
// What it covers, and the HF source each part follows (transformers
// src/transformers/...):
// - config.json with each config class's defaults for absent keys
//   (models/{llama,mistral,qwen2}/configuration_*.py), the model chosen by
//   model_type as AutoConfig does, with architectures[0] as a fallback;
// - the RoPE parameters of every rope_type (modeling_rope_utils.py: default,
//   linear, dynamic, yarn, longrope, llama3, proportional), standardized as
//   RotaryEmbeddingConfigMixin.standardize_rope_params does (rope_scaling or
//   rope_parameters; the legacy "type" key; rope_theta inside or outside;
//   a top-level original_max_position_embeddings), in double;
// - the forward (models/llama/modeling_llama.py and its Mistral/Qwen2
//   copies): embedding; per layer RMSNorm, q/k/v projections with their
//   biases, RoPE in the rotate_half layout scaled by the attention factor,
//   grouped-query attention with the causal (and sliding-window) mask,
//   o_proj, residual; RMSNorm, down(silu(gate) * up), residual; final
//   RMSNorm; lm_head or the tied embedding;
// - safetensors files and model.safetensors.index.json (ReadSafetensors,
//   ReadHfWeights), BF16/F16/F32 decoded bit by bit.
// Where HF itself is inconsistent, the choice made here is stated beside the
// code (partial_rotary_factor, "type" against "rope_type", a tied lm_head in
// the file).
//
// Entry points:
//   ReferenceLogits(folder, ids[, options])   logits [T * vocab_size]
//   LoadReferenceModel(folder), then ReferenceLogits(model, ids[, options])
//                                             to read the files once
//   ParseReferenceConfig(config_json)         sizes, biases, windows, RoPE
//   ReferenceRopeParameters(config, seq_len)  inv_freq, attention factor
//   ReadHfWeights(folder), ReadSafetensors(file)
// ReferenceOptions::first_position starts the positions elsewhere than 0.
#ifndef ROTOR_TESTS_TRAIN_HF_REFERENCE_LLAMA_H_
#define ROTOR_TESTS_TRAIN_HF_REFERENCE_LLAMA_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace rotor::test::hf {

inline constexpr double kReferencePi = 3.14159265358979323846;

// ---------------------------------------------------------------------------
// Reading safetensors.

// One tensor of a safetensors file, its values widened to double.
struct ReferenceTensor {
  std::string dtype;  // as the header names it: "BF16", "F16", "F32", ...
  std::vector<int64_t> shape;
  std::vector<double> values;  // row-major
};

// bfloat16 is the top half of a float32: put the 16 bits back on top.
inline double DecodeBfloat16(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value = 0.0f;
  std::memcpy(&value, &wide, sizeof(value));
  return value;
}

// IEEE binary16: sign, 5 exponent bits (bias 15), 10 fraction bits.
// Exponent 0: subnormal, fraction * 2^-24; 31: infinity or NaN; else
// (1024 + fraction) * 2^(exponent - 25).
inline double DecodeFloat16(uint16_t bits) {
  const double sign = (bits & 0x8000) ? -1.0 : 1.0;
  const int exponent = (bits >> 10) & 0x1F;
  const int fraction = bits & 0x3FF;
  if (exponent == 0) return sign * std::ldexp(fraction, -24);
  if (exponent == 31) {
    return fraction ? std::nan("") : sign * HUGE_VAL;
  }
  return sign * std::ldexp(1024 + fraction, exponent - 25);
}

// The little-endian unsigned integer in bytes [0, width) of `data`.
inline uint64_t LoadLittleEndian(const unsigned char* data, int width) {
  uint64_t value = 0;
  for (int i = width - 1; i >= 0; --i) value = (value << 8) | data[i];
  return value;
}

// Decodes `count` elements of `dtype` from `data`. Floating types decode
// exactly; integers and BOOL too (for the bad-input tests' files).
inline std::vector<double> DecodeElements(const std::string& dtype,
                                          const unsigned char* data,
                                          int64_t count) {
  std::vector<double> values(count);
  for (int64_t i = 0; i < count; ++i) {
    if (dtype == "BF16") {
      values[i] = DecodeBfloat16(LoadLittleEndian(data + 2 * i, 2));
    } else if (dtype == "F16") {
      values[i] = DecodeFloat16(LoadLittleEndian(data + 2 * i, 2));
    } else if (dtype == "F32") {
      const auto bits =
          static_cast<uint32_t>(LoadLittleEndian(data + 4 * i, 4));
      float value = 0.0f;
      std::memcpy(&value, &bits, sizeof(value));
      values[i] = value;
    } else if (dtype == "F64") {
      const uint64_t bits = LoadLittleEndian(data + 8 * i, 8);
      std::memcpy(&values[i], &bits, sizeof(double));
    } else if (dtype == "U8" || dtype == "BOOL") {
      values[i] = data[i];
    } else if (dtype == "U16" || dtype == "U32" || dtype == "U64") {
      const int width = dtype == "U16" ? 2 : dtype == "U32" ? 4 : 8;
      values[i] =
          static_cast<double>(LoadLittleEndian(data + width * i, width));
    } else if (dtype == "I8") {
      values[i] = static_cast<int8_t>(data[i]);
    } else if (dtype == "I16") {
      values[i] = static_cast<int16_t>(LoadLittleEndian(data + 2 * i, 2));
    } else if (dtype == "I32") {
      values[i] = static_cast<int32_t>(LoadLittleEndian(data + 4 * i, 4));
    } else if (dtype == "I64") {
      values[i] = static_cast<double>(
          static_cast<int64_t>(LoadLittleEndian(data + 8 * i, 8)));
    }
  }
  return values;
}

// Bytes per element of a safetensors dtype; 0 for one this reader does not
// know.
inline int ReferenceDtypeBytes(const std::string& dtype) {
  if (dtype == "F64" || dtype == "I64" || dtype == "U64") return 8;
  if (dtype == "F32" || dtype == "I32" || dtype == "U32") return 4;
  if (dtype == "BF16" || dtype == "F16" || dtype == "I16" || dtype == "U16") {
    return 2;
  }
  if (dtype == "I8" || dtype == "U8" || dtype == "BOOL") return 1;
  return 0;
}

inline std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("reference: cannot open " + path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Reads a safetensors file: bytes 0..7 are the header length N
// (little-endian u64), bytes 8..8+N a JSON object mapping each tensor name
// to {"dtype", "shape", "data_offsets": [begin, end]} (offsets into the data
// that follows the header) plus an optional "__metadata__". Checked as the
// safetensors crate checks (Metadata::validate): every tensor's byte count
// is its element count times the dtype's size, and the tensors, sorted by
// offset, tile the data exactly with no gap, overlap or tail.
inline std::map<std::string, ReferenceTensor> ReadSafetensors(
    const std::string& path) {
  const std::string file = ReadWholeFile(path);
  auto fail = [&](const std::string& what) {
    return std::runtime_error("reference: " + path + ": " + what);
  };
  if (file.size() < 8) throw fail("shorter than the 8-byte header length");
  const auto* bytes = reinterpret_cast<const unsigned char*>(file.data());
  const uint64_t header_size = LoadLittleEndian(bytes, 8);
  if (header_size > file.size() - 8) throw fail("header runs past the end");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(file.substr(8, header_size));
  } catch (const nlohmann::json::exception& error) {
    throw fail(std::string("header is not JSON: ") + error.what());
  }
  if (!header.is_object()) throw fail("header is not a JSON object");
  const uint64_t data_size = file.size() - 8 - header_size;
  const unsigned char* data = bytes + 8 + header_size;

  std::map<std::string, ReferenceTensor> tensors;
  std::vector<std::pair<uint64_t, uint64_t>> extents;
  for (const auto& [name, info] : header.items()) {
    if (name == "__metadata__") continue;
    if (!info.is_object() || !info.contains("dtype") ||
        !info.contains("shape") || !info.contains("data_offsets")) {
      throw fail(name + ": needs dtype, shape and data_offsets");
    }
    ReferenceTensor tensor;
    tensor.dtype = info["dtype"].get<std::string>();
    const int element_bytes = ReferenceDtypeBytes(tensor.dtype);
    if (element_bytes == 0)
      throw fail(name + ": unknown dtype " + tensor.dtype);
    uint64_t count = 1;
    for (const auto& dim : info["shape"]) {
      if (!dim.is_number_unsigned()) throw fail(name + ": bad shape");
      tensor.shape.push_back(dim.get<int64_t>());
      count *= dim.get<uint64_t>();
    }
    const auto& offsets = info["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2 ||
        !offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned()) {
      throw fail(name + ": data_offsets must be two unsigned integers");
    }
    const uint64_t begin = offsets[0].get<uint64_t>();
    const uint64_t end = offsets[1].get<uint64_t>();
    if (begin > end || end > data_size) {
      throw fail(name + ": data_offsets outside the data");
    }
    if (end - begin != count * element_bytes) {
      throw fail(name + ": " + std::to_string(end - begin) +
                 " bytes for its shape and dtype");
    }
    extents.push_back({begin, end});
    tensor.values = DecodeElements(tensor.dtype, data + begin, count);
    tensors[name] = std::move(tensor);
  }
  std::sort(extents.begin(), extents.end());
  uint64_t covered = 0;
  for (const auto& [begin, end] : extents) {
    if (begin != covered) throw fail("tensor data has a gap or an overlap");
    covered = end;
  }
  if (covered != data_size) throw fail("bytes after the last tensor");
  return tensors;
}

// Every tensor of an HF folder, as from_pretrained finds them: a
// model.safetensors is used when there is one (modeling_utils.py checks it
// before the index); else model.safetensors.index.json's weight_map names
// each tensor's file, and each tensor is taken from the file it names.
inline std::map<std::string, ReferenceTensor> ReadHfWeights(
    const std::string& folder) {
  const std::filesystem::path root(folder);
  if (std::filesystem::exists(root / "model.safetensors")) {
    return ReadSafetensors((root / "model.safetensors").string());
  }
  const std::filesystem::path index_path =
      root / "model.safetensors.index.json";
  if (!std::filesystem::exists(index_path)) {
    throw std::runtime_error("reference: " + folder +
                             " has neither model.safetensors nor an index");
  }
  const nlohmann::json index =
      nlohmann::json::parse(ReadWholeFile(index_path.string()));
  if (!index.contains("weight_map") || !index["weight_map"].is_object()) {
    throw std::runtime_error("reference: the index has no weight_map");
  }
  std::map<std::string, std::map<std::string, ReferenceTensor>> files;
  std::map<std::string, ReferenceTensor> tensors;
  for (const auto& [name, file_json] : index["weight_map"].items()) {
    const std::string file = file_json.get<std::string>();
    if (!files.count(file)) {
      files[file] = ReadSafetensors((root / file).string());
    }
    auto found = files[file].find(name);
    if (found == files[file].end()) {
      throw std::runtime_error("reference: the index puts " + name + " in " +
                               file + ", which does not hold it");
    }
    tensors[name] = found->second;
  }
  return tensors;
}

// ---------------------------------------------------------------------------
// config.json.

// The model as HF builds it from config.json.
struct ReferenceConfig {
  std::string model_type;         // "llama", "mistral" or "qwen2"
  int64_t vocab_size = 0;         // V: rows of embed_tokens and lm_head
  int64_t hidden_size = 0;        // H: the residual stream's width
  int64_t intermediate_size = 0;  // F: the MLP's width
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;      // Hq
  int64_t num_key_value_heads = 0;      // Hkv; Hq / Hkv query heads share one
  int64_t head_dim = 0;                 // D
  int64_t max_position_embeddings = 0;  // dynamic NTK's L0, yarn's fallback
  double rms_norm_eps = 0.0;
  bool tie_word_embeddings = false;  // lm_head is embed_tokens
  bool qkv_bias = false;             // q_proj, k_proj, v_proj
  bool o_bias = false;
  bool mlp_bias = false;  // gate_proj, up_proj, down_proj
  // Per layer: the sliding window W (a query at i sees keys j with
  // i - W < j <= i), or 0 for plain causal attention.
  std::vector<int64_t> sliding_window;
  // RoPE, standardized as standardize_rope_params leaves
  // config.rope_parameters: rope_type and rope_theta always set,
  // partial_rotary_factor when given, original_max_position_embeddings for
  // llama3, yarn and longrope.
  nlohmann::json rope_parameters;
};

// The config keys' defaults where the three config classes differ
// (LlamaConfig, MistralConfig, Qwen2Config __init__ defaults). All three
// share rms_norm_eps 1e-6, hidden_act "silu", tie_word_embeddings false,
// rope_theta 10000, hidden_size 4096, 32 layers and 32 heads.
struct ModelTypeDefaults {
  int64_t vocab_size;
  int64_t intermediate_size;
  // num_key_value_heads when the key is absent: LlamaConfig has None (then
  // num_attention_heads), MistralConfig 8, Qwen2Config 32. An explicit null
  // means num_attention_heads in all three.
  std::optional<int64_t> num_key_value_heads;
  int64_t max_position_embeddings;
};

inline ModelTypeDefaults DefaultsOf(const std::string& model_type) {
  if (model_type == "llama") return {32000, 11008, std::nullopt, 2048};
  if (model_type == "mistral") return {32000, 14336, 8, 4096 * 32};
  return {151936, 22016, 32, 32768};  // qwen2
}

// config[key]: `fallback` when absent; an integer otherwise (a float or a
// null is an error, except where the caller handles null first).
inline int64_t ReferenceInt(const nlohmann::json& config,
                            const std::string& key, int64_t fallback) {
  if (!config.contains(key)) return fallback;
  if (!config[key].is_number_integer()) {
    throw std::runtime_error("reference: config " + key +
                             " must be an integer");
  }
  return config[key].get<int64_t>();
}

inline double ReferenceNumber(const nlohmann::json& object,
                              const std::string& key, double fallback) {
  if (!object.contains(key)) return fallback;
  if (!object[key].is_number()) {
    throw std::runtime_error("reference: " + key + " must be a number");
  }
  return object[key].get<double>();
}

// Python truthiness of an optional JSON value: absent, null, false, 0 and
// 0.0 are false ("x or default", "if mscale and mscale_all_dim").
inline bool Truthy(const nlohmann::json& object, const std::string& key) {
  if (!object.contains(key) || object[key].is_null()) return false;
  const nlohmann::json& value = object[key];
  if (value.is_boolean()) return value.get<bool>();
  if (value.is_number()) return value.get<double>() != 0.0;
  return true;
}

// The model type: AutoConfig picks the config class by model_type (and
// AutoModelForCausalLM the model by the config class), so model_type decides
// in HF; architectures[0] only stands in when model_type is absent. The two
// disagreeing is refused here.
inline std::string ReferenceModelType(const nlohmann::json& config) {
  static const std::map<std::string, std::string> kArchitectures = {
      {"LlamaForCausalLM", "llama"},
      {"MistralForCausalLM", "mistral"},
      {"Qwen2ForCausalLM", "qwen2"}};
  std::string from_architecture;
  if (config.contains("architectures") && config["architectures"].is_array() &&
      !config["architectures"].empty()) {
    const std::string architecture = config["architectures"][0];
    auto found = kArchitectures.find(architecture);
    if (found == kArchitectures.end()) {
      throw std::runtime_error("reference: unsupported architecture " +
                               architecture);
    }
    from_architecture = found->second;
  }
  const std::string model_type = config.value("model_type", from_architecture);
  if (model_type != "llama" && model_type != "mistral" &&
      model_type != "qwen2") {
    throw std::runtime_error("reference: unsupported model_type " + model_type);
  }
  if (!from_architecture.empty() && from_architecture != model_type) {
    throw std::runtime_error("reference: architectures and model_type " +
                             model_type + " disagree");
  }
  return model_type;
}

// RotaryEmbeddingConfigMixin.convert_rope_params_to_dict and
// standardize_rope_params (modeling_rope_utils.py, transformers 5.x), which
// also read every 4.x config.json:
// - the dict is config["rope_scaling"] (the 4.x key; 5.x pops it and
//   prefers it when it is a non-empty dict), else config["rope_parameters"]
//   (what 5.x writes), else {};
// - rope_type: "rope_type", else the legacy "type", else "default". 4.x
//   configs *copied* "type" over "rope_type" (LlamaConfig/Qwen2Config
//   __init__: rope_scaling["rope_type"] = rope_scaling["type"]); 5.x keeps
//   "rope_type" (setdefault). They differ only when both are given and
//   disagree, which is refused here;
// - rope_theta: the dict's own, else config["rope_theta"], else 10000;
// - partial_rotary_factor: config's top-level key overrides the dict's;
// - original_max_position_embeddings (llama3, yarn, longrope only): the
//   top-level key overrides (Phi-3 keeps it there), else the dict's, else
//   max_position_embeddings.
inline nlohmann::json StandardizeRopeParameters(
    const nlohmann::json& config, int64_t max_position_embeddings) {
  nlohmann::json rope = nlohmann::json::object();
  const bool has_rope_scaling = config.contains("rope_scaling") &&
                                config["rope_scaling"].is_object() &&
                                !config["rope_scaling"].empty();
  if (has_rope_scaling) {
    rope = config["rope_scaling"];
  } else if (config.contains("rope_parameters") &&
             !config["rope_parameters"].is_null()) {
    rope = config["rope_parameters"];
  } else if (config.contains("rope_scaling") &&
             !config["rope_scaling"].is_null() &&
             !config["rope_scaling"].is_object()) {
    throw std::runtime_error("reference: rope_scaling must be an object");
  }
  if (!rope.is_object()) {
    throw std::runtime_error("reference: rope parameters must be an object");
  }
  if (rope.contains("rope_type") && rope.contains("type") &&
      rope["rope_type"] != rope["type"]) {
    throw std::runtime_error(
        "reference: rope \"type\" and \"rope_type\" disagree (transformers "
        "4.x used \"type\", 5.x uses \"rope_type\")");
  }
  if (!rope.contains("rope_type")) {
    rope["rope_type"] = rope.contains("type") ? rope["type"] : "default";
  }
  rope.erase("type");
  if (!rope.contains("rope_theta")) {
    rope["rope_theta"] = config.contains("rope_theta")
                             ? config["rope_theta"]
                             : nlohmann::json(10000.0);
  }
  if (!rope["rope_theta"].is_number()) {
    throw std::runtime_error("reference: rope_theta must be a number");
  }
  if (config.contains("partial_rotary_factor") &&
      !config["partial_rotary_factor"].is_null()) {
    rope["partial_rotary_factor"] = config["partial_rotary_factor"];
  }
  const std::string type = rope["rope_type"];
  if (type == "llama3" || type == "yarn" || type == "longrope") {
    if (config.contains("original_max_position_embeddings")) {
      rope["original_max_position_embeddings"] =
          config["original_max_position_embeddings"];
    } else if (!rope.contains("original_max_position_embeddings") ||
               rope["original_max_position_embeddings"].is_null()) {
      rope["original_max_position_embeddings"] = max_position_embeddings;
    }
  }
  return rope;
}

inline ReferenceConfig ParseReferenceConfig(const nlohmann::json& config) {
  ReferenceConfig c;
  c.model_type = ReferenceModelType(config);
  const ModelTypeDefaults defaults = DefaultsOf(c.model_type);
  const std::string act = config.value("hidden_act", "silu");
  // ACT2FN maps both "silu" and "swish" to SiLUActivation.
  if (act != "silu" && act != "swish") {
    throw std::runtime_error("reference: hidden_act must be silu, not " + act);
  }
  c.vocab_size = ReferenceInt(config, "vocab_size", defaults.vocab_size);
  c.hidden_size = ReferenceInt(config, "hidden_size", 4096);
  c.intermediate_size =
      ReferenceInt(config, "intermediate_size", defaults.intermediate_size);
  c.num_hidden_layers = ReferenceInt(config, "num_hidden_layers", 32);
  c.num_attention_heads = ReferenceInt(config, "num_attention_heads", 32);
  if (config.contains("num_key_value_heads") &&
      config["num_key_value_heads"].is_null()) {
    c.num_key_value_heads = c.num_attention_heads;
  } else {
    c.num_key_value_heads = ReferenceInt(
        config, "num_key_value_heads",
        defaults.num_key_value_heads.value_or(c.num_attention_heads));
  }
  // `getattr(config, "head_dim", None) or hidden_size // num_attention_heads`
  const bool has_head_dim =
      config.contains("head_dim") && !config["head_dim"].is_null();
  c.head_dim = has_head_dim ? ReferenceInt(config, "head_dim", 0)
                            : c.hidden_size / c.num_attention_heads;
  c.max_position_embeddings = ReferenceInt(config, "max_position_embeddings",
                                           defaults.max_position_embeddings);
  c.rms_norm_eps = ReferenceNumber(config, "rms_norm_eps", 1e-6);
  c.tie_word_embeddings = config.value("tie_word_embeddings", false);
  if (c.num_attention_heads <= 0 || c.num_key_value_heads <= 0 ||
      c.num_attention_heads % c.num_key_value_heads != 0 || c.head_dim <= 0) {
    throw std::runtime_error(
        "reference: num_attention_heads must be a positive multiple of "
        "num_key_value_heads");
  }

  // Biases: LlamaAttention/LlamaMLP take config.attention_bias and
  // config.mlp_bias; Qwen2Attention has bias=True on q/k/v and False on o,
  // Qwen2MLP none; Mistral none.
  const bool llama = c.model_type == "llama";
  c.qkv_bias = c.model_type == "qwen2" ||
               (llama && config.value("attention_bias", false));
  c.o_bias = llama && config.value("attention_bias", false);
  c.mlp_bias = llama && config.value("mlp_bias", false);

  // Sliding windows. Mistral: config.sliding_window on every layer, 4096
  // when the key is absent, none when null. Qwen2: only with
  // use_sliding_window (default false), then on the layers whose
  // layer_types entry is "sliding_attention", by default those from
  // max_window_layers (default 28) on. Llama: none.
  c.sliding_window.assign(c.num_hidden_layers, 0);
  auto window_value = [&](int64_t fallback) -> int64_t {
    if (config.contains("sliding_window") &&
        config["sliding_window"].is_null()) {
      return 0;
    }
    return ReferenceInt(config, "sliding_window", fallback);
  };
  if (c.model_type == "mistral") {
    c.sliding_window.assign(c.num_hidden_layers, window_value(4096));
  } else if (c.model_type == "qwen2" &&
             config.value("use_sliding_window", false)) {
    const int64_t window = window_value(4096);
    const int64_t first = ReferenceInt(config, "max_window_layers", 28);
    for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
      const bool sliding =
          config.contains("layer_types") && config["layer_types"].is_array()
              ? config["layer_types"].at(i) == "sliding_attention"
              : i >= first;
      if (sliding) c.sliding_window[i] = window;
    }
  }
  c.rope_parameters =
      StandardizeRopeParameters(config, c.max_position_embeddings);
  return c;
}

// ---------------------------------------------------------------------------
// RoPE parameters (modeling_rope_utils.py, _compute_*_parameters).

struct ReferenceRope {
  std::string rope_type;
  // r: the channels of each head that rotate, the first r; pair i is
  // (i, i + r/2) (rotate_half). The other D - r pass through.
  int64_t rotary_dim = 0;
  std::vector<double> inv_freq;   // r/2 inverse frequencies, radians/position
  double attention_factor = 1.0;  // multiplies both cos and sin
};

// theta_i = base^(-2i/dim) for i < dim/2: the default RoPE frequencies.
inline std::vector<double> BaseInverseFrequencies(double base, int64_t dim) {
  std::vector<double> inv(dim / 2);
  for (int64_t i = 0; i < dim / 2; ++i) {
    inv[i] = std::pow(base, -2.0 * i / dim);
  }
  return inv;
}

// get_mscale in _compute_yarn_parameters: 1 for scale <= 1, else
// 0.1 * mscale * ln(scale) + 1.
inline double YarnMscale(double scale, double mscale) {
  return scale <= 1.0 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

// The inverse frequencies and the attention factor for a forward whose
// largest position is seq_len - 1 (HF: seq_len = max(position_ids) + 1,
// which only dynamic and longrope read).
inline ReferenceRope ReferenceRopeParameters(const ReferenceConfig& config,
                                             int64_t seq_len) {
  const nlohmann::json& p = config.rope_parameters;
  ReferenceRope rope;
  rope.rope_type = p.at("rope_type").get<std::string>();
  const double base = p.at("rope_theta").get<double>();
  const int64_t head_dim = config.head_dim;
  const double partial = ReferenceNumber(p, "partial_rotary_factor", 1.0);
  // dim = int(head_dim * partial_rotary_factor). HF Llama/Mistral/Qwen2
  // themselves do not honour it: their default-type init uses the whole
  // head_dim, and their apply_rotary_pos_emb multiplies the whole head by
  // cos/sin, so any other type with partial < 1 fails to broadcast. This
  // reference follows the Phi-3/GPT-NeoX meaning instead: the first r
  // channels rotate, the rest pass through.
  const int64_t dim = static_cast<int64_t>(head_dim * partial);
  if (rope.rope_type != "proportional" &&
      (dim <= 0 || dim % 2 != 0 || dim > head_dim)) {
    throw std::runtime_error("reference: rotary dim " + std::to_string(dim) +
                             " must be even and within head_dim");
  }
  rope.rotary_dim = dim;
  const std::vector<double> theta = BaseInverseFrequencies(base, dim);
  const int64_t max_pos = config.max_position_embeddings;
  auto required = [&](const std::string& key) -> double {
    if (!p.contains(key) || !p[key].is_number()) {
      throw std::runtime_error("reference: rope " + rope.rope_type +
                               " needs a number " + key);
    }
    return p[key].get<double>();
  };
  // `factor` present but null is allowed (yarn, longrope): then the ratio.
  auto factor_or_ratio = [&](double original_max) -> double {
    if (p.contains("factor") && !p["factor"].is_null())
      return required("factor");
    return max_pos / original_max;
  };

  if (rope.rope_type == "default") {
    rope.inv_freq = theta;
  } else if (rope.rope_type == "linear") {
    // Position interpolation: theta_i / factor.
    const double factor = required("factor");
    for (const double t : theta) rope.inv_freq.push_back(t / factor);
  } else if (rope.rope_type == "dynamic") {
    // Dynamic NTK: for L = max(seq_len, max_position_embeddings), the base
    // becomes base * (factor * L / max_pos - (factor - 1))^(dim / (dim - 2)).
    // It equals base up to max_position_embeddings (never
    // original_max_position_embeddings) and grows past it.
    const double factor = required("factor");
    if (dim <= 2) throw std::runtime_error("reference: dynamic needs dim > 2");
    const double length = static_cast<double>(std::max(seq_len, max_pos));
    const double scaled_base =
        base * std::pow(factor * length / max_pos - (factor - 1.0),
                        static_cast<double>(dim) / (dim - 2));
    rope.inv_freq = BaseInverseFrequencies(scaled_base, dim);
  } else if (rope.rope_type == "yarn") {
    const double original_max = required("original_max_position_embeddings");
    const double factor = factor_or_ratio(original_max);
    if (p.contains("attention_factor") && !p["attention_factor"].is_null()) {
      rope.attention_factor = required("attention_factor");
    } else if (Truthy(p, "mscale") && Truthy(p, "mscale_all_dim")) {
      rope.attention_factor = YarnMscale(factor, required("mscale")) /
                              YarnMscale(factor, required("mscale_all_dim"));
    } else {
      rope.attention_factor = YarnMscale(factor, 1.0);  // a lone mscale: unused
    }
    // `get("beta_fast") or 32`, `get("beta_slow") or 1`.
    const double beta_fast =
        Truthy(p, "beta_fast") ? required("beta_fast") : 32;
    const double beta_slow = Truthy(p, "beta_slow") ? required("beta_slow") : 1;
    // The pair whose wavelength makes `rotations` turns over original_max:
    // dim * ln(original_max / (2 pi rotations)) / (2 ln base).
    auto correction_dim = [&](double rotations) {
      return dim * std::log(original_max / (rotations * 2.0 * kReferencePi)) /
             (2.0 * std::log(base));
    };
    double low = correction_dim(beta_fast);
    double high = correction_dim(beta_slow);
    // `get("truncate", True)`: absent is true, null is false.
    const bool truncate = !p.contains("truncate") || Truthy(p, "truncate");
    if (truncate) {
      low = std::floor(low);
      high = std::ceil(high);
    }
    low = std::max(low, 0.0);
    high = std::min(high, static_cast<double>(dim - 1));  // dim - 1, not dim/2
    if (low == high) high += 0.001;
    for (int64_t i = 0; i < dim / 2; ++i) {
      // ramp 0 below low (extrapolate: keep theta), 1 above high
      // (interpolate: theta / factor), linear in the pair index between.
      const double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0);
      const double extrapolation = 1.0 - ramp;
      rope.inv_freq.push_back(theta[i] / factor * (1.0 - extrapolation) +
                              theta[i] * extrapolation);
    }
  } else if (rope.rope_type == "longrope") {
    const double original_max = required("original_max_position_embeddings");
    const double factor = factor_or_ratio(original_max);
    if (p.contains("attention_factor") && !p["attention_factor"].is_null()) {
      rope.attention_factor = required("attention_factor");
    } else {
      rope.attention_factor =
          factor <= 1.0
              ? 1.0
              : std::sqrt(1.0 + std::log(factor) / std::log(original_max));
    }
    // long_factor once the sequence is longer than the original context
    // (dynamic_rope_update's longrope_frequency_update), else short_factor;
    // the attention factor is the same for both.
    const char* key = seq_len > original_max ? "long_factor" : "short_factor";
    if (!p.contains(key) || !p[key].is_array() ||
        static_cast<int64_t>(p[key].size()) != dim / 2) {
      throw std::runtime_error(std::string("reference: longrope ") + key +
                               " must list rotary_dim / 2 numbers");
    }
    for (int64_t i = 0; i < dim / 2; ++i) {
      rope.inv_freq.push_back(theta[i] / p[key][i].get<double>());
    }
  } else if (rope.rope_type == "llama3") {
    // Llama 3.1: wavelengths 2 pi / theta_i shorter than
    // original_max / high_freq_factor keep theta_i, longer than
    // original_max / low_freq_factor get theta_i / factor, and between the
    // two blend with smooth = (original_max / wavelength - low) / (high -
    // low): (1 - smooth) theta_i / factor + smooth theta_i.
    const double factor = required("factor");
    const double low = required("low_freq_factor");
    const double high = required("high_freq_factor");
    const double original_max = required("original_max_position_embeddings");
    for (const double t : theta) {
      const double wavelength = 2.0 * kReferencePi / t;
      if (wavelength < original_max / high) {
        rope.inv_freq.push_back(t);
      } else if (wavelength > original_max / low) {
        rope.inv_freq.push_back(t / factor);
      } else {
        const double smooth = (original_max / wavelength - low) / (high - low);
        rope.inv_freq.push_back((1.0 - smooth) * t / factor + smooth * t);
      }
    }
  } else if (rope.rope_type == "proportional") {
    // Gemma-4's: the whole head rotates, the first
    // k = int(partial * head_dim // 2) pairs at base^(-2j / head_dim) (the
    // exponent over head_dim, not over 2k), the others at frequency 0;
    // all divided by factor (default 1).
    const auto live = static_cast<int64_t>(std::floor(partial * head_dim / 2));
    const double factor = p.contains("factor") ? required("factor") : 1.0;
    rope.rotary_dim = head_dim;
    const std::vector<double> full = BaseInverseFrequencies(base, head_dim);
    rope.inv_freq.assign(head_dim / 2, 0.0);
    for (int64_t j = 0; j < live && j < head_dim / 2; ++j) {
      rope.inv_freq[j] = full[j] / factor;
    }
  } else {
    // "su" (and Phi-3's legacy "yarn") mean longrope only in Phi3Config;
    // "ntk", "mrope" and others are no rope type of these models.
    throw std::runtime_error("reference: unsupported rope_type " +
                             rope.rope_type);
  }
  return rope;
}

// ---------------------------------------------------------------------------
// The forward pass.

struct ReferenceModel {
  ReferenceConfig config;
  std::map<std::string, ReferenceTensor> weights;
};

// The tensors the model needs, with their shapes (as the model's
// nn.Linear/nn.Embedding/RMSNorm parameters are shaped).
inline std::map<std::string, std::vector<int64_t>> ReferenceExpectedShapes(
    const ReferenceConfig& c) {
  const int64_t h = c.hidden_size, q = c.num_attention_heads * c.head_dim,
                kv = c.num_key_value_heads * c.head_dim,
                f = c.intermediate_size;
  std::map<std::string, std::vector<int64_t>> shapes = {
      {"model.embed_tokens.weight", {c.vocab_size, h}},
      {"model.norm.weight", {h}}};
  if (!c.tie_word_embeddings) shapes["lm_head.weight"] = {c.vocab_size, h};
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string l = "model.layers." + std::to_string(i) + ".";
    shapes[l + "input_layernorm.weight"] = {h};
    shapes[l + "post_attention_layernorm.weight"] = {h};
    shapes[l + "self_attn.q_proj.weight"] = {q, h};
    shapes[l + "self_attn.k_proj.weight"] = {kv, h};
    shapes[l + "self_attn.v_proj.weight"] = {kv, h};
    shapes[l + "self_attn.o_proj.weight"] = {h, q};
    shapes[l + "mlp.gate_proj.weight"] = {f, h};
    shapes[l + "mlp.up_proj.weight"] = {f, h};
    shapes[l + "mlp.down_proj.weight"] = {h, f};
    if (c.qkv_bias) {
      shapes[l + "self_attn.q_proj.bias"] = {q};
      shapes[l + "self_attn.k_proj.bias"] = {kv};
      shapes[l + "self_attn.v_proj.bias"] = {kv};
    }
    if (c.o_bias) shapes[l + "self_attn.o_proj.bias"] = {h};
    if (c.mlp_bias) {
      shapes[l + "mlp.gate_proj.bias"] = {f};
      shapes[l + "mlp.up_proj.bias"] = {f};
      shapes[l + "mlp.down_proj.bias"] = {h};
    }
  }
  return shapes;
}

// Reads config.json and the weights, and checks that every tensor the
// model needs is there, in BF16, F16 or F32, with its shape. Tensors the
// model does not use are ignored (from_pretrained only warns of unexpected
// keys); so is a lm_head.weight beside tied embeddings (the model uses
// embed_tokens for both).
inline ReferenceModel LoadReferenceModel(const std::string& folder) {
  ReferenceModel model;
  model.config = ParseReferenceConfig(nlohmann::json::parse(
      ReadWholeFile((std::filesystem::path(folder) / "config.json").string())));
  model.weights = ReadHfWeights(folder);
  for (const auto& [name, shape] : ReferenceExpectedShapes(model.config)) {
    auto found = model.weights.find(name);
    if (found == model.weights.end()) {
      throw std::runtime_error("reference: missing tensor " + name);
    }
    const std::string& dtype = found->second.dtype;
    if (dtype != "BF16" && dtype != "F16" && dtype != "F32") {
      throw std::runtime_error("reference: " + name + " has dtype " + dtype);
    }
    if (found->second.shape != shape) {
      throw std::runtime_error("reference: " + name + " has the wrong shape");
    }
  }
  return model;
}

// y = W x + b for an nn.Linear weight W [out, in] (row-major).
inline std::vector<double> ReferenceLinear(const ReferenceModel& model,
                                           const std::string& name,
                                           const std::vector<double>& x,
                                           bool has_bias) {
  const ReferenceTensor& w = model.weights.at(name + ".weight");
  const int64_t out = w.shape[0], in = w.shape[1];
  std::vector<double> y(out, 0.0);
  for (int64_t o = 0; o < out; ++o) {
    for (int64_t i = 0; i < in; ++i) y[o] += w.values[o * in + i] * x[i];
    if (has_bias) y[o] += model.weights.at(name + ".bias").values[o];
  }
  return y;
}

// LlamaRMSNorm: w_i * x_i / sqrt(mean_j(x_j^2) + eps).
inline std::vector<double> ReferenceRmsNorm(const std::vector<double>& x,
                                            const std::vector<double>& weight,
                                            double eps) {
  double mean_square = 0.0;
  for (const double v : x) mean_square += v * v;
  mean_square /= x.size();
  const double scale = 1.0 / std::sqrt(mean_square + eps);
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = weight[i] * (x[i] * scale);
  return y;
}

// apply_rotary_pos_emb on one head of `vector` (head_dim values from
// `offset`) at `position`: with cos = cos(cat(freqs, freqs)) * a and sin
// likewise, q * cos + rotate_half(q) * sin, where rotate_half(x) =
// cat(-x[r/2:], x[:r/2]), is for each pair i < r/2:
//   y_i       = a (x_i cos(p w_i) - x_{i+r/2} sin(p w_i))
//   y_{i+r/2} = a (x_{i+r/2} cos(p w_i) + x_i sin(p w_i)).
// Channels from r on pass through unscaled (Phi-3's q_pass).
inline void ReferenceRotate(const ReferenceRope& rope, int64_t position,
                            int64_t offset, std::vector<double>* vector) {
  const int64_t half = rope.rotary_dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    const double angle = position * rope.inv_freq[i];
    const double c = std::cos(angle) * rope.attention_factor;
    const double s = std::sin(angle) * rope.attention_factor;
    double& first = (*vector)[offset + i];
    double& second = (*vector)[offset + i + half];
    const double x1 = first, x2 = second;
    first = x1 * c - x2 * s;
    second = x2 * c + x1 * s;
  }
}

inline double Silu(double x) { return x / (1.0 + std::exp(-x)); }

struct ReferenceOptions {
  // Position of ids[0]; the others follow (position_ids = first_position +
  // arange(T)). HF's seq_len for dynamic and longrope is then
  // first_position + T.
  int64_t first_position = 0;
};

// Logits [T * vocab_size] (row t is the prediction after ids[0..t]).
inline std::vector<double> ReferenceLogits(
    const ReferenceModel& model, const std::vector<int>& ids,
    const ReferenceOptions& options = {}) {
  const ReferenceConfig& c = model.config;
  const int64_t T = ids.size(), H = c.hidden_size, D = c.head_dim;
  const int64_t heads = c.num_attention_heads;
  const int64_t group = heads / c.num_key_value_heads;  // q heads per kv head
  const ReferenceRope rope =
      ReferenceRopeParameters(c, options.first_position + T);
  const ReferenceTensor& embedding =
      model.weights.at("model.embed_tokens.weight");

  std::vector<std::vector<double>> x(T);  // the residual stream
  for (int64_t t = 0; t < T; ++t) {
    if (ids[t] < 0 || ids[t] >= c.vocab_size) {
      throw std::runtime_error("reference: token id out of range");
    }
    x[t].assign(embedding.values.begin() + ids[t] * H,
                embedding.values.begin() + (ids[t] + 1) * H);
  }
  const double scaling = 1.0 / std::sqrt(static_cast<double>(D));

  for (int64_t layer = 0; layer < c.num_hidden_layers; ++layer) {
    const std::string l = "model.layers." + std::to_string(layer) + ".";
    const int64_t window = c.sliding_window[layer];
    std::vector<std::vector<double>> q(T), k(T), v(T);
    for (int64_t t = 0; t < T; ++t) {
      const std::vector<double> h = ReferenceRmsNorm(
          x[t], model.weights.at(l + "input_layernorm.weight").values,
          c.rms_norm_eps);
      q[t] = ReferenceLinear(model, l + "self_attn.q_proj", h, c.qkv_bias);
      k[t] = ReferenceLinear(model, l + "self_attn.k_proj", h, c.qkv_bias);
      v[t] = ReferenceLinear(model, l + "self_attn.v_proj", h, c.qkv_bias);
      const int64_t position = options.first_position + t;
      for (int64_t head = 0; head < heads; ++head) {
        ReferenceRotate(rope, position, head * D, &q[t]);
      }
      for (int64_t head = 0; head < c.num_key_value_heads; ++head) {
        ReferenceRotate(rope, position, head * D, &k[t]);
      }
    }
    for (int64_t t = 0; t < T; ++t) {
      std::vector<double> attended(heads * D, 0.0);
      for (int64_t head = 0; head < heads; ++head) {
        // repeat_kv: q head `head` reads kv head head / group.
        const int64_t kv_offset = (head / group) * D;
        // Keys j <= t (causal) and, with a window W, t - j < W
        // (masking_utils sliding_window_overlay: kv_idx > q_idx - W).
        const int64_t first_key =
            window > 0 ? std::max<int64_t>(0, t - window + 1) : 0;
        std::vector<double> scores;
        for (int64_t j = first_key; j <= t; ++j) {
          double dot = 0.0;
          for (int64_t d = 0; d < D; ++d) {
            dot += q[t][head * D + d] * k[j][kv_offset + d];
          }
          scores.push_back(dot * scaling);
        }
        const double top = *std::max_element(scores.begin(), scores.end());
        double total = 0.0;
        for (double& s : scores) total += (s = std::exp(s - top));
        for (int64_t j = first_key; j <= t; ++j) {
          const double weight = scores[j - first_key] / total;
          for (int64_t d = 0; d < D; ++d) {
            attended[head * D + d] += weight * v[j][kv_offset + d];
          }
        }
      }
      const std::vector<double> o =
          ReferenceLinear(model, l + "self_attn.o_proj", attended, c.o_bias);
      for (int64_t i = 0; i < H; ++i) x[t][i] += o[i];
    }
    for (int64_t t = 0; t < T; ++t) {
      const std::vector<double> h = ReferenceRmsNorm(
          x[t], model.weights.at(l + "post_attention_layernorm.weight").values,
          c.rms_norm_eps);
      const std::vector<double> gate =
          ReferenceLinear(model, l + "mlp.gate_proj", h, c.mlp_bias);
      std::vector<double> up =
          ReferenceLinear(model, l + "mlp.up_proj", h, c.mlp_bias);
      for (size_t i = 0; i < up.size(); ++i) up[i] *= Silu(gate[i]);
      const std::vector<double> down =
          ReferenceLinear(model, l + "mlp.down_proj", up, c.mlp_bias);
      for (int64_t i = 0; i < H; ++i) x[t][i] += down[i];
    }
  }

  const std::string head_name =
      c.tie_word_embeddings ? "model.embed_tokens" : "lm_head";
  std::vector<double> logits;
  logits.reserve(T * c.vocab_size);
  for (int64_t t = 0; t < T; ++t) {
    const std::vector<double> h = ReferenceRmsNorm(
        x[t], model.weights.at("model.norm.weight").values, c.rms_norm_eps);
    const std::vector<double> row = ReferenceLinear(model, head_name, h, false);
    logits.insert(logits.end(), row.begin(), row.end());
  }
  return logits;
}

inline std::vector<double> ReferenceLogits(
    const std::string& folder, const std::vector<int>& ids,
    const ReferenceOptions& options = {}) {
  return ReferenceLogits(LoadReferenceModel(folder), ids, options);
}

}  // namespace rotor::test::hf

#endif  // ROTOR_TESTS_TRAIN_HF_REFERENCE_LLAMA_H_
