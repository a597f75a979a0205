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
  by_first_byte_[static_cast<unsigned char>(text[0])].push_back(texts_.size());
  texts_.emplace_back(text, index);
}

void AddedVocabulary::Matcher::Finish() {
  for (std::vector<size_t>& candidates : by_first_byte_) {
    std::stable_sort(candidates.begin(), candidates.end(),
                     [&](size_t a, size_t b) {
                       return texts_[a].first.size() > texts_[b].first.size();
                     });
  }
}

void AddedVocabulary::Matcher::Split(std::string_view text,
                                     const std::vector<AddedToken>& tokens,
                                     std::vector<Segment>& out) const {
  size_t covered = 0;  // the end of the last segment
  size_t pos = 0;
  while (pos < text.size() && !texts_.empty()) {
    const std::vector<size_t>& candidates =
        by_first_byte_[static_cast<unsigned char>(text[pos])];
    const std::pair<std::string, size_t>* match = nullptr;
    for (const size_t candidate : candidates) {
      const std::string& t = texts_[candidate].first;
      if (text.compare(pos, t.size(), t) == 0) {
        match = &texts_[candidate];
        break;
      }
    }
    if (match == nullptr) {
      ++pos;
      continue;
    }
    size_t start = pos;
    size_t stop = pos + match->first.size();
    pos = stop;  // the search goes on after the match, taken or not
    const AddedToken& token = tokens[match->second];
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
  if (covered < text.size()) out.push_back({covered, text.size(), -1});
}

}  // namespace rotor::train
