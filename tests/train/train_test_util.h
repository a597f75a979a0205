// Helpers for the trainer tests: a small prepared data set of English-like
// text (made with the library's own `prepare` pipeline, so tests never read
// ~/.cache) and configs/tiny.yaml pointed at temporary folders.
#ifndef ROTOR_TESTS_TRAIN_TRAIN_TEST_UTIL_H_
#define ROTOR_TESTS_TRAIN_TRAIN_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "core/random.h"
#include "nn/rope_scaling.h"
#include "nn/transformer.h"
#include "tests/temp_dir.h"
#include "train/config/train_config.h"
#include "train/data/prepare.h"

namespace rotor {
namespace test {

inline std::string TinyConfigPath() {
  return std::string(ROTOR_SOURCE_DIR) + "/configs/tiny.yaml";
}

// `documents` files of sentences drawn from a small grammar ("the small dog
// ran over the red house."), prepared into dir/data (train.bin, val.bin:
// a quarter of the documents). Returns the data folder.
inline std::string PrepareTextData(const TempDir& dir, int documents = 12,
                                   int sentences_per_document = 40) {
  const std::vector<std::string> subjects = {"the cat", "a dog", "the bird",
                                             "my friend", "the old man"};
  const std::vector<std::string> verbs = {"sat on", "ran to", "looked at",
                                          "sang over", "walked past"};
  const std::vector<std::string> objects = {
      "the mat", "a red house", "the big tree", "the river", "a small garden"};
  Rng rng(2024);
  auto pick = [&](const std::vector<std::string>& words) {
    return words[rng.Below(words.size())];
  };
  for (int d = 0; d < documents; ++d) {
    std::string text;
    for (int s = 0; s < sentences_per_document; ++s) {
      std::string sentence =
          pick(subjects) + " " + pick(verbs) + " " + pick(objects) + ". ";
      sentence[0] = static_cast<char>(sentence[0] - 'a' + 'A');
      text += sentence;
    }
    char name[32];
    std::snprintf(name, sizeof(name), "text/doc%02d.txt", d);
    dir.Write(name, text);
  }
  train::PrepareOptions options;
  options.inputs = {dir.Path("text")};
  options.output = dir.Path("data");
  options.val_fraction = 0.25;
  train::RunPrepare(options);
  return dir.Path("data");
}

// configs/tiny.yaml reading `data` and writing to `output_dir`, plus
// `overrides` ("key.path=value").
inline train::TrainConfig TinyConfig(const std::string& data,
                                     const std::string& output_dir,
                                     std::vector<std::string> overrides = {}) {
  overrides.insert(overrides.begin(),
                   {"data.path=" + data, "output_dir=" + output_dir});
  return train::LoadTrainConfig(TinyConfigPath(), overrides);
}

// A fixture whose tests share one PrepareTextData set (data_, made once per
// suite: preparing it is the slow part) and each get a fresh folder (dir_).
class PreparedDataTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    data_dir_ = new TempDir();
    data_ = PrepareTextData(*data_dir_);
  }
  static void TearDownTestSuite() {
    delete data_dir_;
    data_dir_ = nullptr;
  }

  static inline TempDir* data_dir_ = nullptr;
  static inline std::string data_;
  TempDir dir_;
};

// The "billion laughs": 400 bytes of YAML whose nested aliases expand to
// 9^9 scalars (its first anchor is at 1:4). Configs must refuse it at once.
inline std::string BillionLaughsYaml() {
  std::string text = "a: &a [x, x, x, x, x, x, x, x, x]\n";
  const std::string names = "abcdefghi";
  for (size_t i = 1; i < names.size(); ++i) {
    const std::string alias = std::string("*") + names[i - 1];
    text += names.substr(i, 1) + ": &" + names[i] + " [" + alias;
    for (int k = 0; k < 8; ++k) text += ", " + alias;
    text += "]\n";
  }
  return text + "model: *i\n";
}

// A one-layer Transformer small enough for exact, fast tests: hidden 16,
// 2 query heads sharing 1 kv head of dim 8, byte vocabulary. A scaled
// rope_type gets factor 4.
inline nn::TransformerConfig TinyTransformerConfig(
    int64_t max_position_embeddings, RopeType type = RopeType::kDefault) {
  nn::TransformerConfig config;
  config.vocab_size = 257;
  config.hidden_size = 16;
  config.intermediate_size = 32;
  config.num_hidden_layers = 1;
  config.num_attention_heads = 2;
  config.num_key_value_heads = 1;
  config.head_dim = 8;
  config.rope.head_dim = 8;
  config.rope.max_position_embeddings = max_position_embeddings;
  config.rope.rope_type = type;
  if (type != RopeType::kDefault) config.rope.factor = 4.0;
  return config;
}

}  // namespace test
}  // namespace rotor

#endif  // ROTOR_TESTS_TRAIN_TRAIN_TEST_UTIL_H_
