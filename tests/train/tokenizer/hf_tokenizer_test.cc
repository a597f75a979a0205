// HfTokenizer on small tokenizer.json files written here, with the ids
// derived by hand from HF's rules (each test says how), and on broken files.
// The real Llama 2 and Llama 3 files are compared with the JS port by the
// conformance test, not here.
#include "train/tokenizer/hf_tokenizer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/limits.h"
#include "tests/temp_dir.h"
#include "tests/test_util.h"
#include "train/tokenizer/byte_tokenizer.h"
#include "train/tokenizer/pre_tokenizers.h"

namespace rotor::train {
namespace {

using nlohmann::json;
using Ids = std::vector<TokenId>;

// A byte-level BPE file: byte b's character (GPT-2's table) has id b, then
// `extra` tokens get ids 256, 257, ... in order; `merges` as "a b" strings.
json ByteLevelFile(const std::vector<std::string>& extra,
                   const std::vector<std::string>& merges) {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[ByteLevelChars()[b]] = b;
  for (size_t i = 0; i < extra.size(); ++i) vocab[extra[i]] = 256 + i;
  return {{"version", "1.0"},
          {"added_tokens", json::array()},
          {"normalizer", nullptr},
          {"pre_tokenizer",
           {{"type", "ByteLevel"},
            {"add_prefix_space", false},
            {"trim_offsets", true},
            {"use_regex", true}}},
          {"post_processor", nullptr},
          {"decoder", {{"type", "ByteLevel"}}},
          {"model",
           {{"type", "BPE"},
            {"dropout", nullptr},
            {"unk_token", nullptr},
            {"fuse_unk", false},
            {"byte_fallback", false},
            {"vocab", vocab},
            {"merges", merges}}}};
}

std::unique_ptr<HfTokenizer> Parse(const json& file) {
  return HfTokenizer::Parse(file.dump(), "tokenizer.json");
}

// "hello world": GPT-2's regex cuts "hello" and " world". In "hello" the
// merges apply lowest rank first: h+e (rank 0) and l+l (rank 1), then
// he+ll (rank 2) -> [hell, o]. " world" is "Ġworld" in the byte alphabet:
// Ġ+w (rank 3) -> [Ġw, o, r, l, d].
TEST(HfTokenizer, ByteLevelBpeMergesByRank) {
  const auto tokenizer = Parse(ByteLevelFile({"he", "ll", "hell", "Ġw"},
                                             {"h e", "l l", "he ll", "Ġ w"}));
  const Ids ids = tokenizer->Encode("hello world", true);
  EXPECT_EQ(ids, (Ids{258, 'o', 259, 'o', 'r', 'l', 'd'}));
  EXPECT_EQ(tokenizer->Decode(ids, false), "hello world");
  EXPECT_EQ(tokenizer->VocabSize(), 260);
  EXPECT_EQ(tokenizer->TokenToId("hell"), 258);
  EXPECT_EQ(tokenizer->TokenToId("nothing"), std::nullopt);
  EXPECT_EQ(tokenizer->Name(), "tokenizer.json");
}

// Equal ranks merge leftmost first: "aaa" -> [aa, a], not [a, aa].
TEST(HfTokenizer, EqualRanksMergeLeftmostFirst) {
  const auto tokenizer = Parse(ByteLevelFile({"aa"}, {"a a"}));
  EXPECT_EQ(tokenizer->Encode("aaa", false), (Ids{256, 'a'}));
}

// ignore_merges: a piece that is in the vocabulary is one token even when
// no merge path leads to it ("hello" has none here).
TEST(HfTokenizer, IgnoreMergesTakesWholePieces) {
  json file = ByteLevelFile({"he", "hello"}, {"h e"});
  EXPECT_EQ(Parse(file)->Encode("hello", false), (Ids{256, 'l', 'l', 'o'}));
  file["model"]["ignore_merges"] = true;
  EXPECT_EQ(Parse(file)->Encode("hello", false), (Ids{257}));
}

// Newer files give merges as [left, right] pairs: same ids.
TEST(HfTokenizer, MergesAsPairs) {
  json file = ByteLevelFile({"he"}, {});
  file["model"]["merges"] = json::array({json::array({"h", "e"})});
  EXPECT_EQ(Parse(file)->Encode("he", false), (Ids{256}));
}

// Every byte string round-trips through a byte-level tokenizer once it is
// valid UTF-8; invalid UTF-8 is first repaired as TextDecoder does:
// "\xFF" -> U+FFFD (EF BF BD), "\xE2\x82" (a truncated 3-byte form) -> one
// U+FFFD.
TEST(HfTokenizer, ByteLevelRoundTripsAndRepairsInvalidUtf8) {
  const auto tokenizer = Parse(ByteLevelFile({}, {}));
  const std::string text = "Grüße, 世界! 😀\n\t  x";
  EXPECT_EQ(tokenizer->Decode(tokenizer->Encode(text, false), false), text);
  EXPECT_EQ(tokenizer->Encode("a\xFF"
                              "b\xE2\x82",
                              false),
            (Ids{'a', 0xEF, 0xBF, 0xBD, 'b', 0xEF, 0xBF, 0xBD}));
}

// A SentencePiece-style file (Llama 2's layout): Prepend "▁" and Replace
// " " -> "▁", no pre-tokenizer, byte fallback, <s> added by the template.
json SentencePieceFile() {
  json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
  int id = 3;
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    vocab[name] = id++;
  }
  // 259.. : ▁ h e l o ▁h ll ▁he ▁hell ▁hello
  for (const char* token :
       {"▁", "h", "e", "l", "o", "▁h", "ll", "▁he", "▁hell", "▁hello"}) {
    vocab[token] = id++;
  }
  const auto added = [](int token_id, const char* content) {
    return json{{"id", token_id},  {"content", content}, {"single_word", false},
                {"lstrip", false}, {"rstrip", false},    {"normalized", false},
                {"special", true}};
  };
  return {
      {"version", "1.0"},
      {"added_tokens", {added(0, "<unk>"), added(1, "<s>"), added(2, "</s>")}},
      {"normalizer",
       {{"type", "Sequence"},
        {"normalizers",
         {{{"type", "Prepend"}, {"prepend", "▁"}},
          {{"type", "Replace"},
           {"pattern", {{"String", " "}}},
           {"content", "▁"}}}}}},
      {"pre_tokenizer", nullptr},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single",
         {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
          {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
        {"pair", json::array()},
        {"special_tokens",
         {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}}},
      {"decoder",
       {{"type", "Sequence"},
        {"decoders",
         {{{"type", "Replace"},
           {"pattern", {{"String", "▁"}}},
           {"content", " "}},
          {{"type", "ByteFallback"}},
          {{"type", "Fuse"}},
          {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", "<unk>"},
        {"fuse_unk", true},
        {"byte_fallback", true},
        {"vocab", vocab},
        {"merges", {"▁ h", "l l", "▁h e", "▁he ll", "▁hell o"}}}}};
}

// "hello hé": normalized to "▁hello▁hé", one piece. Characters: ▁ h e l l o
// ▁ h é. Merges by rank: ▁+h (0) twice, l+l (1), ▁h+e (2), ▁he+ll (3),
// ▁hell+o (4) -> ▁hello (268), ▁h (264); "é" is not in the vocabulary, so
// byte fallback gives <0xC3> (3 + 0xC3 = 198) and <0xA9> (3 + 0xA9 = 172).
// With add_special_tokens the template puts <s> (1) first.
TEST(HfTokenizer, SentencePieceBpeWithByteFallback) {
  const auto tokenizer = Parse(SentencePieceFile());
  const Ids ids = tokenizer->Encode("hello hé", true);
  EXPECT_EQ(ids, (Ids{1, 268, 264, 198, 172}));
  EXPECT_EQ(tokenizer->Encode("hello hé", false), (Ids{268, 264, 198, 172}));
  // Decode: "▁" -> " ", the bytes back to "é", all fused, and Strip removes
  // one leading space (the Prepend normalizer's) -- only when "<s>" is
  // skipped, since it comes first otherwise (as in HF).
  EXPECT_EQ(tokenizer->Decode(ids, true), "hello hé");
  EXPECT_EQ(tokenizer->Decode(ids, false), "<s> hello hé");
}

// A whole text is one piece here (no pre-tokenizer), so BPE cuts it before
// each "▁" that follows another character, which no merge can cross in this
// vocabulary: "hello hello" -> ▁hello ▁hello (268 268). A token with a "▁"
// inside ("o▁", merged first) turns the cut off, and BPE runs over the
// whole piece as HF does: ▁ h e l l [o▁] h e l l o -> ▁hell (267) o▁ (269)
// h (260) e (261) ll (265) o (263), the second "h" no longer after a "▁".
TEST(HfTokenizer, MetaspaceCutsNeverChangeTheIds) {
  json file = SentencePieceFile();
  EXPECT_EQ(Parse(file)->Encode("hello hello", false), (Ids{268, 268}));
  file["model"]["vocab"]["o▁"] = 269;
  file["model"]["merges"].insert(file["model"]["merges"].begin(), "o ▁");
  EXPECT_EQ(Parse(file)->Encode("hello hello", false),
            (Ids{267, 269, 260, 261, 265, 263}));
}

// Without byte fallback, unknown characters become <unk>, consecutive ones
// fused into one with fuse_unk: "héé" -> ▁h, <unk>.
TEST(HfTokenizer, UnknownCharactersFuseIntoOneUnk) {
  json file = SentencePieceFile();
  file["model"]["byte_fallback"] = false;
  EXPECT_EQ(Parse(file)->Encode("héé", false), (Ids{264, 0}));
  file["model"]["fuse_unk"] = false;
  EXPECT_EQ(Parse(file)->Encode("héé", false), (Ids{264, 0, 0}));
}

// Added tokens are found in the raw text before normalization: "<s>" in
// "hello<s>hello" is id 1, and the text on each side is normalized on its
// own (each gets the "▁" of Prepend).
TEST(HfTokenizer, AddedTokensSplitTheRawText) {
  const auto tokenizer = Parse(SentencePieceFile());
  EXPECT_EQ(tokenizer->Encode("hello<s>hello", false), (Ids{268, 1, 268}));
}

// lstrip / rstrip take the whitespace around a token; single_word skips a
// match with a word character next to it. With the byte-level file (ids =
// bytes) and an added token "<x>" (id 256):
TEST(HfTokenizer, AddedTokenStripAndSingleWord) {
  json file = ByteLevelFile({}, {});
  json token = {{"id", 256},      {"content", "<x>"}, {"single_word", false},
                {"lstrip", true}, {"rstrip", false},  {"normalized", false},
                {"special", true}};
  file["added_tokens"] = {token};
  // lstrip: "a  <x>b" -> "a", "  <x>" (the token), "b".
  EXPECT_EQ(Parse(file)->Encode("a  <x>b", false), (Ids{'a', 256, 'b'}));
  token["lstrip"] = false;
  token["rstrip"] = true;
  file["added_tokens"] = {token};
  EXPECT_EQ(Parse(file)->Encode("a<x>  b", false), (Ids{'a', 256, 'b'}));
  token["rstrip"] = false;
  token["single_word"] = true;
  file["added_tokens"] = {token};
  // "a<x>" has a word character before the token: no match, plain bytes.
  EXPECT_EQ(Parse(file)->Encode("a<x>", false), (Ids{'a', '<', 'x', '>'}));
  EXPECT_EQ(Parse(file)->Encode(" <x> ", false), (Ids{' ', 256, ' '}));
  // Decode skips special tokens when asked.
  EXPECT_EQ(Parse(file)->Decode({'a', 256, 'b'}, true), "ab");
  EXPECT_EQ(Parse(file)->Decode({'a', 256, 'b'}, false), "a<x>b");
}

// The longest added token wins where two start at the same place.
TEST(HfTokenizer, AddedTokensMatchLeftmostLongest) {
  json file = ByteLevelFile({}, {});
  const auto added = [](int id, const char* content) {
    return json{{"id", id},
                {"content", content},
                {"special", true},
                {"normalized", false}};
  };
  file["added_tokens"] = {added(256, "<a>"), added(257, "<a><b>")};
  EXPECT_EQ(Parse(file)->Encode("x<a><b><a>", false), (Ids{'x', 257, 256}));
}

// The pieces `pre_tokenizer` makes of `text`.
std::vector<std::string> Pieces(const PreTokenizer& pre_tokenizer,
                                std::string_view text) {
  PreTokenArena arena;
  std::vector<PreToken> pieces = {{text, true}};
  pre_tokenizer.PreTokenize(pieces, arena);
  std::vector<std::string> out;
  for (const PreToken& piece : pieces) out.emplace_back(piece.text);
  return out;
}

using Strings = std::vector<std::string>;

// HF's five split behaviors on "a-b--c" cut at "-" (each "-" is one match).
TEST(PreTokenizers, SplitBehaviors) {
  const auto split = [](SplitBehavior behavior, bool invert) {
    return SplitPreTokenizer(std::make_unique<Regex>("-", true), behavior,
                             invert);
  };
  EXPECT_EQ(Pieces(split(SplitBehavior::kRemoved, false), "a-b--c"),
            (Strings{"a", "b", "c"}));
  EXPECT_EQ(Pieces(split(SplitBehavior::kIsolated, false), "a-b--c"),
            (Strings{"a", "-", "b", "-", "-", "c"}));
  // Only a match that follows a non-match merges into it.
  EXPECT_EQ(Pieces(split(SplitBehavior::kMergedWithPrevious, false), "a-b--c"),
            (Strings{"a-", "b-", "-", "c"}));
  EXPECT_EQ(Pieces(split(SplitBehavior::kMergedWithNext, false), "a-b--c"),
            (Strings{"a", "-b", "-", "-c"}));
  EXPECT_EQ(Pieces(split(SplitBehavior::kContiguous, false), "a-b--c"),
            (Strings{"a", "-", "b", "--", "c"}));
  // invert: the matches are kept, the rest removed.
  EXPECT_EQ(Pieces(split(SplitBehavior::kRemoved, true), "a-b--c"),
            (Strings{"-", "-", "-"}));
}

// Llama 3's regex in PCRE2 with Unicode classes: contractions any case,
// letters with one leading non-letter, digits in threes, newlines kept
// with the punctuation before them, a space before a word stays with it.
TEST(PreTokenizers, Llama3Regex) {
  const SplitPreTokenizer split(
      std::make_unique<Regex>(
          R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
          false),
      SplitBehavior::kIsolated, false);
  EXPECT_EQ(Pieces(split, "HE'S 12345 ok.\n\n  x\u3000y"),
            (Strings{"HE", "'S", " ", "123", "45", " ok", ".\n\n", " ", " x",
                     "\u3000y"}));
}

// \s is Unicode's White_Space, as in HF's engines and JavaScript: U+3000
// and U+0085 are spaces, U+180E (a space before Unicode 6.3, and still one
// to PCRE2's own \s) is not; \S and \s inside a class follow, and an
// escaped backslash before "s" stays a backslash and a letter.
TEST(PreTokenizers, WhitespaceIsUnicodeWhiteSpace) {
  const auto matches = [](const std::string& pattern,
                          const std::string& subject) {
    std::vector<Regex::Match> found;
    Regex(pattern, false).FindAll(subject, found);
    Strings pieces;
    for (const Regex::Match& m : found) {
      pieces.push_back(subject.substr(m.start, m.end - m.start));
    }
    return pieces;
  };
  EXPECT_EQ(matches(R"(\s+)", "a\u3000\u0085b\u180Ec"),
            (Strings{"\u3000\u0085"}));
  EXPECT_EQ(matches(R"(\S+)", "a\u180E b"), (Strings{"a\u180E", "b"}));
  EXPECT_EQ(matches(R"([^\s\p{L}]+)", "a\u180E1 2"), (Strings{"\u180E1", "2"}));
  EXPECT_EQ(matches(R"(\\s)", "x\\sy s"), (Strings{"\\s"}));
  EXPECT_EQ(matches(R"(\Q\s\E)", "s\\s"), (Strings{"\\s"}));
}

TEST(PreTokenizers, MetaspacePrependSchemes) {
  const MetaspacePreTokenizer always("▁", PrependScheme::kAlways, true);
  EXPECT_EQ(Pieces(always, "hi there"), (Strings{"▁hi", "▁there"}));
  const MetaspacePreTokenizer first("▁", PrependScheme::kFirst, false);
  EXPECT_EQ(Pieces(first, "hi there"), (Strings{"▁hi▁there"}));
  PreTokenArena arena;
  std::vector<PreToken> later = {{"hi", false}};
  first.PreTokenize(later, arena);
  EXPECT_EQ(later[0].text, "hi");  // not at the start of the input
  const MetaspacePreTokenizer never("▁", PrependScheme::kNever, true);
  EXPECT_EQ(Pieces(never, "hi there"), (Strings{"hi", "▁there"}));
}

TEST(PreTokenizers, DigitsWhitespacePunctuation) {
  EXPECT_EQ(Pieces(DigitsPreTokenizer(true), "a123b"),
            (Strings{"a", "1", "2", "3", "b"}));
  EXPECT_EQ(Pieces(DigitsPreTokenizer(false), "a123b"),
            (Strings{"a", "123", "b"}));
  EXPECT_EQ(Pieces(WhitespacePreTokenizer(), "Hi, you!! ok"),
            (Strings{"Hi", ",", "you", "!!", "ok"}));
  EXPECT_EQ(Pieces(WhitespaceSplitPreTokenizer(), " a\tb\u00A0c "),
            (Strings{"a", "b", "c"}));
  EXPECT_EQ(Pieces(PunctuationPreTokenizer(SplitBehavior::kIsolated), "a,b!?"),
            (Strings{"a", ",", "b", "!", "?"}));
  EXPECT_EQ(Pieces(ByteLevelPreTokenizer(true, true, true), "hi you"),
            (Strings{"Ġhi", "Ġyou"}));
}

TEST(Unicode, InvalidUtf8BecomesReplacementCharactersAsTextDecoder) {
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(unicode::ReplaceInvalidUtf8("\xFF\xFE"), fffd + fffd);
  EXPECT_EQ(unicode::ReplaceInvalidUtf8("\xE2\x82"), fffd);  // truncated
  EXPECT_EQ(unicode::ReplaceInvalidUtf8("\xED\xA0\x80"),     // a surrogate
            fffd + fffd + fffd);
  EXPECT_EQ(unicode::ReplaceInvalidUtf8("\xC0\xAF"), fffd + fffd);  // overlong
  EXPECT_EQ(unicode::ReplaceInvalidUtf8("\xF0\x9F\x98"), fffd);
  EXPECT_EQ(unicode::ReplaceInvalidUtf8("ok\xF0\x9F\x98\x80"), "ok😀");
}

TEST(Normalizers, UnicodeFormsLowercaseStrip) {
  EXPECT_EQ(unicode::Normalize("e\xCC\x81", unicode::NormalizationForm::kNfc),
            "é");
  EXPECT_EQ(unicode::Normalize("é", unicode::NormalizationForm::kNfd),
            "e\xCC\x81");
  EXPECT_EQ(unicode::Normalize("ﬁ", unicode::NormalizationForm::kNfkc), "fi");
  EXPECT_EQ(unicode::Lowercase("ÀB İ"), "àb i\xCC\x87");
  std::string text = " \t a b \u3000";
  StripNormalizer(true, true).Normalize(text);
  EXPECT_EQ(text, "a b");
}

TEST(HfTokenizer, BadFilesNameTheFileAndJsonPath) {
  const std::string name = "tokenizer.json";
  ROTOR_EXPECT_ERROR(HfTokenizer::Parse("{\"model\": {", name),
                     "tokenizer.json", "invalid JSON");
  json file = ByteLevelFile({}, {});
  file["pre_tokenizer"] = {{"type", "Sequence"},
                           {"pretokenizers",
                            {{{"type", "Digits"}},
                             {{"type", "ByteLevel"}},
                             {{"type", "BertPreTokenizer"}}}}};
  ROTOR_EXPECT_ERROR(Parse(file),
                     "tokenizer.json: /pre_tokenizer/pretokenizers/2",
                     "unsupported pre-tokenizer type \"BertPreTokenizer\"",
                     "supported: Split");
  file = ByteLevelFile({}, {});
  file["model"]["type"] = "WordPiece";
  ROTOR_EXPECT_ERROR(Parse(file), "/model/type", "unsupported model type");
  file = ByteLevelFile({}, {});
  file["model"]["dropout"] = 0.1;
  ROTOR_EXPECT_ERROR(Parse(file), "/model/dropout", "unsupported dropout");
  file = ByteLevelFile({}, {});
  file["model"]["fuse_unk"] = "yes";
  ROTOR_EXPECT_ERROR(Parse(file), "/model/fuse_unk", "expected true or false");
  file = ByteLevelFile({}, {"h zz"});
  ROTOR_EXPECT_ERROR(Parse(file), "/model/merges/0",
                     "not in the vocabulary: \"zz\"");
  file = ByteLevelFile({}, {"h e"});  // "he" is not in the vocabulary
  ROTOR_EXPECT_ERROR(Parse(file), "/model/merges/0", "merged token \"he\"");
  file = ByteLevelFile({"twin"}, {});
  file["model"]["vocab"]["twin"] = 5;  // the id of byte 5's character
  ROTOR_EXPECT_ERROR(Parse(file), "tokenizer.json: /model/vocab/",
                     "id 5 is also the id of", "each id has one token");
  file = ByteLevelFile({}, {});
  file["added_tokens"] = {{{"id", 7}, {"content", "<x>"}, {"special", true}}};
  ROTOR_EXPECT_ERROR(Parse(file), "/added_tokens/0/id",
                     "is the id of vocabulary token");
  file["added_tokens"] = {{{"id", 300}, {"content", "<x>"}}};
  ROTOR_EXPECT_ERROR(Parse(file), "/added_tokens/0/id", "HF gives it 256");
  file["added_tokens"] = {{{"id", 256}, {"content", "<x>"}},
                          {{"id", 257}, {"content", "<x>"}}};
  ROTOR_EXPECT_ERROR(Parse(file), "/added_tokens/1", "listed twice");
  file = ByteLevelFile({}, {});
  file["normalizer"] = {{"type", "BertNormalizer"}};
  ROTOR_EXPECT_ERROR(Parse(file), "/normalizer", "unsupported normalizer");
  file = ByteLevelFile({}, {});
  file["pre_tokenizer"] = {{"type", "Split"},
                           {"pattern", {{"Regex", "(unclosed"}}},
                           {"behavior", "Isolated"},
                           {"invert", false}};
  ROTOR_EXPECT_ERROR(Parse(file), "/pre_tokenizer/pattern/Regex",
                     "invalid regex");
  // A repeated vocabulary key is refused by the JSON reader itself.
  ROTOR_EXPECT_ERROR(
      HfTokenizer::Parse(R"({"model": {"vocab": {"a": 0, "a": 1}}})", name),
      "duplicate key \"a\"");
}

TEST(HfTokenizer, DecodeRefusesIdsOutsideTheVocabulary) {
  const auto tokenizer = Parse(ByteLevelFile({}, {}));
  ROTOR_EXPECT_ERROR(tokenizer->Decode({'a', 256}, false), "token 1", "256",
                     "[0, 256)");
  ROTOR_EXPECT_ERROR(tokenizer->Decode({-1}, false), "token 0", "-1");
}

// Ids must be below limits::kMaxVocabSize: the largest one is accepted, one
// more is refused naming the limit.
TEST(HfTokenizer, VocabSizeLimit) {
  json file = ByteLevelFile({}, {});
  file["model"]["vocab"]["last"] = limits::kMaxVocabSize - 1;
  EXPECT_EQ(Parse(file)->VocabSize(), limits::kMaxVocabSize);
  file["model"]["vocab"]["last"] = limits::kMaxVocabSize;
  ROTOR_EXPECT_ERROR(Parse(file), "/model/vocab/last", "1048576",
                     "is not below the limit");
}

// A file of exactly kMaxTokenizerJsonBytes is read (and fails as JSON, being
// zeros: a sparse file costs no disk); one byte more is refused unread.
TEST(HfTokenizer, FileSizeLimit) {
  test::TempDir dir;
  const std::string path = dir.Path("tokenizer.json");
  { std::ofstream(path).put(' '); }
  ASSERT_EQ(::truncate(path.c_str(), limits::kMaxTokenizerJsonBytes), 0);
  try {
    HfTokenizer::Load(path);
    ADD_FAILURE() << "a file of zeros loaded";
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()).find("limit"), std::string::npos)
        << error.what();
  }
  ASSERT_EQ(::truncate(path.c_str(), limits::kMaxTokenizerJsonBytes + 1), 0);
  ROTOR_EXPECT_ERROR(HfTokenizer::Load(path), "larger than the limit",
                     "268435456");
}

// Encode is const and may run on several threads at once (each has its own
// BPE cache): two threads get the same ids as one.
TEST(HfTokenizer, EncodesFromTwoThreadsAlike) {
  const auto tokenizer = Parse(ByteLevelFile({"he", "ll", "hell", "Ġw"},
                                             {"h e", "l l", "he ll", "Ġ w"}));
  std::string text;
  for (int i = 0; i < 2000; ++i) text += "hello world " + std::to_string(i);
  const Ids expected = tokenizer->Encode(text, false);
  Ids first, second;
  std::thread a([&] { first = tokenizer->Encode(text, false); });
  std::thread b([&] { second = tokenizer->Encode(text, false); });
  a.join();
  b.join();
  EXPECT_EQ(first, expected);
  EXPECT_EQ(second, expected);
}

TEST(LoadTokenizer, ByteFolderOrFile) {
  EXPECT_EQ(LoadTokenizer("byte")->Name(), "byte");
  EXPECT_EQ(LoadTokenizer("byte")->VocabSize(), 257);
  test::TempDir dir;
  const std::string path =
      dir.Write("model/tokenizer.json", ByteLevelFile({}, {}).dump());
  EXPECT_EQ(LoadTokenizer(dir.Path("model"))->VocabSize(), 256);
  EXPECT_EQ(LoadTokenizer(path)->Name(), path);
  ROTOR_EXPECT_ERROR(LoadTokenizer(dir.Path("missing.json")), "cannot open");
}

}  // namespace
}  // namespace rotor::train
