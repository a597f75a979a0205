#include "train/tokenizer/bpe_trainer.h"

#include <algorithm>
#include <memory>
#include <numeric>
#include <queue>
#include <set>
#include <unordered_map>

#include "core/error.h"
#include "core/limits.h"
#include "core/parallel.h"
#include "train/io/json.h"
#include "train/tokenizer/byte_level_bpe_json.h"
#include "train/tokenizer/pre_tokenizers.h"
#include "train/tokenizer/regex.h"
#include "train/tokenizer/unicode.h"

namespace rotor::train {

namespace {

// A pair of adjacent symbols as one 64-bit key: left id in the high half, so
// keys order as (left, right) tuples do - the tie rule's order.
using PairKey = uint64_t;

PairKey MakePair(TokenId left, TokenId right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
         static_cast<uint32_t>(right);
}
TokenId LeftOf(PairKey pair) { return static_cast<TokenId>(pair >> 32); }
TokenId RightOf(PairKey pair) {
  return static_cast<TokenId>(pair & 0xffffffffu);
}

// What the merge loop keeps per pair: its count over all words (weighted by
// word counts) and the words it was seen in (word indices; may repeat or be
// stale, the merge step sorts and skips).
struct PairStats {
  int64_t count = 0;
  std::vector<uint32_t> words;
};

// A max-heap entry: the highest count first, then the smallest pair.
// Entries go stale when a count changes; the loop checks on pop.
struct HeapEntry {
  int64_t count;
  PairKey pair;
  bool operator<(const HeapEntry& other) const {
    if (count != other.count) return count < other.count;
    return pair > other.pair;
  }
};

void CheckOptions(const BpeTrainerOptions& options) {
  std::set<std::string_view> seen;
  for (const std::string& token : options.special_tokens) {
    ROTOR_CHECK(!token.empty(), "special tokens: an empty special token");
    ROTOR_CHECK(IsValidUtf8(token), "special tokens: ", ShowAsJson(token),
                " is not valid UTF-8");
    ROTOR_CHECK(seen.insert(token).second, "special tokens: '", token,
                "' is given twice");
  }
  const int64_t min_vocab =
      256 + static_cast<int64_t>(options.special_tokens.size());
  ROTOR_CHECK(options.vocab_size >= min_vocab &&
                  options.vocab_size <= MaxBpeVocabSize(),
              "vocab_size must be in [", min_vocab, ", ", MaxBpeVocabSize(),
              "] (256 bytes + ", options.special_tokens.size(),
              " special tokens at least), got ", options.vocab_size);
}

// The merge loop's state: the words as symbol ids (one flat array, each
// word a slice that shrinks in place as pairs merge), their counts, the
// pair statistics and the heap.
class MergeLoop {
 public:
  MergeLoop(const std::vector<WordCount>& words, BpeModel& model)
      : model_(model) {
    for (TokenId id = 0; id < static_cast<TokenId>(model_.vocab.size()); ++id) {
      token_ids_.emplace(model_.vocab[id], id);
    }
    std::array<TokenId, 256> byte_ids;
    for (int b = 0; b < 256; ++b) {
      byte_ids[b] = token_ids_.at(ByteLevelChars()[b]);
    }
    // Words of one byte hold no pair: leave them out.
    for (const WordCount& word : words) {
      if (word.word.size() < 2 || word.count == 0) continue;
      word_begin_.push_back(symbols_.size());
      word_length_.push_back(static_cast<uint32_t>(word.word.size()));
      word_count_.push_back(static_cast<int64_t>(word.count));
      for (const char c : word.word) {
        symbols_.push_back(byte_ids[static_cast<unsigned char>(c)]);
      }
    }
    CountAllPairs();
  }

  // Merges until the vocabulary is full, no pair is left, or the best one
  // is rarer than min_frequency. Each step pops the heap (re-pushing stale
  // entries with their current count) and merges the pair in the words that
  // hold it.
  void Run(const BpeTrainerOptions& options, const BpeProgress& progress) {
    const size_t target = static_cast<size_t>(options.vocab_size);
    while (model_.vocab.size() < target && !heap_.empty()) {
      const HeapEntry top = heap_.top();
      heap_.pop();
      const auto found = pairs_.find(top.pair);
      const int64_t current = found == pairs_.end() ? 0 : found->second.count;
      if (current != top.count) {
        if (current > 0) heap_.push({current, top.pair});
        continue;
      }
      if (static_cast<uint64_t>(top.count) < options.min_frequency) break;
      MergePair(top.pair);
      if (progress && model_.merges.size() % 256 == 0) {
        progress(static_cast<int64_t>(model_.merges.size()),
                 static_cast<int64_t>(model_.vocab.size()));
      }
    }
    if (progress) {
      progress(static_cast<int64_t>(model_.merges.size()),
               static_cast<int64_t>(model_.vocab.size()));
    }
  }

