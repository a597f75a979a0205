// Hugging Face model folders in and out (train/hf/hf_model.h), checked
// against the independent double-precision reference (reference_llama.h)
// on folders written the way save_pretrained writes them
// (hf_folder_writer.h): every architecture, every rope_scaling method, BF16
// shards with an index, F16 and F32; the export round trip; and every bad
// input, each with an error that names it.
#include "train/hf/hf_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "tests/nn/fused_storage.h"
#include "tests/temp_dir.h"
#include "tests/train/hf/hf_folder_writer.h"
#include "tests/train/hf/reference_llama.h"
#include "train/checkpoint.h"
#include "train/config/hf_config.h"
#include "train/io/atomic_file.h"
#include "train/tokenizer/tokenizer.h"

namespace rotor::train {
namespace {

using nlohmann::json;
using test::TempDir;
using test::hf::HfFolder;
using test::hf::HfWriteOptions;
using test::hf::ReferenceLogits;
using test::hf::WriteRandomHfFolder;

// A small model of `model_type`: 2 layers, hidden 32, 4 query heads sharing
// 2 kv heads of 8, vocab 48.
json SmallConfig(const std::string& model_type) {
  json config = {{"model_type", model_type}, {"hidden_size", 32},
                 {"intermediate_size", 40},  {"num_hidden_layers", 2},
                 {"num_attention_heads", 4}, {"num_key_value_heads", 2},
                 {"vocab_size", 48},         {"max_position_embeddings", 32},
                 {"rms_norm_eps", 1e-5},     {"rope_theta", 10000.0},
                 {"hidden_act", "silu"},     {"tie_word_embeddings", false}};
  if (model_type == "llama") {
    config["architectures"] = {"LlamaForCausalLM"};
  } else if (model_type == "mistral") {
    config["architectures"] = {"MistralForCausalLM"};
    config["sliding_window"] = nullptr;
  } else {
    config["architectures"] = {"Qwen2ForCausalLM"};
    config["use_sliding_window"] = false;
  }
  return config;
}

std::vector<int32_t> Ids(int64_t count, int64_t vocab) {
  std::vector<int32_t> ids;
  for (int64_t i = 0; i < count; ++i) {
    ids.push_back(static_cast<int32_t>((i * 7 + 3) % vocab));
  }
  return ids;
}

// rotor's logits for `ids` from the folder, through the one model loader.
std::vector<double> RotorLogits(const std::string& folder,
                                const std::vector<int32_t>& ids) {
  auto model = LoadCheckpointModel(folder, /*overrides=*/{});
  const int64_t seq = static_cast<int64_t>(ids.size());
  model->SetSequenceLength(seq);
  const Tensor logits = model->Logits(ids, 1, seq);
  return std::vector<double>(logits.data(), logits.data() + logits.numel());
}

// The largest |rotor - reference| over the largest |reference|: float32
// against double, both from the same stored weights.
double RelativeError(const std::vector<double>& rotor,
                     const std::vector<double>& reference) {
  EXPECT_EQ(rotor.size(), reference.size());
  double worst = 0.0, scale = 0.0;
  for (size_t i = 0; i < rotor.size() && i < reference.size(); ++i) {
    worst = std::max(worst, std::abs(rotor[i] - reference[i]));
    scale = std::max(scale, std::abs(reference[i]));
  }
  EXPECT_GT(scale, 0.1) << "logits too small to be a test";
  return worst / scale;
}

// float32 rounding through two layers of a small model (the measured
// errors are in docs/huggingface.md).
constexpr double kLogitTolerance = 2e-6;

struct ImportCase {
  std::string name;
  std::string model_type;
  json patch;  // merged into SmallConfig
  std::string dtype = "bfloat16";
  int64_t tokens = 12;
};

class HfImport : public ::testing::TestWithParam<ImportCase> {};

TEST_P(HfImport, LogitsMatchTheDoublePrecisionReference) {
  const ImportCase& c = GetParam();
  TempDir dir;
  json config = SmallConfig(c.model_type);
  config.merge_patch(c.patch);
  HfWriteOptions options;
  options.dtype = c.dtype;
  options.max_shard_bytes = 6000;  // several shards and an index
  const HfFolder folder = WriteRandomHfFolder(dir.Path("m"), config, options);
  ASSERT_TRUE(folder.sharded());
  const std::vector<int32_t> ids = Ids(c.tokens, config["vocab_size"]);
  const std::vector<double> reference =
      ReferenceLogits(folder.path, std::vector<int>(ids.begin(), ids.end()));
  const double error = RelativeError(RotorLogits(folder.path, ids), reference);
  EXPECT_LT(error, kLogitTolerance);
  // Reported with --gtest_output=xml (docs/huggingface.md quotes it).
  std::ostringstream text;
  text << error;
  RecordProperty("relative_error", text.str());
}

std::vector<ImportCase> ImportCases() {
  const std::vector<double> factors = {1.0, 1.5, 2.0, 3.0};  // r/2 = 4
  const std::vector<double> long_factors = {2.0, 3.0, 4.0, 5.0};
  return {
      {"LlamaDefault", "llama", json::object()},
      {"LlamaTiedWithBiases",
       "llama",
       {{"tie_word_embeddings", true},
        {"attention_bias", true},
        {"mlp_bias", true}}},
      {"LlamaHeadDim", "llama", {{"head_dim", 16}}},
      {"LlamaFloat16", "llama", json::object(), "float16"},
      {"LlamaFloat32", "llama", json::object(), "float32"},
      {"LlamaLinearLegacyType",
       "llama",
       {{"rope_scaling", {{"type", "linear"}, {"factor", 2.0}}}}},
      {"LlamaDynamicBeyondMaxPositions",
       "llama",
       {{"max_position_embeddings", 8},
        {"rope_scaling", {{"rope_type", "dynamic"}, {"factor", 2.0}}}},
       "bfloat16",
       12},
      {"LlamaYarn",
       "llama",
       {{"rope_scaling",
         {{"rope_type", "yarn"},
          {"factor", 4.0},
          {"original_max_position_embeddings", 8}}}}},
      {"LlamaLlama3",
       "llama",
       {{"rope_theta", 500000.0},
        {"rope_scaling",
         {{"rope_type", "llama3"},
          {"factor", 8.0},
          {"low_freq_factor", 1.0},
          {"high_freq_factor", 4.0},
          {"original_max_position_embeddings", 8}}}}},
      {"LlamaLongRopeLongFactors",
       "llama",
       {{"rope_scaling",
         {{"rope_type", "longrope"},
          {"short_factor", factors},
          {"long_factor", long_factors},
          {"original_max_position_embeddings", 8}}}}},
      {"LlamaLongRopeTopLevelOriginal",
       "llama",
       {{"original_max_position_embeddings", 16},
        {"rope_scaling",
         {{"type", "longrope"},
          {"short_factor", factors},
          {"long_factor", long_factors}}}}},
      {"LlamaRopeParametersV5",
       "llama",
       {{"rope_theta", nullptr},
        {"rope_parameters",
         {{"rope_type", "linear"}, {"factor", 3.0}, {"rope_theta", 5e4}}}}},
      {"MistralNoWindow", "mistral", json::object()},
      {"MistralWindowCoversTheSequence", "mistral", {{"sliding_window", 16}}},
      {"Qwen2", "qwen2", json::object()},
      {"Qwen2TiedYarn",
       "qwen2",
       {{"tie_word_embeddings", true},
        {"rope_scaling",
         {{"rope_type", "yarn"},
          {"factor", 2.0},
          {"original_max_position_embeddings", 16}}}}},
  };
}

INSTANTIATE_TEST_SUITE_P(AllArchitecturesAndRopeMethods, HfImport,
                         ::testing::ValuesIn(ImportCases()),
                         [](const auto& info) { return info.param.name; });

TEST(HfImport, SlidingWindowShorterThanTheSequenceIsRefused) {
  TempDir dir;
  json config = SmallConfig("mistral");
  config["sliding_window"] = 8;
  const HfFolder folder = WriteRandomHfFolder(dir.Path("m"), config, {});
  try {
    RotorLogits(folder.path, Ids(12, 48));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sliding_window of 8"),
              std::string::npos)
        << e.what();
  }
}

// Export, then import: every weight bitwise in float32, and the exported
// folder passes the reference forward on its own.
TEST(HfExport, RoundTripIsBitwiseAndPassesTheReference) {
  TempDir dir;
  json config = SmallConfig("llama");
  config["attention_bias"] = true;
  config["rope_scaling"] = {{"rope_type", "yarn"},
                            {"factor", 4.0},
                            {"original_max_position_embeddings", 8}};
  const HfFolder source = WriteRandomHfFolder(dir.Path("in"), config, {});
  TrainConfig loaded;
  auto model = LoadCheckpointModel(source.path, {}, &loaded);
  HfExportOptions options;
  options.max_shard_bytes = 10000;
  WriteHfModelFolder(dir.Path("out"), *model, loaded.model, "byte", options);
  EXPECT_TRUE(
      std::filesystem::exists(dir.Path("out/model.safetensors.index.json")));

  auto back = LoadCheckpointModel(dir.Path("out"), {});
  // Both imports wrote into the parameters, so the fused q/k/v and gate/up
  // weights still share one storage each.
  EXPECT_TRUE(test::FusedProjectionsShareStorage(*model));
  EXPECT_TRUE(test::FusedProjectionsShareStorage(*back));
  const auto expected = model->NamedParameters();
  const auto got = back->NamedParameters();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].first, expected[i].first);
    EXPECT_TRUE(std::equal(got[i].second.data(),
                           got[i].second.data() + got[i].second.numel(),
                           expected[i].second.data()))
        << got[i].first;
  }
  const std::vector<int32_t> ids = Ids(12, 48);
  EXPECT_LT(
      RelativeError(RotorLogits(dir.Path("out"), ids),
                    ReferenceLogits(dir.Path("out"),
                                    std::vector<int>(ids.begin(), ids.end()))),
      kLogitTolerance);
}

