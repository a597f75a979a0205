// ByteTokenizer: bytes are ids 0..255, <|endoftext|> is 256; its Hugging
// Face tokenizer.json (ByteTokenizerJson) gives the same ids in rotor's
// HfTokenizer (the JS port of HF tokenizers is checked in
// hf_conformance_test.cc), and WriteHfTokenizerFiles writes a model
// folder's tokenizer files.
#include "train/tokenizer/byte_tokenizer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "tests/temp_dir.h"
#include "tests/test_util.h"
#include "tests/train/tokenizer/hf_reference.h"
#include "train/io/atomic_file.h"
#include "train/io/json.h"
#include "train/tokenizer/byte_level_bpe_json.h"
#include "train/tokenizer/hf_tokenizer.h"
#include "train/tokenizer/pre_tokenizers.h"

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

// Through the Tokenizer interface: the same ids; add_special_tokens puts
// <|endoftext|> first (the BOS), skip_special_tokens drops it.
TEST(ByteTokenizer, ImplementsTokenizer) {
  const ByteTokenizer bytes;
  const Tokenizer& tokenizer = bytes;
  EXPECT_EQ(tokenizer.Encode("hi", false), (std::vector<TokenId>{'h', 'i'}));
  EXPECT_EQ(tokenizer.Encode("hi", true),
            (std::vector<TokenId>{256, 'h', 'i'}));
  EXPECT_EQ(tokenizer.Decode({256, 'h', 256}, true), "h");
  EXPECT_EQ(tokenizer.Decode({256, 'h'}, false), "<|endoftext|>h");
  EXPECT_EQ(tokenizer.VocabSize(), 257);
  EXPECT_EQ(tokenizer.TokenToId("<|endoftext|>"), 256);
  EXPECT_EQ(tokenizer.TokenToId("a"), std::nullopt);
  EXPECT_EQ(tokenizer.Name(), "byte");
}

std::unique_ptr<HfTokenizer> ByteTokenizerFromJson() {
  return HfTokenizer::Parse(ByteTokenizerJson(), "byte tokenizer.json");
}

// Byte b's GPT-2 character is token b, <|endoftext|> is 256: 257 ids.
TEST(ByteTokenizerJson, MapsEveryByteToItsValue) {
  const auto tokenizer = ByteTokenizerFromJson();
  EXPECT_EQ(tokenizer->VocabSize(), ByteTokenizer::kVocabSize);
  for (int b = 0; b < 256; ++b) {
    EXPECT_EQ(tokenizer->TokenToId(ByteLevelChars()[b]), b) << "byte " << b;
  }
  EXPECT_EQ(tokenizer->TokenToId("<|endoftext|>"), ByteTokenizer::kEndOfText);
  // Decoded one by one, the ASCII bytes come back; a lone byte of a
  // multi-byte character is not valid UTF-8 and decodes as U+FFFD, where
  // ByteTokenizer gives the byte itself.
  for (TokenId b = 0; b < 128; ++b) {
    EXPECT_EQ(tokenizer->Decode({b}, false),
              std::string(1, static_cast<char>(b)));
  }
  EXPECT_EQ(tokenizer->Decode({0xC3}, false), "\uFFFD");
  EXPECT_EQ(ByteTokenizer::Decode({0xC3}), "\xC3");
  EXPECT_EQ(tokenizer->Decode({0xC3, 0xA9}, false), "\u00E9");
}

// On valid UTF-8 text: exactly its bytes (after <|endoftext|>, 256, with
// special tokens, as ByteTokenizer), except that the text <|endoftext|> is
// id 256; decoding gives the text back.
TEST(ByteTokenizerJson, EncodesValidUtf8ToItsBytes) {
  const auto tokenizer = ByteTokenizerFromJson();
  const std::vector<std::string> texts = test::ByteTokenizerTexts();
  // The first text holds every byte valid UTF-8 can hold.
  const std::set<unsigned char> bytes(texts[0].begin(), texts[0].end());
  EXPECT_EQ(bytes.size(), 256u - 2 - 11);  // all but C0, C1 and F5..FF
  for (const std::string& text : texts) {
    SCOPED_TRACE(text.substr(0, 40));
    const std::vector<TokenId> expected = test::ExpectedByteTokenizerIds(text);
    std::vector<TokenId> with_bos = {ByteTokenizer::kEndOfText};
    with_bos.insert(with_bos.end(), expected.begin(), expected.end());
    EXPECT_EQ(tokenizer->Encode(text, true), with_bos);
    EXPECT_EQ(tokenizer->Encode(text, false), expected);
    EXPECT_EQ(tokenizer->Decode(expected, false), text);
    std::string without_special = text;
    for (size_t at;
         (at = without_special.find("<|endoftext|>")) != std::string::npos;) {
      without_special.erase(at, 13);
    }
    EXPECT_EQ(tokenizer->Decode(expected, true), without_special);
  }
  // The text <|endoftext|> is the special token here; ByteTokenizer keeps
  // it as 13 bytes.
  EXPECT_EQ(tokenizer->Encode("a<|endoftext|>", false),
            (std::vector<TokenId>{'a', 256}));
  EXPECT_EQ(ByteTokenizer::Encode("a<|endoftext|>").size(), 14u);
}

