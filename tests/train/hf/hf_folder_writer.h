// Writes a Hugging Face model folder the way transformers'
// PreTrainedModel.save_pretrained does, for the tests of rotor's import of
// HF folders (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM):
//
//   config.json                     json.dumps(indent=2, sort_keys=True)+"\n"
//   model.safetensors               when everything fits in one shard, else
//   model-00001-of-0000N.safetensors ... and
//   model.safetensors.index.json    {"metadata": {"total_parameters": P,
//                                    "total_size": S}, "weight_map": {...}}
//
// Why it is independent of rotor: it includes nothing from core/, nn/ or
// train/ (only the standard library and nlohmann-json), and was written from
// HF's sources and the safetensors format, not from rotor's code. So a
// mistake in rotor's safetensors reader or its bf16/f16 conversions cannot
// be mirrored here. What it follows, and where from:
// - Tensor names, shapes and order: the state dict of the three models
//   (transformers src/transformers/models/{llama,mistral,qwen2}/
//   modeling_*.py). Modules register in the order embed_tokens, then per
//   layer self_attn.{q,k,v,o}_proj, mlp.{gate,up,down}_proj,
//   input_layernorm, post_attention_layernorm, then norm and lm_head; an
//   nn.Linear lists its weight before its bias. Biases: Llama has q/k/v/o
//   biases when attention_bias and gate/up/down biases when mlp_bias;
//   Qwen2 always has q/k/v biases and never an o or MLP bias; Mistral has
//   none. With tie_word_embeddings, save_pretrained drops lm_head.weight
//   (it shares storage with model.embed_tokens.weight).
// - Sharding: huggingface_hub split_state_dict_into_shards_factory (see
//   SplitIntoShards below).
// - The file: the safetensors format (an 8-byte little-endian header length,
//   a compact JSON header padded with spaces to a multiple of 8, then the
//   data), laid out as the safetensors crate's `prepare` does: tensors sorted
//   by dtype, widest first, then by name; "__metadata__": {"format": "pt"}.
// - bf16 and f16: torch's float32 -> bfloat16/float16 casts, round to
//   nearest with ties to even. The rounding here is arithmetic (a multiple
//   of the format's spacing, by std::nearbyint), the bits are derived from
//   the rounded value; the reader in reference_llama.h decodes bits, so a
//   round trip compares two different routes.
//
// Entry points:
//   WriteHfFolder(folder, config, state_dict, options)  given tensors
//   WriteRandomHfFolder(folder, config, options)         random weights of
//                                                        the config's layout
//   HfStateDictLayout(config, layout)                    names and shapes
// Both writers return an HfFolder: the files written and, per tensor, the
// values the files hold (after rounding to the dtype). HfBadInput in the
// options breaks the folder in one chosen way, for the importer's error
// tests.
#ifndef ROTOR_TESTS_TRAIN_HF_HF_FOLDER_WRITER_H_
#define ROTOR_TESTS_TRAIN_HF_HF_FOLDER_WRITER_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace rotor::test::hf {

// ---------------------------------------------------------------------------
// Rounding float32 to the 16-bit formats.

// x rounded to a binary floating-point format with `precision` significant
// bits (the implicit leading one included), smallest normal
// 2^min_normal_exponent and largest finite value max_finite; ties go to the
// even neighbour. In the binade [2^(e-1), 2^e) the format's values are
// spaced 2^(e - precision) apart; below the smallest normal the spacing
// stays 2^(min_normal_exponent - precision + 1) (subnormals). x / spacing
// and the product back are exact in double, and std::nearbyint rounds half
// to even in the default rounding mode, so "nearest multiple of the
// spacing, ties to the even multiple" is exactly IEEE round-to-nearest-even.
// A result above max_finite is infinity, as in IEEE (round-to-nearest
// overflows from max_finite + spacing/2 on).
inline double RoundToFormat(double x, int precision, int min_normal_exponent,
                            double max_finite) {
  if (std::isnan(x) || std::isinf(x) || x == 0.0) return x;
  int binade_exponent = 0;  // |x| in [2^(binade_exponent-1), 2^binade_...)
  std::frexp(x, &binade_exponent);
  const int spacing_exponent = std::max(binade_exponent - precision,
                                        min_normal_exponent - precision + 1);
  const double spacing = std::ldexp(1.0, spacing_exponent);
  const double rounded = std::nearbyint(x / spacing) * spacing;
  if (std::abs(rounded) > max_finite) {
    return std::copysign(std::numeric_limits<double>::infinity(), x);
  }
  return rounded;
}

