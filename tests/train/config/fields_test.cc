// The config tables (core/fields.h): every struct's keys survive a
// write and a read in each format (YAML; config.json for the model), as in
// gemma.cpp's io/fields_test.cc; every key of every table is documented;
// every config rotor ships sets only keys the tables know.
//
// Values are compared through ValueCollector, a visitor written here that
// prints each member with its own formatting, so a writer that drops a key
// fails the comparison instead of hiding it.
#include "core/fields.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "tests/temp_dir.h"
#include "tests/test_util.h"
#include "train/config/extension_lint.h"
#include "train/config/fields.h"
#include "train/config/hf_config.h"
#include "train/config/model_config.h"
#include "train/config/model_edit.h"
#include "train/config/report_config.h"
#include "train/config/train_config.h"
#include "train/data/passkey.h"

namespace rotor::train {
namespace {

namespace fs = std::filesystem;

// "key.path" -> the member's value as text, for every row of a table.
class ValueCollector {
 public:
  std::map<std::string, std::string> values;

  template <typename T, typename Check, typename... Extra>
  void operator()(const Key& key, T&& member, const Check& check,
                  const Extra&...) {
    values[Path(key)] = Text(member, check);
  }
  template <typename Struct>
  void Section(const Key& key, Struct& fields, bool* present = nullptr) {
    if (present != nullptr) values[Path(key)] = *present ? "given" : "absent";
    prefix_.push_back(key.name);
    VisitFields(*this, fields);
    prefix_.pop_back();
  }
  template <typename Rows>
  void Map(const Key& key, Rows&& rows, bool* present = nullptr) {
    if (present != nullptr) values[Path(key)] = *present ? "given" : "absent";
    prefix_.push_back(key.name);
    rows(*this);
    prefix_.pop_back();
  }

 private:
  std::string Path(const Key& key) const {
    std::string path;
    for (const std::string& part : prefix_) path += part + ".";
    return path + key.name;
  }
  template <typename T, typename Check>
  static std::string Text(const std::optional<T>& value, const Check& check) {
    return value ? Text(*value, check) : "unset";
  }
  template <typename T, typename Check>
  static std::string Text(const std::vector<T>& values, const Check& check) {
    std::string text = "[";
    for (const T& value : values) text += Text(value, check) + ";";
    return text + "]";
  }
  template <typename Enum>
  static std::string Text(const Enum& value, const field::Choice<Enum>& c) {
    return c.name(value);
  }
  template <typename Enum>
  static std::string Text(const Enum& value, const field::Parsed<Enum>& c) {
    return c.name(value);
  }
  template <typename Enum>
  static std::string Text(const std::vector<Enum>& values,
                          const field::Choices<Enum>& c) {
    std::string text;
    for (Enum value : values) text += std::string(c.each.name(value)) + ";";
    return text;
  }
  static std::string Text(const field::Pair& pair, const field::UnitPair&) {
    return Number(pair.first) + "," + Number(pair.second);
  }
  static std::string Text(const ResumeSetting& resume, const ResumeKey&) {
    return std::to_string(static_cast<int>(resume.mode)) + resume.folder;
  }
  template <typename T, typename Check>
  static std::string Text(const T& value, const Check&) {
    if constexpr (std::is_same_v<T, std::string>) {
      return "'" + value + "'";
    } else if constexpr (std::is_floating_point_v<T>) {
      return Number(value);
    } else {
      return std::to_string(value);
    }
  }
  static std::string Number(double value) {
    std::ostringstream text;
    text.precision(17);
    text << value;
    return text.str();
  }

