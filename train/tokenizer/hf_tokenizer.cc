#include "train/tokenizer/hf_tokenizer.h"

#include <algorithm>

#include "core/error.h"
#include "core/limits.h"
#include "train/io/atomic_file.h"
#include "train/tokenizer/unicode.h"

namespace rotor::train {

std::unique_ptr<HfTokenizer> HfTokenizer::Load(const std::string& path) {
  return Parse(
      ReadFile(path, static_cast<size_t>(limits::kMaxTokenizerJsonBytes)),
      path);
}

HfTokenizer::HfTokenizer(HfTokenizerParts parts, std::string name)
    : parts_(std::move(parts)), name_(std::move(name)) {
  vocab_size_ = std::max(parts_.model->vocab().end_id(), parts_.added.end_id());
}

std::vector<TokenId> HfTokenizer::Encode(std::string_view text,
                                         bool add_special_tokens) const {
  std::string repaired;
  if (!unicode::IsValidUtf8(text)) {
    repaired = unicode::ReplaceInvalidUtf8(text);
    text = repaired;
  }
  std::vector<TokenId> ids;
  ids.reserve(text.size() / 3 + 4);
  std::vector<AddedVocabulary::Segment> segments;
  parts_.added.SplitRaw(text, segments);
  for (const AddedVocabulary::Segment& segment : segments) {
    if (segment.id >= 0) {
      ids.push_back(segment.id);
    } else {
      EncodeSegment(text.substr(segment.start, segment.end - segment.start),
                    segment.start == 0, ids);
    }
  }
  if (parts_.post_processor != nullptr) {
    parts_.post_processor->Process(ids, add_special_tokens);
  }
  return ids;
}

void HfTokenizer::EncodeSegment(std::string_view text, bool at_start,
                                std::vector<TokenId>& ids) const {
  std::string normalized;
  if (parts_.normalizer != nullptr) {
    normalized = std::string(text);
    parts_.normalizer->Normalize(normalized);
    text = normalized;
  }
  std::vector<AddedVocabulary::Segment> segments;
  if (parts_.added.has_normalized_tokens()) {
    parts_.added.SplitNormalized(text, segments);
  } else if (!text.empty()) {
    segments.push_back({0, text.size(), -1});
  }
  PreTokenArena arena;
  std::vector<PreToken> pieces;
  for (const AddedVocabulary::Segment& segment : segments) {
    if (segment.id >= 0) {
      ids.push_back(segment.id);
      continue;
    }
    pieces.assign(1, {text.substr(segment.start, segment.end - segment.start),
                      at_start && segment.start == 0});
    if (parts_.pre_tokenizer != nullptr) {
      parts_.pre_tokenizer->PreTokenize(pieces, arena);
    }
    for (const PreToken& piece : pieces) {
      parts_.model->Tokenize(piece.text, ids);
    }
  }
}

std::string HfTokenizer::Decode(const std::vector<TokenId>& ids,
                                bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    const TokenId id = ids[i];
    ROTOR_CHECK(id >= 0 && id < vocab_size_, name_, ": Decode: token ", i,
                " is ", id, ", outside the vocabulary [0, ", vocab_size_, ")");
    std::optional<std::string_view> token;
    if (const std::string* added = parts_.added.DecodeText(id)) {
      token = *added;
    } else {
      token = parts_.model->vocab().Token(id);
    }
    if (!token) continue;
    if (skip_special_tokens && parts_.added.IsSpecial(*token)) continue;
    tokens.emplace_back(*token);
  }
  if (parts_.decoder == nullptr) {
    std::string text;
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (i > 0) text += ' ';
      text += tokens[i];
    }
    return text;
  }
  parts_.decoder->DecodeChain(tokens);
  std::string text;
  for (const std::string& token : tokens) text += token;
  return text;
}

std::optional<TokenId> HfTokenizer::TokenToId(std::string_view token) const {
  TokenId id = parts_.added.Find(token);
  if (id < 0) id = parts_.model->vocab().Find(token);
  if (id < 0) return std::nullopt;
  return id;
}

}  // namespace rotor::train