// bfloat16: float32's exponent range (smallest normal 2^-126) with 8
// significant bits; largest finite (2 - 2^-7) * 2^127.
inline double RoundToBfloat16(float x) {
  return RoundToFormat(x, 8, -126, std::ldexp(255.0, 120));
}

// IEEE binary16: 11 significant bits, smallest normal 2^-14, largest 65504.
inline double RoundToFloat16(float x) {
  return RoundToFormat(x, 11, -14, 65504.0);
}

// The bits of RoundToBfloat16(x): the rounded value is a float whose low 16
// bits are zero, so its top half is the bfloat16. NaN becomes 0x7FC0, as in
// torch (c10::detail::round_to_nearest_even).
inline uint16_t Bfloat16Bits(float x) {
  if (std::isnan(x)) return 0x7FC0;
  const float rounded = static_cast<float>(RoundToBfloat16(x));
  uint32_t bits = 0;
  std::memcpy(&bits, &rounded, sizeof(bits));
  return static_cast<uint16_t>(bits >> 16);
}

// The bits of RoundToFloat16(x): sign, 5 exponent bits (bias 15), 10
// fraction bits. Subnormals (|v| < 2^-14) are fraction * 2^-24 with a zero
// exponent field; a normal v = 2^e * (1 + fraction / 1024). NaN becomes the
// quiet NaN 0x7E00 with x's sign.
inline uint16_t Float16Bits(float x) {
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  if (std::isnan(x)) return sign | 0x7E00;
  const double value = std::abs(RoundToFloat16(x));
  if (std::isinf(value)) return sign | 0x7C00;
  if (value < std::ldexp(1.0, -14)) {
    return sign | static_cast<uint16_t>(std::ldexp(value, 24));
  }
  int binade_exponent = 0;
  std::frexp(value, &binade_exponent);
  const int exponent = binade_exponent - 1;  // value in [2^exponent, 2^+1)
  const auto fraction =
      static_cast<uint16_t>((std::ldexp(value, -exponent) - 1.0) * 1024.0);
  return sign | static_cast<uint16_t>((exponent + 15) << 10) | fraction;
}

// ---------------------------------------------------------------------------
// safetensors dtypes.

// The dtypes this writer can put in a file, with their size in bytes and
// their rank in the safetensors crate's `enum Dtype` (declared in
// increasing alignment: BOOL, U8, I8, F8_E5M2, F8_E4M3, I16, U16, F16,
// BF16, I32, U32, F32, F64, I64, U64; newer crates add F4, F6_* and
// F8_E8M0 among the small ones, which moves nothing here). A file lists
// its tensors by descending rank, then by name.
struct SafetensorsDtypeInfo {
  const char* name;
  int bytes;
  int rank;
};

inline const SafetensorsDtypeInfo& SafetensorsDtype(const std::string& name) {
  static const SafetensorsDtypeInfo kDtypes[] = {
      {"BOOL", 1, 0}, {"U8", 1, 1},   {"I8", 1, 2},  {"I16", 2, 5},
      {"F16", 2, 7},  {"BF16", 2, 8}, {"I32", 4, 9}, {"F32", 4, 11},
      {"F64", 8, 12}, {"I64", 8, 13},
  };
  for (const SafetensorsDtypeInfo& dtype : kDtypes) {
    if (name == dtype.name) return dtype;
  }
  throw std::invalid_argument("hf_folder_writer: cannot write dtype " + name);
}

// The safetensors name of save_pretrained's torch dtype.
inline std::string SafetensorsDtypeOfTorch(const std::string& torch_dtype) {
  if (torch_dtype == "bfloat16") return "BF16";
  if (torch_dtype == "float16") return "F16";
  if (torch_dtype == "float32") return "F32";
  throw std::invalid_argument(
      "hf_folder_writer: dtype must be bfloat16, float16 or float32, not " +
      torch_dtype);
}

