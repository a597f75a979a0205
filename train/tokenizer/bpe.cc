#include "train/tokenizer/bpe.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <functional>
#include <queue>
#include <unordered_map>

#include "core/error.h"
#include "train/tokenizer/pre_tokenizers.h"
#include "train/tokenizer/unicode.h"

namespace rotor::train {
namespace {

// Pieces this long or longer are not cached (as HF's MAX_LENGTH).
constexpr size_t kMaxCachedPieceBytes = 256;
// A thread's cache of one model is emptied when it reaches this many
// pieces, so memory stays bounded on endless varied text.
constexpr size_t kMaxCachedPieces = 1 << 16;

uint32_t HashOf(std::string_view text) {
  const size_t h = std::hash<std::string_view>()(text);
  return static_cast<uint32_t>(h ^ (h >> 32));
}

size_t SlotOfPair(uint64_t key, size_t mask) {
  return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 32) & mask;
}

// One symbol of a word being merged: a doubly linked list in an array.
struct Symbol {
  TokenId id;
  int32_t prev;
  int32_t next;
  bool removed;
};

// A candidate merge at symbol `pos`; the queue pops the lowest rank, then
// the leftmost position.
struct Candidate {
  int32_t rank;
  int32_t pos;
  TokenId merged;
  bool operator>(const Candidate& other) const {
    return rank != other.rank ? rank > other.rank : pos > other.pos;
  }
};

// The pieces one thread has tokenized with one model, and their ids.
struct PieceCache {
  uint64_t owner = 0;  // the model's serial; 0: unused
  std::unordered_map<std::string, std::vector<TokenId>> ids;
};

// This thread's cache for the model with `serial`. A thread keeps caches
// for a few models at once; the least recently claimed one is reused.
PieceCache& CacheOf(uint64_t serial) {
  constexpr int kSlots = 4;
  thread_local PieceCache caches[kSlots];
  thread_local int next_victim = 0;
  for (PieceCache& cache : caches) {
    if (cache.owner == serial) return cache;
  }
  PieceCache& cache = caches[next_victim];
  next_victim = (next_victim + 1) % kSlots;
  cache.owner = serial;
  cache.ids.clear();
  return cache;
}

std::atomic<uint64_t> next_serial{1};

}  // namespace

bool TokenTable::Insert(std::string_view token, TokenId id) {
  if (id < 0 || Find(token) >= 0 || Token(id) != nullptr) return false;
  if ((count_ + 1) * 2 > slots_.size()) Grow();
  if (static_cast<size_t>(id) >= tokens_.size()) {
    tokens_.resize(static_cast<size_t>(id) + 1);
    present_.resize(static_cast<size_t>(id) + 1, false);
  }
  tokens_[id] = std::string(token);
  present_[id] = true;
  const uint32_t hash = HashOf(token);
  const size_t mask = slots_.size() - 1;
  size_t slot = hash & mask;
  while (slots_[slot].id >= 0) slot = (slot + 1) & mask;
  slots_[slot] = {hash, id};
  ++count_;
  return true;
}

TokenId TokenTable::Find(std::string_view token) const {
  if (slots_.empty()) return -1;
  const uint32_t hash = HashOf(token);
  const size_t mask = slots_.size() - 1;
  for (size_t slot = hash & mask;; slot = (slot + 1) & mask) {
    const Slot& s = slots_[slot];
    if (s.id < 0) return -1;
    if (s.hash == hash && tokens_[s.id] == token) return s.id;
  }
}

const std::string* TokenTable::Token(TokenId id) const {
  if (id < 0 || static_cast<size_t>(id) >= tokens_.size() || !present_[id]) {
    return nullptr;
  }
  return &tokens_[id];
}

void TokenTable::Reserve(size_t count) {
  while (count * 2 > slots_.size()) Grow();
}

void TokenTable::Grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(std::max<size_t>(16, old.size() * 2), Slot{0, -1});
  const size_t mask = slots_.size() - 1;
  for (const Slot& s : old) {
    if (s.id < 0) continue;
    size_t slot = s.hash & mask;
    while (slots_[slot].id >= 0) slot = (slot + 1) & mask;
    slots_[slot] = s;
  }
}

BpeModel::BpeModel(TokenTable vocab, BpeOptions options)
    : vocab_(std::move(vocab)),
      options_(std::move(options)),
      serial_(next_serial.fetch_add(1)) {
  if (options_.unk_token) unk_id_ = vocab_.Find(*options_.unk_token);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    byte_fallback_ids_[b] = vocab_.Find(name);
  }
  merges_.assign(16, MergeSlot{kEmptyKey, 0, 0});
}

void BpeModel::AddMerge(TokenId left, TokenId right, TokenId merged) {
  if ((merge_count_ + 1) * 2 > merges_.size()) GrowMerges();
  const uint64_t key =
      (static_cast<uint64_t>(left) << 32) | static_cast<uint32_t>(right);
  const size_t mask = merges_.size() - 1;
  const int32_t rank = static_cast<int32_t>(merge_count_);
  ++merge_count_;  // ranks count every merge given, repeated or not
  for (size_t slot = SlotOfPair(key, mask);; slot = (slot + 1) & mask) {
    MergeSlot& s = merges_[slot];
    if (s.key == key || s.key == kEmptyKey) {
      s = {key, rank, merged};
      return;
    }
  }
}