 private:
  // One pass over every word: counts each adjacent pair (weighted) and
  // records the words it occurs in; then one heap entry per pair.
  // O(symbols).
  void CountAllPairs() {
    for (uint32_t w = 0; w < word_begin_.size(); ++w) {
      const TokenId* s = &symbols_[word_begin_[w]];
      for (uint32_t i = 0; i + 1 < word_length_[w]; ++i) {
        AddToPair(MakePair(s[i], s[i + 1]), word_count_[w], w);
      }
    }
    for (const auto& [pair, stats] : pairs_) {
      heap_.push({stats.count, pair});
    }
  }

  // Adds `delta` to a pair's count; a positive delta also records word `w`.
  void AddToPair(PairKey pair, int64_t delta, uint32_t w) {
    PairStats& stats = pairs_[pair];
    stats.count += delta;
    if (delta > 0 && (stats.words.empty() || stats.words.back() != w)) {
      stats.words.push_back(w);
    }
  }

  // The id of the token left + right: an existing token with that text
  // (HF reuses it; then the vocabulary does not grow), or a new one.
  TokenId TokenForMerge(PairKey pair) {
    std::string text = model_.vocab[LeftOf(pair)] + model_.vocab[RightOf(pair)];
    const auto [it, added] = token_ids_.emplace(
        std::move(text), static_cast<TokenId>(model_.vocab.size()));
    if (added) model_.vocab.push_back(it->first);
    return it->second;
  }

  // Records the merge and applies it to every word that holds the pair,
  // left to right without overlap ("a a a" -> "aa a"), as HF's Word::merge
  // does. For each occurrence, with neighbours p and n (if any): pairs
  // (p, a), (a, b), (b, n) lose the word's count, (p, ab) and (ab, n) gain
  // it. Pairs that gained get a fresh heap entry; pairs at zero are
  // dropped. O(symbols of the words holding the pair).
  void MergePair(PairKey pair) {
    const TokenId left = LeftOf(pair), right = RightOf(pair);
    const TokenId merged = TokenForMerge(pair);
    model_.merges.emplace_back(left, right);

    std::vector<uint32_t> words = std::move(pairs_[pair].words);
    std::sort(words.begin(), words.end());
    words.erase(std::unique(words.begin(), words.end()), words.end());
    gained_.clear();
    for (const uint32_t w : words) {
      TokenId* s = &symbols_[word_begin_[w]];
      const uint32_t length = word_length_[w];
      const int64_t count = word_count_[w];
      uint32_t out = 0;
      for (uint32_t i = 0; i < length;) {
        if (i + 1 < length && s[i] == left && s[i + 1] == right) {
          if (out > 0) {
            AddToPair(MakePair(s[out - 1], left), -count, w);
            AddToPair(MakePair(s[out - 1], merged), count, w);
            gained_.push_back(MakePair(s[out - 1], merged));
          }
          if (i + 2 < length) {
            AddToPair(MakePair(right, s[i + 2]), -count, w);
            AddToPair(MakePair(merged, s[i + 2]), count, w);
            gained_.push_back(MakePair(merged, s[i + 2]));
          }
          AddToPair(pair, -count, w);
          s[out++] = merged;
          i += 2;
        } else {
          s[out++] = s[i++];
        }
      }
      word_length_[w] = out;
    }
    std::sort(gained_.begin(), gained_.end());
    gained_.erase(std::unique(gained_.begin(), gained_.end()), gained_.end());
    for (const PairKey gained : gained_) {
      const auto found = pairs_.find(gained);
      if (found != pairs_.end() && found->second.count > 0) {
        heap_.push({found->second.count, gained});
      }
    }
    pairs_.erase(pair);
  }