TEST(HfExport, Bfloat16RoundsEachWeightToNearestEven) {
  TempDir dir;
  HfWriteOptions float32;
  float32.dtype = "float32";
  const HfFolder source =
      WriteRandomHfFolder(dir.Path("in"), SmallConfig("qwen2"), float32);
  TrainConfig loaded;
  auto model = LoadCheckpointModel(source.path, {}, &loaded);
  HfExportOptions options;
  options.dtype = "bfloat16";
  WriteHfModelFolder(dir.Path("out"), *model, loaded.model, "byte", options);
  const auto written = test::hf::ReadHfWeights(dir.Path("out"));
  for (const auto& [name, tensor] : model->NamedParameters()) {
    const auto& stored = written.at(name);
    EXPECT_EQ(stored.dtype, "BF16") << name;
    for (int64_t i = 0; i < tensor.numel(); ++i) {
      ASSERT_EQ(stored.values[i], test::hf::RoundToBfloat16(tensor.data()[i]))
          << name << "[" << i << "]";
    }
  }
  const json exported = json::parse(std::ifstream(dir.Path("out/config.json")));
  EXPECT_EQ(exported["torch_dtype"], "bfloat16");
  EXPECT_EQ(exported["architectures"], json({"Qwen2ForCausalLM"}));
  EXPECT_FALSE(std::filesystem::exists(dir.Path("out/config.yaml")));
}