// Appends the `bytes` low bytes of `bits`, least significant first.
inline void AppendLittleEndian(uint64_t bits, int bytes, std::string* out) {
  for (int i = 0; i < bytes; ++i) {
    out->push_back(static_cast<char>((bits >> (8 * i)) & 0xFF));
  }
}

// Encodes float32 values as `dtype`; *stored gets the values the bytes hold.
// The floating types round (to nearest even); the integer types, only
// there for bad-input tests, hold round(64 * x) clamped to their range, and
// BOOL holds x != 0.
inline std::string EncodeValues(const std::vector<float>& values,
                                const std::string& dtype,
                                std::vector<double>* stored) {
  std::string bytes;
  stored->clear();
  for (const float x : values) {
    if (dtype == "F32") {
      uint32_t bits = 0;
      std::memcpy(&bits, &x, sizeof(bits));
      AppendLittleEndian(bits, 4, &bytes);
      stored->push_back(x);
    } else if (dtype == "F64") {
      const double wide = x;
      uint64_t bits = 0;
      std::memcpy(&bits, &wide, sizeof(bits));
      AppendLittleEndian(bits, 8, &bytes);
      stored->push_back(wide);
    } else if (dtype == "BF16") {
      AppendLittleEndian(Bfloat16Bits(x), 2, &bytes);
      stored->push_back(RoundToBfloat16(x));
    } else if (dtype == "F16") {
      AppendLittleEndian(Float16Bits(x), 2, &bytes);
      stored->push_back(RoundToFloat16(x));
    } else if (dtype == "BOOL") {
      AppendLittleEndian(x != 0.0f ? 1 : 0, 1, &bytes);
      stored->push_back(x != 0.0f ? 1.0 : 0.0);
    } else {
      const int width = SafetensorsDtype(dtype).bytes;
      const bool is_unsigned = dtype == "U8";
      const double lo = is_unsigned ? 0.0 : -std::ldexp(1.0, 8 * width - 1);
      const double hi =
          is_unsigned ? 255.0 : std::ldexp(1.0, 8 * width - 1) - 1;
      const double integer = std::clamp(std::nearbyint(64.0 * x), lo, hi);
      // Two's complement: the low bytes of the int64 hold the narrow value.
      AppendLittleEndian(static_cast<uint64_t>(static_cast<int64_t>(integer)),
                         width, &bytes);
      stored->push_back(integer);
    }
  }
  return bytes;
}

// ---------------------------------------------------------------------------
// The safetensors file.

// One tensor of a file: its name, dtype, shape and raw little-endian bytes.
struct SafetensorsEntry {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};

// A whole safetensors file. The header is written as the crate's serde
// derives it: compact, "__metadata__" first, then each tensor as
// {"dtype":..,"shape":[..],"data_offsets":[begin,end]} in data order, the
// offsets relative to the end of the header; spaces pad it to a multiple of
// 8 bytes.
inline std::string SafetensorsFileBytes(
    std::vector<SafetensorsEntry> entries,
    const std::map<std::string, std::string>& metadata) {
  std::stable_sort(entries.begin(), entries.end(),
                   [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
                     const int rank_a = SafetensorsDtype(a.dtype).rank;
                     const int rank_b = SafetensorsDtype(b.dtype).rank;
                     if (rank_a != rank_b) return rank_a > rank_b;
                     return a.name < b.name;
                   });
  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":" + nlohmann::json(metadata).dump();
  }
  uint64_t offset = 0;
  std::string data;
  for (const SafetensorsEntry& entry : entries) {
    if (header.size() > 1) header += ",";
    nlohmann::json shape = nlohmann::json::array();
    for (const int64_t dim : entry.shape) shape.push_back(dim);
    header += nlohmann::json(entry.name).dump() + ":{\"dtype\":\"" +
              entry.dtype + "\",\"shape\":" + shape.dump() +
              ",\"data_offsets\":[" + std::to_string(offset) + "," +
              std::to_string(offset + entry.bytes.size()) + "]}";
    offset += entry.bytes.size();
    data += entry.bytes;
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string file;
  AppendLittleEndian(header.size(), 8, &file);
  return file + header + data;
}

// ---------------------------------------------------------------------------
// Sharding.

