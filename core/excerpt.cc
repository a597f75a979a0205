#include "core/excerpt.h"

#include "core/error.h"

namespace rotor {

std::string_view Utf8Prefix(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  size_t cut = max_bytes;
  // 10xxxxxx continues a character: back up to its first byte.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) {
    --cut;
  }
  return text.substr(0, cut);
}

std::string Excerpt(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  return StrCat(Utf8Prefix(text, max_bytes), "... (", text.size(), " bytes)");
}

}  // namespace rotor