// Bytes that are not valid UTF-8 become U+FFFD first (as a TextDecoder
// reads them), so their ids are U+FFFD's three bytes, not the bytes.
TEST(ByteTokenizerJson, InvalidUtf8IsReplacedFirst) {
  const auto tokenizer = ByteTokenizerFromJson();
  EXPECT_EQ(tokenizer->Encode("a\xFF"
                              "b",
                              false),
            (std::vector<TokenId>{'a', 0xEF, 0xBF, 0xBD, 'b'}));
  EXPECT_EQ(ByteTokenizer::Encode("a\xFF"
                                  "b"),
            (std::vector<TokenId>{'a', 0xFF, 'b'}));
}

TEST(WriteHfTokenizerFiles, WritesTheByteTokenizerJsonAndItsConfig) {
  test::TempDir dir;
  WriteHfTokenizerFiles("byte", dir.path(), PromptStart::kDocumentSeparator);
  EXPECT_EQ(dir.List(), (std::vector<std::string>{"tokenizer.json",
                                                  "tokenizer_config.json"}));
  EXPECT_EQ(ReadFile(dir.Path("tokenizer.json")), ByteTokenizerJson());
  const Json config = ParseJson(ReadFile(dir.Path("tokenizer_config.json")),
                                "tokenizer_config.json");
  EXPECT_EQ(config, Json::parse(R"({
      "tokenizer_class": "PreTrainedTokenizerFast",
      "clean_up_tokenization_spaces": false,
      "add_bos_token": true,
      "bos_token": "<|endoftext|>",
      "eos_token": "<|endoftext|>"})"));
}

// A byte-level BPE without merges whose <|endoftext|> (id 3) no
// post-processor adds, as the BPE trainer's, SmolLM's and GPT-2's.
std::string NoBosTokenizerJson() {
  return ByteLevelBpeTokenizerJson({"a", "b", "ab", "<|endoftext|>"}, {3},
                                   {{0, 1}}, "");
}

// A tokenizer.json whose post-processor already adds the BOS is copied byte
// for byte; its eos token is not known, so the config leaves it out.
TEST(WriteHfTokenizerFiles, CopiesATokenizerJsonThatAddsTheBosUnchanged) {
  test::TempDir dir;
  const std::string own =
      dir.Write("own/tokenizer.json", ByteTokenizerJson() + "\n  \n");
  for (const char* folder : {"model", "model2", "model3"}) {
    std::filesystem::create_directories(dir.Path(folder));
  }
  for (const PromptStart start :
       {PromptStart::kDocumentSeparator, PromptStart::kTokenizerBos}) {
    WriteHfTokenizerFiles(own, dir.Path("model"), start);
    EXPECT_EQ(ReadFile(dir.Path("model/tokenizer.json")), ReadFile(own));
    const Json config = ParseJson(
        ReadFile(dir.Path("model/tokenizer_config.json")), "tokenizer_config");
    EXPECT_EQ(config, Json::parse(R"({
        "tokenizer_class": "PreTrainedTokenizerFast",
        "clean_up_tokenization_spaces": false,
        "add_bos_token": true,
        "bos_token": "<|endoftext|>"})"));
  }
  // The folder form of the spec names the same file.
  WriteHfTokenizerFiles(dir.Path("own"), dir.Path("model2"),
                        PromptStart::kDocumentSeparator);
  EXPECT_EQ(ReadFile(dir.Path("model2/tokenizer.json")), ReadFile(own));
  ROTOR_EXPECT_ERROR(
      WriteHfTokenizerFiles(dir.Path("nothing.json"), dir.Path("model3"),
                            PromptStart::kDocumentSeparator),
      dir.Path("nothing.json"));
}

