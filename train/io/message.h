// Input quoted in error messages, bounded: a hostile file (a 900 KB number,
// 60,000 unknown keys) must not turn into an error line as long as itself.
// Every error that quotes what it read goes through these two helpers.
//
//   Excerpt("1234...(900,000 digits)")  -> "1234...(the first 100 bytes)...
//                                            (900000 bytes)"
//   ListForMessage({"a", "b", "c"})     -> "a, b and c"
//   ListForMessage(60,000 names)        -> "k0, k1, k2, k3, k4 and 59995 more"
#ifndef ROTOR_TRAIN_IO_MESSAGE_H_
#define ROTOR_TRAIN_IO_MESSAGE_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/excerpt.h"

namespace rotor::train {

// Utf8Prefix, Excerpt and kMaxQuotedBytes (core/excerpt.h), here too.
using ::rotor::Excerpt;
using ::rotor::kMaxQuotedBytes;
using ::rotor::Utf8Prefix;

// Excerpt(text) with each control character (below 0x20, or 0x7F) written
// as \xNN: a NUL would end the message there, a newline or an escape
// sequence would garble it.
std::string PrintableExcerpt(std::string_view text,
                             size_t max_bytes = kMaxQuotedBytes);

// Where the first control character of `text` is, or npos.
size_t FindControlCharacter(std::string_view text);
// "0x0a": a byte as messages name it.
std::string HexByte(char byte);

// "holds a control character (0x0a at byte 5)" for the first control
// character of `text`, or nullopt when it has none. Paths and names never
// hold one: a NUL would cut a path short, a newline split a line of a log.
std::optional<std::string> ControlCharacterProblem(std::string_view text);

// The items joined as "a, b and c", each an Excerpt; past `max_items`, the
// first `max_items` and "and N more".
std::string ListForMessage(const std::vector<std::string>& items,
                           size_t max_items = 5);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_IO_MESSAGE_H_