void BpeModel::GrowMerges() {
  std::vector<MergeSlot> old = std::move(merges_);
  merges_.assign(old.size() * 2, MergeSlot{kEmptyKey, 0, 0});
  const size_t mask = merges_.size() - 1;
  for (const MergeSlot& s : old) {
    if (s.key == kEmptyKey) continue;
    size_t slot = SlotOfPair(s.key, mask);
    while (merges_[slot].key != kEmptyKey) slot = (slot + 1) & mask;
    merges_[slot] = s;
  }
}

const BpeModel::MergeSlot* BpeModel::FindMerge(TokenId left,
                                               TokenId right) const {
  const uint64_t key =
      (static_cast<uint64_t>(left) << 32) | static_cast<uint32_t>(right);
  const size_t mask = merges_.size() - 1;
  for (size_t slot = SlotOfPair(key, mask);; slot = (slot + 1) & mask) {
    const MergeSlot& s = merges_[slot];
    if (s.key == key) return &s;
    if (s.key == kEmptyKey) return nullptr;
  }
}

void BpeModel::Tokenize(std::string_view piece,
                        std::vector<TokenId>& out) const {
  if (piece.empty()) return;
  if (piece.size() >= kMaxCachedPieceBytes) {
    TokenizeUncached(piece, out);
    return;
  }
  PieceCache& cache = CacheOf(serial_);
  // A short key stays in std::string's inline buffer: no allocation.
  thread_local std::string key;
  key.assign(piece.data(), piece.size());
  const auto found = cache.ids.find(key);
  if (found != cache.ids.end()) {
    out.insert(out.end(), found->second.begin(), found->second.end());
    return;
  }
  std::vector<TokenId> ids;
  TokenizeUncached(piece, ids);
  out.insert(out.end(), ids.begin(), ids.end());
  if (cache.ids.size() >= kMaxCachedPieces) cache.ids.clear();
  cache.ids.emplace(key, std::move(ids));
}

void BpeModel::TokenizeUncached(std::string_view piece,
                                std::vector<TokenId>& out) const {
  std::string mapped;
  std::string_view word = piece;
  if (options_.byte_level) {
    mapped.reserve(piece.size() * 2);
    AppendByteLevel(piece, mapped);
    word = mapped;
  }
  if (options_.ignore_merges) {
    const TokenId id = vocab_.Find(word);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
  }
  MergeWord(word, out);
}

void BpeModel::MergeWord(std::string_view word,
                         std::vector<TokenId>& out) const {
  // 1. One symbol per character (with the prefix and suffix options), or
  // its byte-fallback tokens, or the unknown token.
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  const auto add = [&](TokenId id) {
    const int32_t index = static_cast<int32_t>(symbols.size());
    symbols.push_back({id, index - 1, index + 1, false});
  };
  TokenId pending_unk = -1;  // an unknown token not yet added
  std::string text;
  size_t pos = 0;
  while (pos < word.size()) {
    const size_t start = pos;
    pos += unicode::Utf8Length(static_cast<unsigned char>(word[pos]));
    std::string_view character = word.substr(start, pos - start);
    const bool first = start == 0;
    const bool last = pos >= word.size();
    if ((!first && !options_.continuing_subword_prefix.empty()) ||
        (last && !options_.end_of_word_suffix.empty())) {
      text.clear();
      if (!first) text += options_.continuing_subword_prefix;
      text += character;
      if (last) text += options_.end_of_word_suffix;
      character = text;
    }
    const TokenId id = vocab_.Find(character);
    if (id >= 0) {
      if (pending_unk >= 0) {
        add(pending_unk);
        pending_unk = -1;
      }
      add(id);
      continue;
    }
    if (options_.byte_fallback) {
      bool all_bytes = true;
      for (const char b : character) {
        all_bytes = all_bytes &&
                    byte_fallback_ids_[static_cast<unsigned char>(b)] >= 0;
      }
      if (all_bytes) {
        // As in HF, a pending unknown token stays pending across these.
        for (const char b : character) {
          add(byte_fallback_ids_[static_cast<unsigned char>(b)]);
        }
        continue;
      }
    }
    if (options_.unk_token) {
      ROTOR_CHECK(unk_id_ >= 0, "the unk_token \"", *options_.unk_token,
                  "\" is not in the vocabulary");
      if (pending_unk >= 0 && !options_.fuse_unk) add(pending_unk);
      pending_unk = unk_id_;
    }
  }
  if (pending_unk >= 0) add(pending_unk);
  if (symbols.empty()) return;
  symbols.back().next = -1;

  // 2. Merges, lowest rank first, leftmost first among equal ranks.
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  for (size_t i = 0; i + 1 < symbols.size(); ++i) {
    if (const MergeSlot* merge = FindMerge(symbols[i].id, symbols[i + 1].id)) {
      queue.push({merge->rank, static_cast<int32_t>(i), merge->merged});
    }
  }
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.pos];
    if (left.removed || left.next < 0) continue;
    Symbol& right = symbols[left.next];
    // A stale candidate: the pair at pos changed since it was queued. As in
    // HF, only the merged id is compared.
    const MergeSlot* current = FindMerge(left.id, right.id);
    if (current == nullptr || current->merged != top.merged) continue;
    left.id = top.merged;
    right.removed = true;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.pos;
    if (left.prev >= 0) {
      if (const MergeSlot* merge = FindMerge(symbols[left.prev].id, left.id)) {
        queue.push({merge->rank, left.prev, merge->merged});
      }
    }
    if (left.next >= 0) {
      if (const MergeSlot* merge = FindMerge(left.id, symbols[left.next].id)) {
        queue.push({merge->rank, top.pos, merge->merged});
      }
    }
  }
  for (int32_t i = 0; i >= 0; i = symbols[i].next) out.push_back(symbols[i].id);
}

}  // namespace rotor::train
