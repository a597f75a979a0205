// ByteTokenizer: bytes are ids 0..255, <|endoftext|> is 256.
#include "train/tokenizer/byte_tokenizer.h"

#include <gtest/gtest.h>

#include "tests/temp_dir.h"
#include "tests/test_util.h"

namespace rotor::train {
namespace {

TEST(ByteTokenizer, VocabularyIsBytesPlusEndOfText) {
  EXPECT_EQ(ByteTokenizer::kVocabSize, 257);
  EXPECT_EQ(ByteTokenizer::kEndOfText, 256);
}

TEST(ByteTokenizer, EncodesEachByteAndRoundTrips) {
  const std::string text = "Hi \xC3\xA9\n";  // UTF-8 e-acute is two bytes
  const std::vector<TokenId> ids = ByteTokenizer::Encode(text);
  EXPECT_EQ(ids, (std::vector<TokenId>{72, 105, 32, 0xC3, 0xA9, 10}));
  EXPECT_EQ(ByteTokenizer::Decode(ids), text);
}

TEST(ByteTokenizer, InvalidUtf8AndAllBytesPassThrough) {
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  all += "\xFF\xC3";  // invalid / truncated UTF-8
  EXPECT_EQ(ByteTokenizer::Decode(ByteTokenizer::Encode(all)), all);
}

TEST(ByteTokenizer, EndOfTextDecodesAsItsName) {
  EXPECT_EQ(ByteTokenizer::Decode(
                {ByteTokenizer::kEndOfText, 'a', ByteTokenizer::kEndOfText}),
            "<|endoftext|>a<|endoftext|>");
  // The literal text is ordinary bytes, not the special token.
  EXPECT_EQ(ByteTokenizer::Encode("<|endoftext|>").size(), 13u);
}

TEST(ByteTokenizer, DecodeRejectsIdsOutsideTheVocabulary) {
  ROTOR_EXPECT_ERROR(ByteTokenizer::Decode({'a', 257}), "token 1", "257",
                     "[0, 257)");
  ROTOR_EXPECT_ERROR(ByteTokenizer::Decode({-1}), "token 0", "-1");
}

// Through the Tokenizer interface: the same ids; add_special_tokens adds
// nothing, skip_special_tokens drops <|endoftext|>.
TEST(ByteTokenizer, ImplementsTokenizer) {
  const ByteTokenizer bytes;
  const Tokenizer& tokenizer = bytes;
  EXPECT_EQ(tokenizer.Encode("hi", true), (std::vector<TokenId>{'h', 'i'}));
  EXPECT_EQ(tokenizer.Decode({256, 'h', 256}, true), "h");
  EXPECT_EQ(tokenizer.Decode({256, 'h'}, false), "<|endoftext|>h");
  EXPECT_EQ(tokenizer.VocabSize(), 257);
  EXPECT_EQ(tokenizer.TokenToId("<|endoftext|>"), 256);
  EXPECT_EQ(tokenizer.TokenToId("a"), std::nullopt);
  EXPECT_EQ(tokenizer.Name(), "byte");
}

}  // namespace
}  // namespace rotor::train
