#include "train/tokenizer/bpe.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <functional>
#include <queue>

#include "core/error.h"
#include "train/tokenizer/pre_tokenizers.h"
#include "train/tokenizer/unicode.h"

namespace rotor::train {
namespace {

// Pieces this long or longer are not cached (as HF's MAX_LENGTH).
constexpr size_t kMaxCachedPieceBytes = 256;
// A thread's cache of one model starts over when it holds this many pieces,
// so memory stays bounded on endless varied text.
constexpr size_t kMaxCachedPieces = 1 << 18;

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

// The pieces one thread has tokenized with one model, and their ids: an
// open-addressing table whose keys and ids live in two flat arrays, so a
// lookup costs a hash and one or two cache lines. Full, it starts over.
class PieceCache {
 public:
  // The ids of `piece` appended to `out`; false if it is not cached.
  bool Lookup(std::string_view piece, uint64_t hash,
              std::vector<TokenId>& out) const {
    if (slots_.empty()) return false;
    const size_t mask = slots_.size() - 1;
    for (size_t slot = hash & mask;; slot = (slot + 1) & mask) {
      const Entry& entry = slots_[slot];
      if (entry.hash == 0) return false;
      if (entry.hash == hash && entry.key_length == piece.size() &&
          std::memcmp(keys_.data() + entry.key_offset, piece.data(),
                      piece.size()) == 0) {
        out.insert(out.end(), ids_.begin() + entry.ids_offset,
                   ids_.begin() + entry.ids_offset + entry.id_count);
        return true;
      }
    }
  }
  // Caches `ids` for `piece` (not cached yet).
  void Insert(std::string_view piece, uint64_t hash, const TokenId* ids,
              size_t count) {
    if (slots_.empty() || (count_ + 1) * 2 > slots_.size()) {
      if (!slots_.empty() && slots_.size() < kMaxCachedPieces * 2) {
        Rehash(slots_.size() * 2);
      } else {
        slots_.assign(kInitialSlots, Entry{});
        keys_.clear();
        ids_.clear();
        count_ = 0;
      }
    }
    Place({hash, static_cast<uint32_t>(keys_.size()),
           static_cast<uint32_t>(piece.size()),
           static_cast<uint32_t>(ids_.size()), static_cast<uint32_t>(count)});
    keys_.append(piece);
    ids_.insert(ids_.end(), ids, ids + count);
    ++count_;
  }
  // Empties the cache and gives it to the model with `serial`.
  void Claim(uint64_t serial) {
    owner_ = serial;
    slots_.clear();
    keys_.clear();
    ids_.clear();
    count_ = 0;
  }
  uint64_t owner() const { return owner_; }

 private:
  // Small inputs stay cheap: the table starts small and doubles.
  static constexpr size_t kInitialSlots = 4096;

  struct Entry;
  // Puts `entry` in the first free slot from its hash on.
  void Place(const Entry& entry) {
    const size_t mask = slots_.size() - 1;
    size_t slot = entry.hash & mask;
    while (slots_[slot].hash != 0) slot = (slot + 1) & mask;
    slots_[slot] = entry;
  }
  // Moves every entry into a table of `size` slots.
  void Rehash(size_t size) {
    std::vector<Entry> old(size);
    old.swap(slots_);
    for (const Entry& entry : old) {
      if (entry.hash != 0) Place(entry);
    }
  }

  struct Entry {
    uint64_t hash = 0;  // 0: empty (hashes are made non-zero)
    uint32_t key_offset = 0;
    uint32_t key_length = 0;
    uint32_t ids_offset = 0;
    uint32_t id_count = 0;
  };
  uint64_t owner_ = 0;  // the model's serial; 0: unused
  std::vector<Entry> slots_;
  std::string keys_;
  std::vector<TokenId> ids_;
  size_t count_ = 0;
};

// This thread's cache for the model with `serial`. A thread keeps caches
// for a few models at once; the least recently claimed one is reused.
PieceCache& CacheOf(uint64_t serial) {
  constexpr int kSlots = 4;
  thread_local PieceCache caches[kSlots];
  thread_local int next_victim = 0;
  for (PieceCache& cache : caches) {
    if (cache.owner() == serial) return cache;
  }
  PieceCache& cache = caches[next_victim];
  next_victim = (next_victim + 1) % kSlots;
  cache.Claim(serial);
  return cache;
}

std::atomic<uint64_t> next_serial{1};

}  // namespace

bool TokenTable::Insert(std::string_view token, TokenId id) {
  if (id < 0 || Find(token) >= 0 || Token(id)) return false;
  if ((count_ + 1) * 2 > slots_.size()) Grow();
  if (static_cast<size_t>(id) >= tokens_.size()) {
    tokens_.resize(static_cast<size_t>(id) + 1, Span{0, 0, false});
  }
  const Span span{static_cast<uint32_t>(bytes_.size()),
                  static_cast<uint32_t>(token.size()), true};
  bytes_.append(token);
  tokens_[id] = span;
  const uint32_t hash = HashOf(token);
  const size_t mask = slots_.size() - 1;
  size_t slot = hash & mask;
  while (slots_[slot].id >= 0) slot = (slot + 1) & mask;
  slots_[slot] = {hash, id, span.offset, span.length};
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
    if (s.hash == hash && s.length == token.size() &&
        std::memcmp(bytes_.data() + s.offset, token.data(), token.size()) ==
            0) {
      return s.id;
    }
  }
}

