// The fuzz targets: one function per parser that reads a user's file, each
// parsing `data` as that kind of file. Bad input must end in rotor::Error,
// which is caught; anything else (a crash, another exception, a sanitizer
// report, a hang) is a finding. The libFuzzer harnesses (<name>_fuzzer.cc)
// call them, and so does the unit test fuzz_replay_test.cc, which replays the
// seed corpora and tests/fuzz/regressions/ in every build.
#ifndef ROTOR_TESTS_FUZZ_FUZZ_TARGETS_H_
#define ROTOR_TESTS_FUZZ_FUZZ_TARGETS_H_

#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "nn/transformer.h"
#include "train/config/hf_config.h"
#include "train/config/model_config.h"
#include "train/config/train_config.h"
#include "train/data/token_file.h"
#include "train/gguf/gguf_export.h"
#include "train/io/json.h"
#include "train/io/safetensors.h"
#include "train/tokenizer/byte_tokenizer.h"
#include "train/tokenizer/hf_tokenizer.h"

namespace rotor::fuzz {

inline std::string AsText(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// A safetensors file: header and data (every F32 tensor is copied out, and
// every F32, BF16 and F16 tensor read as float32).
inline void FuzzSafetensors(const uint8_t* data, size_t size) {
  try {
    const train::SafetensorsFile file =
        train::SafetensorsFile::Parse(AsText(data, size), "fuzz.safetensors");
    for (const train::SafetensorsFile::TensorInfo& info : file.tensors()) {
      if (info.dtype == train::SafetensorsDtype::kF32) file.ReadF32(info.name);
      if (info.dtype == train::SafetensorsDtype::kF32 ||
          info.dtype == train::SafetensorsDtype::kBF16 ||
          info.dtype == train::SafetensorsDtype::kF16) {
        std::vector<float> values((info.end - info.begin) /
                                  train::SafetensorsDtypeSize(info.dtype));
        file.ReadAsF32(info, values.data());
      }
    }
  } catch (const Error&) {
  }
}

// A temporary file of this process's own, removed at exit.
class ProcessTempFile {
 public:
  explicit ProcessTempFile(const std::string& stem)
      : path_((std::filesystem::temp_directory_path() /
               (stem + "_" + std::to_string(getpid())))
                  .string()) {}
  ~ProcessTempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A token file (train.bin / val.bin). TokenFile maps a path, so the bytes go
// to a file first.
inline void FuzzTokenFile(const uint8_t* data, size_t size) {
  static const ProcessTempFile file_of_process("rotor_fuzz_tokens");
  const std::string& path = file_of_process.path();
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data),
              static_cast<std::streamsize>(size));
  }
  try {
    const train::TokenFile file(path);
    uint64_t sum = 0;
    for (size_t i = 0; i < file.size(); ++i) sum += file[i];
    ROTOR_CHECK(sum <= uint64_t{65535} * file.size(), "impossible token sum");
  } catch (const Error&) {
  }
}

// A training config (the whole YAML file, every section).
inline void FuzzTrainConfig(const uint8_t* data, size_t size) {
  try {
    train::ParseTrainConfig(AsText(data, size), "fuzz.yaml");
  } catch (const Error&) {
  }
}

// The model: section of a config.
inline void FuzzModelConfig(const uint8_t* data, size_t size) {
  try {
    train::ParseModelConfigText(AsText(data, size), "fuzz.yaml");
  } catch (const Error&) {
  }
}

