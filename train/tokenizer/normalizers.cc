#include "train/tokenizer/normalizers.h"

namespace rotor::train {

void UnicodeNormalizer::Normalize(std::string& text) const {
  text = unicode::Normalize(text, form_);
}

void LowercaseNormalizer::Normalize(std::string& text) const {
  text = unicode::Lowercase(text);
}

void StripNormalizer::Normalize(std::string& text) const {
  size_t begin = 0;
  size_t end = text.size();
  if (left_) {
    while (begin < end) {
      size_t next = begin;
      if (!unicode::IsWhitespace(unicode::NextCodePoint(text, &next))) break;
      begin = next;
    }
  }
  if (right_) {
    while (end > begin) {
      // Step back to the start of the last code point.
      size_t last = end - 1;
      while (last > begin &&
             (static_cast<unsigned char>(text[last]) & 0xC0) == 0x80) {
        --last;
      }
      size_t next = last;
      if (!unicode::IsWhitespace(unicode::NextCodePoint(text, &next))) break;
      end = last;
    }
  }
  text = text.substr(begin, end - begin);
}

void PrependNormalizer::Normalize(std::string& text) const {
  if (!text.empty()) text.insert(0, prefix_);
}

void ReplaceNormalizer::Normalize(std::string& text) const {
  text = ReplaceAll(*pattern_, text, content_);
}

void SequenceNormalizer::Normalize(std::string& text) const {
  for (const std::unique_ptr<Normalizer>& step : steps_) step->Normalize(text);
}

std::string ReplaceAll(const Regex& pattern, std::string_view text,
                       std::string_view content) {
  std::vector<Regex::Match> matches;
  pattern.FindAll(text, matches);
  if (matches.empty()) return std::string(text);
  std::string out;
  out.reserve(text.size());
  size_t previous = 0;
  for (const Regex::Match& match : matches) {
    out.append(text.substr(previous, match.start - previous));
    // An empty match inserts `content` too, as in HF.
    out.append(content);
    previous = match.end;
  }
  out.append(text.substr(previous));
  return out;
}

}  // namespace rotor::train
