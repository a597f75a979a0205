// The model: section parser (train/config/model_config.h): HF keys, defaults,
// and an error naming file, line and key path for every kind of bad input.
#include "train/config/model_config.h"

#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "nn/rope_scaling.h"
#include "tests/test_util.h"

namespace rotor::train {
namespace {

// The error message of parsing `yaml` as cfg.yaml ("" if it parses).
std::string ErrorOf(const std::string& yaml) {
  try {
    ParseModelConfigText(yaml, "cfg.yaml");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Expects an error that starts with "cfg.yaml:<line>:" and names `key_path`
// and `detail`.
void ExpectError(const std::string& yaml, int line, const std::string& key_path,
                 const std::string& detail) {
  const std::string message = ErrorOf(yaml);
  ASSERT_FALSE(message.empty()) << "no error for:\n" << yaml;
  EXPECT_EQ(message.rfind("cfg.yaml:" + std::to_string(line) + ":", 0), 0u)
      << message;
  EXPECT_NE(message.find(key_path + ":"), std::string::npos) << message;
  EXPECT_NE(message.find(detail), std::string::npos) << message;
}

TEST(ModelConfig, ParsesAFullModelSection) {
  const ModelConfig config = ParseModelConfigText(R"(
data:
  path: ignored/by/this/parser
model:
  vocab_size: 32000
  hidden_size: 576
  intermediate_size: 1536
  num_hidden_layers: 30
  num_attention_heads: 9
  num_key_value_heads: 3
  rms_norm_eps: 1.0e-5
  tie_word_embeddings: true
  max_position_embeddings: 8192
  rope_theta: 100000
  rope_scaling:
    rope_type: yarn
    factor: 4
    original_max_position_embeddings: 2048
    beta_fast: 16
    truncate: false
)",
                                                  "cfg.yaml");
  EXPECT_EQ(config.vocab_size, 32000);
  EXPECT_EQ(config.hidden_size, 576);
  EXPECT_EQ(config.intermediate_size, 1536);
  EXPECT_EQ(config.num_hidden_layers, 30);
  EXPECT_EQ(config.num_attention_heads, 9);
  EXPECT_EQ(config.num_key_value_heads, 3);
  EXPECT_EQ(config.rms_norm_eps, 1.0e-5);
  EXPECT_EQ(config.tie_word_embeddings, true);
  const RopeScalingConfig& rope = config.rope;
  EXPECT_EQ(rope.head_dim, 64);  // 576 / 9
  EXPECT_EQ(rope.rope_theta, 100000.0);
  EXPECT_EQ(rope.max_position_embeddings, 8192);
  EXPECT_EQ(rope.rope_type, RopeType::kYarn);
  EXPECT_EQ(rope.factor, 4.0);
  EXPECT_EQ(rope.original_max_position_embeddings, 2048);
  EXPECT_EQ(rope.beta_fast, 16.0);
  EXPECT_EQ(rope.beta_slow, 1.0);  // default
  EXPECT_FALSE(rope.truncate);
}

TEST(ModelConfig, DefaultsAndLegacyTypeKey) {
  const ModelConfig config = ParseModelConfigText(R"(
model:
  head_dim: 128
  max_position_embeddings: 4096
  partial_rotary_factor: 0.5
  rope_scaling:
    type: linear
    factor: 2
)",
                                                  "cfg.yaml");
  EXPECT_EQ(config.rope.rope_theta, 10000.0);
  EXPECT_EQ(config.rope.head_dim, 128);
  EXPECT_EQ(config.rope.partial_rotary_factor, 0.5);
  EXPECT_EQ(config.rope.rope_type, RopeType::kLinear);
  EXPECT_FALSE(config.vocab_size.has_value());
  // rope_scaling: null (as in many HF config.json files) is default RoPE.
  const ModelConfig plain = ParseModelConfigText(
      "model:\n  head_dim: 64\n  max_position_embeddings: 2048\n"
      "  rope_scaling: null\n",
      "cfg.yaml");
  EXPECT_EQ(plain.rope.rope_type, RopeType::kDefault);
}

TEST(ModelConfig, LongRopeLists) {
  const ModelConfig config = ParseModelConfigText(R"(
model:
  head_dim: 8
  max_position_embeddings: 8192
  rope_scaling:
    rope_type: longrope
    original_max_position_embeddings: 2048
    attention_factor: 1.25
    short_factor: [1, 1.5, 2, 2.5]
    long_factor:
      - 1
      - 2
      - 4
      - 8
)",
                                                  "cfg.yaml");
  EXPECT_EQ(config.rope.rope_type, RopeType::kLongRope);
  EXPECT_EQ(*config.rope.short_factor, (std::vector<double>{1, 1.5, 2, 2.5}));
  EXPECT_EQ(*config.rope.long_factor, (std::vector<double>{1, 2, 4, 8}));
  EXPECT_EQ(config.rope.attention_factor, 1.25);
}

// Phi-3-128k's config.json puts original_max_position_embeddings at the top
// level: it sets L0 for the methods that read it, and the attention factor
// follows (sqrt(1 + ln 32 / ln 4096)). A different value in rope_scaling is
// an error (HF would silently take the top-level one).
TEST(ModelConfig, TopLevelOriginalMaxPositionEmbeddings) {
  const std::string phi3_yaml =
      "model:\n  head_dim: 8\n  max_position_embeddings: 131072\n"
      "  original_max_position_embeddings: 4096\n"
      "  rope_scaling:\n    type: longrope\n"
      "    short_factor: [1, 1, 1, 1]\n    long_factor: [1, 1, 1, 1]\n";
  const ModelConfig phi3 = ParseModelConfigText(phi3_yaml, "cfg.yaml");
  EXPECT_EQ(phi3.rope.original_max_position_embeddings, 4096);
  EXPECT_NEAR(ComputeRopeFrequencies(phi3.rope, 1).attention_factor,
              1.1902380714238083, 1e-12);
  ExpectError(phi3_yaml + "    original_max_position_embeddings: 2048\n", 4,
              "original_max_position_embeddings",
              "4096 contradicts rope_scaling.original_max_position_embeddings "
              "2048");
  EXPECT_EQ(ParseModelConfigText(
                phi3_yaml + "    original_max_position_embeddings: 4096\n",
                "cfg.yaml")
                .rope.original_max_position_embeddings,
            4096);
  // Methods without L0 ignore it, as HF does.
  const ModelConfig linear = ParseModelConfigText(
      "model:\n  head_dim: 8\n  max_position_embeddings: 1024\n"
      "  original_max_position_embeddings: 256\n"
      "  rope_scaling: {rope_type: linear, factor: 4}\n",
      "cfg.yaml");
  EXPECT_FALSE(linear.rope.original_max_position_embeddings.has_value());
  ExpectError(
      "model:\n  head_dim: 8\n  max_position_embeddings: 1024\n"
      "  original_max_position_embeddings: 1\n"
      "  rope_scaling: {rope_type: yarn, factor: 4}\n",
      4, "rope_scaling.original_max_position_embeddings", "must be >= 2");
}

TEST(ModelConfig, UnknownRopeType) {
  ExpectError(R"(model:
  head_dim: 64
  max_position_embeddings: 2048
  rope_scaling:
    rope_type: ntk-by-parts
    factor: 2
)",
              5, "model.rope_scaling.rope_type",
              "unknown rope_type 'ntk-by-parts' (known: default, linear");
}

