// rotor's GGUF files against the real llama.cpp (llama_cpp_reference.h):
// llama.cpp loads each file, @huggingface/gguf reads back every key, and
// llama.cpp's next-token log-probabilities over a sequence of 4x the
// original context equal rotor's (train/eval/score.h), for each RoPE
// scaling method and each dtype. The expected values come from llama.cpp
// at test time, never from rotor's writer. Skips, naming
// scripts/fetch_llama_cpp.sh, without the packages.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "nn/transformer.h"
#include "tests/temp_dir.h"
#include "tests/train/gguf/llama_cpp_reference.h"
#include "tests/train/tokenizer/hf_reference.h"
#include "train/config/model_config.h"
#include "train/eval/score.h"
#include "train/gguf/gguf_export.h"
#include "train/io/atomic_file.h"
#include "train/io/json.h"
#include "train/tokenizer/bpe_trainer.h"
#include "train/tokenizer/byte_level_bpe_json.h"
#include "train/tokenizer/byte_tokenizer.h"

namespace rotor::train {
namespace {

using test::TempDir;

constexpr int64_t kOriginalContext = 64;

// A tiny byte-level Llama (configs/tiny.yaml's shape, wider initial
// weights so that its next-token distributions are far from uniform and
// a wrong angle shows) with `rope` as its RoPE lines.
ModelConfig TinyModel(const std::string& rope) {
  return ParseModelConfigText(R"(
model:
  vocab_size: 257
  hidden_size: 64
  intermediate_size: 128
  num_hidden_layers: 2
  num_attention_heads: 4
  num_key_value_heads: 2
  rms_norm_eps: 1.0e-5
  tie_word_embeddings: true
  initializer_range: 0.3
)" + rope,
                              "tiny.yaml");
}

// The bytes of an English text, `length` of them, as ids.
std::vector<TokenId> TextIds(int64_t length) {
  const std::string sentence =
      "The quick brown fox jumps over the lazy dog, and then it runs far "
      "away into the forest where nobody can find it again. ";
  std::string text;
  while (static_cast<int64_t>(text.size()) < length) text += sentence;
  text.resize(static_cast<size_t>(length));
  return ByteTokenizer::Encode(text);
}

struct Comparison {
  double max_error = 0.0;  // max |llama.cpp - rotor| over the positions
  double spread = 0.0;     // max - min of rotor's log-probs
  int64_t positions = 0;
  nlohmann::json llama_cpp;  // the script's output
};

// Writes `model` as GGUF, scores `ids` with rotor and with llama.cpp, and
// compares the log-probabilities.
Comparison Compare(nn::Transformer& model, const ModelConfig& config,
                   const GgufExportOptions& options,
                   const std::vector<TokenId>& ids, const TempDir& dir) {
  const std::string path = dir.Path("model.gguf");
  GgufExportOptions write = options;
  write.force = true;
  WriteGgufModel(path, model, config, "byte", write);
  const TokenScores rotor = ScoreTokens(model, ids, false);
  Comparison out;
  out.llama_cpp = test::RunLlamaCpp(
      {path, {}, false, ids, static_cast<int64_t>(ids.size())}, dir.path());
  if (out.llama_cpp.is_null()) return out;
  const test::LogProbComparison c =
      test::CompareLogProbs(rotor, out.llama_cpp, 0.0);
  out.max_error = c.max_error;
  out.spread = c.spread;
  out.positions = static_cast<int64_t>(ids.size()) - 1;
  return out;
}

class GgufLlamaCpp : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string missing = test::MissingLlamaCpp();
    if (!missing.empty()) GTEST_SKIP() << missing;
  }
  TempDir dir_;
};