std::optional<std::string_view> TokenTable::Token(TokenId id) const {
  if (id < 0 || static_cast<size_t>(id) >= tokens_.size() ||
      !tokens_[id].present) {
    return std::nullopt;
  }
  return std::string_view(bytes_).substr(tokens_[id].offset,
                                         tokens_[id].length);
}

void TokenTable::Reserve(size_t count) {
  while (count * 2 > slots_.size()) Grow();
}

void TokenTable::Grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(std::max<size_t>(16, old.size() * 2), Slot{0, -1, 0, 0});
  const size_t mask = slots_.size() - 1;
  for (const Slot& s : old) {
    if (s.id < 0) continue;
    size_t slot = s.hash & mask;
    while (slots_[slot].id >= 0) slot = (slot + 1) & mask;
    slots_[slot] = s;
  }
}

namespace {

constexpr std::string_view kMetaspace = "\xE2\x96\x81";  // U+2581 "▁"

// The first byte offset after `from` where a "▁" follows a character that
// is not "▁" (in UTF-8 the 3 bytes before it then differ from "▁"), or npos.
size_t InnerMetaspace(std::string_view text, size_t from) {
  for (size_t at = text.find(kMetaspace, from + 1);
       at != std::string_view::npos; at = text.find(kMetaspace, at + 1)) {
    if (at < kMetaspace.size() ||
        text.substr(at - kMetaspace.size(), kMetaspace.size()) != kMetaspace) {
      return at;
    }
  }
  return std::string_view::npos;
}

}  // namespace

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
  byte_symbols_ = options_.byte_level &&
                  options_.continuing_subword_prefix.empty() &&
                  options_.end_of_word_suffix.empty();
  for (int b = 0; b < 256; ++b) {
    byte_symbol_ids_[b] = vocab_.Find(ByteLevelChars()[b]);
    byte_symbols_ = byte_symbols_ && byte_symbol_ids_[b] >= 0;
  }
  split_at_metaspace_ = !options_.byte_level && !options_.ignore_merges &&
                        options_.continuing_subword_prefix.empty() &&
                        options_.end_of_word_suffix.empty() &&
                        vocab_.Find(kMetaspace) >= 0;
  for (int64_t id = 0; split_at_metaspace_ && id < vocab_.end_id(); ++id) {
    const std::optional<std::string_view> token =
        vocab_.Token(static_cast<TokenId>(id));
    if (token && InnerMetaspace(*token, 0) != std::string_view::npos) {
      split_at_metaspace_ = false;
    }
  }
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
  if (!split_at_metaspace_) {
    TokenizeWord(piece, out);
    return;
  }
  size_t start = 0;
  for (size_t cut = InnerMetaspace(piece, start); cut != std::string_view::npos;
       cut = InnerMetaspace(piece, cut)) {
    TokenizeWord(piece.substr(start, cut - start), out);
    start = cut;
  }
  TokenizeWord(piece.substr(start), out);
}

void BpeModel::TokenizeWord(std::string_view piece,
                            std::vector<TokenId>& out) const {
  if (piece.empty()) return;
  if (piece.size() >= kMaxCachedPieceBytes) {
    TokenizeUncached(piece, out);
    return;
  }
  PieceCache& cache = CacheOf(serial_);
  const uint64_t hash = std::hash<std::string_view>()(piece) | 1;
  if (cache.Lookup(piece, hash, out)) return;
  const size_t first = out.size();
  TokenizeUncached(piece, out);
  cache.Insert(piece, hash, out.data() + first, out.size() - first);
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
  std::vector<TokenId> symbols;
  symbols.reserve(piece.size());
  if (byte_symbols_) {
    // Every byte's character is a token: the symbols are the bytes' ids.
    for (const char b : piece) {
      symbols.push_back(byte_symbol_ids_[static_cast<unsigned char>(b)]);
    }
  } else {
    WordSymbols(word, symbols);
  }
  MergeSymbols(symbols, out);
}

void BpeModel::WordSymbols(std::string_view word,
                           std::vector<TokenId>& symbols) const {
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
        symbols.push_back(pending_unk);
        pending_unk = -1;
      }
      symbols.push_back(id);
      continue;
    }
    if (options_.byte_fallback) {
      bool all_bytes = true;
      for (const char b : character) {
        all_bytes =
            all_bytes && byte_fallback_ids_[static_cast<unsigned char>(b)] >= 0;
      }
      if (all_bytes) {
        // As in HF, a pending unknown token stays pending across these.
        for (const char b : character) {
          symbols.push_back(byte_fallback_ids_[static_cast<unsigned char>(b)]);
        }
        continue;
      }
    }
    if (options_.unk_token) {
      ROTOR_CHECK(unk_id_ >= 0, "the unk_token \"", *options_.unk_token,
                  "\" is not in the vocabulary");
      if (pending_unk >= 0 && !options_.fuse_unk)
        symbols.push_back(pending_unk);
      pending_unk = unk_id_;
    }
  }
  if (pending_unk >= 0) symbols.push_back(pending_unk);
}

void BpeModel::MergeSymbols(const std::vector<TokenId>& ids,
                            std::vector<TokenId>& out) const {
  if (ids.empty()) return;
  std::vector<Symbol> symbols(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    symbols[i] = {ids[i], static_cast<int32_t>(i) - 1,
                  static_cast<int32_t>(i) + 1, false};
  }
  symbols.back().next = -1;
  // Lowest rank first, leftmost first among equal ranks.
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