// huggingface_hub's split_state_dict_into_shards_factory, which
// save_pretrained calls with max_shard_size: tensors are taken in state-dict
// order; one larger than the maximum gets a shard of its own at once
// (appended before the shard being filled, so shards need not follow the
// state-dict order); one that would take the current shard past the
// maximum closes it and starts the next. Returns, per shard in file order,
// the indices of its tensors.
inline std::vector<std::vector<size_t>> SplitIntoShards(
    const std::vector<uint64_t>& tensor_bytes, uint64_t max_shard_bytes) {
  std::vector<std::vector<size_t>> shards;
  std::vector<size_t> current;
  uint64_t current_bytes = 0;
  for (size_t i = 0; i < tensor_bytes.size(); ++i) {
    if (tensor_bytes[i] > max_shard_bytes) {
      shards.push_back({i});
      continue;
    }
    if (current_bytes + tensor_bytes[i] > max_shard_bytes) {
      shards.push_back(current);
      current.clear();
      current_bytes = 0;
    }
    current.push_back(i);
    current_bytes += tensor_bytes[i];
  }
  if (!current.empty()) shards.push_back(current);
  return shards;
}

// "model.safetensors" for a single shard, else
// "model-00002-of-00005.safetensors" (shard numbers from 1, five digits).
inline std::string ShardFileName(size_t shard, size_t shard_count) {
  if (shard_count == 1) return "model.safetensors";
  char name[64];
  std::snprintf(name, sizeof(name), "model-%05zu-of-%05zu.safetensors",
                shard + 1, shard_count);
  return name;
}

// ---------------------------------------------------------------------------
// The state dict of the three architectures.

// One tensor the model has, and what kind of values fit it.
enum class HfTensorKind { kEmbedding, kMatrix, kNorm, kBias };

struct HfTensorSpec {
  std::string name;
  std::vector<int64_t> shape;
  HfTensorKind kind;
};

// config[key] as an integer; `fallback` when the key is absent or null.
inline int64_t WriterConfigInt(const nlohmann::json& config,
                               const std::string& key, int64_t fallback) {
  if (!config.contains(key) || config[key].is_null()) return fallback;
  return config[key].get<int64_t>();
}

// config[key], which must be there.
inline int64_t WriterRequiredInt(const nlohmann::json& config,
                                 const std::string& key) {
  if (!config.contains(key) || !config[key].is_number_integer()) {
    throw std::invalid_argument("hf_folder_writer: config needs integer " +
                                key);
  }
  return config[key].get<int64_t>();
}

// "llama", "mistral" or "qwen2": `layout` if given, else the config's
// model_type, else its first architecture.
inline std::string WriterLayout(const nlohmann::json& config,
                                const std::string& layout) {
  if (!layout.empty()) return layout;
  const std::string model_type = config.value("model_type", "");
  if (model_type == "llama" || model_type == "mistral" ||
      model_type == "qwen2") {
    return model_type;
  }
  if (config.contains("architectures") && config["architectures"].is_array() &&
      !config["architectures"].empty()) {
    const std::string architecture = config["architectures"][0];
    if (architecture == "LlamaForCausalLM") return "llama";
    if (architecture == "MistralForCausalLM") return "mistral";
    if (architecture == "Qwen2ForCausalLM") return "qwen2";
  }
  throw std::invalid_argument(
      "hf_folder_writer: no llama/mistral/qwen2 layout in the config; set "
      "HfWriteOptions::layout");
}