TEST_F(GgufLlamaCpp, ByteModelLoadsAndMatchesRotorsLogProbs) {
  const ModelConfig config = TinyModel(R"(
  max_position_embeddings: 64
  rope_theta: 10000.0
)");
  nn::Transformer model(ResolveTransformerConfig(config), 1);
  const std::vector<TokenId> ids = TextIds(4 * kOriginalContext);
  const Comparison result = Compare(model, config, {}, ids, dir_);
  ASSERT_FALSE(result.llama_cpp.is_null());
  std::printf("byte f32 none: max |error| %.3g over %lld positions\n",
              result.max_error, static_cast<long long>(result.positions));
  EXPECT_LT(result.max_error, 1e-3);
  // A meaningful comparison: the model's log-probs vary by nats.
  EXPECT_GT(result.spread, 1.0);

  // Every key rotor wrote, read back by @huggingface/gguf: exactly these
  // (besides the reader's own version, tensor_count and kv_count).
  const auto& metadata = result.llama_cpp.at("metadata");
  const nlohmann::json expected = {
      {"general.architecture", "llama"},
      {"general.name", "rotor model"},
      {"general.file_type", 0},
      {"general.quantization_version", 2},
      {"llama.vocab_size", 257},
      {"llama.context_length", 64},
      {"llama.embedding_length", 64},
      {"llama.block_count", 2},
      {"llama.feed_forward_length", 128},
      {"llama.attention.head_count", 4},
      {"llama.attention.head_count_kv", 2},
      {"llama.attention.key_length", 16},
      {"llama.attention.value_length", 16},
      {"llama.rope.dimension_count", 16},
      {"llama.rope.freq_base", 10000.0},
      {"llama.attention.layer_norm_rms_epsilon", 1e-5},
      {"llama.rope.scaling.type", "none"},
      {"tokenizer.ggml.model", "gpt2"},
      {"tokenizer.ggml.pre", "default"},
      {"tokenizer.ggml.bos_token_id", 256},
      {"tokenizer.ggml.eos_token_id", 256},
      // rotor trained every document after <|endoftext|>: texts start
      // with it.
      {"tokenizer.ggml.add_bos_token", true},
      {"tokenizer.ggml.add_eos_token", false}};
  std::vector<std::string> arrays = {"tokenizer.ggml.tokens",
                                     "tokenizer.ggml.token_type",
                                     "tokenizer.ggml.merges"};
  EXPECT_EQ(metadata.size(), 3 + expected.size() + arrays.size());
  EXPECT_EQ(metadata.at("kv_count").at("value"),
            expected.size() + arrays.size());
  for (const auto& [key, want] : expected.items()) {
    ASSERT_TRUE(metadata.contains(key)) << key;
    const auto& got = metadata.at(key).at("value");
    if (want.is_number_float()) {
      // f32 keys: the float nearest the value.
      EXPECT_EQ(got.get<double>(),
                static_cast<double>(static_cast<float>(want.get<double>())))
          << key;
    } else {
      EXPECT_EQ(got, want) << key;
    }
  }
  // The vocabulary: GPT-2's byte characters with their bytes' ids, then
  // <|endoftext|>; every byte a normal token (1), <|endoftext|> control (3).
  const auto& tokens = metadata.at("tokenizer.ggml.tokens").at("values");
  ASSERT_EQ(tokens.size(), 257u);
  EXPECT_EQ(tokens[int{'A'}], "A");
  EXPECT_EQ(tokens[int{' '}], "\xC4\xA0");  // U+0120, GPT-2's space
  EXPECT_EQ(tokens[256], "<|endoftext|>");
  const auto& types = metadata.at("tokenizer.ggml.token_type").at("values");
  EXPECT_EQ(std::count(types.begin(), types.end(), 1), 256);
  EXPECT_EQ(types[256], 3);
  EXPECT_EQ(metadata.at("tokenizer.ggml.merges").at("length"), 0);
  // Tied embeddings: no output.weight, llama.cpp reuses token_embd.
  std::vector<std::string> names;
  for (const auto& tensor : result.llama_cpp.at("tensors")) {
    names.push_back(tensor.at("name"));
  }
  EXPECT_EQ(std::count(names.begin(), names.end(), "output.weight"), 0);
  EXPECT_EQ(std::count(names.begin(), names.end(), "token_embd.weight"), 1);
  EXPECT_EQ(names.size(), 2u + 2u * 9u);  // embd, output_norm, 9 per layer
}

