#include "train/tokenizer/pre_tokenizers.h"

#include <algorithm>

#include "train/tokenizer/unicode.h"

namespace rotor::train {
namespace {

// GPT-2's pre-tokenization regex (ByteLevel with use_regex).
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// A part of a piece: bytes [start, end), and whether it is a delimiter.
struct Span {
  size_t start;
  size_t end;
  bool is_match;
};

// Appends the pieces `behavior` makes of `spans` (which cover `piece` in
// order) to `out`, dropping empty ones: HF's NormalizedString::split.
void EmitSplits(const PreToken& piece, const std::vector<Span>& spans,
                SplitBehavior behavior, std::vector<PreToken>& out) {
  // The kept ranges, before empty ones are dropped.
  std::vector<Span> kept;
  kept.reserve(spans.size());
  switch (behavior) {
    case SplitBehavior::kIsolated:
      kept = spans;
      break;
    case SplitBehavior::kRemoved:
      for (const Span& span : spans) {
        if (!span.is_match) kept.push_back(span);
      }
      break;
    case SplitBehavior::kContiguous: {
      bool previous = false;
      for (const Span& span : spans) {
        if (!kept.empty() && span.is_match == previous) {
          kept.back().end = span.end;
        } else {
          kept.push_back(span);
        }
        previous = span.is_match;
      }
      break;
    }
    case SplitBehavior::kMergedWithPrevious: {
      bool previous = false;
      for (const Span& span : spans) {
        if (span.is_match && !previous && !kept.empty()) {
          kept.back().end = span.end;
        } else {
          kept.push_back(span);
        }
        previous = span.is_match;
      }
      break;
    }
    case SplitBehavior::kMergedWithNext: {
      bool previous = false;
      for (size_t i = spans.size(); i-- > 0;) {
        const Span& span = spans[i];
        if (span.is_match && !previous && !kept.empty()) {
          kept.back().start = span.start;
        } else {
          kept.push_back(span);
        }
        previous = span.is_match;
      }
      std::reverse(kept.begin(), kept.end());
      break;
    }
  }
  for (const Span& span : kept) {
    if (span.end > span.start) {
      out.push_back({piece.text.substr(span.start, span.end - span.start),
                     piece.at_start && span.start == 0});
    }
  }
}

// The spans of `text` cut around each character for which `is_delimiter`
// holds (HF's Pattern for a char predicate): every such character alone,
// and the runs between them.
template <typename Predicate>
std::vector<Span> CharSpans(std::string_view text, Predicate is_delimiter) {
  std::vector<Span> spans;
  size_t run_start = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t start = pos;
    const char32_t c = unicode::NextCodePoint(text, &pos);
    if (is_delimiter(c)) {
      if (run_start < start) spans.push_back({run_start, start, false});
      spans.push_back({start, pos, true});
      run_start = pos;
    }
  }
  if (run_start < text.size()) spans.push_back({run_start, text.size(), false});
  return spans;
}

// The spans of `text` around the matches of `regex` (HF's Pattern for a
// regex), with the flags flipped when `invert`.
void RegexSpans(const Regex& regex, std::string_view text, bool invert,
                std::vector<Span>& spans) {
  thread_local std::vector<Regex::Match> matches;
  matches.clear();
  regex.FindAll(text, matches);
  size_t previous = 0;
  for (const Regex::Match& match : matches) {
    if (previous != match.start) {
      spans.push_back({previous, match.start, invert});
    }
    spans.push_back({match.start, match.end, !invert});
    previous = match.end;
  }
  if (previous != text.size()) spans.push_back({previous, text.size(), invert});
}

}  // namespace

void PreTokenizer::PreTokenize(std::vector<PreToken>& pieces,
                               PreTokenArena& arena) const {
  std::vector<PreToken> out;
  out.reserve(pieces.size() * 2);
  for (const PreToken& piece : pieces) SplitPiece(piece, arena, out);
  pieces.swap(out);
}

void SplitPreTokenizer::SplitPiece(const PreToken& piece, PreTokenArena& arena,
                                   std::vector<PreToken>& out) const {
  if (behavior_ == SplitBehavior::kIsolated) {
    // The common case (Llama 3, Qwen2), without building spans: every match
    // and every gap is a piece.
    thread_local std::vector<Regex::Match> matches;
    matches.clear();
    pattern_->FindAll(piece.text, matches);
    size_t previous = 0;
    const auto emit = [&](size_t start, size_t end) {
      if (end > start) {
        out.push_back({piece.text.substr(start, end - start),
                       piece.at_start && start == 0});
      }
    };
    for (const Regex::Match& match : matches) {
      emit(previous, match.start);
      emit(match.start, match.end);
      previous = match.end;
    }
    emit(previous, piece.text.size());
    return;
  }
  std::vector<Span> spans;
  RegexSpans(*pattern_, piece.text, invert_, spans);
  EmitSplits(piece, spans, behavior_, out);
}

const std::array<std::string, 256>& ByteLevelChars() {
  static const std::array<std::string, 256> table = [] {
    std::array<std::string, 256> chars;
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable =
          (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      unicode::AppendUtf8(printable ? static_cast<char32_t>(b) : next++,
                          chars[b]);
    }
    return chars;
  }();
  return table;
}

void AppendByteLevel(std::string_view bytes, std::string& out) {
  const std::array<std::string, 256>& chars = ByteLevelChars();
  for (const char b : bytes) out += chars[static_cast<unsigned char>(b)];
}

