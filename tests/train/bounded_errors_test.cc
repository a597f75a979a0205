// Errors quote hostile input in bounded pieces (train/io/message.h): a
// 900 KB number, a 900 KB name or key, 60,000 unknown keys, a long run of
// combining marks must not turn into an error line as long as itself. Each
// case goes through the parser that reads it (JSON, config.json, a YAML
// config, tokenizer.json, a safetensors header) and checks that the message
// still names the problem and the file, says how long the quoted piece was,
// and stays short.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "tests/test_util.h"
#include "train/config/hf_config.h"
#include "train/config/model_config.h"
#include "train/config/train_config.h"
#include "train/io/json.h"
#include "train/io/safetensors.h"
#include "train/tokenizer/hf_tokenizer.h"

namespace rotor::train {
namespace {

const std::string kDigits(900'000, '1');
const std::string kName(900'000, 'x');
// "a" and 100,000 U+0301 (2 bytes each): cut between two marks.
const std::string kMarks = [] {
  std::string marks = "a";
  for (int i = 0; i < 100'000; ++i) marks += "\xCC\x81";
  return marks;
}();

std::string Replace(const std::string& text, const std::string& from,
                    const std::string& to) {
  return test::ReplaceOnce(text, from, to);
}

std::string ErrorOf(const std::function<void()>& parse) {
  try {
    parse();
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

// The error of `parse` names `file` and `problem`, quotes a piece of the
// input that says its length (`bytes`: of the value, or of a key path such
// as "train.KEY"), and is at most 1000 bytes long (an unknown key's message
// lists the known ones).
void ExpectBounded(const std::function<void()>& parse, const std::string& file,
                   const std::string& problem, size_t bytes) {
  const std::string message = ErrorOf(parse);
  SCOPED_TRACE(message.substr(0, 300));
  EXPECT_LE(message.size(), 1000u);
  EXPECT_CONTAINS(message, file);
  EXPECT_CONTAINS(message, problem);
  EXPECT_CONTAINS(message, "... (" + std::to_string(bytes) + " bytes)");
}

constexpr char kConfigJson[] = R"({"model_type": "llama",
  "architectures": ["LlamaForCausalLM"], "hidden_size": 64,
  "intermediate_size": 128, "num_hidden_layers": 2,
  "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 300,
  "max_position_embeddings": 128)";

void ParseConfigJson(const std::string& members) {
  ParseHfConfig(std::string(kConfigJson) + members + "}", "m/config.json");
}

TEST(BoundedErrors, Json) {
  ExpectBounded([] { ParseJson("{\"a\": " + kDigits + "}", "x.json"); },
                "x.json: invalid JSON", "number overflow", kDigits.size());
  ExpectBounded(
      [] {
        ParseJson("{\"" + kName + "\": 1, \"" + kName + "\": 2}", "x.json");
      },
      "x.json", "duplicate key", kName.size());
  ExpectBounded(
      [] { ParseJson("{\"" + kName + "\": {\"a\": 1, \"a\": 2}}", "x.json"); },
      "x.json", "duplicate key \"a\" at /xxx", kName.size());
}

TEST(BoundedErrors, ConfigJson) {
  const auto quoted = [](const std::string& text) {
    return "\"" + text + "\"";
  };
  ExpectBounded([&] { ParseConfigJson(", \"rope_theta\": " + kDigits); },
                "m/config.json", "number overflow", kDigits.size());
  for (const std::string& key : {"model_type", "hidden_act", "torch_dtype"}) {
    ExpectBounded(
        [&] {
          ParseHfConfig(
              Replace(std::string(kConfigJson), "\"model_type\": \"llama\"",
                      key == "model_type" ? "\"model_type\": " + quoted(kName)
                                          : "\"model_type\": \"llama\", \"" +
                                                key + "\": " + quoted(kName)) +
                  "}",
              "m/config.json");
        },
        "m/config.json", key + ": 'xxx", kName.size());
  }
  ExpectBounded(
      [&] {
        ParseConfigJson(", \"vocab_size2\": 1, \"eos_token_id\": " +
                        quoted(kMarks));
      },
      "m/config.json", "eos_token_id: expected a decimal integer, got 'a",
      kMarks.size());
  ExpectBounded(
      [&] { ParseConfigJson(", \"layer_types\": [" + quoted(kName) + "]"); },
      "m/config.json", "layer_types[0]: expected full_attention",
      kName.size() + 2);
  ExpectBounded(
      [&] {
        ParseConfigJson(", \"rope_scaling\": {\"rope_type\": " + quoted(kName) +
                        ", \"factor\": 2}");
      },
      "m/config.json", "unknown rope_type 'xxx", kName.size());
  ExpectBounded(
      [&] {
        ParseConfigJson(", \"rope_scaling\": {\"rope_type\": \"linear\", " +
                        quoted(kName) + ": 2}");
      },
      "m/config.json", "unknown key", kName.size() + 13);
}

TEST(BoundedErrors, YamlConfig) {
  const std::string data = "data:\n  path: d\n";
  const std::string model =
      "model:\n  vocab_size: 257\n  hidden_size: 32\n"
      "  intermediate_size: 64\n  num_hidden_layers: 2\n"
      "  num_attention_heads: 4\n  max_position_embeddings: 64\n";
  ExpectBounded(
      [&] {
        ParseModelConfigText(
            Replace(model, "vocab_size: 257", "vocab_size: " + kName),
            "m.yaml");
      },
      "m.yaml", "model.vocab_size: expected a decimal integer, got 'xxx",
      kName.size());
  ExpectBounded(
      [&] {
        ParseModelConfigText(model + "  ? " + kName + "\n  : 1\n", "m.yaml");
      },
      "m.yaml", "unknown key", kName.size());
  ExpectBounded(
      [&] {
        ParseTrainConfig(
            model + data + "train:\n  batch_size: " + kMarks + "\n", "t.yaml");
      },
      "t.yaml", "train.batch_size: expected a decimal integer, got 'a",
      kMarks.size());
  ExpectBounded(
      [&] {
        ParseTrainConfig(model + data + "train:\n  ? " + kName + "\n  : 1\n",
                         "t.yaml");
      },
      "t.yaml", "unknown key", kName.size() + 6);
}

constexpr char kTokenizerJson[] = R"({"version": "1.0", "added_tokens": [],
  "normalizer": null, "pre_tokenizer": null, "post_processor": null,
  "decoder": null, "model": {"type": "BPE", "unk_token": "<unk>",
  "vocab": {"<unk>": 0, "a": 1, "b": 2, "ab": 3}, "merges": ["a b"]}})";

void ParseTokenizer(const std::string& from, const std::string& to) {
  HfTokenizer::Parse(Replace(kTokenizerJson, from, to), "t/tokenizer.json");
}

TEST(BoundedErrors, TokenizerJson) {
  const std::string file = "t/tokenizer.json";
  ExpectBounded([] { ParseTokenizer("\"b\": 2", "\"b\": " + kDigits); }, file,
                "number overflow", kDigits.size());
  ExpectBounded(
      [] {
        ParseTokenizer("\"type\": \"BPE\"", "\"type\": \"" + kName + "\"");
      },
      file, "unsupported model type \"xxx", kName.size());
  ExpectBounded(
      [] {
        ParseTokenizer("\"type\": \"BPE\"", "\"type\": \"" + kMarks + "\"");
      },
      file, "unsupported model type \"a", kMarks.size());
  ExpectBounded(
      [] {
        ParseTokenizer("\"normalizer\": null",
                       "\"normalizer\": {\"type\": \"" + kName + "\"}");
      },
      file, "unsupported normalizer type", kName.size());
  ExpectBounded([] { ParseTokenizer("\"a b\"", "\"" + kName + "\""); }, file,
                "expected \"left right\"", kName.size() + 2);
  ExpectBounded(
      [] { ParseTokenizer("\"b\": 2", "\"b\": 2, \"" + kName + "\": -1"); },
      file, "/model/vocab/xxx", kName.size());
}

TEST(BoundedErrors, SafetensorsHeader) {
  const std::string header = "{\"" + kName + "\": {\"dtype\": \"F32\"}}";
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) {
    bytes[i] =
        static_cast<char>(static_cast<uint64_t>(header.size()) >> (8 * i));
  }
  ExpectBounded(
      [&] { SafetensorsFile::Parse(bytes + header, "w.safetensors"); },
      "w.safetensors", "tensor 'xxx", kName.size());
}

}  // namespace
}  // namespace rotor::train