TEST_F(GgufLlamaCpp, ByteTokenizerGivesTheSameIds) {
  const ModelConfig config = TinyModel("  max_position_embeddings: 64\n");
  nn::Transformer model(ResolveTransformerConfig(config), 1);
  const std::string path = dir_.Path("model.gguf");
  WriteGgufModel(path, model, config, "byte", {});
  const std::vector<std::string> texts = {
      "Hello, world!", "  two  spaces\nand\ttabs", "caf\xC3\xA9 \xE6\x97\xA5",
      "<|endoftext|> is text here", "12345 67"};
  const nlohmann::json out =
      test::RunLlamaCpp({path, texts, false, {}, 0}, dir_.path());
  ASSERT_FALSE(out.is_null());
  for (size_t i = 0; i < texts.size(); ++i) {
    EXPECT_EQ(out.at("tokens")[i].get<std::vector<TokenId>>(),
              ByteTokenizer::Encode(texts[i]))
        << texts[i];
  }
}

// One RoPE method at 4x the original context (64 -> 256 positions).
struct ScalingCase {
  const char* name;
  const char* rope_scaling;  // YAML lines under model.rope_scaling
  const char* how;           // what the export turns it into
  int64_t static_length = 0;
};

const ScalingCase kScalingCases[] = {
    {"linear", "    rope_type: linear\n    factor: 4\n", "linear keys"},
    {"ntk", "    rope_type: ntk\n    factor: 4\n", "rope_freqs"},
    {"yarn",
     "    rope_type: yarn\n    factor: 4\n"
     "    original_max_position_embeddings: 64\n",
     "yarn keys"},
    {"yarn_attention_factor",
     "    rope_type: yarn\n    factor: 4\n"
     "    original_max_position_embeddings: 64\n    attention_factor: 1.3\n",
     "yarn keys"},
    {"yarn_beta_fast_16",
     "    rope_type: yarn\n    factor: 4\n"
     "    original_max_position_embeddings: 64\n    beta_fast: 16\n",
     "rope_freqs"},
    {"llama3",
     "    rope_type: llama3\n    factor: 4\n    low_freq_factor: 1\n"
     "    high_freq_factor: 4\n    original_max_position_embeddings: 64\n",
     "rope_freqs"},
    {"longrope",
     "    rope_type: longrope\n    factor: 4\n"
     "    original_max_position_embeddings: 64\n"
     "    short_factor: [1, 1, 1, 1, 1, 1, 1, 1]\n"
     "    long_factor: [1, 1.2, 1.5, 2, 2.5, 3, 3.5, 4]\n",
     "rope_freqs"},
    {"dynamic", "    rope_type: dynamic\n    factor: 4\n", "rope_freqs", 256},
};

class GgufLlamaCppScaling : public GgufLlamaCpp,
                            public ::testing::WithParamInterface<ScalingCase> {
};

TEST_P(GgufLlamaCppScaling, MatchesRotorAtFourTimesTheContext) {
  const ScalingCase& c = GetParam();
  // dynamic's max_position_embeddings is its original length.
  const bool dynamic = std::string(c.name) == "dynamic";
  const ModelConfig config = TinyModel(
      std::string("  max_position_embeddings: ") + (dynamic ? "64" : "256") +
      "\n  rope_theta: 10000.0\n  rope_scaling:\n" + c.rope_scaling);
  nn::Transformer model(ResolveTransformerConfig(config), 2);
  GgufExportOptions options;
  if (c.static_length > 0) options.rope_static_length = c.static_length;
  const std::vector<TokenId> ids = TextIds(4 * kOriginalContext);
  const Comparison result = Compare(model, config, options, ids, dir_);
  ASSERT_FALSE(result.llama_cpp.is_null());
  std::printf("byte f32 %s: max |error| %.3g over %lld positions\n", c.name,
              result.max_error, static_cast<long long>(result.positions));
  EXPECT_LT(result.max_error, 1e-3);
  EXPECT_GT(result.spread, 1.0);
  const auto& tensors = result.llama_cpp.at("tensors");
  const bool has_freqs = std::any_of(
      tensors.begin(), tensors.end(),
      [](const auto& t) { return t.at("name") == "rope_freqs.weight"; });
  EXPECT_EQ(has_freqs, std::string(c.how) == "rope_freqs");
  const auto& metadata = result.llama_cpp.at("metadata");
  const std::string type =
      metadata.at("llama.rope.scaling.type").at("value").get<std::string>();
  EXPECT_EQ(type, std::string(c.how) == "linear keys" ? "linear"
                  : std::string(c.how) == "yarn keys" ? "yarn"
                                                      : "none");
  if (type != "none") {
    EXPECT_EQ(metadata.at("llama.rope.scaling.factor").at("value"), 4.0);
  }
  if (type == "yarn") {
    EXPECT_EQ(
        metadata.at("llama.rope.scaling.original_context_length").at("value"),
        64);
  }
  EXPECT_EQ(metadata.at("llama.rope.scaling.finetuned").at("value"), false);
}