TEST(ModelConfig, UnknownKeys) {
  ExpectError(R"(model:
  head_dim: 64
  max_position_embeddings: 2048
  rope_base: 10000
)",
              4, "model.rope_base", "unknown key");
  ExpectError(R"(model:
  head_dim: 64
  max_position_embeddings: 2048
  rope_scaling:
    rope_type: yarn
    factor: 2
    beta_fastest: 64
)",
              7, "model.rope_scaling.beta_fastest", "unknown key");
  // A real key that belongs to another rope_type.
  ExpectError(R"(model:
  head_dim: 64
  max_position_embeddings: 2048
  rope_scaling:
    rope_type: linear
    factor: 2
    beta_fast: 32
)",
              7, "model.rope_scaling.beta_fast",
              "does not apply to rope_type 'linear' (its keys: factor)");
}

TEST(ModelConfig, MissingRequiredKeys) {
  ExpectError(R"(model:
  head_dim: 64
  max_position_embeddings: 2048
  rope_scaling:
    rope_type: llama3
    factor: 8
    low_freq_factor: 1
    original_max_position_embeddings: 8192
)",
              5, "model.rope_scaling.high_freq_factor",
              "required for rope_type 'llama3' but missing");
  ExpectError(R"(model:
  head_dim: 64
  max_position_embeddings: 2048
  rope_scaling:
    rope_type: dynamic
)",
              5, "model.rope_scaling.factor",
              "required for rope_type 'dynamic' but missing");
  ExpectError(R"(model:
  head_dim: 64
  max_position_embeddings: 2048
  rope_scaling:
    factor: 2
)",
              5, "model.rope_scaling.rope_type", "required but missing");
  ExpectError(R"(model:
  head_dim: 64
)",
              2, "model.max_position_embeddings", "required but missing");
  ExpectError(R"(model:
  max_position_embeddings: 2048
  vocab_size: 100
)",
              2, "model.head_dim",
              "give head_dim, or hidden_size and num_attention_heads");
}

