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
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "train/config/hf_config.h"
#include "train/config/model_config.h"
#include "train/config/train_config.h"
#include "train/data/token_file.h"
#include "train/io/json.h"
#include "train/io/safetensors.h"
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

}  // namespace rotor::fuzz

#endif  // ROTOR_TESTS_FUZZ_FUZZ_TARGETS_H_