INSTANTIATE_TEST_SUITE_P(Methods, GgufLlamaCppScaling,
                         ::testing::ValuesIn(kScalingCases),
                         [](const ::testing::TestParamInfo<ScalingCase>& info) {
                           return std::string(info.param.name);
                         });

// The comparison sees RoPE: the same weights written without the scaling
// differ from rotor's scaled model by far more than the bound.
TEST_F(GgufLlamaCpp, AMissingScalingIsCaught) {
  const ModelConfig scaled = TinyModel(
      "  max_position_embeddings: 256\n  rope_scaling:\n"
      "    rope_type: linear\n    factor: 4\n");
  const ModelConfig plain = TinyModel("  max_position_embeddings: 256\n");
  nn::Transformer model(ResolveTransformerConfig(scaled), 2);
  nn::Transformer unscaled(ResolveTransformerConfig(plain), 2);
  const std::string path = dir_.Path("plain.gguf");
  WriteGgufModel(path, unscaled, plain, "byte", {});
  const std::vector<TokenId> ids = TextIds(4 * kOriginalContext);
  const TokenScores rotor = ScoreTokens(model, ids, false);
  const nlohmann::json out = test::RunLlamaCpp(
      {path, {}, false, ids, static_cast<int64_t>(ids.size())}, dir_.path());
  ASSERT_FALSE(out.is_null());
  EXPECT_GT(test::CompareLogProbs(rotor, out, 0.0).max_error, 0.1);
}

