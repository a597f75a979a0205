#include "train/io/message.h"

#include <algorithm>

#include "core/error.h"

namespace rotor::train {

namespace {

bool IsControlCharacter(char c) {
  const unsigned char byte = static_cast<unsigned char>(c);
  return byte < 0x20 || byte == 0x7F;
}

}  // namespace

size_t FindControlCharacter(std::string_view text) {
  for (size_t i = 0; i < text.size(); ++i) {
    if (IsControlCharacter(text[i])) return i;
  }
  return std::string_view::npos;
}

std::string HexByte(char byte) {
  constexpr char kDigits[] = "0123456789abcdef";
  const unsigned char value = static_cast<unsigned char>(byte);
  return {'0', 'x', kDigits[value >> 4], kDigits[value & 0xF]};
}

std::string PrintableExcerpt(std::string_view text, size_t max_bytes) {
  std::string printable;
  for (const char c : Excerpt(text, max_bytes)) {
    if (IsControlCharacter(c)) {
      printable += "\\x" + HexByte(c).substr(2);
    } else {
      printable += c;
    }
  }
  return printable;
}

std::optional<std::string> ControlCharacterProblem(std::string_view text) {
  const size_t at = FindControlCharacter(text);
  if (at == std::string_view::npos) return std::nullopt;
  return StrCat("holds a control character (", HexByte(text[at]), " at byte ",
                at, ")");
}

std::string ListForMessage(const std::vector<std::string>& items,
                           size_t max_items) {
  const size_t shown = std::min(items.size(), std::max<size_t>(max_items, 1));
  std::string list;
  for (size_t i = 0; i < shown; ++i) {
    if (i > 0) list += (i + 1 == items.size()) ? " and " : ", ";
    list += Excerpt(items[i]);
  }
  if (shown < items.size())
    list += StrCat(" and ", items.size() - shown, " more");
  return list;
}

}  // namespace rotor::train