TEST(HfExport, TiedModelsHaveNoLmHead) {
  TempDir dir;
  json config = SmallConfig("llama");
  config["tie_word_embeddings"] = true;
  const HfFolder source = WriteRandomHfFolder(dir.Path("in"), config, {});
  TrainConfig loaded;
  auto model = LoadCheckpointModel(source.path, {}, &loaded);
  WriteHfModelFolder(dir.Path("out"), *model, loaded.model, "byte");
  const auto written = test::hf::ReadHfWeights(dir.Path("out"));
  EXPECT_EQ(written.count("lm_head.weight"), 0u);
  EXPECT_EQ(written.count("model.embed_tokens.weight"), 1u);
}

// What a prompt starts with: a Hugging Face folder's own BOS, also in a
// folder rotor exported (whose tokenizer files now add the separator a
// rotor model was trained with); a folder exported before its
// tokenizer_config.json said so (no add_bos_token) keeps the separator.
TEST(HfExport, PromptStartOfAnExportedFolderIsTheTrainedOne) {
  TempDir dir;
  const HfFolder source =
      WriteRandomHfFolder(dir.Path("in"), SmallConfig("llama"), {});
  EXPECT_EQ(CheckpointPromptStart(source.path), PromptStart::kTokenizerBos);
  TrainConfig loaded;
  auto model = LoadCheckpointModel(source.path, {}, &loaded);
  WriteHfModelFolder(dir.Path("out"), *model, loaded.model, "byte");
  EXPECT_EQ(CheckpointPromptStart(dir.Path("out")), PromptStart::kTokenizerBos);
  EXPECT_EQ(PromptBos(*LoadCheckpointTokenizer(dir.Path("out")),
                      PromptStart::kTokenizerBos),
            std::optional<TokenId>(256));
  // The same folder as an export of before: tokenizer_config.json without
  // add_bos_token, tokenizer.json adding nothing.
  json config =
      json::parse(std::ifstream(dir.Path("out/tokenizer_config.json")));
  config.erase("add_bos_token");
  WriteFileAtomically(dir.Path("out/tokenizer_config.json"), config.dump());
  EXPECT_EQ(CheckpointPromptStart(dir.Path("out")),
            PromptStart::kDocumentSeparator);
}