  std::vector<std::string> prefix_;
};

template <typename Struct>
std::map<std::string, std::string> ValuesOf(Struct config) {
  ValueCollector collector;
  VisitFields(collector, config);
  return collector.values;
}

// The model configs the round trips run over: between them, every model
// key and every rope_scaling key is set to something other than its
// default.
std::vector<ModelConfig> ModelConfigs() {
  ModelConfig llama;
  llama.vocab_size = 300;
  llama.hidden_size = 64;
  llama.intermediate_size = 96;
  llama.num_hidden_layers = 3;
  llama.num_attention_heads = 4;
  llama.num_key_value_heads = 2;
  llama.rms_norm_eps = 3e-6;
  llama.tie_word_embeddings = true;
  llama.attention_bias = true;
  llama.mlp_bias = true;
  llama.initializer_range = 0.03;
  llama.hidden_act = "silu";
  llama.attention_dropout = 0.0;
  llama.bos_token_id = 1;
  llama.eos_token_id = std::vector<int64_t>{2, 7};
  llama.pad_token_id = 0;
  llama.torch_dtype = "bfloat16";
  llama.rope.head_dim = 16;
  llama.rope.max_position_embeddings = 1024;
  llama.rope.rope_theta = 50000.0;
  llama.rope.rope_type = RopeType::kLlama3;
  llama.rope.factor = 4.0;
  llama.rope.original_max_position_embeddings = 256;
  llama.rope.low_freq_factor = 1.5;
  llama.rope.high_freq_factor = 3.0;

  ModelConfig qwen = llama;
  qwen.model_type = ModelType::kQwen2;
  qwen.attention_bias.reset();
  qwen.mlp_bias.reset();
  qwen.sliding_window = 2048;
  qwen.use_sliding_window = true;
  qwen.max_window_layers = 2;
  qwen.eos_token_id = std::vector<int64_t>{5};
  qwen.torch_dtype = "float16";
  qwen.rope.rope_type = RopeType::kYarn;
  qwen.rope.low_freq_factor.reset();
  qwen.rope.high_freq_factor.reset();
  qwen.rope.attention_factor = 1.2;
  qwen.rope.beta_fast = 16.0;
  qwen.rope.beta_slow = 2.0;
  qwen.rope.mscale = 0.7;
  qwen.rope.mscale_all_dim = 0.5;
  qwen.rope.truncate = false;

  ModelConfig mistral = llama;
  mistral.model_type = ModelType::kMistral;
  mistral.attention_bias.reset();
  mistral.mlp_bias.reset();
  mistral.sliding_window = 4096;
  mistral.torch_dtype = "float32";
  mistral.rope.rope_type = RopeType::kLongRope;
  mistral.rope.low_freq_factor.reset();
  mistral.rope.high_freq_factor.reset();
  mistral.rope.factor.reset();
  mistral.rope.attention_factor = 1.1;
  mistral.rope.short_factor = std::vector<double>(8, 1.0);
  mistral.rope.long_factor =
      std::vector<double>{1, 1.25, 1.5, 2, 2.5, 3, 3.5, 4};

  ModelConfig partial = llama;  // a rotor-only setting
  partial.rope.rope_type = RopeType::kLinear;
  partial.rope.original_max_position_embeddings.reset();
  partial.rope.low_freq_factor.reset();
  partial.rope.high_freq_factor.reset();
  partial.rope.partial_rotary_factor = 0.5;
  return {llama, qwen, mistral, partial};
}

TEST(ConfigFields, EveryModelKeyIsSetByOneOfTheRoundTripConfigs) {
  std::map<std::string, std::set<std::string>> seen;
  for (const ModelConfig& config : ModelConfigs()) {
    for (const auto& [key, value] : ValuesOf(config)) seen[key].insert(value);
  }
  for (const auto& [key, value] : ValuesOf(ModelConfig())) {
    if (key == "original_max_position_embeddings") continue;  // moved on read
    EXPECT_TRUE(seen[key].size() > 1 || !seen[key].count(value)) << key;
  }
}

TEST(ConfigFields, ModelConfigRoundTripsThroughYaml) {
  for (const ModelConfig& config : ModelConfigs()) {
    const TrainConfig train = [&] {
      TrainConfig t;
      t.model = config;
      t.data.path = "data";
      t.train.seq_len = 64;
      return t;
    }();
    const std::string yaml = TrainConfigToYaml(train);
    SCOPED_TRACE(yaml);
    const TrainConfig back = ParseTrainConfig(yaml, "resolved.yaml");
    EXPECT_EQ(ValuesOf(back.model), ValuesOf(config));
  }
}

TEST(ConfigFields, ModelConfigRoundTripsThroughConfigJson) {
  for (ModelConfig config : ModelConfigs()) {
    if (config.rope.partial_rotary_factor != 1.0) continue;  // rotor-only
    // What export writes that the file did not say: HF's spelling of the
    // defaults, and for yarn the length factor * L0.
    if (config.rope.rope_type == RopeType::kYarn) {
      config.rope.max_position_embeddings =
          static_cast<int64_t>(*config.rope.factor) *
          *config.rope.original_max_position_embeddings;
    }
    if (config.model_type == ModelType::kQwen2)
      config.use_sliding_window = true;
    const std::string json = HfConfigJson(config, *config.torch_dtype);
    SCOPED_TRACE(json);
    const ModelConfig back = ParseHfConfig(json, "config.json");
    EXPECT_EQ(ValuesOf(back), ValuesOf(config));
  }
}

// The methods each rope_scaling row names, by key.
struct MethodsOfRows {
  std::map<std::string, std::vector<RopeType>> methods;
  void operator()(const Key&, RopeType&, const field::Choice<RopeType>&) {}
  template <typename T, typename Check>
  void operator()(const Key& key, T&, const Check&, const ForMethods& only) {
    methods[key.name] = only.methods;
  }
};

// rope_scaling's rows (nn/rope_scaling.h) name the methods they apply to,
// and a method's keys are the rows that name it: transformers' required and
// optional keys of each rope_type. The YAML writer writes a method's keys
// alone (and null for default RoPE), whatever the other members hold.
TEST(ConfigFields, EachRopeScalingRowNamesTheMethodsItAppliesTo) {
  const std::map<RopeType, std::vector<std::string>> transformers = {
      {RopeType::kDefault, {}},
      {RopeType::kLinear, {"factor"}},
      {RopeType::kNtk, {"factor"}},
      {RopeType::kDynamic, {"factor"}},
      {RopeType::kYarn,
       {"factor", "original_max_position_embeddings", "attention_factor",
        "beta_fast", "beta_slow", "mscale", "mscale_all_dim", "truncate"}},
      {RopeType::kLlama3,
       {"factor", "original_max_position_embeddings", "low_freq_factor",
        "high_freq_factor"}},
      {RopeType::kLongRope,
       {"factor", "original_max_position_embeddings", "attention_factor",
        "short_factor", "long_factor"}}};
  MethodsOfRows rows;
  RopeScalingConfig every_member_set = ModelConfigs()[1].rope;  // yarn's
  every_member_set.low_freq_factor = 1.5;
  every_member_set.high_freq_factor = 3.0;
  every_member_set.short_factor = std::vector<double>(8, 1.0);
  every_member_set.long_factor = std::vector<double>(8, 2.0);
  VisitFields(rows, every_member_set);
  for (const auto& [type, keys] : transformers) {
    SCOPED_TRACE(RopeTypeName(type));
    EXPECT_EQ(RopeScalingKeys(type), keys);
    std::vector<std::string> listed;
    for (const auto& [key, methods] : rows.methods) {
      if (std::find(methods.begin(), methods.end(), type) != methods.end()) {
        listed.push_back(key);
      }
    }
    EXPECT_EQ(std::set<std::string>(listed.begin(), listed.end()),
              std::set<std::string>(keys.begin(), keys.end()));
    TrainConfig config;
    config.model = ModelConfigs()[0];
    config.model.rope = every_member_set;
    config.model.rope.rope_type = type;
    const std::string yaml = TrainConfigToYaml(config);
    for (const auto& [key, methods] : rows.methods) {
      const bool applies =
          std::find(keys.begin(), keys.end(), key) != keys.end();
      EXPECT_EQ(yaml.find("    " + key + ":") != std::string::npos, applies)
          << key << " in\n"
          << yaml;
    }
    EXPECT_EQ(yaml.find("rope_scaling: ~") != std::string::npos, keys.empty())
        << yaml;
  }
}

// What the readers and writers share of a section with a method row
// (SectionMethod): whether a ForMethods row applies, and whether the
// section is written as null. A table whose ForMethods row comes before
// any method row is named as such (the writers threw
// std::bad_optional_access, the reader printed a null name).
TEST(ConfigFields, AForMethodsRowNeedsItsSectionsMethodRowFirst) {
  const Key factor{"factor", "s"};
  const ForMethods linear{{RopeType::kLinear}};
  SectionMethod method;
  ROTOR_EXPECT_ERROR(method.Applies(factor, linear),
                     "the row factor carries ForMethods, but its section has "
                     "no method row (rope_type) before it");
  EXPECT_FALSE(method.WrittenAsNull());
  method.Set(Key{"rope_type", "the method"}, RopeType::kLinear);
  EXPECT_TRUE(method.Applies(factor, linear));
  EXPECT_FALSE(method.Applies(factor, ForMethods{{RopeType::kYarn}}));
  EXPECT_FALSE(method.WrittenAsNull());
  EXPECT_EQ(std::string(method.row()), "rope_type");
  method.Set(Key{"rope_type", "the method"}, RopeType::kDefault);
  EXPECT_TRUE(method.WrittenAsNull());
}

// train/config/fields.h, which an installed rotor's users may include,
// still gives the names it gave in rotor::train.
TEST(ConfigFields, TheOldHeaderForwardsToCore) {
  static_assert(std::is_same_v<train::Key, rotor::Key>);
  static_assert(std::is_same_v<train::field::Int, rotor::field::Int>);
  static_assert(std::is_same_v<train::ConfigProblem, rotor::ConfigProblem>);
  EXPECT_EQ(train::KeyNamesOf<LoggingSection>(),
            (std::vector<std::string>{"log_every_n_steps", "progress"}));
  EXPECT_EQ(train::OverrideName("train.lr=1"), "override 'train.lr=1'");
}

TEST(ConfigFields, TrainConfigRoundTripsThroughYaml) {
  TrainConfig config;
  config.output_dir = "out/run";
  config.model = ModelConfigs()[0];
  config.data.path = "data";
  config.data.tokenizer = "tokenizer.json";
  config.data.passkey_fraction = 0.25;
  config.data.passkey_loss = PasskeyLoss::kAll;
  config.data.passkey_digits = 3;
  config.data.retrieval_fraction = 0.5;
  config.data.retrieval_tasks = {RetrievalTask::kNiahMultikey};
  config.data.documents = {true, true};
  TrainSection& t = config.train;
  t.batch_size = 4;
  t.seq_len = 128;
  t.gradient_accumulation_steps = 2;
  t.max_steps = 50;
  t.lr = 3e-3;
  t.min_lr = 3e-4;
  t.warmup_steps = 5;
  t.weight_decay = 0.05;
  t.beta1 = 0.8;
  t.beta2 = 0.99;
  t.eps = 1e-7;
  t.clip_grad_norm = 0.5;
  t.seed = 7;
  t.threads = 1;
  t.allreduce_bucket_mb = 12.5;
  t.collective_timeout_seconds = 60;
  t.zero_stage = 1;
  t.loss_explosion_ratio = 2.5;
  t.resume = ResumeMode::kCheckpoint;
  t.resume_checkpoint = "out/run/checkpoints/step_10";
  t.init_from = "base";
  t.activation_checkpointing_every = 2;
  t.loss_chunk_rows = 128;
  t.precision = MatmulPrecision::kBfloat16;
  config.eval = {7, 3};
  config.checkpoint = {9, 4};
  config.logging = {3, false};
  config.finetune.lora = {true, 4, 16.0, 0.1, {"k_proj", "down_proj"}};
  config.finetune.trainable = {"norm", "embed_tokens"};
  const std::map<std::string, std::string> defaults = ValuesOf(TrainConfig());
  for (const auto& [key, value] : ValuesOf(config)) {
    if (key.rfind("model.", 0) == 0) continue;  // ModelConfigs() sets them
    EXPECT_NE(defaults.at(key), value) << key << " keeps its default";
  }
  const std::string yaml = TrainConfigToYaml(config);
  SCOPED_TRACE(yaml);
  const TrainConfig back = ParseTrainConfig(yaml, "resolved.yaml");
  EXPECT_EQ(ValuesOf(back), ValuesOf(config));
  EXPECT_EQ(ValuesOf(back.model), ValuesOf(config.model));
}

TEST(ConfigFields, ReportConfigRoundTripsThroughYaml) {
  ExtendReportConfig config;
  config.base_config = "configs/tiny.yaml";
  config.base_overrides = {"train.max_steps=20", "train.lr=2e-3"};
  config.base_init_from = "hf/SmolLM2-135M";
  config.base_data = "texts";
  config.practice_steps = 30;
  config.practice_passkey_fraction = 0.5;
  config.practice_warmup_steps = 3;
  config.practice_output_dir = "runs/practice";
  config.practice_retrieval_fraction = 0.25;
  config.practice_retrieval_tasks = {RetrievalTask::kNiahSingle};
  config.practice_examples_only_steps = 10;
  config.output_dir = "runs/report";
  config.factor = 8.0;
  config.methods = {RopeType::kYarn, RopeType::kLinear};
  config.finetune_steps = 12;
  config.finetune_lr = 1e-3;
  config.finetune_min_lr = 1e-4;
  config.finetune_warmup_steps = 2;
  config.finetune_tokens_per_step = 1024;
  config.finetune_passkey_fraction = 0.25;
  config.finetune_retrieval_fraction = 0.125;
  config.finetune_skip = {};
  config.lora_finetune.lora = {true, 4, 16.0, 0.05, {"o_proj"}};
  config.lora_finetune.trainable = {"norm"};
  config.lora_lr = 3e-3;
  config.lengths = {64, 128};
  config.documents = 3;
  config.ppl_method = LengthEvalMethod::kSliding;
  config.stride = 16;
  config.passkey_lengths = {200};
  config.depths = {0.5};
  config.trials = 4;
  config.retrieval_tasks = {RetrievalTask::kVariableTracking};
  config.retrieval_lengths = {500};
  config.retrieval_trials = 3;
  config.checks = {2.0, 1.2, 0.8, 0.9, 60.0, 0.5};
  config.export_format = ReportExport::kHf;
  config.threads = 1;
  const std::map<std::string, std::string> defaults =
      ValuesOf(ExtendReportConfig());
  for (const auto& [key, value] : ValuesOf(config)) {
    EXPECT_NE(defaults.at(key), value) << key << " keeps its default";
  }
  const std::string yaml = ExtendReportConfigToYaml(config);
  SCOPED_TRACE(yaml);
  EXPECT_EQ(ValuesOf(ParseExtendReportConfig(yaml, "report_config.yaml")),
            ValuesOf(config));
  // And the defaults, whose lists are not empty.
  ExtendReportConfig defaults_only;
  defaults_only.base_config = "c.yaml";
  EXPECT_EQ(ValuesOf(ParseExtendReportConfig(
                ExtendReportConfigToYaml(defaults_only), "defaults.yaml")),
            ValuesOf(defaults_only));
}

// data.passkey_digits, the key added as the tables' two-edit example: read,
// range-checked and written like every key, and the shortest passkey row
// follows it.
TEST(ConfigFields, PasskeyDigitsSetTheKeysAndTheShortestRow) {
  const std::string model =
      "model: {vocab_size: 257, hidden_size: 32, intermediate_size: 64, "
      "num_hidden_layers: 1, num_attention_heads: 4, "
      "max_position_embeddings: 512}\n";
  const auto parse = [&](const std::string& data) {
    return ParseTrainConfig(model + data, "run.yaml");
  };
  const int64_t three = PasskeyMinLength(3) - 1;  // seq_len for 3 digits
  const std::string rows = StrCat("train: {seq_len: ", three,
                                  "}\ndata: {path: d, passkey_fraction: 0.5");
  EXPECT_EQ(parse(rows + ", passkey_digits: 3}").data.passkey_digits, 3);
  ROTOR_EXPECT_ERROR(parse(rows + "}"), "data.passkey_fraction",
                     StrCat("needs train.seq_len >= ", PasskeyMinLength() - 1));
  ROTOR_EXPECT_ERROR(parse(rows + ", passkey_digits: 0}"),
                     "run.yaml:3:", "data.passkey_digits: must be >= 1");
  ROTOR_EXPECT_ERROR(parse(rows + ", passkey_digits: 19}"),
                     "data.passkey_digits: must be <= 18 (rotor's limit)");
  EXPECT_NE(TrainConfigToYaml(parse(rows + ", passkey_digits: 3}"))
                .find("passkey_digits: 3"),
            std::string::npos);
}

// A checkpoint's config.yaml as rotor wrote it before the tables (commit
// ddff00a, a yarn run with LoRA): it reads as the same config, and what the
// tables write back reads the same again. (That such a checkpoint resumes
// to the same bits was measured once: docs/architecture.md, config keys.)
TEST(ConfigFields, ReadsTheConfigOldCheckpointsSaved) {
  const std::string old_text =
      "output_dir: runs/yarn\n"
      "model:\n"
      "  vocab_size: 257\n"
      "  hidden_size: 32\n"
      "  intermediate_size: 64\n"
      "  num_hidden_layers: 2\n"
      "  num_attention_heads: 4\n"
      "  num_key_value_heads: 2\n"
      "  head_dim: 8\n"
      "  rms_norm_eps: 1e-05\n"
      "  tie_word_embeddings: true\n"
      "  max_position_embeddings: 128\n"
      "  rope_theta: 10000\n"
      "  partial_rotary_factor: 1\n"
      "  rope_scaling:\n"
      "    rope_type: yarn\n"
      "    factor: 2\n"
      "    original_max_position_embeddings: 64\n"
      "    beta_fast: 32\n"
      "    beta_slow: 1\n"
      "    truncate: true\n"
      "data:\n"
      "  path: brown\n"
      "  passkey_fraction: 0\n"
      "  passkey_loss: retrieval\n"
      "  document_mask: false\n"
      "  document_positions: false\n"
      "train:\n"
      "  batch_size: 4\n"
      "  seq_len: 64\n"
      "  gradient_accumulation_steps: 1\n"
      "  max_steps: 40\n"
      "  lr: 0.01\n"
      "  min_lr: 0.001\n"
      "  warmup_steps: 4\n"
      "  weight_decay: 0.1\n"
      "  betas: [0.9, 0.95]\n"
      "  eps: 1e-08\n"
      "  clip_grad_norm: 1\n"
      "  seed: 1337\n"
      "  threads: 1\n"
      "  allreduce_bucket_mb: 25\n"
      "  collective_timeout_seconds: 300\n"
      "  zero_stage: 0\n"
      "  loss_explosion_ratio: 4\n"
      "  resume: auto\n"
      "  init_from: runs/base\n"
      "  loss_chunk_rows: 1024\n"
      "eval:\n"
      "  every_n_steps: 10\n"
      "  max_batches: 4\n"
      "checkpoint:\n"
      "  every_n_steps: 10\n"
      "  keep_last_n: 10\n"
      "logging:\n"
      "  log_every_n_steps: 5\n"
      "  progress: false\n"
      "finetune:\n"
      "  lora:\n"
      "    r: 4\n"
      "    alpha: 8\n"
      "    dropout: 0\n"
      "    target_modules: [q_proj, v_proj]\n";
  const TrainConfig old = ParseCheckpointTrainConfig(old_text, "config.yaml");
  EXPECT_EQ(old.model.model_type, ModelType::kLlama);
  EXPECT_EQ(old.model.rope.rope_type, RopeType::kYarn);
  EXPECT_EQ(old.model.rope.original_max_position_embeddings, 64);
  EXPECT_EQ(old.data.passkey_digits, kPasskeyDefaultDigits);
  EXPECT_TRUE(old.finetune.lora.enabled);
  EXPECT_EQ(old.finetune.lora.target_modules,
            (std::vector<std::string>{"q_proj", "v_proj"}));
  EXPECT_EQ(ValuesOf(ParseCheckpointTrainConfig(TrainConfigToYaml(old),
                                                "config.yaml")),
            ValuesOf(old));
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string SourcePath(const std::string& relative) {
  return std::string(ROTOR_SOURCE_DIR) + "/" + relative;
}

// Whether `text` has `word` standing alone (not inside a longer key name).
bool HasWord(const std::string& text, const std::string& word) {
  return std::regex_search(
      text, std::regex("(^|[^A-Za-z0-9_])" + word + "($|[^A-Za-z0-9_])"));
}

TEST(ConfigFields, EveryKeyIsDocumented) {
  const std::string training = ReadText(SourcePath("docs/training.md"));
  const std::string huggingface = ReadText(SourcePath("docs/huggingface.md"));
  for (const auto& [path, value] : ValuesOf(TrainConfig())) {
    if (path.rfind("model.rope_scaling.", 0) == 0) continue;  // below
    const std::string key = path.substr(path.rfind('.') + 1);
    EXPECT_TRUE(training.find("`" + path + "`") != std::string::npos ||
                training.find("`" + key + "`") != std::string::npos ||
                huggingface.find("`" + key + "`") != std::string::npos)
        << path << " is in no table of docs/training.md or docs/huggingface.md";
  }
  // rope_scaling's keys: docs/context-extension.md's table of methods.
  const std::string extension =
      ReadText(SourcePath("docs/context-extension.md"));
  for (const auto& [key, value] : ValuesOf(RopeScalingConfig())) {
    EXPECT_TRUE(HasWord(extension, key))
        << "rope_scaling." << key << " is not in docs/context-extension.md";
  }
  // The report's keys: configs/extend/report.yaml documents each one
  // (report-hf.yaml, the report on an HF folder, sets fewer).
  const std::string report = ReadText(SourcePath("configs/extend/report.yaml"));
  for (const auto& [path, value] : ValuesOf(ExtendReportConfig())) {
    const std::string key = path.substr(path.rfind('.') + 1);
    EXPECT_TRUE(HasWord(report, key + ":"))
        << path << " is not in configs/extend/report.yaml";
  }
}

// The key table of docs/training.md lists the keys `rotor keys` prints
// (KeyPathsOf<TrainConfig>), each once, and no other; rope_scaling's keys
// are in docs/context-extension.md's table of methods (above). A cell may
// name several keys, the later ones without their section
// ("`model.bos_token_id`, `eos_token_id`").
TEST(ConfigFields, TheTrainingKeyTableListsTheKeysRotorKeysPrints) {
  std::istringstream training(ReadText(SourcePath("docs/training.md")));
  std::vector<std::string> table;
  bool in_table = false;
  const std::regex key_regex("`([a-z_.]+?):?`");  // `model:` is model
  for (std::string line; std::getline(training, line);) {
    if (line.rfind("| key | default.yaml |", 0) == 0) in_table = true;
    if (!in_table) continue;
    if (line.rfind("|", 0) != 0) break;
    const std::string cell = line.substr(2, line.find(" |", 1) - 2);
    std::string section;
    for (auto it = std::sregex_iterator(cell.begin(), cell.end(), key_regex);
         it != std::sregex_iterator(); ++it) {
      std::string key = (*it)[1];
      if (key.find('.') != std::string::npos) {
        section = key.substr(0, key.rfind('.') + 1);
      } else if (!section.empty()) {
        key = section + key;
      }
      table.push_back(key);
    }
  }
  std::vector<std::string> printed;
  for (const KeyPaths::Entry& entry : KeyPathsOf<TrainConfig>()) {
    if (entry.path.rfind("model.rope_scaling.", 0) == 0) continue;
    printed.push_back(entry.path);
  }
  std::vector<std::string> sorted_table = table;
  std::sort(sorted_table.begin(), sorted_table.end());
  EXPECT_EQ(std::adjacent_find(sorted_table.begin(), sorted_table.end()),
            sorted_table.end())
      << "a key is in two rows";
  std::sort(printed.begin(), printed.end());
  EXPECT_EQ(sorted_table, printed);
}

// Every config rotor ships reads with the tables' keys alone: the training
// configs (those that extend another run's model or a Hugging Face folder
// are read for their model: section), the model-only configs, the report.
TEST(ConfigFields, EveryShippedConfigSetsOnlyKnownKeys) {
  test::TempDir hf_folder;
  {
    const ModelConfig smollm =
        LoadConfigFileModel(SourcePath("configs/models/smollm2-135m.yaml"));
    std::ofstream(hf_folder.Path("config.json"))
        << HfConfigJson(smollm, "float32");
  }
  int read = 0;
  for (const auto& entry :
       fs::recursive_directory_iterator(SourcePath("configs"))) {
    const std::string path = entry.path().string();
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(path);
    if (entry.path().filename().string().rfind("report", 0) == 0) {
      EXPECT_NO_THROW(LoadExtendReportConfig(path));
    } else if (entry.path().filename().string().rfind("hf-", 0) == 0) {
      // train.init_from names a folder scripts/hf_extend.sh makes, whose
      // config.json the model: section amends: here, the one it would write.
      const TrainConfig config =
          LoadTrainConfig(path, {"train.init_from=" + hf_folder.path()});
      ExtensionLengths lengths;
      lengths.train_seq_len = config.train.seq_len;
      lengths.pretraining = PretrainingLengthOf(
          LoadHfConfig(hf_folder.Path("config.json")), "config.json");
      EXPECT_TRUE(LintContextExtension(config.model, lengths).empty());
    } else if (entry.path().filename().string().rfind("dynamic-", 0) == 0) {
      // RoPE settings only, for rotor eval --rope-from (dynamic NTK is not
      // fine-tuned).
      EXPECT_NO_THROW(RopeEditFromConfig(path));
    } else {
      // The context-extension lint finds nothing: every shipped extension
      // is consistent with its train.seq_len.
      std::optional<TrainConfig> training;
      const ModelConfig model = LoadConfigFileModel(path, {}, &training);
      ExtensionLengths lengths;
      if (training) lengths.train_seq_len = training->train.seq_len;
      for (const LintFinding& finding : LintContextExtension(model, lengths)) {
        ADD_FAILURE() << FormatLintFinding(finding);
      }
    }
    ++read;
  }
  EXPECT_GE(read, 20);
}

}  // namespace
}  // namespace rotor::train