// The tensors save_pretrained writes for `config`, in state-dict order.
// The writer reads only the sizes: num_key_value_heads and head_dim fall
// back to num_attention_heads and hidden_size / num_attention_heads when
// absent or null (not to each config class's own defaults: that is the
// reference's business), tie_word_embeddings, attention_bias and mlp_bias
// to false.
inline std::vector<HfTensorSpec> HfStateDictLayout(
    const nlohmann::json& config, const std::string& layout_override = "") {
  const std::string layout = WriterLayout(config, layout_override);
  const int64_t hidden = WriterRequiredInt(config, "hidden_size");
  const int64_t intermediate = WriterRequiredInt(config, "intermediate_size");
  const int64_t layers = WriterRequiredInt(config, "num_hidden_layers");
  const int64_t heads = WriterRequiredInt(config, "num_attention_heads");
  const int64_t vocab = WriterRequiredInt(config, "vocab_size");
  const int64_t kv_heads =
      WriterConfigInt(config, "num_key_value_heads", heads);
  const int64_t head_dim = WriterConfigInt(config, "head_dim", hidden / heads);
  const bool tied = config.value("tie_word_embeddings", false);
  const bool llama = layout == "llama";
  const bool qkv_bias =
      layout == "qwen2" || (llama && config.value("attention_bias", false));
  const bool o_bias = llama && config.value("attention_bias", false);
  const bool mlp_bias = llama && config.value("mlp_bias", false);

  using Kind = HfTensorKind;
  std::vector<HfTensorSpec> specs;
  specs.push_back(
      {"model.embed_tokens.weight", {vocab, hidden}, Kind::kEmbedding});
  // An nn.Linear(in, out): weight [out, in], then bias [out] if it has one.
  auto linear = [&](const std::string& name, int64_t in, int64_t out,
                    bool bias) {
    specs.push_back({name + ".weight", {out, in}, Kind::kMatrix});
    if (bias) specs.push_back({name + ".bias", {out}, Kind::kBias});
  };
  for (int64_t i = 0; i < layers; ++i) {
    const std::string prefix = "model.layers." + std::to_string(i) + ".";
    linear(prefix + "self_attn.q_proj", hidden, heads * head_dim, qkv_bias);
    linear(prefix + "self_attn.k_proj", hidden, kv_heads * head_dim, qkv_bias);
    linear(prefix + "self_attn.v_proj", hidden, kv_heads * head_dim, qkv_bias);
    linear(prefix + "self_attn.o_proj", heads * head_dim, hidden, o_bias);
    linear(prefix + "mlp.gate_proj", hidden, intermediate, mlp_bias);
    linear(prefix + "mlp.up_proj", hidden, intermediate, mlp_bias);
    linear(prefix + "mlp.down_proj", intermediate, hidden, mlp_bias);
    specs.push_back({prefix + "input_layernorm.weight", {hidden}, Kind::kNorm});
    specs.push_back(
        {prefix + "post_attention_layernorm.weight", {hidden}, Kind::kNorm});
  }
  specs.push_back({"model.norm.weight", {hidden}, Kind::kNorm});
  if (!tied) {
    specs.push_back({"lm_head.weight", {vocab, hidden}, Kind::kMatrix});
  }
  return specs;
}

inline int64_t ElementCount(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (const int64_t dim : shape) count *= dim;
  return count;
}

// ---------------------------------------------------------------------------
// Options and results.

// One tensor of a state dict to write: float32 values (as a torch model
// holds them), row-major.
struct HfStateTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

// Ways to break the folder, for the importer's error tests. Each names a
// tensor of the state dict; empty strings and 0 leave the folder whole.
struct HfBadInput {
  // Not written, nor listed in the index.
  std::string drop_tensor;
  // An extra F32 tensor [2] = {0.5, -0.5} of this name, written after the
  // state dict (as an unexpected key would be).
  std::string extra_tensor;
  // Written with its first dimension one larger (the added row holds 0.25).
  std::string misshape_tensor;
  // Written in `retype_dtype` (a safetensors name: F64, F32, F16, BF16, I64,
  // I32, I16, I8, U8, BOOL) instead of the folder's dtype.
  std::string retype_tensor;
  std::string retype_dtype = "F64";
  // Cut from the end of the last safetensors file (in shard order).
  int64_t truncate_bytes = 0;
  // The index maps this tensor to model-99999-of-99999.safetensors, a file
  // that does not exist (its data stays in its real shard). Needs a
  // sharded folder.
  std::string index_names_missing_file;
};

// The random values of WriteRandomHfFolder: normal for the matrices
// (N(0, matrix_std), lm_head included), the embedding (N(0,
// embedding_std)) and biases (N(0, bias_std)); uniform in
// [1 - norm_spread, 1 + norm_spread] for RMSNorm weights. The defaults give
// a small model (hidden 16..64) logits with a spread of a few tenths and
// attention that depends on the earlier tokens.
struct HfRandomScales {
  double embedding_std = 0.5;
  double matrix_std = 0.1;
  double bias_std = 0.05;
  double norm_spread = 0.2;
};

