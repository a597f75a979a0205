#include "train/tokenizer/added_tokens.h"

#include <algorithm>

#include "train/tokenizer/unicode.h"

namespace rotor::train {
namespace {

// The code point that ends text[0, end) (valid UTF-8, end > 0).
char32_t CodePointBefore(std::string_view text, size_t end) {
  size_t start = end - 1;
  while (start > 0 &&
         (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) {
    --start;
  }
  return unicode::NextCodePoint(text, &start);
}

// Where the whitespace that ends text[0, end) starts (Rust's \s*$).
size_t StartOfTrailingSpace(std::string_view text, size_t end) {
  while (end > 0) {
    size_t start = end - 1;
    while (start > 0 &&
           (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) {
      --start;
    }
    size_t next = start;
    if (!unicode::IsWhitespace(unicode::NextCodePoint(text, &next))) break;
    end = start;
  }
  return end;
}

// Where the whitespace that starts text[begin, ...) ends (Rust's ^\s*).
size_t EndOfLeadingSpace(std::string_view text, size_t begin) {
  while (begin < text.size()) {
    size_t next = begin;
    if (!unicode::IsWhitespace(unicode::NextCodePoint(text, &next))) break;
    begin = next;
  }
  return begin;
}

}  // namespace

void AddedVocabulary::Add(AddedToken token) {
  end_id_ = std::max<int64_t>(end_id_, int64_t{token.id} + 1);
  const auto existing = by_content_.find(token.content);
  if (existing != by_content_.end()) {
    by_id_.erase(tokens_[existing->second].id);
    tokens_[existing->second] = token;
    by_id_[token.id] = existing->second;
  } else {
    by_content_[token.content] = tokens_.size();
    by_id_[token.id] = tokens_.size();
    tokens_.push_back(token);
  }
  if (token.special) special_.insert(token.content);
}

void AddedVocabulary::Build(const Normalizer* normalizer) {
  decode_texts_.clear();
  for (size_t i = 0; i < tokens_.size(); ++i) {
    const AddedToken& token = tokens_[i];
    std::string text = token.content;
    if (token.normalized && normalizer != nullptr) normalizer->Normalize(text);
    decode_texts_.push_back(text);
    if (token.content.empty()) continue;  // HF ignores empty tokens
    if (token.normalized) {
      if (!text.empty()) normalized_.Add(i, text);
    } else {
      raw_.Add(i, token.content);
    }
  }
  raw_.Finish();
  normalized_.Finish();
}

TokenId AddedVocabulary::Find(std::string_view content) const {
  const auto found = by_content_.find(std::string(content));
  return found == by_content_.end() ? -1 : tokens_[found->second].id;
}

const std::string* AddedVocabulary::DecodeText(TokenId id) const {
  const auto found = by_id_.find(id);
  return found == by_id_.end() ? nullptr : &decode_texts_[found->second];
}

bool AddedVocabulary::IsSpecial(std::string_view token) const {
  return !special_.empty() && special_.count(std::string(token)) > 0;
}

void AddedVocabulary::Matcher::Add(size_t index, const std::string& text) {
  uint32_t node = 0;
  for (auto it = text.rbegin(); it != text.rend(); ++it) {
    const auto byte = static_cast<unsigned char>(*it);
    uint32_t child = Child(node, byte);
    if (child == 0) {
      child = static_cast<uint32_t>(nodes_.size());
      Node added;
      added.parent = node;
      added.depth = nodes_[node].depth + 1;
      added.byte = byte;
      nodes_.push_back(added);
      if (node == 0) {
        root_children_[byte] = child;
      } else {
        children_.emplace(uint64_t{node} << 8 | byte, child);
      }
    }
    node = child;
  }
  if (nodes_[node].token == kNone) {
    nodes_[node].token = static_cast<uint32_t>(index);
  }
}

// Failure links by increasing depth (a node's link is shallower than it, so
// it is final by then), each from its parent's: O(total token bytes), as
// the link's depth grows by at most one per byte along each token. The
// order is a counting sort by depth, O(nodes).
void AddedVocabulary::Matcher::Finish() {
  max_depth_ = 0;
  for (const Node& node : nodes_) max_depth_ = std::max(max_depth_, node.depth);
  std::vector<uint32_t> next(max_depth_ + 2, 0);  // next[d]: a slot of depth d
  for (const Node& node : nodes_) ++next[node.depth + 1];
  for (size_t d = 1; d < next.size(); ++d) next[d] += next[d - 1];
  std::vector<uint32_t> order(nodes_.size());
  for (uint32_t i = 0; i < nodes_.size(); ++i) {
    order[next[nodes_[i].depth]++] = i;
  }
  for (const uint32_t id : order) {
    Node& node = nodes_[id];
    if (id != 0) {
      node.fail =
          node.parent == 0 ? 0 : Step(nodes_[node.parent].fail, node.byte);
    }
    node.longest = node.token != kNone ? id : nodes_[node.fail].longest;
  }
}

uint32_t AddedVocabulary::Matcher::Child(uint32_t node,
                                         unsigned char byte) const {
  if (node == 0) return root_children_[byte];
  const auto found = children_.find(uint64_t{node} << 8 | byte);
  return found == children_.end() ? 0 : found->second;
}

uint32_t AddedVocabulary::Matcher::Step(uint32_t node,
                                        unsigned char byte) const {
  for (; node != 0; node = nodes_[node].fail) {
    const uint32_t child = Child(node, byte);
    if (child != 0) return child;
  }
  return root_children_[byte];
}

// Chunk by chunk, left to right: the longest token starting at each
// position of the chunk that has one, as (start, node), found from the
// chunk's end. The state after reading text[i..] backwards is the deepest
// node whose bytes (a token's end) start text[i..], and its `longest` the
// longest token that starts text[i..]. The state depends on
// text[i, i + max_depth_) only, so a scan that starts max_depth_ - 1 bytes
// past the chunk's end (from the root) is in the same state at every
// position of the chunk as a scan from the end of the text. Each Step's
// fail walk is paid for by the depth the earlier bytes added, and a chunk
// is at least max_depth_ long, so the scan, overlaps included, is
// O(text bytes); what it keeps is one chunk's starts.
void AddedVocabulary::Matcher::Split(std::string_view text,
                                     const std::vector<AddedToken>& tokens,
                                     size_t chunk_bytes,
                                     std::vector<Segment>& out) const {
  const size_t chunk = std::max<size_t>(chunk_bytes, max_depth_);
  std::vector<std::pair<size_t, uint32_t>> starts;  // by decreasing start
  size_t covered = 0;  // the end of the last segment
  size_t pos = 0;      // where the search goes on
  for (size_t begin = 0; begin < text.size() && !empty(); begin += chunk) {
    const size_t end = std::min(text.size(), begin + chunk);
    uint32_t state = 0;
    for (size_t i = std::min(text.size(), end + max_depth_ - 1); i > end; --i) {
      state = Step(state, static_cast<unsigned char>(text[i - 1]));
    }
    starts.clear();
    for (size_t i = end; i > begin; --i) {
      const auto byte = static_cast<unsigned char>(text[i - 1]);
      // Most bytes end no token and leave the automaton at the root: one
      // table load, where a Step would wait for the previous state's.
      if (state == 0 && root_children_[byte] == 0) continue;
      state = Step(state, byte);
      if (nodes_[state].longest != 0) {
        starts.emplace_back(i - 1, nodes_[state].longest);
      }
    }
    for (auto match = starts.rbegin(); match != starts.rend(); ++match) {
      if (match->first < pos) continue;
      const Node& node = nodes_[match->second];
      size_t start = match->first;
      size_t stop = start + node.depth;
      pos = stop;  // the search goes on after the match, taken or not
      const AddedToken& token = tokens[node.token];
      if (token.single_word) {
        const bool word_before =
            start > 0 && unicode::IsWordChar(CodePointBefore(text, start));
        size_t after = stop;
        const bool word_after =
            stop < text.size() &&
            unicode::IsWordChar(unicode::NextCodePoint(text, &after));
        if (word_before || word_after) continue;
      }
      if (token.lstrip)
        start = std::max(StartOfTrailingSpace(text, start), covered);
      if (token.rstrip) stop = EndOfLeadingSpace(text, stop);
      start = std::max(start, covered);
      if (covered < start) out.push_back({covered, start, -1});
      out.push_back({start, stop, token.id});
      covered = stop;
      pos = std::max(pos, stop);
    }
  }
  if (covered < text.size()) out.push_back({covered, text.size(), -1});
}

}  // namespace rotor::train
