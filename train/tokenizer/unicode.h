// Unicode for the tokenizers: UTF-8 decoding and encoding, the repair of
// invalid UTF-8, the character classes HF's tokenizers test with Rust's
// `char` methods, and normalization (NFC, NFD, NFKC, NFKD, lowercase) on
// utf8proc. Every function takes and returns UTF-8; the ones that read
// code points expect valid UTF-8 (ReplaceInvalidUtf8 makes it so).
#ifndef ROTOR_TRAIN_TOKENIZER_UNICODE_H_
#define ROTOR_TRAIN_TOKENIZER_UNICODE_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace rotor::train::unicode {

// Whether `text` is valid UTF-8 (no overlong forms, surrogates or code
// points past U+10FFFF).
bool IsValidUtf8(std::string_view text);

// `text` with each maximal subpart of an ill-formed sequence replaced by
// U+FFFD, exactly as the WHATWG TextDecoder (and Rust's
// String::from_utf8_lossy) do: e.g. "\xE2\x82" (a truncated 3-byte form) is
// one U+FFFD, "\xFF\xFE" two, "\xED\xA0\x80" (a surrogate) three.
std::string ReplaceInvalidUtf8(std::string_view text);

// The code point at text[*pos] (valid UTF-8), advancing *pos past it.
char32_t NextCodePoint(std::string_view text, size_t* pos);
// The length in bytes of the UTF-8 sequence that starts with `lead`.
inline size_t Utf8Length(unsigned char lead) {
  return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}
// Appends the UTF-8 form of `c` to `out`.
void AppendUtf8(char32_t c, std::string& out);

// Rust's char::is_whitespace: the White_Space property (HF's Whitespace,
// WhitespaceSplit, Strip and the lstrip/rstrip of added tokens).
bool IsWhitespace(char32_t c);
// Rust's char::is_numeric: categories Nd, Nl, No (the Digits pre-tokenizer).
bool IsNumeric(char32_t c);
// HF's is_punc: ASCII punctuation or a category P* (the Punctuation
// pre-tokenizer).
bool IsPunctuation(char32_t c);
// The \w of Rust's regex crate: Alphabetic, marks, decimal digits,
// connector punctuation and the joiners (the Whitespace pre-tokenizer and
// single_word added tokens).
bool IsWordChar(char32_t c);

// The four Unicode normalization forms.
enum class NormalizationForm { kNfc, kNfd, kNfkc, kNfkd };
// `text` in normalization form `form`.
std::string Normalize(std::string_view text, NormalizationForm form);
// `text` lowercased code point by code point with Unicode's full mapping,
// as Rust's char::to_lowercase (HF's Lowercase normalizer).
std::string Lowercase(std::string_view text);

}  // namespace rotor::train::unicode

#endif  // ROTOR_TRAIN_TOKENIZER_UNICODE_H_
