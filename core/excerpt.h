// Input quoted in error messages, bounded: a hostile file (a 900 KB number)
// must not turn into an error line as long as itself.
//
//   Excerpt("1234...(900,000 digits)")  -> "1234...(the first 100 bytes)...
//                                            (900000 bytes)"
//
// In core/ so that a layer below train/ quotes what it refuses the same way
// (nn/rope_scaling.h's RefuseRopeType); train/io/message.h builds the
// printable excerpts and lists of names on it.
#ifndef ROTOR_CORE_EXCERPT_H_
#define ROTOR_CORE_EXCERPT_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace rotor {

// The most bytes of one piece of input a message quotes.
inline constexpr size_t kMaxQuotedBytes = 100;

// The longest prefix of `text` of at most `max_bytes` bytes that ends
// between two UTF-8 characters (never before a continuation byte).
std::string_view Utf8Prefix(std::string_view text, size_t max_bytes);

// `text` itself when it has at most `max_bytes` bytes; else its
// Utf8Prefix and "... (N bytes)".
std::string Excerpt(std::string_view text, size_t max_bytes = kMaxQuotedBytes);

}  // namespace rotor

#endif  // ROTOR_CORE_EXCERPT_H_
