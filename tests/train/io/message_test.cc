// Input quoted in messages stays short (train/io/message.h).
#include "train/io/message.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace rotor::train {
namespace {

TEST(Message, ExcerptCutsLongInputSayingHowLongItWas) {
  EXPECT_EQ(Excerpt("short"), "short");
  EXPECT_EQ(Excerpt(std::string(100, '9')), std::string(100, '9'));
  EXPECT_EQ(Excerpt(std::string(900092, '9')),
            std::string(100, '9') + "... (900092 bytes)");
  // Never inside a UTF-8 character: "é" is 2 bytes, cut before it.
  EXPECT_EQ(Excerpt(std::string(99, 'x') + "\xC3\xA9" + "yz"),
            std::string(99, 'x') + "... (103 bytes)");
}

TEST(Message, ListForMessageNamesAFewAndCountsTheRest) {
  EXPECT_EQ(ListForMessage({"a"}), "a");
  EXPECT_EQ(ListForMessage({"a", "b", "c"}), "a, b and c");
  std::vector<std::string> keys;
  for (int i = 0; i < 60000; ++i) keys.push_back("k" + std::to_string(i));
  EXPECT_EQ(ListForMessage(keys), "k0, k1, k2, k3, k4 and 59995 more");
}

// A NUL would end a message where it stands; control characters are
// quoted as \xNN, and found for the paths and names that refuse them.
TEST(Message, ControlCharactersAreEscapedAndFound) {
  EXPECT_EQ(PrintableExcerpt(std::string("a\0b\tc\n\x1b[2J\x7f", 11)),
            "a\\x00b\\x09c\\x0a\\x1b[2J\\x7f");
  EXPECT_EQ(PrintableExcerpt("caf\xC3\xA9"), "caf\xC3\xA9");  // UTF-8 kept
  EXPECT_EQ(ControlCharacterProblem("runs/exp"), std::nullopt);
  EXPECT_EQ(ControlCharacterProblem(std::string("runs/\0x", 7)),
            "holds a control character (0x00 at byte 5)");
  EXPECT_EQ(ControlCharacterProblem("a\x7f"),
            "holds a control character (0x7f at byte 1)");
}

}  // namespace
}  // namespace rotor::train
