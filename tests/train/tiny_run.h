// A tiny data set and model config for tests that train (init_from, the
// extension report): a few thousand bytes of text, a 1-layer model with
// head_dim 8, so a step takes milliseconds.
#ifndef ROTOR_TESTS_TRAIN_TINY_RUN_H_
#define ROTOR_TESTS_TRAIN_TINY_RUN_H_

#include <string>
#include <vector>

#include "tests/train/temp_dir.h"
#include "train/token_file.h"
#include "train/tokenizer.h"

namespace rotor {
namespace test {

// Writes <dir>/data/{train,val}.bin: `documents` documents of `doc_bytes`
// bytes of English-like text each (train), 4 such documents (val). Returns
// the data folder.
inline std::string WriteTinyData(const TempDir& dir, int documents = 8,
                                 int doc_bytes = 600) {
  const std::string sentence =
      "The quick brown fox jumps over the lazy dog while the cat sleeps. ";
  auto write = [&](const std::string& name, int count, int offset) {
    std::vector<uint16_t> tokens;
    for (int d = 0; d < count; ++d) {
      tokens.push_back(ByteTokenizer::kEndOfText);
      for (int t = 0; t < doc_bytes; ++t) {
        tokens.push_back(static_cast<unsigned char>(
            sentence[(t + 7 * (d + offset)) % sentence.size()]));
      }
    }
    WriteTokenFile(dir.Path("data/" + name), tokens, ByteTokenizer::kVocabSize,
                   count);
  };
  std::filesystem::create_directories(dir.Path("data"));
  write("train.bin", documents, 0);
  write("val.bin", 4, documents);
  return dir.Path("data");
}

// A training config for the tiny model at seq_len 32 on `data_dir`.
inline std::string TinyTrainConfig(const std::string& data_dir,
                                   const std::string& output_dir,
                                   int max_steps = 4) {
  return "output_dir: " + output_dir +
         "\n"
         "model:\n"
         "  vocab_size: 257\n"
         "  hidden_size: 16\n"
         "  intermediate_size: 32\n"
         "  num_hidden_layers: 1\n"
         "  num_attention_heads: 2\n"
         "  num_key_value_heads: 1\n"
         "  max_position_embeddings: 32\n"
         "  tie_word_embeddings: true\n"
         "data:\n"
         "  path: " +
         data_dir +
         "\n"
         "train:\n"
         "  batch_size: 2\n"
         "  seq_len: 32\n"
         "  max_steps: " +
         std::to_string(max_steps) +
         "\n"
         "  warmup_steps: 1\n"
         "  threads: 1\n"
         "eval: {every_n_steps: 0, max_batches: 1}\n"
         "checkpoint: {every_n_steps: 0, keep_last_n: 1}\n"
         "logging: {progress: false, log_every_n_steps: 100}\n";
}

}  // namespace test
}  // namespace rotor

#endif  // ROTOR_TESTS_TRAIN_TINY_RUN_H_