TEST(ModelConfig, FactorBelowOne) {
  ExpectError(R"(model:
  head_dim: 64
  max_position_embeddings: 2048
  rope_scaling:
    rope_type: yarn
    factor: 0.5
)",
              6, "model.rope_scaling.factor",
              "must be a finite number >= 1, got 0.5");
}

TEST(ModelConfig, FactorListOfTheWrongLength) {
  ExpectError(R"(model:
  head_dim: 8
  max_position_embeddings: 8192
  rope_scaling:
    rope_type: longrope
    original_max_position_embeddings: 2048
    short_factor: [1, 1, 1, 1]
    long_factor: [1, 2, 4]
)",
              8, "model.rope_scaling.long_factor",
              "has 3 numbers; longrope needs one per frequency, r/2 = 4");
}

TEST(ModelConfig, OddRotaryDimension) {
  ExpectError(R"(model:
  head_dim: 64
  partial_rotary_factor: 0.3
  max_position_embeddings: 2048
)",
              3, "model.partial_rotary_factor",
              "r = int(head_dim 64 * partial_rotary_factor 0.3) = 19 must be "
              "even");
  // A derived head_dim says where it came from.
  ExpectError(R"(model:
  hidden_size: 63
  num_attention_heads: 1
  max_position_embeddings: 2048
)",
              2, "model.head_dim",
              "(head_dim = hidden_size 63 / num_attention_heads 1)");
}

TEST(ModelConfig, NonNumericValues) {
  ExpectError(R"(model:
  head_dim: 64
  max_position_embeddings: 2048
  rope_theta: ten thousand
)",
              4, "model.rope_theta", "expected a number, got 'ten thousand'");
  ExpectError(R"(model:
  head_dim: 64.5
  max_position_embeddings: 2048
)",
              2, "model.head_dim", "expected a decimal integer, got '64.5'");
  ExpectError(R"(model:
  head_dim: 64
  max_position_embeddings: 2048
  rope_scaling:
    rope_type: longrope
    short_factor: [1, x, 1]
    long_factor: [1, 1, 1]
)",
              6, "model.rope_scaling.short_factor[1]",
              "expected a number, got 'x'");
  ExpectError(R"(model:
  head_dim: 64
  max_position_embeddings: 2048
  rope_scaling:
    rope_type: yarn
    factor: 2
    truncate: maybe
)",
              7, "model.rope_scaling.truncate", "expected true or false");
  ExpectError(R"(model:
  head_dim: 64
  max_position_embeddings: {a: 1}
)",
              3, "model.max_position_embeddings",
              "expected a decimal integer, got a map");
}

// OverrideModelConfig (rotor eval's and export's model.* overrides): a
// problem with an override's value names the override, not a line and
// column of the text it was read from.
TEST(ModelConfig, OverrideProblemsNameTheOverride) {
  const ModelConfig model = ParseModelConfigText(
      "model:\n  head_dim: 64\n"
      "  max_position_embeddings: 2048\n",
      "cfg.yaml");
  for (const auto& [assignment, problem] :
       std::vector<std::pair<std::string, std::string>>{
           {"model.max_position_embeddings=x",
            "override 'model.max_position_embeddings=x': "
            "model.max_position_embeddings: expected a decimal integer, got "
            "'x'"},
           {"model.rope_scaling={rope_type: yarn, factor: 0}",
            "override 'model.rope_scaling={rope_type: yarn, factor: 0}': "
            "model.rope_scaling.factor"},
           {"model.max_position_embeddings=4096 #x", "starts a YAML comment"},
       }) {
    SCOPED_TRACE(assignment);
    try {
      OverrideModelConfig(model, {assignment}, "ckpt");
      ADD_FAILURE() << "accepted";
    } catch (const Error& error) {
      const std::string message = error.what();
      EXPECT_CONTAINS(message, problem);
      EXPECT_EQ(message.find(":1:"), std::string::npos) << message;
    }
  }
  // Another section's key is named as typed (the model has no train.lr).
  ROTOR_EXPECT_ERROR(OverrideModelConfig(model, {"train.lr=1"}, "ckpt"),
                     "override 'train.lr=1' of ckpt: only model.* keys apply "
                     "to a model");
  EXPECT_EQ(
      OverrideModelConfig(model, {"model.max_position_embeddings=4096"}, "ckpt")
          .rope.max_position_embeddings,
      4096);
}

