#include "train/io/message.h"

#include <algorithm>

#include "core/error.h"

namespace rotor::train {

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