ByteLevelPreTokenizer::ByteLevelPreTokenizer(bool add_prefix_space,
                                             bool use_regex, bool map_bytes)
    : add_prefix_space_(add_prefix_space),
      gpt2_regex_(use_regex ? std::make_unique<Regex>(kGpt2Pattern, false)
                            : nullptr),
      map_bytes_(map_bytes) {}

void ByteLevelPreTokenizer::PreTokenize(std::vector<PreToken>& pieces,
                                        PreTokenArena& arena) const {
  if (add_prefix_space_ || gpt2_regex_ != nullptr || map_bytes_) {
    PreTokenizer::PreTokenize(pieces, arena);
  }
}

void ByteLevelPreTokenizer::SplitPiece(const PreToken& piece,
                                       PreTokenArena& arena,
                                       std::vector<PreToken>& out) const {
  PreToken whole = piece;
  if (add_prefix_space_ && (piece.text.empty() || piece.text[0] != ' ')) {
    whole.text = arena.Keep(" " + std::string(piece.text));
  }
  const size_t first = out.size();
  if (gpt2_regex_ != nullptr) {
    std::vector<Span> spans;
    RegexSpans(*gpt2_regex_, whole.text, /*invert=*/false, spans);
    EmitSplits(whole, spans, SplitBehavior::kIsolated, out);
  } else if (!whole.text.empty()) {
    out.push_back(whole);
  }
  if (!map_bytes_) return;
  for (size_t i = first; i < out.size(); ++i) {
    std::string mapped;
    mapped.reserve(out[i].text.size() * 2);
    AppendByteLevel(out[i].text, mapped);
    out[i].text = arena.Keep(std::move(mapped));
  }
}

void MetaspacePreTokenizer::SplitPiece(const PreToken& piece,
                                       PreTokenArena& arena,
                                       std::vector<PreToken>& out) const {
  std::string text;
  text.reserve(piece.text.size() + replacement_.size() * 4);
  for (const char c : piece.text) {
    if (c == ' ') {
      text += replacement_;
    } else {
      text += c;
    }
  }
  const bool starts_with_replacement =
      text.compare(0, replacement_.size(), replacement_) == 0;
  if (!starts_with_replacement &&
      (scheme_ == PrependScheme::kAlways ||
       (scheme_ == PrependScheme::kFirst && piece.at_start))) {
    text.insert(0, replacement_);
  }
  const PreToken whole{arena.Keep(std::move(text)), piece.at_start};
  if (!split_) {
    if (!whole.text.empty()) out.push_back(whole);
    return;
  }
  // Cut before each replacement character (MergedWithNext).
  std::vector<Span> spans;
  size_t run_start = 0;
  size_t pos = 0;
  while ((pos = whole.text.find(replacement_, pos)) != std::string_view::npos) {
    if (run_start < pos) spans.push_back({run_start, pos, false});
    spans.push_back({pos, pos + replacement_.size(), true});
    pos += replacement_.size();
    run_start = pos;
  }
  if (run_start < whole.text.size()) {
    spans.push_back({run_start, whole.text.size(), false});
  }
  EmitSplits(whole, spans, SplitBehavior::kMergedWithNext, out);
}

void DigitsPreTokenizer::SplitPiece(const PreToken& piece, PreTokenArena& arena,
                                    std::vector<PreToken>& out) const {
  EmitSplits(piece, CharSpans(piece.text, unicode::IsNumeric),
             individual_digits_ ? SplitBehavior::kIsolated
                                : SplitBehavior::kContiguous,
             out);
}

void WhitespacePreTokenizer::SplitPiece(const PreToken& piece,
                                        PreTokenArena& arena,
                                        std::vector<PreToken>& out) const {
  // Leftmost-first matches of \w+|[^\w\s]+: a run of word characters, or a
  // run of characters that are neither word characters nor whitespace.
  const std::string_view text = piece.text;
  enum Kind { kWord, kOther, kSpace };
  const auto kind_at = [&](size_t pos, size_t* next) {
    *next = pos;
    const char32_t c = unicode::NextCodePoint(text, next);
    if (unicode::IsWordChar(c)) return kWord;
    return unicode::IsWhitespace(c) ? kSpace : kOther;
  };
  size_t pos = 0;
  while (pos < text.size()) {
    size_t next;
    const Kind kind = kind_at(pos, &next);
    if (kind == kSpace) {
      pos = next;
      continue;
    }
    const size_t start = pos;
    pos = next;
    while (pos < text.size() && kind_at(pos, &next) == kind) pos = next;
    out.push_back(
        {text.substr(start, pos - start), piece.at_start && start == 0});
  }
}

void WhitespaceSplitPreTokenizer::SplitPiece(const PreToken& piece,
                                             PreTokenArena& arena,
                                             std::vector<PreToken>& out) const {
  EmitSplits(piece, CharSpans(piece.text, unicode::IsWhitespace),
             SplitBehavior::kRemoved, out);
}

void PunctuationPreTokenizer::SplitPiece(const PreToken& piece,
                                         PreTokenArena& arena,
                                         std::vector<PreToken>& out) const {
  EmitSplits(piece, CharSpans(piece.text, unicode::IsPunctuation), behavior_,
             out);
}

void SequencePreTokenizer::PreTokenize(std::vector<PreToken>& pieces,
                                       PreTokenArena& arena) const {
  for (const std::unique_ptr<PreTokenizer>& step : steps_) {
    step->PreTokenize(pieces, arena);
  }
}

void SequencePreTokenizer::SplitPiece(const PreToken& piece,
                                      PreTokenArena& arena,
                                      std::vector<PreToken>& out) const {
  std::vector<PreToken> pieces = {piece};
  PreTokenize(pieces, arena);
  out.insert(out.end(), pieces.begin(), pieces.end());
}

}  // namespace rotor::train