// Refused before anything is written.
TEST(GgufExport, DynamicWithoutAStaticLengthIsRefusedAndNothingWritten) {
  TempDir dir;
  const ModelConfig config = TinyModel(
      "  max_position_embeddings: 64\n  rope_scaling:\n"
      "    rope_type: dynamic\n    factor: 4\n");
  nn::Transformer model(ResolveTransformerConfig(config), 1);
  const std::string path = dir.Path("model.gguf");
  try {
    WriteGgufModel(path, model, config, "byte", {});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("llama.cpp has no dynamic NTK"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("--rope-static-length 256"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(dir.List().empty());
}

TEST(GgufExport, AnUnknownSplitRegexIsRefusedNamingIt) {
  TempDir dir;
  const std::string tokenizer = dir.Write(
      "tokenizer.json",
      ByteLevelBpeTokenizerJson({"a", "b", "ab"}, {}, {{0, 1}}, "[ab]+|\\s+"));
  ModelConfig config = TinyModel("  max_position_embeddings: 64\n");
  nn::Transformer model(ResolveTransformerConfig(config), 1);
  try {
    WriteGgufModel(dir.Path("model.gguf"), model, config, tokenizer, {});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("llama.cpp has no pre-tokenizer"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("[ab]+"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(dir.List(), std::vector<std::string>{"tokenizer.json"});
}

// llama.cpp's tokenization of the tokenizer conformance inputs (tests/train/
// tokenizer/adversarial/, the .txt ones: JSON carries text) equals
// rotor's, special tokens in the text cut out on both sides.
void ExpectSameTokenization(const test::ReferenceTokenizer& reference,
                            int64_t scored_tokens,
                            const std::string& written_as, const TempDir& dir) {
  const std::string missing = test::MissingReference(reference);
  if (!missing.empty()) GTEST_SKIP() << missing;
  const std::unique_ptr<Tokenizer> tokenizer =
      LoadTokenizer(reference.TokenizerJson());
  ModelConfig config = TinyModel("  max_position_embeddings: 64\n");
  config.vocab_size = tokenizer->VocabSize();
  config.hidden_size = 32;
  config.intermediate_size = 32;
  config.rope.head_dim = 8;
  nn::Transformer model(ResolveTransformerConfig(config), 1);
  const std::string path = dir.Path("model.gguf");
  const std::string summary =
      WriteGgufModel(path, model, config, reference.TokenizerJson(), {});
  std::printf("%s\n", summary.c_str());
  EXPECT_NE(summary.find(written_as), std::string::npos) << summary;
  std::vector<std::string> texts;
  std::vector<std::string> names;
  for (const test::ReferenceInput& input : test::AdversarialInputs()) {
    // The .bin inputs are invalid UTF-8, which JSON cannot carry.
    if (input.name.size() > 4 &&
        input.name.compare(input.name.size() - 4, 4, ".bin") == 0) {
      continue;
    }
    texts.push_back(input.bytes);
    names.push_back(input.name);
  }
  // Also the model's log-probabilities over `scored_tokens` of text (the
  // BOS first when the tokenizer adds one); llama.cpp gives a whole
  // distribution per position, 128,256 probabilities for Llama 3.
  std::string english;
  while (english.size() < 400) {
    english += "The quick brown fox jumps over the lazy dog. ";
  }
  std::vector<TokenId> ids = tokenizer->Encode(english, true);
  ids.resize(static_cast<size_t>(scored_tokens));
  const nlohmann::json out =
      test::RunLlamaCpp({path, texts, true, ids, 64}, dir.path());
  ASSERT_FALSE(out.is_null());
  const TokenScores rotor = ScoreTokens(model, ids, false);
  const double max_error = test::CompareLogProbs(rotor, out, 0.0).max_error;
  std::printf("%s f32 none: max |error| %.3g over %zu positions\n",
              reference.name.c_str(), max_error, ids.size() - 1);
  EXPECT_LT(max_error, 1e-3);
  int same = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::vector<TokenId> mine = tokenizer->Encode(texts[i], false);
    const auto theirs = out.at("tokens")[i].get<std::vector<TokenId>>();
    EXPECT_EQ(theirs, mine) << reference.name << " " << names[i];
    same += theirs == mine;
  }
  std::printf("%s: %d of %zu texts tokenized alike\n", reference.name.c_str(),
              same, texts.size());
  const auto& metadata = out.at("metadata");
  EXPECT_EQ(out.at("bos"),
            metadata.at("tokenizer.ggml.bos_token_id").at("value"));
}

TEST_F(GgufLlamaCpp, Llama3TokenizerTokenizesLikeRotor) {
  ExpectSameTokenization(test::Llama3Reference(), 16, "gpt2 (pre llama-bpe)",
                         dir_);
}

TEST_F(GgufLlamaCpp, Llama2TokenizerTokenizesLikeRotor) {
  ExpectSameTokenization(test::Llama2Reference(), 64, "tokenizer llama", dir_);
}

// A byte-level BPE that rotor's trainer makes (bpe_trainer.h), with each
// split regex llama.cpp has a pre-tokenizer for: trained on the
// adversarial texts and English, 1,000 tokens.
std::string TrainedBpe(const std::string& pattern, const TempDir& dir) {
  std::vector<std::string> texts;
  for (const test::ReferenceInput& input : test::AdversarialInputs()) {
    texts.push_back(input.bytes);
  }
  std::string english;
  for (int i = 0; i < 50; ++i) {
    english +=
        "The quick brown fox jumps over the lazy dog's back; it's "
        "1234 or 56789 times, isn't it?\n";
  }
  texts.push_back(english);
  const std::vector<std::string_view> views(texts.begin(), texts.end());
  BpeTrainerOptions options;
  options.vocab_size = 1000;
  options.split_pattern = pattern;
  const BpeModel bpe = TrainBpe(CountWords(views, pattern), options);
  return dir.Write("trained.json", BpeTokenizerJson(bpe, options));
}

// Each split regex, and the pre-tokenizer llama.cpp gets for it.
struct TrainedBpeCase {
  const char* name;
  const char* pattern;
  const char* written_as;
};

const TrainedBpeCase kTrainedBpeCases[] = {
    // rotor's trainer writes ignore_merges false: llama.cpp's smaug-bpe,
    // Llama 3's regex without it.
    {"llama3_regex", kLlama3SplitPattern, "gpt2 (pre smaug-bpe)"},
    {"gpt2_regex",
     R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)",
     "gpt2 (pre gpt-2)"},
    {"qwen2_regex",
     R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     "gpt2 (pre qwen2)"},
};

class GgufLlamaCppTrainedBpe
    : public GgufLlamaCpp,
      public ::testing::WithParamInterface<TrainedBpeCase> {};

TEST_P(GgufLlamaCppTrainedBpe, TokenizesLikeRotor) {
  const TrainedBpeCase& c = GetParam();
  test::ReferenceTokenizer trained{c.name, "", {}, ""};
  trained.file = TrainedBpe(c.pattern, dir_);
  ExpectSameTokenization(trained, 64, c.written_as, dir_);
}

// The comparison sees the pre-tokenizer: the Llama 3 regex tokenizer's
// vocabulary and merges with GPT-2's regex in its file (so the export names
// llama.cpp's gpt-2) tokenize some of the texts differently in llama.cpp
// than the Llama 3 regex tokenizer does in rotor.
TEST_F(GgufLlamaCpp, AWrongPreTokenizerIsCaught) {
  const std::string file = TrainedBpe(kLlama3SplitPattern, dir_);
  std::string json = ReadFile(file);
  const std::string from = ShowAsJson(kLlama3SplitPattern);
  const std::string to = ShowAsJson(kTrainedBpeCases[1].pattern);
  const size_t at = json.find(from);
  ASSERT_NE(at, std::string::npos);
  json.replace(at, from.size(), to);
  const std::string wrong = dir_.Write("wrong.json", json);
  const std::unique_ptr<Tokenizer> right = LoadTokenizer(file);
  ModelConfig config = TinyModel("  max_position_embeddings: 64\n");
  config.vocab_size = right->VocabSize();
  nn::Transformer model(ResolveTransformerConfig(config), 1);
  const std::string path = dir_.Path("model.gguf");
  EXPECT_NE(WriteGgufModel(path, model, config, wrong, {}).find("pre gpt-2"),
            std::string::npos);
  std::vector<std::string> texts;
  for (const test::ReferenceInput& input : test::AdversarialInputs()) {
    if (input.name.size() > 4 &&
        input.name.compare(input.name.size() - 4, 4, ".txt") == 0) {
      texts.push_back(input.bytes);
    }
  }
  const nlohmann::json out =
      test::RunLlamaCpp({path, texts, true, {}, 0}, dir_.path());
  ASSERT_FALSE(out.is_null());
  int differ = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    differ += out.at("tokens")[i].get<std::vector<TokenId>>() !=
              right->Encode(texts[i], false);
  }
  std::printf("the wrong pre-tokenizer: %d of %zu texts differ\n", differ,
              texts.size());
  EXPECT_GT(differ, 0);
}

INSTANTIATE_TEST_SUITE_P(
    Regexes, GgufLlamaCppTrainedBpe, ::testing::ValuesIn(kTrainedBpeCases),
    [](const ::testing::TestParamInfo<TrainedBpeCase>& info) {
      return std::string(info.param.name);
    });

}  // namespace
}  // namespace rotor::train
