// A naive byte-level BPE trainer, written apart from
// train/tokenizer/bpe_trainer.cc to check it: the same vocabulary start and
// tie rule, but every pair recounted from scratch at every step. Used by
// tests/train/tokenizer/bpe_trainer_test.cc and, for a speed reference on a
// small slice, bench/bpe_train_bench.cc.
#ifndef ROTOR_TESTS_TRAIN_TOKENIZER_NAIVE_BPE_TRAINER_H_
#define ROTOR_TESTS_TRAIN_TOKENIZER_NAIVE_BPE_TRAINER_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "train/tokenizer/bpe_trainer.h"

namespace rotor::test {

// GPT-2's bytes_to_unicode, written as its Python original builds it: the
// printable bytes keep their code point, the others take 256, 257, ...
inline std::vector<uint32_t> ReferenceByteCodePoints() {
  std::vector<uint32_t> code_points(256);
  std::vector<bool> printable(256, false);
  for (int b = 0; b < 256; ++b) {
    printable[b] = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) ||
                   (b >= 0xAE && b <= 0xFF);
  }
  uint32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    code_points[b] = printable[b] ? b : next++;
  }
  return code_points;
}

inline std::string Utf8(uint32_t code_point) {
  if (code_point < 0x80) return std::string(1, static_cast<char>(code_point));
  return {static_cast<char>(0xC0 | (code_point >> 6)),
          static_cast<char>(0x80 | (code_point & 0x3F))};
}

// The naive trainer: the same vocabulary start (specials, then bytes by
// code point), then at every step all pairs are recounted from scratch in
// an ordered map, the most frequent wins and ties go to the smallest
// (left id, right id); the pair is merged left to right in every word.
// O(merges * symbols): for small corpora only.
inline train::BpeModel NaiveTrain(const std::vector<train::WordCount>& words,
                                  int64_t vocab_size,
                                  const std::vector<std::string>& specials,
                                  uint64_t min_frequency) {
  train::BpeModel model;
  model.vocab = specials;
  model.special_token_count = static_cast<int64_t>(specials.size());
  const std::vector<uint32_t> code_points = ReferenceByteCodePoints();
  std::vector<int> bytes_by_code_point(256);
  for (int b = 0; b < 256; ++b) bytes_by_code_point[b] = b;
  std::sort(bytes_by_code_point.begin(), bytes_by_code_point.end(),
            [&](int x, int y) { return code_points[x] < code_points[y]; });
  std::vector<train::TokenId> byte_id(256);
  for (const int b : bytes_by_code_point) {
    byte_id[b] = static_cast<train::TokenId>(model.vocab.size());
    model.vocab.push_back(Utf8(code_points[b]));
  }
  std::vector<std::vector<train::TokenId>> symbols;
  std::vector<int64_t> counts;
  for (const train::WordCount& word : words) {
    std::vector<train::TokenId> ids;
    for (const char c : word.word) ids.push_back(byte_id[(unsigned char)c]);
    symbols.push_back(ids);
    counts.push_back(static_cast<int64_t>(word.count));
  }
  while (static_cast<int64_t>(model.vocab.size()) < vocab_size) {
    std::map<std::pair<train::TokenId, train::TokenId>, int64_t> pair_counts;
    for (size_t w = 0; w < symbols.size(); ++w) {
      for (size_t i = 0; i + 1 < symbols[w].size(); ++i) {
        pair_counts[{symbols[w][i], symbols[w][i + 1]}] += counts[w];
      }
    }
    std::pair<train::TokenId, train::TokenId> best;
    int64_t best_count = 0;
    for (const auto& [pair, count] : pair_counts) {
      if (count > best_count) {
        best = pair;
        best_count = count;
      }
    }
    if (best_count < 1 || static_cast<uint64_t>(best_count) < min_frequency) {
      break;
    }
    const std::string text = model.vocab[best.first] + model.vocab[best.second];
    const auto existing =
        std::find(model.vocab.begin(), model.vocab.end(), text);
    const train::TokenId merged =
        static_cast<train::TokenId>(existing - model.vocab.begin());
    if (existing == model.vocab.end()) model.vocab.push_back(text);
    model.merges.push_back(best);
    for (std::vector<train::TokenId>& word : symbols) {
      std::vector<train::TokenId> out;
      for (size_t i = 0; i < word.size();) {
        if (i + 1 < word.size() && word[i] == best.first &&
            word[i + 1] == best.second) {
          out.push_back(merged);
          i += 2;
        } else {
          out.push_back(word[i++]);
        }
      }
      word = out;
    }
  }
  return model;
}

}  // namespace rotor::test

#endif  // ROTOR_TESTS_TRAIN_TOKENIZER_NAIVE_BPE_TRAINER_H_
