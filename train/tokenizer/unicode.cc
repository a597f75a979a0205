#include "train/tokenizer/unicode.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/error.h"

namespace rotor::train::unicode {
namespace {

// The length of the valid UTF-8 sequence at text[pos], or 0 if the bytes
// there are not one. When 0, *maximal is the length of the maximal subpart
// of an ill-formed sequence (at least 1): the bytes one U+FFFD replaces.
// Follows the Unicode standard's table of well-formed byte sequences
// (Table 3-7), which the WHATWG decoder implements.
size_t ValidSequenceLength(std::string_view text, size_t pos, size_t* maximal) {
  const auto byte = [&](size_t i) {
    return static_cast<unsigned char>(text[pos + i]);
  };
  const unsigned char b0 = byte(0);
  *maximal = 1;
  if (b0 < 0x80) return 1;
  size_t need;
  unsigned char low = 0x80, high = 0xBF;  // bounds of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 3;
    if (b0 == 0xE0) low = 0xA0;   // no overlong forms
    if (b0 == 0xED) high = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 4;
    if (b0 == 0xF0) low = 0x90;   // no overlong forms
    if (b0 == 0xF4) high = 0x8F;  // nothing past U+10FFFF
  } else {
    return 0;
  }
  const size_t available = text.size() - pos;
  for (size_t i = 1; i < need; ++i) {
    if (i >= available) return 0;
    const unsigned char b = byte(i);
    const unsigned char lo = i == 1 ? low : 0x80;
    const unsigned char hi = i == 1 ? high : 0xBF;
    if (b < lo || b > hi) return 0;
    *maximal = i + 1;
  }
  return need;
}

// Code points whose White_Space property is set (Unicode 15).
bool IsWhiteSpaceProperty(char32_t c) {
  if (c >= 0x09 && c <= 0x0D) return true;
  switch (c) {
    case 0x20:
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}

}  // namespace

bool IsValidUtf8(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    // ASCII runs, eight bytes at a time.
    while (pos + 8 <= text.size()) {
      uint64_t word;
      std::memcpy(&word, text.data() + pos, 8);
      if (word & 0x8080808080808080ull) break;
      pos += 8;
    }
    if (pos >= text.size()) break;
    size_t maximal;
    const size_t length = ValidSequenceLength(text, pos, &maximal);
    if (length == 0) return false;
    pos += length;
  }
  return true;
}

std::string ReplaceInvalidUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 8);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t maximal;
    const size_t length = ValidSequenceLength(text, pos, &maximal);
    if (length > 0) {
      out.append(text.data() + pos, length);
      pos += length;
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD
      pos += maximal;
    }
  }
  return out;
}

char32_t NextCodePoint(std::string_view text, size_t* pos) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data()) + *pos;
  const unsigned char b0 = p[0];
  if (b0 < 0x80) {
    *pos += 1;
    return b0;
  }
  if (b0 < 0xE0) {
    *pos += 2;
    return (char32_t{b0 & 0x1Fu} << 6) | (p[1] & 0x3Fu);
  }
  if (b0 < 0xF0) {
    *pos += 3;
    return (char32_t{b0 & 0x0Fu} << 12) | (char32_t{p[1] & 0x3Fu} << 6) |
           (p[2] & 0x3Fu);
  }
  *pos += 4;
  return (char32_t{b0 & 0x07u} << 18) | (char32_t{p[1] & 0x3Fu} << 12) |
         (char32_t{p[2] & 0x3Fu} << 6) | (p[3] & 0x3Fu);
}

void AppendUtf8(char32_t c, std::string& out) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

bool IsWhitespace(char32_t c) { return IsWhiteSpaceProperty(c); }

bool IsNumeric(char32_t c) {
  const utf8proc_category_t category =
      utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return category == UTF8PROC_CATEGORY_ND || category == UTF8PROC_CATEGORY_NL ||
         category == UTF8PROC_CATEGORY_NO;
}

bool IsPunctuation(char32_t c) {
  if (c < 0x80) {
    return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') ||
           (c >= '[' && c <= '`') || (c >= '{' && c <= '~');
  }
  const utf8proc_category_t category =
      utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return category >= UTF8PROC_CATEGORY_PC && category <= UTF8PROC_CATEGORY_PO;
}