TEST(ModelConfig, ContradictoryTypeKeys) {
  ExpectError(R"(model:
  head_dim: 64
  max_position_embeddings: 2048
  rope_scaling:
    rope_type: linear
    type: dynamic
    factor: 2
)",
              6, "model.rope_scaling.type", "contradicts rope_type 'linear'");
}

TEST(ModelConfig, FileAndSyntaxErrors) {
  EXPECT_EQ(ErrorOf("training:\n  steps: 1\n"),
            "cfg.yaml: no 'model:' section");
  const std::string syntax = ErrorOf("model:\n  head_dim: [64\n");
  EXPECT_NE(syntax.find("not valid YAML"), std::string::npos) << syntax;
  EXPECT_EQ(syntax.rfind("cfg.yaml:", 0), 0u) << syntax;
  try {
    LoadModelConfig("/nonexistent/rotor.yaml");
    FAIL() << "expected rotor::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot read config file "
                                         "/nonexistent/rotor.yaml"),
              std::string::npos)
        << e.what();
  }
}

// Every shipped example parses and resolves.
TEST(ModelConfig, ExampleConfigsParse) {
  for (const char* name :
       {"default", "linear", "ntk", "dynamic", "yarn", "llama3", "longrope"}) {
    const std::string path =
        std::string(ROTOR_SOURCE_DIR) + "/configs/rope/" + name + ".yaml";
    const ModelConfig config = LoadModelConfig(path);
    EXPECT_STREQ(RopeTypeName(config.rope.rope_type), name);
    EXPECT_EQ(config.rope.head_dim, 128) << name;
    EXPECT_EQ(ComputeRopeFrequencies(config.rope, 65536).inv_freq.size(), 64u)
        << name;
  }
}

// A `model:` section (YAML lines indented by two spaces) -> the model's
// resolved TransformerConfig.
nn::TransformerConfig Resolve(const std::string& model_lines) {
  return ResolveTransformerConfig(
      ParseModelConfigText("model:\n" + model_lines, "test.yaml"));
}

TEST(ModelConfig, ResolveTransformerConfigDefaultsAndErrors) {
  const nn::TransformerConfig config = Resolve(
      "  vocab_size: 11\n  hidden_size: 8\n  intermediate_size: 12\n"
      "  num_hidden_layers: 1\n  num_attention_heads: 2\n"
      "  max_position_embeddings: 16\n");
  EXPECT_EQ(config.num_key_value_heads, 2);  // defaults to the query heads
  EXPECT_EQ(config.head_dim, 4);             // hidden / heads
  EXPECT_FALSE(config.tie_word_embeddings);  // HF's default
  EXPECT_DOUBLE_EQ(config.rms_norm_eps, 1e-5);

  const std::string sizes =
      "  hidden_size: 8\n  intermediate_size: 12\n  num_hidden_layers: 1\n"
      "  max_position_embeddings: 16\n";
  ROTOR_EXPECT_ERROR(Resolve(sizes + "  num_attention_heads: 2\n"),
                     "model.vocab_size is required");
  ROTOR_EXPECT_ERROR(
      Resolve("  vocab_size: 11\n  hidden_size: 8\n  num_hidden_layers: 1\n"
              "  num_attention_heads: 2\n  max_position_embeddings: 16\n"),
      "model.intermediate_size is required");
  ROTOR_EXPECT_ERROR(Resolve("  vocab_size: 11\n" + sizes +
                             "  num_attention_heads: 4\n"
                             "  num_key_value_heads: 3\n"),
                     "model.num_attention_heads (4) must be a multiple of "
                     "model.num_key_value_heads (3)");
  ROTOR_EXPECT_ERROR(
      Resolve("  vocab_size: 0\n" + sizes + "  num_attention_heads: 2\n"),
      "test.yaml:2:15: model.vocab_size: must be >= 1, got 0");
}

}  // namespace
}  // namespace rotor::train