// Command-line overrides ("key.path=value", train/config/yaml.h): the bytes
// as one override, then each of their lines as one, applied to a minimal
// training config and to its model (OverrideModelConfig, as rotor eval and
// export apply them).
inline void FuzzOverride(const uint8_t* data, size_t size) {
  static const std::string kConfig =
      "model:\n  vocab_size: 257\n  hidden_size: 32\n"
      "  intermediate_size: 64\n  num_hidden_layers: 2\n"
      "  num_attention_heads: 4\n  max_position_embeddings: 64\n"
      "data:\n  path: d\n";
  static const train::ModelConfig kModel =
      train::ParseModelConfigText(kConfig, "fuzz.yaml");
  const std::string text = AsText(data, size);
  std::vector<std::string> lines;
  for (size_t start = 0; start <= text.size();) {
    const size_t end = std::min(text.find('\n', start), text.size());
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  for (const std::vector<std::string>& overrides :
       {std::vector<std::string>{text}, lines}) {
    try {
      train::ParseTrainConfig(kConfig, "fuzz.yaml", overrides);
    } catch (const Error&) {
    }
    try {
      train::OverrideModelConfig(kModel, overrides, "fuzz");
    } catch (const Error&) {
    }
  }
}

// A JSON document (meta.json, trainer_state.json, a safetensors header).
// A Hugging Face config.json (train/config/hf_config.h).
inline void FuzzHfConfig(const uint8_t* data, size_t size) {
  try {
    train::ParseHfConfig(AsText(data, size), "fuzz/config.json");
  } catch (const Error&) {
  }
}

inline void FuzzJson(const uint8_t* data, size_t size) {
  try {
    train::ParseJson(AsText(data, size), "fuzz.json");
  } catch (const Error&) {
  }
}

// A tokenizer.json; when it loads, a short text (with an added-token-like
// piece, digits, spaces and invalid UTF-8) is encoded, and the ids decoded.
inline void FuzzTokenizerJson(const uint8_t* data, size_t size) {
  try {
    const std::unique_ptr<train::HfTokenizer> tokenizer =
        train::HfTokenizer::Parse(AsText(data, size), "fuzz.json");
    const std::vector<train::TokenId> ids =
        tokenizer->Encode("Hello <s> w\xC3\xB6rld 12345  \n\xFF end", true);
    tokenizer->Decode(ids, false);
    tokenizer->Decode(ids, true);
  } catch (const Error&) {
  }
}

// The GGUF writer's inputs (train/gguf/), through the real export
// (WriteGgufModel) into a temporary file. The input is lines:
//   1  the dtype: f32, f16, bf16 or q8_0
//   2  rope_theta, a number (strtod: 1e300, inf, nan ...)
//   3  numbers for the first weights of layer 0's up_proj (65505, 1e7,
//      nan, inf ...)
//   4  a token's text, added to the byte tokenizer's vocabulary
//   5, 6  a merge's left and right tokens: they, their concatenation and
//      the merge are added too
// Missing lines are empty. The model has 264 ids, so a few are unused.
inline void FuzzGgufWriter(const uint8_t* data, size_t size) {
  static const ProcessTempFile gguf("rotor_fuzz_gguf");
  static const ProcessTempFile tokenizer_file("rotor_fuzz_gguf_tokenizer");
  std::vector<std::string> lines(6);
  std::istringstream input(AsText(data, size));
  for (std::string& line : lines) std::getline(input, line);
  try {
    train::GgufExportOptions options;
    options.dtype = train::GgmlTypeFromName(lines[0]);
    options.force = true;
    std::ostringstream theta;
    theta << std::setprecision(17) << std::strtod(lines[1].c_str(), nullptr);
    const train::ModelConfig config = train::ParseModelConfigText(
        "model:\n  vocab_size: 264\n  hidden_size: 32\n"
        "  intermediate_size: 32\n  num_hidden_layers: 1\n"
        "  num_attention_heads: 4\n  max_position_embeddings: 64\n"
        "  rope_theta: " +
            theta.str() + "\n",
        "fuzz.yaml");
    const nn::Transformer model(train::ResolveTransformerConfig(config),
                                uint64_t{0});
    for (const auto& [name, parameter] : model.NamedParameters()) {
      if (name != "model.layers.0.mlp.up_proj.weight") continue;
      Tensor weights = parameter;
      std::istringstream numbers(lines[2]);
      std::string number;
      for (int64_t i = 0; i < weights.numel() && numbers >> number; ++i) {
        weights.data()[i] = std::strtof(number.c_str(), nullptr);
      }
    }
    train::Json tokenizer = train::ParseJson(train::ByteTokenizerJson(), "");
    train::Json& vocab = tokenizer["model"]["vocab"];
    int64_t id = 257;
    for (const std::string& token :
         {lines[3], lines[4], lines[5], lines[4] + lines[5]}) {
      if (!vocab.contains(token)) vocab[token] = id++;
    }
    tokenizer["model"]["merges"] = train::Json::array({{lines[4], lines[5]}});
    tokenizer["pre_tokenizer"]["use_regex"] = true;  // GPT-2's split
    std::ofstream(tokenizer_file.path(), std::ios::binary | std::ios::trunc)
        << tokenizer.dump(-1, ' ', false,
                          train::Json::error_handler_t::replace);
    train::WriteGgufModel(gguf.path(), model, config, tokenizer_file.path(),
                          options);
  } catch (const Error&) {
  }
}

}  // namespace rotor::fuzz

#endif  // ROTOR_TESTS_FUZZ_FUZZ_TARGETS_H_
