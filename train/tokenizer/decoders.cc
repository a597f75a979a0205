#include "train/tokenizer/decoders.h"

#include <array>

#include "train/tokenizer/normalizers.h"
#include "train/tokenizer/pre_tokenizers.h"
#include "train/tokenizer/unicode.h"

namespace rotor::train {
namespace {

// The code points of `text` (valid UTF-8).
std::u32string CodePoints(std::string_view text) {
  std::u32string out;
  size_t pos = 0;
  while (pos < text.size()) out += unicode::NextCodePoint(text, &pos);
  return out;
}

// Bytes -> UTF-8 for ByteFallback: the text if valid, else one U+FFFD per
// byte, and the run is emptied.
void FlushBytes(std::string& bytes, std::vector<std::string>& out) {
  if (bytes.empty()) return;
  if (unicode::IsValidUtf8(bytes)) {
    out.push_back(bytes);
  } else {
    for (size_t i = 0; i < bytes.size(); ++i) out.emplace_back("\xEF\xBF\xBD");
  }
  bytes.clear();
}

// The byte an <0xAB> token stands for, or -1.
int FallbackByte(const std::string& token) {
  if (token.size() != 6 || token.compare(0, 3, "<0x") != 0 || token[5] != '>') {
    return -1;
  }
  const auto digit = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  const int high = digit(token[3]);
  const int low = digit(token[4]);
  return high < 0 || low < 0 ? -1 : high * 16 + low;
}

}  // namespace

void ByteLevelDecoder::DecodeChain(std::vector<std::string>& tokens) const {
  // The byte of each character of GPT-2's alphabet (all below U+0144).
  static const std::array<int, 0x144> byte_of = [] {
    std::array<int, 0x144> table;
    table.fill(-1);
    const std::array<std::string, 256>& chars = ByteLevelChars();
    for (int b = 0; b < 256; ++b) {
      size_t pos = 0;
      table[unicode::NextCodePoint(chars[b], &pos)] = b;
    }
    return table;
  }();
  std::string bytes;
  for (const std::string& token : tokens) {
    // A token with a character outside the alphabet (an added token such
    // as "<|eot|>" is inside it; others may not be) is kept as it is.
    std::string mapped;
    bool all_mapped = true;
    size_t pos = 0;
    while (pos < token.size()) {
      const char32_t c = unicode::NextCodePoint(token, &pos);
      if (c >= byte_of.size() || byte_of[c] < 0) {
        all_mapped = false;
        break;
      }
      mapped += static_cast<char>(byte_of[c]);
    }
    bytes += all_mapped ? mapped : token;
  }
  tokens.assign(1, unicode::ReplaceInvalidUtf8(bytes));
}

void ReplaceDecoder::DecodeChain(std::vector<std::string>& tokens) const {
  for (std::string& token : tokens) {
    token = ReplaceAll(*pattern_, token, content_);
  }
}

void ByteFallbackDecoder::DecodeChain(std::vector<std::string>& tokens) const {
  std::vector<std::string> out;
  out.reserve(tokens.size());
  std::string bytes;
  for (std::string& token : tokens) {
    const int byte = FallbackByte(token);
    if (byte >= 0) {
      bytes += static_cast<char>(byte);
      continue;
    }
    FlushBytes(bytes, out);
    out.push_back(std::move(token));
  }
  FlushBytes(bytes, out);
  tokens.swap(out);
}

void FuseDecoder::DecodeChain(std::vector<std::string>& tokens) const {
  std::string fused;
  for (const std::string& token : tokens) fused += token;
  tokens.assign(1, std::move(fused));
}

void StripDecoder::DecodeChain(std::vector<std::string>& tokens) const {
  for (std::string& token : tokens) {
    const std::u32string chars = CodePoints(token);
    size_t start_cut = 0;
    for (size_t i = 0; i < start_ && i < chars.size(); ++i) {
      if (chars[i] != content_) break;
      start_cut = i + 1;
    }
    size_t stop_cut = chars.size();
    for (size_t i = 0; i < stop_ && i < chars.size(); ++i) {
      const size_t index = chars.size() - i - 1;
      if (chars[index] != content_) break;
      stop_cut = index;
    }
    std::string out;
    for (size_t i = start_cut; i < stop_cut; ++i) {
      unicode::AppendUtf8(chars[i], out);
    }
    token = std::move(out);
  }
}

void MetaspaceDecoder::DecodeChain(std::vector<std::string>& tokens) const {
  for (size_t i = 0; i < tokens.size(); ++i) {
    std::string out;
    size_t pos = 0;
    while (pos < tokens[i].size()) {
      const char32_t c = unicode::NextCodePoint(tokens[i], &pos);
      if (c != replacement_) {
        unicode::AppendUtf8(c, out);
      } else if (!(i == 0 && drop_first_)) {
        out += ' ';
      }
    }
    tokens[i] = std::move(out);
  }
}

void SequenceDecoder::DecodeChain(std::vector<std::string>& tokens) const {
  for (const std::unique_ptr<Decoder>& step : steps_) step->DecodeChain(tokens);
}

}  // namespace rotor::train