// A model rotor trained with a tokenizer that adds no BOS saw its document
// separator first in every document: the folder's tokenizer.json gets a
// post-processor that adds it. A Hugging Face model without a BOS keeps
// its file and says add_bos_token false.
TEST(WriteHfTokenizerFiles, TheBosOfARotorModelIsAddedToThePostProcessor) {
  test::TempDir dir;
  const std::string own = dir.Write("own.json", NoBosTokenizerJson());
  std::filesystem::create_directories(dir.Path("rotor"));
  std::filesystem::create_directories(dir.Path("hf"));
  WriteHfTokenizerFiles(own, dir.Path("rotor"),
                        PromptStart::kDocumentSeparator);
  const auto written = LoadTokenizer(dir.Path("rotor/tokenizer.json"));
  EXPECT_EQ(written->Encode("ab", true), (std::vector<TokenId>{3, 2}));
  EXPECT_EQ(written->Encode("ab", false), (std::vector<TokenId>{2}));
  // The ByteLevel post-processor it had is kept, first in a Sequence.
  const Json json = ParseJson(ReadFile(dir.Path("rotor/tokenizer.json")), "w");
  EXPECT_EQ(json.at("post_processor").at("type"), "Sequence");
  EXPECT_EQ(json.at("post_processor").at("processors")[0].at("type"),
            "ByteLevel");
  EXPECT_EQ(ParseJson(ReadFile(dir.Path("rotor/tokenizer_config.json")), "c")
                .at("add_bos_token"),
            true);
  WriteHfTokenizerFiles(own, dir.Path("hf"), PromptStart::kTokenizerBos);
  EXPECT_EQ(ReadFile(dir.Path("hf/tokenizer.json")), NoBosTokenizerJson());
  const Json config =
      ParseJson(ReadFile(dir.Path("hf/tokenizer_config.json")), "c");
  EXPECT_EQ(config.at("add_bos_token"), false);
  EXPECT_FALSE(config.contains("bos_token"));
}

// The copy an export wrote (the BOS added) makes the same token files, so
// data prepared with the original pairs with the exported folder, either
// way round; another tokenizer does not.
TEST(SameTokenizer, AnExportedCopyWithTheBosAddedIsTheSame) {
  test::TempDir dir;
  const std::string own = dir.Write("own.json", NoBosTokenizerJson());
  std::filesystem::create_directories(dir.Path("rotor"));
  WriteHfTokenizerFiles(own, dir.Path("rotor"),
                        PromptStart::kDocumentSeparator);
  EXPECT_TRUE(SameTokenizer(own, dir.Path("rotor")));
  EXPECT_TRUE(SameTokenizer(dir.Path("rotor/tokenizer.json"), own));
  const std::string other = dir.Write(
      "other.json", ByteLevelBpeTokenizerJson({"a", "b", "ba", "<|endoftext|>"},
                                              {3}, {{1, 0}}, ""));
  EXPECT_FALSE(SameTokenizer(other, dir.Path("rotor")));
  EXPECT_FALSE(SameTokenizer(other, own));
  EXPECT_FALSE(SameTokenizer("byte", own));
}

TEST(TokenizerJsonWithBos, ABosThatIsNoAddedTokenIsRefusedNamingTheFile) {
  ROTOR_EXPECT_ERROR(TokenizerJsonWithBos(NoBosTokenizerJson(), "own.json", 2),
                     "own.json: added_tokens has no token with id 2");
}

// What a prompt starts with: a rotor model's document separator whatever
// the post-processor does; a Hugging Face model's own BOS, or none.
TEST(PromptBos, IsTheSeparatorOfARotorModelAndTheTokenizersOtherwise) {
  const ByteTokenizer bytes;
  EXPECT_EQ(PromptBos(bytes, PromptStart::kDocumentSeparator), 256);
  EXPECT_EQ(PromptBos(bytes, PromptStart::kTokenizerBos), 256);
  const auto no_bos = HfTokenizer::Parse(NoBosTokenizerJson(), "no-bos");
  EXPECT_EQ(PromptBos(*no_bos, PromptStart::kDocumentSeparator), 3);
  EXPECT_EQ(PromptBos(*no_bos, PromptStart::kTokenizerBos), std::nullopt);
}

}  // namespace
}  // namespace rotor::train
