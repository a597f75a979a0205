// Rung 03 of the ladder (docs/learn.md, docs/tokenizers.md): from text to
// token ids. First the byte tokenizer every rotor model in this course uses
// (one id per byte, 0..255, plus <|endoftext|> = 256), then byte-pair
// encoding (BPE, Sennrich et al. 2016; GPT-2's byte-level variant) trained by
// hand on one paragraph, merge by merge, and checked against rotor's trainer.
//
// BPE in four lines:
//   1. split the text into pre-tokens ("words", each with its leading space)
//      and count them;
//   2. write every word as a sequence of byte symbols;
//   3. find the adjacent pair of symbols that occurs most often (over all
//      words, weighted by their counts) and merge it into a new symbol;
//   4. repeat until the vocabulary has the size you want.
// A tie between pairs with the same count goes to the pair of older symbols
// (lowest left id, then lowest right id): ids grow in the order symbols were
// made. That makes training deterministic (train/tokenizer/bpe_trainer.h).
//
//   ./build/examples/03_tokenizer
#include <cstdio>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "train/tokenizer/bpe_trainer.h"
#include "train/tokenizer/byte_tokenizer.h"
#include "train/tokenizer/pre_tokenizers.h"

namespace {

constexpr char kParagraph[] =
    "the cat sat on the mat. the cat ate the rat. then the cat sat on the "
    "hat, and the rat sat on the cat. that is the tale of the cat and the "
    "rat, the mat and the hat.";
constexpr int kMerges = 12;

// A symbol is a string of bytes shown in GPT-2's byte-level alphabet (a
// space is written "Ġ"), with the id that breaks ties: the 256 bytes first,
// ordered by that alphabet, then merged symbols in the order they were made.
struct Symbol {
  std::string text;
  int id;
};

}  // namespace

int main() {
  using rotor::train::ByteTokenizer;
  const std::vector<rotor::train::TokenId> bytes =
      ByteTokenizer::Encode(kParagraph);
  std::printf("byte tokenizer: %zu bytes -> %zu tokens; \"the cat\" = [",
              sizeof(kParagraph) - 1, bytes.size());
  for (int i = 0; i < 7; ++i) std::printf(i ? " %d" : "%d", bytes[i]);
  std::printf("]; decodes back: %s\n\n",
              ByteTokenizer::Decode(bytes) == kParagraph ? "yes" : "NO");

  // ---- 1. Pre-tokens and their counts (the Llama 3 / GPT-4 regex) ----
  const std::vector<rotor::train::WordCount> words = rotor::train::CountWords(
      {std::string_view(kParagraph)}, rotor::train::kLlama3SplitPattern);

  // ---- 2. Every word as byte symbols ----
  const auto& alphabet = rotor::train::ByteLevelChars();
  std::map<std::string, int> byte_rank;  // alphabet order = tie-break order
  for (int b = 0; b < 256; ++b) byte_rank[alphabet[b]] = 0;
  int rank = 0;
  for (auto& [text, r] : byte_rank) r = rank++;
  std::vector<std::vector<Symbol>> split;
  for (const auto& w : words) {
    std::vector<Symbol> symbols;
    for (unsigned char c : w.word) {
      symbols.push_back({alphabet[c], byte_rank[alphabet[c]]});
    }
    split.push_back(symbols);
  }
  auto count_tokens = [&] {
    size_t n = 0;
    for (size_t i = 0; i < split.size(); ++i) {
      n += split[i].size() * words[i].count;
    }
    return n;
  };

  // ---- 3-4. Merge the most frequent pair, kMerges times ----
  std::printf("BPE by hand, one merge at a time (tokens for the paragraph):\n");
  std::printf("  start: %zu tokens\n", count_tokens());
  std::vector<std::pair<std::string, std::string>> hand_merges;
  for (int m = 0; m < kMerges; ++m) {
    // Count adjacent pairs, keyed by (left id, right id): std::map iterates
    // in that order, so the first pair with the top count wins ties.
    std::map<std::pair<int, int>, uint64_t> counts;
    std::map<std::pair<int, int>, std::pair<std::string, std::string>> text;
    for (size_t i = 0; i < split.size(); ++i) {
      for (size_t j = 0; j + 1 < split[i].size(); ++j) {
        const std::pair<int, int> key{split[i][j].id, split[i][j + 1].id};
        counts[key] += words[i].count;
        text[key] = {split[i][j].text, split[i][j + 1].text};
      }
    }
    std::pair<int, int> best{};
    uint64_t best_count = 0;
    for (const auto& [key, count] : counts) {
      if (count > best_count) best = key, best_count = count;
    }
    const Symbol merged{text[best].first + text[best].second, 256 + m};
    for (auto& symbols : split) {  // replace every occurrence, left to right
      std::vector<Symbol> out;
      for (size_t j = 0; j < symbols.size(); ++j) {
        if (j + 1 < symbols.size() && symbols[j].id == best.first &&
            symbols[j + 1].id == best.second) {
          out.push_back(merged);
          ++j;
        } else {
          out.push_back(symbols[j]);
        }
      }
      symbols = out;
    }
    hand_merges.push_back(text[best]);
    std::printf("  merge %2d: '%s' + '%s' -> '%s'  (%llu times)  %zu tokens\n",
                m + 1, text[best].first.c_str(), text[best].second.c_str(),
                merged.text.c_str(),
                static_cast<unsigned long long>(best_count), count_tokens());
  }

  // ---- rotor's trainer on the same counts ----
  rotor::train::BpeTrainerOptions options;
  options.special_tokens = {"<|endoftext|>"};
  options.vocab_size = 257 + kMerges;
  const rotor::train::BpeModel model = rotor::train::TrainBpe(words, options);
  int same = 0;
  for (int m = 0; m < kMerges && m < static_cast<int>(model.merges.size());
       ++m) {
    same += model.vocab[model.merges[m].first] == hand_merges[m].first &&
            model.vocab[model.merges[m].second] == hand_merges[m].second;
  }
  std::printf("rotor's TrainBpe learned the same merges: %d of %d\n", same,
              kMerges);
  return same == kMerges ? 0 : 1;
}