bool IsWordChar(char32_t c) {
  if (c < 0x80) {
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') ||
           (c >= 'a' && c <= 'z') || c == '_';
  }
  if (c == 0x200C || c == 0x200D) return true;  // Join_Control
  // Other_Alphabetic symbols: the circled and squared Latin letters.
  if ((c >= 0x24B6 && c <= 0x24E9) || (c >= 0x1F130 && c <= 0x1F149) ||
      (c >= 0x1F150 && c <= 0x1F169) || (c >= 0x1F170 && c <= 0x1F189)) {
    return true;
  }
  const utf8proc_category_t category =
      utf8proc_category(static_cast<utf8proc_int32_t>(c));
  switch (category) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_PC:
      return true;
    default:
      return false;
  }
}

// utf8proc_map's normalization, step by step, with its one quadratic step
// replaced: it puts each run of combining marks in canonical order with a
// gnome sort (adjacent swaps), O(k^2) in a run of k marks ("a" + 40,000
// U+0301 + 40,000 U+0316 took 31 s). Here each run of non-starters
// (canonical combining class > 0) is sorted by class with std::stable_sort.
// The gnome sort never moves a mark past a starter and never swaps equal
// classes, so this is the same order, and the result is utf8proc's, in
// O(n log n): decomposition per code point, canonical ordering, then
// utf8proc's composition (linear) for NFC and NFKC.
std::string Normalize(std::string_view text, NormalizationForm form) {
  int options = UTF8PROC_STABLE;
  switch (form) {
    case NormalizationForm::kNfc:
      options |= UTF8PROC_COMPOSE;
      break;
    case NormalizationForm::kNfd:
      options |= UTF8PROC_DECOMPOSE;
      break;
    case NormalizationForm::kNfkc:
      options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
      break;
    case NormalizationForm::kNfkd:
      options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
      break;
  }
  // Pure ASCII is the same in every form.
  bool ascii = true;
  for (const char c : text)
    ascii = ascii && static_cast<unsigned char>(c) < 0x80;
  if (ascii) return std::string(text);
  ROTOR_CHECK(IsValidUtf8(text), "Unicode normalization failed: ",
              utf8proc_errmsg(UTF8PROC_ERROR_INVALIDUTF8));
  const auto flags = static_cast<utf8proc_option_t>(options);
  std::vector<utf8proc_int32_t> points;
  points.reserve(text.size());
  int boundclass = UTF8PROC_BOUNDCLASS_START;
  for (size_t pos = 0; pos < text.size();) {
    const auto c = static_cast<utf8proc_int32_t>(NextCodePoint(text, &pos));
    const size_t at = points.size();
    points.resize(at + 32);  // no decomposition is longer (18 at most)
    const utf8proc_ssize_t written =
        utf8proc_decompose_char(c, points.data() + at, 32, flags, &boundclass);
    ROTOR_CHECK(
        written >= 0 && written <= 32, "Unicode normalization failed: ",
        written < 0 ? utf8proc_errmsg(written) : "decomposition too long");
    points.resize(at + static_cast<size_t>(written));
  }
  const auto combining_class = [](utf8proc_int32_t c) {
    return utf8proc_get_property(c)->combining_class;
  };
  for (size_t start = 0; start < points.size();) {
    size_t end = start;
    while (end < points.size() && combining_class(points[end]) != 0) ++end;
    if (end - start > 1) {
      std::stable_sort(points.begin() + start, points.begin() + end,
                       [&](utf8proc_int32_t a, utf8proc_int32_t b) {
                         return combining_class(a) < combining_class(b);
                       });
    }
    start = end + 1;
  }
  const utf8proc_ssize_t length = utf8proc_normalize_utf32(
      points.data(), static_cast<utf8proc_ssize_t>(points.size()), flags);
  ROTOR_CHECK(length >= 0,
              "Unicode normalization failed: ", utf8proc_errmsg(length));
  std::string out;
  out.reserve(text.size());
  for (utf8proc_ssize_t i = 0; i < length; ++i) {
    AppendUtf8(static_cast<char32_t>(points[i]), out);
  }
  return out;
}

std::string Lowercase(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const char32_t c = NextCodePoint(text, &pos);
    if (c == 0x130) {
      // The one unconditional full lowercase mapping of more than one code
      // point: capital I with dot above -> i + combining dot above.
      out += "i\xCC\x87";
      continue;
    }
    AppendUtf8(static_cast<char32_t>(
                   utf8proc_tolower(static_cast<utf8proc_int32_t>(c))),
               out);
  }
  return out;
}

}  // namespace rotor::train::unicode
