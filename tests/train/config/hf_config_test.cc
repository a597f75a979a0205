// config.json <-> ModelConfig (train/config/hf_config.h): every key of the
// real configs of the supported families, every rope_scaling spelling HF
// accepts, the bad inputs (each with an error naming the key), and the
// config.json rotor writes on export.
#include "train/config/hf_config.h"

#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "nn/rope_scaling.h"

namespace rotor::train {
namespace {

// SmolLM2-135M's config.json as the Hub has it, bookkeeping keys included.
constexpr char kSmolLm2[] = R"({
  "_name_or_path": "HuggingFaceTB/SmolLM2-135M",
  "architectures": ["LlamaForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 0,
  "eos_token_id": 0,
  "hidden_act": "silu",
  "hidden_size": 576,
  "initializer_range": 0.041666666666666664,
  "intermediate_size": 1536,
  "is_llama_config": true,
  "max_position_embeddings": 8192,
  "mlp_bias": false,
  "model_type": "llama",
  "num_attention_heads": 9,
  "num_hidden_layers": 30,
  "num_key_value_heads": 3,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_interleaved": false,
  "rope_scaling": null,
  "rope_theta": 100000,
  "tie_word_embeddings": true,
  "torch_dtype": "bfloat16",
  "transformers.js_config": {"kv_cache_dtype": {"q4f16": "float16"}},
  "transformers_version": "4.42.3",
  "use_cache": true,
  "vocab_size": 49152
})";

// kSmolLm2 with `patch` merged in (null deletes a key), as text.
std::string Patched(const nlohmann::json& patch) {
  nlohmann::json config = nlohmann::json::parse(kSmolLm2);
  config.merge_patch(patch);
  return config.dump(2);
}

ModelConfig Parse(const std::string& text,
                  std::vector<std::string>* ignored = nullptr) {
  return ParseHfConfig(text, "m/config.json", ignored);
}

std::string ErrorOf(const std::string& text) {
  try {
    Parse(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void ExpectError(const nlohmann::json& patch, const std::string& key,
                 const std::string& detail) {
  const std::string message = ErrorOf(Patched(patch));
  ASSERT_FALSE(message.empty()) << "no error for " << patch.dump();
  EXPECT_EQ(message.rfind("m/config.json", 0), 0u) << message;
  EXPECT_NE(message.find(key), std::string::npos) << message;
  EXPECT_NE(message.find(detail), std::string::npos) << message;
}

TEST(HfConfig, MapsEveryKeyOfARealConfig) {
  std::vector<std::string> ignored;
  const ModelConfig config = Parse(kSmolLm2, &ignored);
  EXPECT_TRUE(ignored.empty()) << ignored.front();
  EXPECT_EQ(config.model_type, ModelType::kLlama);
  EXPECT_EQ(config.vocab_size, 49152);
  EXPECT_EQ(config.hidden_size, 576);
  EXPECT_EQ(config.intermediate_size, 1536);
  EXPECT_EQ(config.num_hidden_layers, 30);
  EXPECT_EQ(config.num_attention_heads, 9);
  EXPECT_EQ(config.num_key_value_heads, 3);
  EXPECT_EQ(config.rms_norm_eps, 1e-5);
  EXPECT_EQ(config.tie_word_embeddings, true);
  EXPECT_EQ(config.attention_bias, false);
  EXPECT_EQ(config.mlp_bias, false);
  EXPECT_EQ(config.initializer_range, 0.041666666666666664);
  EXPECT_EQ(config.bos_token_id, 0);
  EXPECT_EQ(config.eos_token_id, std::vector<int64_t>{0});
  EXPECT_EQ(config.torch_dtype, "bfloat16");
  EXPECT_EQ(config.rope.rope_type, RopeType::kDefault);
  EXPECT_EQ(config.rope.rope_theta, 100000.0);
  EXPECT_EQ(config.rope.head_dim, 64);
  EXPECT_EQ(config.rope.max_position_embeddings, 8192);

  const nn::TransformerConfig resolved = ResolveTransformerConfig(config);
  EXPECT_FALSE(resolved.qkv_bias || resolved.o_proj_bias || resolved.mlp_bias);
  EXPECT_EQ(resolved.sliding_window, 0);
  EXPECT_EQ(resolved.initializer_range, 0.041666666666666664);
}

TEST(HfConfig, ReportsUnknownKeysInsteadOfRefusingThem) {
  std::vector<std::string> ignored;
  Parse(Patched({{"my_extra_key", 3}}), &ignored);
  EXPECT_EQ(ignored, std::vector<std::string>{"my_extra_key"});
}

// A large object of keys rotor ignores (a classifier's id2label, or
// unknown keys at the top level) is read in linear time: converting it to
// YAML used to search the map for every key it inserted (50,000 id2label
// entries took 92 s, 75,000 took 216 s). Linear reading takes 0.05 s; the
// bound leaves room for a loaded machine and for ASan, and still fails the
// quadratic reader by a factor of ten.
TEST(HfConfig, ReadsSeventyFiveThousandKeysInLinearTime) {
  nlohmann::json labels = nlohmann::json::object();
  nlohmann::json top_level = nlohmann::json::object();
  for (int i = 0; i < 75'000; ++i) {
    labels[std::to_string(i)] = "L";
    top_level["k" + std::to_string(i)] = 0;
  }
  for (const nlohmann::json& patch :
       {nlohmann::json{{"id2label", labels}}, top_level}) {
    nlohmann::json json = nlohmann::json::parse(kSmolLm2);
    json.merge_patch(patch);
    const std::string text = json.dump();  // under 1 MiB, as a file must be
    EXPECT_LT(text.size(), size_t{1} << 20);
    std::vector<std::string> ignored;
    const auto start = std::chrono::steady_clock::now();
    const ModelConfig config = Parse(text, &ignored);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    EXPECT_LT(seconds, 20.0) << text.size() << " bytes";
    EXPECT_EQ(config.hidden_size, 576);
    EXPECT_EQ(ignored.size(), patch.size());
  }
}

TEST(HfConfig, BiasesFollowTheArchitecture) {
  const auto resolve = [](const nlohmann::json& patch) {
    return ResolveTransformerConfig(Parse(Patched(patch)));
  };
  const nn::TransformerConfig llama_bias =
      resolve({{"attention_bias", true}, {"mlp_bias", true}});
  EXPECT_TRUE(llama_bias.qkv_bias && llama_bias.o_proj_bias &&
              llama_bias.mlp_bias);
  const nlohmann::json qwen2 = {
      {"model_type", "qwen2"},       {"architectures", {"Qwen2ForCausalLM"}},
      {"attention_bias", nullptr},   {"mlp_bias", nullptr},
      {"use_sliding_window", false}, {"sliding_window", 32768},
      {"max_window_layers", 21}};
  const nn::TransformerConfig qwen = resolve(qwen2);
  EXPECT_TRUE(qwen.qkv_bias);
  EXPECT_FALSE(qwen.o_proj_bias || qwen.mlp_bias);
  EXPECT_EQ(qwen.sliding_window, 0);  // use_sliding_window: false
  nlohmann::json windowed = qwen2;
  windowed["use_sliding_window"] = true;
  EXPECT_EQ(resolve(windowed).sliding_window, 32768);
  windowed["max_window_layers"] = 30;  // no layer from 30 on: no window
  EXPECT_EQ(resolve(windowed).sliding_window, 0);

  const nlohmann::json mistral = {{"model_type", "mistral"},
                                  {"architectures", {"MistralForCausalLM"}},
                                  {"attention_bias", nullptr},
                                  {"mlp_bias", nullptr},
                                  {"sliding_window", 4096}};
  const nn::TransformerConfig mistral_config = resolve(mistral);
  EXPECT_FALSE(mistral_config.qkv_bias || mistral_config.mlp_bias);
  EXPECT_EQ(mistral_config.sliding_window, 4096);
  // Absent means MistralConfig's default window, null means none.
  nlohmann::json absent = mistral;
  absent["sliding_window"] = nullptr;  // merge_patch deletes the key
  EXPECT_EQ(resolve(absent).sliding_window, 4096);
  nlohmann::json no_window = nlohmann::json::parse(Patched(mistral));
  no_window["sliding_window"] = nullptr;
  EXPECT_EQ(ResolveTransformerConfig(Parse(no_window.dump())).sliding_window,
            0);
}

TEST(HfConfig, ReadsEveryRopeScalingSpelling) {
  // Legacy "type" (Llama 2 era configs).
  ModelConfig config =
      Parse(Patched({{"rope_scaling", {{"type", "linear"}, {"factor", 2.0}}}}));
  EXPECT_EQ(config.rope.rope_type, RopeType::kLinear);
  EXPECT_EQ(config.rope.factor, 2.0);
  config = Parse(
      Patched({{"rope_scaling", {{"type", "dynamic"}, {"factor", 4.0}}}}));
  EXPECT_EQ(config.rope.rope_type, RopeType::kDynamic);
  // Both spellings, agreeing (what HF writes after standardising).
  config = Parse(Patched({{"rope_scaling",
                           {{"type", "yarn"},
                            {"rope_type", "yarn"},
                            {"factor", 4.0},
                            {"original_max_position_embeddings", 2048}}}}));
  EXPECT_EQ(config.rope.rope_type, RopeType::kYarn);
  EXPECT_EQ(config.rope.original_max_position_embeddings, 2048);
  // Llama 3.1's.
  config = Parse(Patched({{"rope_scaling",
                           {{"rope_type", "llama3"},
                            {"factor", 8.0},
                            {"low_freq_factor", 1.0},
                            {"high_freq_factor", 4.0},
                            {"original_max_position_embeddings", 8192}}},
                          {"rope_theta", 500000.0},
                          {"max_position_embeddings", 131072}}));
  EXPECT_EQ(config.rope.rope_type, RopeType::kLlama3);
  EXPECT_EQ(config.rope.high_freq_factor, 4.0);
  EXPECT_EQ(config.rope.rope_theta, 500000.0);
  // Phi-3's top-level original_max_position_embeddings with longrope.
  const std::vector<double> factors(32, 1.5);
  config = Parse(Patched({{"rope_scaling",
                           {{"type", "longrope"},
                            {"short_factor", factors},
                            {"long_factor", factors}}},
                          {"original_max_position_embeddings", 4096},
                          {"max_position_embeddings", 16384}}));
  EXPECT_EQ(config.rope.rope_type, RopeType::kLongRope);
  EXPECT_EQ(config.rope.original_max_position_embeddings, 4096);
  // transformers v5: rope_parameters holds rope_theta and the scaling.
  config = Parse(Patched({{"rope_theta", nullptr},
                          {"rope_scaling", nullptr},
                          {"rope_parameters",
                           {{"rope_type", "linear"},
                            {"factor", 3.0},
                            {"rope_theta", 250000.0}}}}));
  EXPECT_EQ(config.rope.rope_type, RopeType::kLinear);
  EXPECT_EQ(config.rope.factor, 3.0);
  EXPECT_EQ(config.rope.rope_theta, 250000.0);
  config = Parse(Patched(
      {{"rope_theta", nullptr},
       {"rope_parameters", {{"rope_type", "default"}, {"rope_theta", 7e4}}}}));
  EXPECT_EQ(config.rope.rope_type, RopeType::kDefault);
  EXPECT_EQ(config.rope.rope_theta, 7e4);
}

TEST(HfConfig, RefusesWhatRotorDoesNotRunNamingTheKey) {
  ExpectError({{"model_type", "gpt2"}}, "model_type",
              "'gpt2' is not supported");
  ExpectError({{"model_type", nullptr}}, "model_type", "required");
  ExpectError({{"architectures", {"LlamaForSequenceClassification"}}},
              "architectures", "LlamaForCausalLM");
  ExpectError({{"hidden_act", "gelu"}}, "hidden_act",
              "'gelu' is not supported");
  ExpectError({{"attention_dropout", 0.1}}, "attention_dropout", "must be 0");
  ExpectError({{"torch_dtype", "int8"}}, "torch_dtype", "'int8'");
  // A NUL would cut the message at the name.
  ExpectError({{"torch_dtype", std::string("float32\0x", 9)}}, "torch_dtype",
              "holds a control character (0x00 at byte 7)");
  ExpectError({{"partial_rotary_factor", 0.5}}, "partial_rotary_factor",
              "must be 1");
  ExpectError({{"rope_scaling", {{"rope_type", "yarn"}, {"factor", 0.5}}}},
              "rope_scaling.factor", "0.5");
  ExpectError({{"rope_scaling", {{"rope_type", "su"}}}}, "rope_scaling",
              "unknown rope_type 'su'");
  ExpectError({{"rope_scaling", {{"type", "linear"}, {"rope_type", "yarn"}}}},
              "rope_scaling", "contradicts");
  ExpectError({{"hidden_size", "576"}}, "hidden_size",
              "expected a decimal integer");
  ExpectError({{"vocab_size", -1}}, "vocab_size", "must be >= 1");
  ExpectError({{"sliding_window", 4096}}, "sliding_window",
              "does not apply to model_type llama");
  ExpectError({{"rope_parameters", {{"rope_type", "default"}}}}, "rope_theta",
              "both rope_parameters and rope_theta");
  EXPECT_NE(ErrorOf("{\"a\": 1, \"a\": 2}").find("duplicate key"),
            std::string::npos);
  EXPECT_NE(ErrorOf("{\"model_type\": ").find("invalid JSON"),
            std::string::npos);
  EXPECT_NE(ErrorOf("[1, 2]").find("expected a JSON object"),
            std::string::npos);
}

// Values export would write back, and HF would then trip over: token ids
// outside the vocabulary (SmolLM2's is 49152), an empty eos_token_id list,
// a layer_types list that does not name each layer; and a factor whose
// frequencies are not finite (before, "RopeTable: inv_freq[1] = inf is not
// finite" from the first forward pass, without the file).
TEST(HfConfig, RefusesWhatExportWouldWriteBackBroken) {
  ExpectError({{"bos_token_id", 49152}}, "bos_token_id",
              "must be below vocab_size 49152, got 49152");
  ExpectError({{"eos_token_id", {2, 49153}}}, "eos_token_id[1]",
              "must be below vocab_size 49152, got 49153");
  ExpectError({{"eos_token_id", nlohmann::json::array()}}, "eos_token_id",
              "an empty list");
  ExpectError({{"layer_types", {"full_attention", "full_attention"}}},
              "layer_types", "2 entries for num_hidden_layers 30");
  ExpectError({{"rope_scaling", {{"rope_type", "dynamic"}, {"factor", 1e30}}}},
              "rope_scaling.factor", "not finite");
  ExpectError({{"rope_scaling", {{"rope_type", "ntk"}, {"factor", 1e300}}}},
              "rope_scaling.factor", "not finite");
  EXPECT_EQ(Parse(Patched({{"eos_token_id", {0, 49151}}})).eos_token_id,
            (std::vector<int64_t>{0, 49151}));
}

TEST(HfConfig, ExportReadsBackAsTheSameModel) {
  for (const nlohmann::json& patch :
       {nlohmann::json::object(),
        nlohmann::json{{"attention_bias", true},
                       {"mlp_bias", true},
                       {"eos_token_id", {1, 2, 3}}},
        nlohmann::json{{"rope_scaling",
                        {{"rope_type", "llama3"},
                         {"factor", 8.0},
                         {"low_freq_factor", 1.0},
                         {"high_freq_factor", 4.0},
                         {"original_max_position_embeddings", 2048}}}},
        nlohmann::json{{"model_type", "qwen2"},
                       {"architectures", {"Qwen2ForCausalLM"}},
                       {"attention_bias", nullptr},
                       {"mlp_bias", nullptr},
                       {"use_sliding_window", false},
                       {"sliding_window", 32768},
                       {"max_window_layers", 21}}}) {
    SCOPED_TRACE(patch.dump());
    const ModelConfig original = Parse(Patched(patch));
    std::vector<std::string> ignored;
    const ModelConfig back = Parse(HfConfigJson(original, "float32"), &ignored);
    EXPECT_TRUE(ignored.empty());
    EXPECT_EQ(back.model_type, original.model_type);
    EXPECT_EQ(back.torch_dtype, "float32");
    EXPECT_EQ(back.eos_token_id, original.eos_token_id);
    EXPECT_EQ(back.bos_token_id, original.bos_token_id);
    EXPECT_EQ(back.rope.rope_type, original.rope.rope_type);
    EXPECT_EQ(back.rope.factor, original.rope.factor);
    EXPECT_EQ(back.rope.rope_theta, original.rope.rope_theta);
    EXPECT_EQ(back.rope.max_position_embeddings,
              original.rope.max_position_embeddings);
    const nn::TransformerConfig a = ResolveTransformerConfig(original);
    const nn::TransformerConfig b = ResolveTransformerConfig(back);
    EXPECT_EQ(a.hidden_size, b.hidden_size);
    EXPECT_EQ(a.head_dim, b.head_dim);
    EXPECT_EQ(a.rms_norm_eps, b.rms_norm_eps);
    EXPECT_EQ(a.qkv_bias, b.qkv_bias);
    EXPECT_EQ(a.o_proj_bias, b.o_proj_bias);
    EXPECT_EQ(a.mlp_bias, b.mlp_bias);
    EXPECT_EQ(a.tie_word_embeddings, b.tie_word_embeddings);
    EXPECT_EQ(a.sliding_window, b.sliding_window);
    EXPECT_EQ(a.initializer_range, b.initializer_range);
  }
}

TEST(HfConfig, ExportSpellsEachMethodSoHfComputesTheSameFrequencies) {
  // YaRN: max_position_embeddings = factor * L0 whatever rotor's table size
  // (transformers 4.51-4.55 used their ratio as the factor).
  ModelConfig yarn =
      Parse(Patched({{"max_position_embeddings", 4096},
                     {"rope_scaling",
                      {{"rope_type", "yarn"},
                       {"factor", 4.0},
                       {"original_max_position_embeddings", 2048}}}}));
  nlohmann::json json = nlohmann::json::parse(HfConfigJson(yarn, "bfloat16"));
  EXPECT_EQ(json["max_position_embeddings"], 8192);
  EXPECT_EQ(json["rope_scaling"]["rope_type"], "yarn");
  EXPECT_EQ(json["rope_scaling"]["factor"], 4.0);
  EXPECT_EQ(json["rope_scaling"]["original_max_position_embeddings"], 2048);
  EXPECT_EQ(json["rope_scaling"]["beta_fast"], 32.0);
  EXPECT_EQ(json["torch_dtype"], "bfloat16");
  EXPECT_EQ(json["architectures"], nlohmann::json({"LlamaForCausalLM"}));

  // Fixed NTK: default RoPE with the NTK base, the same frequencies.
  ModelConfig ntk = Parse(
      Patched({{"rope_scaling", {{"rope_type", "ntk"}, {"factor", 4.0}}}}));
  json = nlohmann::json::parse(HfConfigJson(ntk, "float32"));
  EXPECT_TRUE(json["rope_scaling"].is_null());
  const ModelConfig back = Parse(json.dump());
  const std::vector<double> expected =
      ComputeRopeFrequencies(ntk.rope, 8192).inv_freq;
  const std::vector<double> got =
      ComputeRopeFrequencies(back.rope, 8192).inv_freq;
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], expected[i], 1e-15 * expected[0]) << i;
  }

  // rotor-only settings cannot be written as HF.
  ModelConfig partial = Parse(kSmolLm2);
  partial.rope.partial_rotary_factor = 0.5;
  EXPECT_THROW(HfConfigJson(partial, "float32"), Error);
}

}  // namespace
}  // namespace rotor::train