struct HfWriteOptions {
  std::string dtype = "bfloat16";  // torch dtype: bfloat16, float16, float32
  uint64_t seed = 1;
  // save_pretrained's max_shard_size, in bytes of tensor data (transformers
  // 4.x defaults to "5GB" = 5e9, 5.x to "50GB").
  uint64_t max_shard_bytes = 5'000'000'000;
  // llama, mistral or qwen2; empty: from the config (model_type, then
  // architectures[0]).
  std::string layout;
  // Index metadata: transformers 5.x writes "total_parameters" (the
  // model's parameter count) beside "total_size"; 4.x only the latter.
  bool index_total_parameters = true;
  // config.json gets "torch_dtype": dtype unless it has "torch_dtype" or
  // "dtype" (the 5.x name) already.
  bool add_torch_dtype = true;
  HfRandomScales scales;
  HfBadInput bad;
};

// A tensor as the folder holds it.
struct HfWrittenTensor {
  std::string dtype;  // safetensors name
  std::vector<int64_t> shape;
  std::vector<double> values;  // after rounding to dtype, row-major
  std::string file;            // the safetensors file that holds it
};

struct HfFolder {
  std::string path;
  std::vector<std::string> files;  // safetensors files, in shard order
  std::map<std::string, HfWrittenTensor> tensors;
  uint64_t total_size = 0;  // bytes of tensor data, as the index says
  bool sharded() const { return files.size() > 1; }
};

// ---------------------------------------------------------------------------
// Random numbers, the same on every standard library: std::mt19937_64's
// output sequence is fixed by the standard, the distributions here are
// written out (std::normal_distribution's algorithm is not).

// Uniform in [0, 1): the top 53 bits of one draw.
inline double Uniform01(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * std::ldexp(1.0, -53);
}

