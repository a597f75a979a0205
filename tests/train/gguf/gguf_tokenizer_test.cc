// GgufVocabFor lays the tokenizer's ids out one text per id; a
// tokenizer.json whose vocabulary and added tokens give one id two texts,
// or one text two ids, never reaches that layout: loading the tokenizer
// refuses it first, naming the ids and the text.
#include "train/gguf/gguf_tokenizer.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "tests/temp_dir.h"
#include "tests/test_util.h"
#include "train/io/json.h"
#include "train/tokenizer/bpe_trainer.h"
#include "train/tokenizer/byte_level_bpe_json.h"

namespace rotor::train {
namespace {

// A byte-level BPE tokenizer.json: "a", "b", "ab", special "<s>" at 3.
std::string BaseTokenizerJson() {
  return ByteLevelBpeTokenizerJson({"a", "b", "ab", "<s>"}, {3}, {{0, 1}},
                                   kLlama3SplitPattern);
}

// BaseTokenizerJson
// edited by `edit`, written to `dir`; its path.
std::string EditedTokenizer(test::TempDir& dir,
                            const std::function<void(Json&)>& edit) {
  Json json = ParseJson(BaseTokenizerJson(), "base");
  edit(json);
  return dir.Write("tokenizer.json", json.dump());
}

Json Added(int id, const std::string& content) {
  return Json{{"id", id},        {"content", content}, {"single_word", false},
              {"lstrip", false}, {"rstrip", false},    {"normalized", false},
              {"special", false}};
}

TEST(GgufTokenizer, TheUneditedTokenizerIsExported) {
  test::TempDir dir;
  const GgufVocab vocab =
      GgufVocabFor(EditedTokenizer(dir, [](Json&) {}), 6, ModelConfig{});
  EXPECT_EQ(vocab.tokens, (std::vector<std::string>{"a", "b", "ab", "<s>",
                                                    "[PAD4]", "[PAD5]"}));
}

TEST(GgufTokenizer, AnIdWithTwoTextsIsRefusedBeforeExport) {
  test::TempDir dir;
  // Two vocabulary entries.
  ROTOR_EXPECT_ERROR(
      GgufVocabFor(
          EditedTokenizer(dir, [](Json& j) { j["model"]["vocab"]["ab"] = 0; }),
          6, ModelConfig{}),
      "tokenizer.json", "id 0 is also the id of \"a\"");
  // An added token on a vocabulary entry's id.
  ROTOR_EXPECT_ERROR(
      GgufVocabFor(
          EditedTokenizer(
              dir, [](Json& j) { j["added_tokens"].push_back(Added(1, "x")); }),
          6, ModelConfig{}),
      "tokenizer.json", "id 1 of added token \"x\"",
      "the id of vocabulary token \"b\"");
  // Two added tokens.
  ROTOR_EXPECT_ERROR(
      GgufVocabFor(EditedTokenizer(dir,
                                   [](Json& j) {
                                     j["added_tokens"].push_back(Added(4, "x"));
                                     j["added_tokens"].push_back(Added(4, "y"));
                                   }),
                   6, ModelConfig{}),
      "tokenizer.json", "id 4 of added token \"y\"",
      "the id of an earlier added token");
}

TEST(GgufTokenizer, ATextWithTwoIdsIsRefusedBeforeExport) {
  // An added token whose text is a vocabulary entry's.
  test::TempDir dir;
  ROTOR_EXPECT_ERROR(GgufVocabFor(EditedTokenizer(dir,
                                                  [](Json& j) {
                                                    j["added_tokens"].push_back(
                                                        Added(4, "ab"));
                                                  }),
                                  6, ModelConfig{}),
                     "tokenizer.json", "added token \"ab\" has id 4",
                     "the vocabulary gives it 2");
  // Two added tokens with one text.
  ROTOR_EXPECT_ERROR(
      GgufVocabFor(EditedTokenizer(dir,
                                   [](Json& j) {
                                     j["added_tokens"].push_back(Added(4, "x"));
                                     j["added_tokens"].push_back(Added(5, "x"));
                                   }),
                   6, ModelConfig{}),
      "tokenizer.json", "added token \"x\" is listed twice");
  // Two vocabulary entries with one text: a repeated JSON key.
  const std::string twice = dir.Write(
      "twice.json", test::ReplaceOnce(BaseTokenizerJson(), "\"ab\": 2",
                                      "\"ab\": 2, \"a\": 4"));
  ROTOR_EXPECT_ERROR(GgufVocabFor(twice, 6, ModelConfig{}), "twice.json",
                     "duplicate key \"a\"");
}

// add_bos_token and bos_token_id say what a text starts with, as the
// model's texts did in training: a model rotor trained starts with the
// document separator even when the tokenizer adds no BOS (the BPE trainer's
// <|endoftext|>, SmolLM's); a Hugging Face model as its tokenizer says.
TEST(GgufTokenizer, AddBosIsWhatTheModelsTextsStartedWith) {
  test::TempDir dir;
  const std::string no_bos =
      dir.Write("no_bos.json",
                ByteLevelBpeTokenizerJson({"a", "b", "ab", "<|endoftext|>"},
                                          {3}, {{0, 1}}, kLlama3SplitPattern));
  GgufVocab vocab =
      GgufVocabFor(no_bos, 4, ModelConfig{}, PromptStart::kDocumentSeparator);
  EXPECT_TRUE(vocab.add_bos);
  EXPECT_EQ(vocab.bos_id, 3);
  vocab = GgufVocabFor(no_bos, 4, ModelConfig{}, PromptStart::kTokenizerBos);
  EXPECT_FALSE(vocab.add_bos);
  EXPECT_EQ(vocab.bos_id, 3);  // declared all the same
  // The byte tokenizer: <|endoftext|>, 256, either way.
  for (const PromptStart start :
       {PromptStart::kDocumentSeparator, PromptStart::kTokenizerBos}) {
    vocab = GgufVocabFor("byte", 257, ModelConfig{}, start);
    EXPECT_TRUE(vocab.add_bos);
    EXPECT_EQ(vocab.bos_id, 256);
    EXPECT_FALSE(vocab.add_eos);
  }
  // A Llama-style tokenizer whose post-processor adds <s> (3): its BOS,
  // whatever config.json declares.
  const std::string llama = EditedTokenizer(dir, [](Json& json) {
    json["post_processor"] = ParseJson(
        R"({"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [3],
                                       "tokens": ["<s>"]}}})",
        "template");
  });
  ModelConfig declared;
  declared.bos_token_id = 1;
  vocab = GgufVocabFor(llama, 4, declared, PromptStart::kTokenizerBos);
  EXPECT_TRUE(vocab.add_bos);
  EXPECT_EQ(vocab.bos_id, 3);
}

}  // namespace
}  // namespace rotor::train