  BpeModel& model_;
  std::unordered_map<std::string, TokenId> token_ids_;
  std::vector<TokenId> symbols_;
  std::vector<size_t> word_begin_;
  std::vector<uint32_t> word_length_;
  std::vector<int64_t> word_count_;
  std::unordered_map<PairKey, PairStats> pairs_;
  std::priority_queue<HeapEntry> heap_;
  std::vector<PairKey> gained_;  // scratch of MergePair
};

}  // namespace

int64_t MaxBpeVocabSize() { return limits::kMaxVocabSize; }

std::vector<WordCount> CountWords(
    const std::vector<std::string_view>& documents,
    const std::string& split_pattern) {
  std::unique_ptr<Regex> regex;
  try {
    regex = std::make_unique<Regex>(split_pattern, /*literal=*/false);
  } catch (const Error& error) {
    throw Error(StrCat("split pattern ", ShowAsJson(split_pattern), ": ",
                       error.what()));
  }
  // Blocks of documents, each counted into its own map (no locks), a few
  // blocks per thread so uneven documents still balance.
  const int64_t block_count = std::min<int64_t>(
      static_cast<int64_t>(documents.size()), 4 * int64_t{NumThreads()});
  std::vector<std::unordered_map<std::string, uint64_t>> block_counts(
      block_count);
  ParallelFor(block_count, 1, [&](int64_t begin_block, int64_t end_block) {
    std::vector<Regex::Match> matches;
    for (int64_t block = begin_block; block < end_block; ++block) {
      auto& counts = block_counts[block];
      const size_t first = documents.size() * block / block_count;
      const size_t last = documents.size() * (block + 1) / block_count;
      for (size_t d = first; d < last; ++d) {
        // The text as an encoder sees it: invalid UTF-8 repaired.
        std::string repaired;
        std::string_view text = documents[d];
        if (!unicode::IsValidUtf8(text)) {
          repaired = unicode::ReplaceInvalidUtf8(text);
          text = repaired;
        }
        // Split with behavior Isolated: each match is a word, and so is
        // each stretch of text between matches.
        matches.clear();
        regex->FindAll(text, matches);
        size_t done = 0;
        for (const Regex::Match& match : matches) {
          if (match.start > done) {
            ++counts[std::string(text.substr(done, match.start - done))];
          }
          if (match.end > match.start) {
            ++counts[std::string(
                text.substr(match.start, match.end - match.start))];
          }
          done = match.end;
        }
        if (done < text.size()) ++counts[std::string(text.substr(done))];
      }
    }
  });
  std::unordered_map<std::string, uint64_t> total;
  for (auto& counts : block_counts) {
    for (auto& [word, count] : counts) total[word] += count;
    counts.clear();
  }
  std::vector<WordCount> words;
  words.reserve(total.size());
  for (auto& [word, count] : total) words.push_back({word, count});
  std::sort(
      words.begin(), words.end(),
      [](const WordCount& a, const WordCount& b) { return a.word < b.word; });
  return words;
}

BpeModel TrainBpe(const std::vector<WordCount>& words,
                  const BpeTrainerOptions& options,
                  const BpeProgress& progress) {
  CheckOptions(options);
  BpeModel model;
  model.vocab = options.special_tokens;
  model.special_token_count =
      static_cast<int64_t>(options.special_tokens.size());
  // The 256 bytes' characters sorted by code point (UTF-8 sorts bytewise in
  // code point order); a character that is also a special token keeps the
  // special token's id (as in HF's trainer).
  std::vector<std::string> alphabet(ByteLevelChars().begin(),
                                    ByteLevelChars().end());
  std::sort(alphabet.begin(), alphabet.end());
  for (const std::string& text : alphabet) {
    if (std::find(options.special_tokens.begin(), options.special_tokens.end(),
                  text) == options.special_tokens.end()) {
      model.vocab.push_back(text);
    }
  }
  MergeLoop loop(words, model);
  loop.Run(options, progress);
  return model;
}

std::string BpeTokenizerJson(const BpeModel& model,
                             const BpeTrainerOptions& options) {
  std::vector<TokenId> special_ids(model.special_token_count);
  std::iota(special_ids.begin(), special_ids.end(), 0);
  return ByteLevelBpeTokenizerJson(model.vocab, special_ids, model.merges,
                                   options.split_pattern);
}

}  // namespace rotor::train