// The message of loading `folder` ("" when it loads).
std::string LoadError(const std::string& folder) {
  try {
    LoadCheckpointModel(folder, {});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

struct BadCase {
  std::string name;
  test::hf::HfBadInput bad;
  std::vector<std::string> expected;  // substrings of the message
};

TEST(HfImportBadInput, EachGetsAnErrorNamingIt) {
  const std::string q = "model.layers.1.self_attn.q_proj.weight";
  std::vector<BadCase> cases;
  auto add = [&](const std::string& name, auto set,
                 std::vector<std::string> expected) {
    BadCase c{name, {}, std::move(expected)};
    set(c.bad);
    cases.push_back(c);
  };
  add("missing", [&](auto& b) { b.drop_tensor = q; },
      {"missing tensor " + q, "[32, 32]"});
  add("extra", [&](auto& b) { b.extra_tensor = "model.layers.9.extra"; },
      {"model.layers.9.extra", "not a parameter"});
  add("shape", [&](auto& b) { b.misshape_tensor = q; },
      {q, "has shape [33, 32]", "[32, 32]"});
  add("dtype",
      [&](auto& b) {
        b.retype_tensor = q;
        b.retype_dtype = "F64";
      },
      {q, "F64"});
  add("int8",
      [&](auto& b) {
        b.retype_tensor = q;
        b.retype_dtype = "I8";
      },
      {q, "I8"});
  add("truncated", [&](auto& b) { b.truncate_bytes = 100; },
      {"model-0000", "safetensors"});
  add("index", [&](auto& b) { b.index_names_missing_file = q; },
      {"model-99999-of-99999.safetensors", "does not exist"});
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.name);
    TempDir dir;
    HfWriteOptions options;
    options.max_shard_bytes = 6000;
    options.bad = c.bad;
    const HfFolder folder =
        WriteRandomHfFolder(dir.Path("m"), SmallConfig("llama"), options);
    const std::string message = LoadError(folder.path);
    ASSERT_FALSE(message.empty());
    for (const std::string& part : c.expected) {
      EXPECT_NE(message.find(part), std::string::npos) << message;
    }
  }
}