// Standard normal by Box-Muller: sqrt(-2 ln u1) cos(2 pi u2), u1 in (0, 1].
inline double StandardNormal(std::mt19937_64& rng) {
  constexpr double kTwoPi = 6.283185307179586476925;
  const double u1 = 1.0 - Uniform01(rng);
  const double u2 = Uniform01(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
}

inline std::vector<float> RandomValues(int64_t count, HfTensorKind kind,
                                       const HfRandomScales& scales,
                                       std::mt19937_64& rng) {
  std::vector<float> values(count);
  for (float& value : values) {
    switch (kind) {
      case HfTensorKind::kEmbedding:
        value = static_cast<float>(scales.embedding_std * StandardNormal(rng));
        break;
      case HfTensorKind::kMatrix:
        value = static_cast<float>(scales.matrix_std * StandardNormal(rng));
        break;
      case HfTensorKind::kBias:
        value = static_cast<float>(scales.bias_std * StandardNormal(rng));
        break;
      case HfTensorKind::kNorm:
        value = static_cast<float>(1.0 + scales.norm_spread *
                                             (2.0 * Uniform01(rng) - 1.0));
        break;
    }
  }
  return values;
}

// ---------------------------------------------------------------------------
// Writing.

inline void WriteBytes(const std::filesystem::path& path,
                       const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

// Writes config.json and the state dict, as save_pretrained would (with the
// bad inputs of options.bad applied). The state dict's order matters: it
// decides the shards.
inline HfFolder WriteHfFolder(const std::string& folder, nlohmann::json config,
                              std::vector<HfStateTensor> state_dict,
                              const HfWriteOptions& options) {
  const std::string dtype = SafetensorsDtypeOfTorch(options.dtype);
  const HfBadInput& bad = options.bad;
  std::filesystem::create_directories(folder);
  if (options.add_torch_dtype && !config.contains("torch_dtype") &&
      !config.contains("dtype")) {
    config["torch_dtype"] = options.dtype;
  }
  WriteBytes(std::filesystem::path(folder) / "config.json",
             config.dump(2) + "\n");

  int64_t total_parameters = 0;
  for (const HfStateTensor& tensor : state_dict) {
    total_parameters += ElementCount(tensor.shape);
  }
  if (!bad.drop_tensor.empty()) {
    state_dict.erase(std::remove_if(state_dict.begin(), state_dict.end(),
                                    [&](const HfStateTensor& tensor) {
                                      return tensor.name == bad.drop_tensor;
                                    }),
                     state_dict.end());
  }
  if (!bad.extra_tensor.empty()) {
    state_dict.push_back({bad.extra_tensor, {2}, {0.5f, -0.5f}});
  }
  for (HfStateTensor& tensor : state_dict) {
    if (tensor.name != bad.misshape_tensor || tensor.shape.empty()) continue;
    const int64_t row = ElementCount(tensor.shape) / tensor.shape[0];
    ++tensor.shape[0];
    tensor.values.insert(tensor.values.end(), row, 0.25f);
  }

  HfFolder result;
  result.path = folder;
  std::vector<SafetensorsEntry> entries;
  std::vector<uint64_t> sizes;
  for (const HfStateTensor& tensor : state_dict) {
    SafetensorsEntry entry{tensor.name, dtype, tensor.shape, ""};
    if (tensor.name == bad.retype_tensor) entry.dtype = bad.retype_dtype;
    if (tensor.name == bad.extra_tensor) entry.dtype = "F32";
    if (static_cast<int64_t>(tensor.values.size()) !=
        ElementCount(tensor.shape)) {
      throw std::invalid_argument("hf_folder_writer: " + tensor.name +
                                  " has the wrong number of values");
    }
    HfWrittenTensor& written = result.tensors[tensor.name];
    written.dtype = entry.dtype;
    written.shape = entry.shape;
    entry.bytes = EncodeValues(tensor.values, entry.dtype, &written.values);
    sizes.push_back(entry.bytes.size());
    result.total_size += entry.bytes.size();
    entries.push_back(std::move(entry));
  }

  const std::vector<std::vector<size_t>> shards =
      SplitIntoShards(sizes, options.max_shard_bytes);
  nlohmann::json weight_map = nlohmann::json::object();
  for (size_t shard = 0; shard < shards.size(); ++shard) {
    const std::string file = ShardFileName(shard, shards.size());
    std::vector<SafetensorsEntry> shard_entries;
    for (const size_t i : shards[shard]) {
      shard_entries.push_back(entries[i]);
      result.tensors[entries[i].name].file = file;
      weight_map[entries[i].name] = file;
    }
    std::string bytes =
        SafetensorsFileBytes(std::move(shard_entries), {{"format", "pt"}});
    if (shard + 1 == shards.size() && bad.truncate_bytes > 0) {
      if (bad.truncate_bytes > static_cast<int64_t>(bytes.size())) {
        throw std::invalid_argument(
            "hf_folder_writer: truncate_bytes is "
            "larger than the file");
      }
      bytes.resize(bytes.size() - bad.truncate_bytes);
    }
    WriteBytes(std::filesystem::path(folder) / file, bytes);
    result.files.push_back(file);
  }

  if (!bad.index_names_missing_file.empty()) {
    if (!result.sharded() ||
        !weight_map.contains(bad.index_names_missing_file)) {
      throw std::invalid_argument(
          "hf_folder_writer: index_names_missing_file needs a sharded folder "
          "that writes " +
          bad.index_names_missing_file);
    }
    weight_map[bad.index_names_missing_file] =
        "model-99999-of-99999.safetensors";
  }
  if (result.sharded()) {
    nlohmann::json metadata = {{"total_size", result.total_size}};
    if (options.index_total_parameters) {
      metadata["total_parameters"] = total_parameters;
    }
    const nlohmann::json index = {{"metadata", metadata},
                                  {"weight_map", weight_map}};
    WriteBytes(std::filesystem::path(folder) / "model.safetensors.index.json",
               index.dump(2) + "\n");
  }
  return result;
}

// Writes a folder with random weights of the layout `config` implies
// (HfStateDictLayout), drawn from options.seed in state-dict order, so the
// same seed gives the same values whatever options.bad breaks.
inline HfFolder WriteRandomHfFolder(const std::string& folder,
                                    const nlohmann::json& config,
                                    const HfWriteOptions& options) {
  std::mt19937_64 rng(options.seed);
  std::vector<HfStateTensor> state_dict;
  for (const HfTensorSpec& spec : HfStateDictLayout(config, options.layout)) {
    state_dict.push_back({spec.name, spec.shape,
                          RandomValues(ElementCount(spec.shape), spec.kind,
                                       options.scales, rng)});
  }
  return WriteHfFolder(folder, config, std::move(state_dict), options);
}

}  // namespace rotor::test::hf

#endif  // ROTOR_TESTS_TRAIN_HF_HF_FOLDER_WRITER_H_
