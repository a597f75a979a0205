// Normalization (train/tokenizer/unicode.h) gives utf8proc's own result,
// in O(n log n): long runs of combining marks, which utf8proc_map puts in
// canonical order with a quadratic gnome sort, take milliseconds.
#include "train/tokenizer/unicode.h"

#include <gtest/gtest.h>
#include <utf8proc.h>

#include <chrono>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "tests/test_util.h"

namespace rotor::train::unicode {
namespace {

constexpr NormalizationForm kForms[] = {
    NormalizationForm::kNfc, NormalizationForm::kNfd, NormalizationForm::kNfkc,
    NormalizationForm::kNfkd};

// utf8proc_map with the options of `form`: the reference.
std::string Utf8procMap(const std::string& text, NormalizationForm form) {
  int options = UTF8PROC_STABLE;
  if (form == NormalizationForm::kNfc || form == NormalizationForm::kNfkc) {
    options |= UTF8PROC_COMPOSE;
  } else {
    options |= UTF8PROC_DECOMPOSE;
  }
  if (form == NormalizationForm::kNfkc || form == NormalizationForm::kNfkd) {
    options |= UTF8PROC_COMPAT;
  }
  utf8proc_uint8_t* out = nullptr;
  const utf8proc_ssize_t length =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                   static_cast<utf8proc_ssize_t>(text.size()), &out,
                   static_cast<utf8proc_option_t>(options));
  EXPECT_GE(length, 0);
  std::string result(
      reinterpret_cast<const char*>(out),
      static_cast<size_t>(std::max<utf8proc_ssize_t>(length, 0)));
  std::free(out);
  return result;
}

std::string Repeat(const std::string& text, int times) {
  std::string out;
  for (int i = 0; i < times; ++i) out += text;
  return out;
}

TEST(Unicode, NormalizationIsUtf8procsOnTrickyText) {
  const std::vector<std::string> texts = {
      "e\u0301",
      "\u00e9",
      "\ufb01",
      "\u212b",  // singleton to Å
      "\u1e0b\u0323",
      "\u1e0d\u0307",
      "q\u0307\u0323",
      "\u1100\u1161\u11a8",
      "\uac00\u11a8",
      "\ud55c\uad6d\uc5b4",  // Hangul
      "a\u0301\u0316\u0301\u0316",
      "\u0b47\u0b3e",  // two starters compose
      "\u0344",
      "\u0f73\u0f75",
      "\u2460 \u00bd \u33a1",  // compatibility
      "x\u05b0\u05b1\u05b0\u05b1y",
      "\u0301 leading mark",
      "caf\u00e9 na\u00efve \u00c5ngstr\u00f6m \u1e9b\u0323",
  };
  for (const std::string& text : texts) {
    for (const NormalizationForm form : kForms) {
      EXPECT_EQ(Normalize(text, form), Utf8procMap(text, form))
          << text << " form " << static_cast<int>(form);
    }
  }
}

// Random strings over starters and marks of many combining classes, short
// enough for utf8proc's own sort.
TEST(Unicode, NormalizationIsUtf8procsOnRandomMarkRuns) {
  const std::vector<char32_t> alphabet = {
      'a',    'e',    'o',    0x00e9, 0x1100, 0x1161, 0x11a8, 0xac00,
      0x0300, 0x0301, 0x0316, 0x0323, 0x0327, 0x0345, 0x05b0, 0x05b1,
      0x0f71, 0x0f72, 0x0f80, 0x1dce, 0x302a, 0x0b47, 0x0b3e, 0x0344,
      0x0307, 0x031b, 0x0340, 0xfb01, 0x2126, 0x0958, 0x093c, 0x1e9b};
  std::mt19937 rng(7);
  std::uniform_int_distribution<size_t> pick(0, alphabet.size() - 1);
  std::uniform_int_distribution<int> length(1, 24);
  for (int trial = 0; trial < 3000; ++trial) {
    std::string text;
    for (int i = length(rng); i > 0; --i) AppendUtf8(alphabet[pick(rng)], text);
    for (const NormalizationForm form : kForms) {
      ASSERT_EQ(Normalize(text, form), Utf8procMap(text, form))
          << "trial " << trial << " form " << static_cast<int>(form);
    }
  }
}

// 100,000 marks of each of two classes in the wrong order: utf8proc_map
// takes 31 s at 40,000 each (quadratic, so minutes at 100,000); each form
// here takes 12-23 ms. The bound leaves room for a loaded machine and for
// ASan, and still fails a quadratic sort by a factor of ten.
TEST(Unicode, LongRunsOfCombiningMarksNormalizeQuickly) {
  const int k = 100'000;
  const std::string text =
      "a" + Repeat("\u0301", k) + Repeat("\u0316", k) + " b";
  for (const NormalizationForm form : kForms) {
    const auto start = std::chrono::steady_clock::now();
    const std::string normalized = Normalize(text, form);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    RecordProperty("seconds_form_" + std::to_string(static_cast<int>(form)),
                   std::to_string(seconds));
    EXPECT_LT(seconds, 10.0) << "form " << static_cast<int>(form);
    // Canonical order puts U+0316 (class 220) before U+0301 (230); NFC then
    // composes a + U+0301, which U+0316 does not block.
    const bool composed =
        form == NormalizationForm::kNfc || form == NormalizationForm::kNfkc;
    EXPECT_EQ(normalized, composed ? "\u00e1" + Repeat("\u0316", k) +
                                         Repeat("\u0301", k - 1) + " b"
                                   : "a" + Repeat("\u0316", k) +
                                         Repeat("\u0301", k) + " b");
  }
}

TEST(Unicode, NormalizationRefusesInvalidUtf8) {
  ROTOR_EXPECT_ERROR(Normalize("caf\xC3", NormalizationForm::kNfc),
                     "Unicode normalization failed");
}

}  // namespace
}  // namespace rotor::train::unicode