TEST(HfImportBadInput, ConfigProblemsNameTheKey) {
  for (const auto& [patch, expected] :
       std::vector<std::pair<json, std::string>>{
           {{{"hidden_act", "gelu"}}, "hidden_act: 'gelu'"},
           {{{"model_type", "gpt_neox"}}, "model_type: 'gpt_neox'"},
           {{{"rope_scaling", {{"rope_type", "fancy"}}}}, "fancy"}}) {
    TempDir dir;
    json config = SmallConfig("llama");
    const HfFolder folder = WriteRandomHfFolder(dir.Path("m"), config, {});
    config.merge_patch(patch);
    test::TempDir unused;
    std::ofstream(dir.Path("m/config.json")) << config.dump();
    const std::string message = LoadError(folder.path);
    EXPECT_NE(message.find("config.json"), std::string::npos) << message;
    EXPECT_NE(message.find(expected), std::string::npos) << message;
  }
  TempDir empty;
  std::ofstream(empty.Path("config.json")) << SmallConfig("llama").dump();
  EXPECT_NE(LoadError(empty.path()).find("has neither model.safetensors"),
            std::string::npos);
}

TEST(HfImportBadInput, OversizedJsonFilesAreRefused) {
  TempDir dir;
  HfWriteOptions options;
  options.max_shard_bytes = 6000;
  const HfFolder folder =
      WriteRandomHfFolder(dir.Path("m"), SmallConfig("llama"), options);
  const std::string index = folder.path + "/model.safetensors.index.json";
  std::string text = train::ReadFile(index);
  text.insert(text.rfind('}'),
              ", \"padding\": \"" + std::string(kMaxHfIndexBytes, 'x') + "\"");
  std::ofstream(index) << text;
  EXPECT_NE(LoadError(folder.path).find("model.safetensors.index.json"),
            std::string::npos);

  json config = SmallConfig("llama");
  config["padding"] = std::string(kMaxConfigBytes, 'x');
  std::ofstream(folder.path + "/config.json") << config.dump();
  EXPECT_NE(LoadError(folder.path).find("config.json"), std::string::npos);
}

TEST(HfImport, TiedFolderMayHoldAnLmHeadEqualToTheEmbeddings) {
  TempDir dir;
  json config = SmallConfig("llama");
  config["tie_word_embeddings"] = true;
  HfWriteOptions options;
  options.dtype = "float32";
  HfFolder folder = WriteRandomHfFolder(dir.Path("m"), config, options);
  auto state = [&](bool same) {
    std::vector<test::hf::HfStateTensor> tensors;
    for (const auto& [name, tensor] : folder.tensors) {
      tensors.push_back(
          {name, tensor.shape,
           std::vector<float>(tensor.values.begin(), tensor.values.end())});
    }
    test::hf::HfStateTensor head = tensors.front();
    for (const auto& t : tensors) {
      if (t.name == "model.embed_tokens.weight") head = t;
    }
    head.name = "lm_head.weight";
    if (!same) head.values[5] += 1.0f;
    tensors.push_back(head);
    return tensors;
  };
  test::hf::WriteHfFolder(dir.Path("same"), config, state(true), options);
  EXPECT_EQ(LoadError(dir.Path("same")), "");
  test::hf::WriteHfFolder(dir.Path("differs"), config, state(false), options);
  EXPECT_NE(LoadError(dir.Path("differs")).find("tie_word_embeddings"),
            std::string::npos);
}

}  // namespace
}  // namespace rotor::train
