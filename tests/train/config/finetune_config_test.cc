// The finetune: section of the training config (train/config/
// train_config.h): PEFT's defaults, every key read and written back, the
// errors (each naming file:line and the key), and the memory estimate's
// counts of what trains against a model set up by nn::SetUpFinetuning.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "nn/lora.h"
#include "nn/transformer.h"
#include "tests/temp_dir.h"
#include "tests/test_util.h"
#include "train/config/hf_config.h"
#include "train/config/memory_estimate.h"
#include "train/config/model_config.h"
#include "train/config/train_config.h"

namespace rotor::train {
namespace {

const std::string kBase =
    "model:\n"
    "  vocab_size: 257\n"
    "  hidden_size: 32\n"
    "  intermediate_size: 64\n"
    "  num_hidden_layers: 2\n"
    "  num_attention_heads: 4\n"
    "  num_key_value_heads: 2\n"
    "  max_position_embeddings: 64\n"
    "  tie_word_embeddings: true\n"
    "data:\n"
    "  path: d\n"
    "train:\n"
    "  seq_len: 32\n"
    "  init_from: runs/base\n";

TrainConfig Parse(const std::string& text,
                  const std::vector<std::string>& overrides = {}) {
  return ParseTrainConfig(text, "ft.yaml", overrides);
}

TEST(FinetuneSection, AbsentMeansEveryParameterTrains) {
  const TrainConfig config = Parse(kBase);
  EXPECT_FALSE(config.finetune.lora.enabled);
  EXPECT_FALSE(config.finetune.freezes_base());
  EXPECT_EQ(TrainConfigToYaml(config).find("finetune"), std::string::npos);
}

TEST(FinetuneSection, LoraAloneTakesPeftsDefaults) {
  const TrainConfig config = Parse(kBase + "finetune:\n  lora:\n");
  const LoraConfig& lora = config.finetune.lora;
  EXPECT_TRUE(lora.enabled);
  EXPECT_EQ(lora.r, 8);
  EXPECT_EQ(lora.alpha, 8.0);
  EXPECT_EQ(lora.dropout, 0.0);
  EXPECT_EQ(lora.target_modules,
            (std::vector<std::string>{"q_proj", "v_proj"}));
  EXPECT_TRUE(config.finetune.trainable.empty());
  EXPECT_TRUE(config.finetune.freezes_base());
}

TEST(FinetuneSection, ReadsEveryKeyAndRoundTrips) {
  const TrainConfig config =
      Parse(kBase +
            "finetune:\n"
            "  lora:\n"
            "    r: 4\n"
            "    alpha: 16\n"
            "    dropout: 0.05\n"
            "    target_modules: [q_proj, k_proj, v_proj, o_proj, gate_proj, "
            "up_proj, down_proj]\n"
            "  trainable: [embed_tokens, norm]\n");
  const FinetuneSection& f = config.finetune;
  EXPECT_EQ(f.lora.r, 4);
  EXPECT_EQ(f.lora.alpha, 16.0);
  EXPECT_EQ(f.lora.dropout, 0.05);
  EXPECT_EQ(f.lora.target_modules, LoraTargetModuleNames());
  EXPECT_EQ(f.trainable, (std::vector<std::string>{"embed_tokens", "norm"}));
  const std::string yaml = TrainConfigToYaml(config);
  EXPECT_CONTAINS(yaml, "finetune:");
  const TrainConfig again = Parse(yaml);
  EXPECT_EQ(again.finetune.lora.enabled, true);
  EXPECT_EQ(again.finetune.lora.r, 4);
  EXPECT_EQ(again.finetune.lora.alpha, 16.0);
  EXPECT_EQ(again.finetune.lora.dropout, 0.05);
  EXPECT_EQ(again.finetune.lora.target_modules, f.lora.target_modules);
  EXPECT_EQ(again.finetune.trainable, f.trainable);
  EXPECT_EQ(TrainConfigToYaml(again), yaml);
  // trainable without lora: those parameters alone train.
  const TrainConfig partial = Parse(kBase + "finetune:\n  trainable: [norm]\n");
  EXPECT_FALSE(partial.finetune.lora.enabled);
  EXPECT_TRUE(partial.finetune.freezes_base());
}

TEST(FinetuneSection, ErrorsNameFileLineAndKey) {
  ROTOR_EXPECT_ERROR(
      Parse(kBase + "finetune:\n  lora:\n    target_modules: [q_proj, qkv]\n"),
      "ft.yaml:17:", "finetune.lora.target_modules: unknown name 'qkv'",
      "expected some of q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, "
      "down_proj");
  ROTOR_EXPECT_ERROR(
      Parse(kBase + "finetune:\n  lora:\n    target_modules: [q_proj, "
                    "q_proj]\n"),
      "finetune.lora.target_modules: 'q_proj' is listed twice");
  ROTOR_EXPECT_ERROR(
      Parse(kBase + "finetune:\n  lora:\n    target_modules: []\n"),
      "ft.yaml:17:", "finetune.lora.target_modules: is empty");
  ROTOR_EXPECT_ERROR(Parse(kBase + "finetune:\n  lora:\n    rank: 4\n"),
                     "ft.yaml:17:", "finetune.lora.rank: unknown key",
                     "alpha, dropout, r, target_modules");
  ROTOR_EXPECT_ERROR(Parse(kBase + "finetune:\n  lora:\n    r: 0\n"),
                     "ft.yaml:17:", "finetune.lora.r", "must be >= 1");
  ROTOR_EXPECT_ERROR(Parse(kBase + "finetune:\n  lora:\n    dropout: 1\n"),
                     "finetune.lora.dropout");
  ROTOR_EXPECT_ERROR(Parse(kBase + "finetune:\n  lora: 8\n"), "ft.yaml:16:",
                     "finetune.lora: expected a map of settings");
  ROTOR_EXPECT_ERROR(Parse(kBase + "finetune:\n  trainable: [embeddings]\n"),
                     "ft.yaml:16:",
                     "finetune.trainable: unknown name 'embeddings' (expected "
                     "some of embed_tokens, norm, lm_head)");
  ROTOR_EXPECT_ERROR(
      Parse(kBase + "finetune:\n  trainable: [norm, lm_head]\n"),
      "ft.yaml:16:", "finetune.trainable: 'lm_head' matches no parameter",
      "model.tie_word_embeddings");
  ROTOR_EXPECT_ERROR(Parse(kBase + "finetune:\n  adapters: 1\n"),
                     "finetune.adapters: unknown key");
  ROTOR_EXPECT_ERROR(
      Parse(kBase + "finetune:\n  lora:\n", {"train.init_from=null"}),
      "ft.yaml:16:", "finetune: fine-tuning with a frozen base needs the base",
      "set train.init_from");
  ROTOR_EXPECT_ERROR(Parse(kBase, {"finetune.lora.target_modules=[x_proj]"}),
                     "override 'finetune.lora.target_modules=[x_proj]'",
                     "unknown name 'x_proj'");
}

// The estimate's A and T are what SetUpFinetuning builds, and a LoRA run's
// model state keeps 4 bytes per frozen weight instead of 16.
TEST(FinetuneSection, MemoryEstimateCountsGradientsAndMomentsOfTrainablesOnly) {
  for (const char* tied : {"true", "false"}) {
    SCOPED_TRACE(tied);
    const TrainConfig config = Parse(
        kBase +
            "finetune:\n"
            "  lora: {r: 4, target_modules: [q_proj, k_proj, v_proj, o_proj, "
            "gate_proj, up_proj, down_proj]}\n"
            "  trainable: [embed_tokens, norm]\n",
        {StrCat("model.tie_word_embeddings=", tied)});
    const nn::TransformerConfig architecture =
        ResolveTransformerConfig(config.model);
    nn::Transformer model(architecture, 1);
    const double base = static_cast<double>(model.NumParameters());
    const FinetuneSection& f = config.finetune;
    nn::SetUpFinetuning(model,
                        {true,
                         {f.lora.r, f.lora.alpha, f.lora.dropout},
                         f.lora.target_modules,
                         f.trainable},
                        1);
    double trainable = 0.0;
    for (const Tensor& p : model.TrainableParameters()) trainable += p.numel();
    EXPECT_EQ(TrainableParameterCount(architecture, f), trainable);
    EXPECT_EQ(LoraParameterCount(architecture, f) + base,
              static_cast<double>(model.NumParameters()));
    const MemoryEstimate full =
        EstimateTrainingMemory(architecture, config.train);
    const MemoryEstimate lora =
        EstimateTrainingMemory(architecture, config.train, f);
    EXPECT_EQ(full.model_state_bytes, 16.0 * base);
    EXPECT_EQ(
        lora.model_state_bytes,
        4.0 * static_cast<double>(model.NumParameters()) + 12.0 * trainable);
    EXPECT_EQ(lora.activation_bytes, full.activation_bytes);
  }
}

// configs/extend/hf-yarn-4x-lora.yaml is configs/extend/hf-yarn-4x.yaml
// with LoRA r 8 on every projection, embeddings and norms trained, every
// layer recomputed and a LoRA learning rate: the same model and data.
TEST(FinetuneSection, TheLoraExampleIsTheHfExtensionWithLora) {
  const test::TempDir dir;
  const std::string configs = std::string(ROTOR_SOURCE_DIR) + "/configs/";
  dir.Write("base/config.json",
            HfConfigJson(LoadModelConfig(configs + "models/smollm2-135m.yaml"),
                         "bfloat16"));
  const std::vector<std::string> base = {"train.init_from=" + dir.Path("base")};
  const TrainConfig full =
      LoadTrainConfig(configs + "extend/hf-yarn-4x.yaml", base);
  const TrainConfig lora =
      LoadTrainConfig(configs + "extend/hf-yarn-4x-lora.yaml", base);
  const FinetuneSection& f = lora.finetune;
  EXPECT_TRUE(f.lora.enabled);
  EXPECT_EQ(f.lora.r, 8);
  EXPECT_EQ(f.lora.alpha, 16.0);
  EXPECT_EQ(f.lora.target_modules, LoraTargetModuleNames());
  EXPECT_EQ(f.trainable, (std::vector<std::string>{"embed_tokens", "norm"}));
  EXPECT_EQ(lora.train.activation_checkpointing_every, 1);
  EXPECT_EQ(lora.data.path, full.data.path);
  TrainConfig same = lora;
  same.output_dir = full.output_dir;
  same.finetune = full.finetune;
  same.train.activation_checkpointing_every = 0;
  same.train.lr = full.train.lr;
  same.train.min_lr = full.train.min_lr;
  EXPECT_EQ(TrainConfigToYaml(same), TrainConfigToYaml(full));
}

// Extending a Hugging Face folder pre-trained at 512 tokens: YaRN without
// original_max_position_embeddings takes the folder's 512; another value is
// refused at its line, naming both; a folder that is itself scaled (as
// Llama 3.1's) was pre-trained at its rope_scaling's original length;
// methods that do not read the key (linear) are left alone.
TEST(FinetuneSection, AnExtensionTakesThePretrainingLengthOfItsFolder) {
  const test::TempDir dir;
  const std::string configs = std::string(ROTOR_SOURCE_DIR) + "/configs/";
  const ModelConfig smol =
      LoadModelConfig(configs + "models/smollm2-135m.yaml");
  dir.Write("base/config.json", HfConfigJson(smol, "bfloat16"));
  ModelConfig scaled = smol;
  scaled.rope.max_position_embeddings = 2048;
  scaled.rope.rope_type = RopeType::kYarn;
  scaled.rope.factor = 4.0;
  scaled.rope.original_max_position_embeddings = 512;
  dir.Write("scaled/config.json", HfConfigJson(scaled, "bfloat16"));
  auto config = [&](const std::string& base, const std::string& scaling) {
    dir.Write("extend.yaml",
              "output_dir: " + dir.Path("run") +
                  "\nmodel:\n  max_position_embeddings: 4096\n"
                  "  rope_scaling: " +
                  scaling + "\ndata:\n  path: data\ntrain:\n  init_from: " +
                  dir.Path(base) + "\n");
    return LoadTrainConfig(dir.Path("extend.yaml"));
  };
  EXPECT_EQ(config("base", "{rope_type: yarn, factor: 8}")
                .model.rope.original_max_position_embeddings,
            512);
  EXPECT_EQ(config("scaled", "{rope_type: yarn, factor: 8}")
                .model.rope.original_max_position_embeddings,
            512);
  EXPECT_EQ(config("base",
                   "{rope_type: yarn, factor: 8, "
                   "original_max_position_embeddings: 512}")
                .model.rope.original_max_position_embeddings,
            512);
  EXPECT_EQ(config("base", "{rope_type: linear, factor: 8}").model.rope.factor,
            8.0);
  ROTOR_EXPECT_ERROR(
      config("base",
             "{rope_type: yarn, factor: 8, "
             "original_max_position_embeddings: 256}"),
      dir.Path("extend.yaml") + ":4:",
      "model.rope_scaling.original_max_position_embeddings: 256, but " +
          dir.Path("base") +
          "/config.json says the model was pre-trained at 512 tokens (its "
          "max_position_embeddings); set 512, or leave the key out to take "
          "it from the folder");
  ROTOR_EXPECT_ERROR(
      config("scaled",
             "{rope_type: llama3, factor: 8, low_freq_factor: 1, "
             "high_freq_factor: 4, original_max_position_embeddings: 2048}"),
      "2048, but ",
      "pre-trained at 512 tokens (its "
      "rope_scaling.original_max_position_embeddings)");
  // The method as the model reader reads it: a null rope_type leaves the
  // legacy `type`.
  ROTOR_EXPECT_ERROR(
      config("base",
             "{rope_type: null, type: yarn, factor: 8, "
             "original_max_position_embeddings: 256}"),
      dir.Path("extend.yaml") + ":4:",
      "model.rope_scaling.original_max_position_embeddings: 256, but " +
          dir.Path("base") + "/config.json says");
  // At the top level (Phi-3's place), at its line.
  dir.Write("top.yaml",
            "model:\n  original_max_position_embeddings: 256\n"
            "  rope_scaling: {rope_type: yarn, factor: 8}\n"
            "data:\n  path: data\ntrain:\n  init_from: " +
                dir.Path("base") + "\n");
  ROTOR_EXPECT_ERROR(LoadTrainConfig(dir.Path("top.yaml")),
                     dir.Path("top.yaml") +
                         ":2:37: model.original_max_position_embeddings: 256, "
                         "but " +
                         dir.Path("base") + "/config.json says");
}

// The model: section of a config whose train.init_from is a Hugging Face
// folder amends the folder's model key by key: a key it gives replaces the
// folder's value (null, through an alias too: the default), rope_scaling
// as a whole, and the others stay the folder's. A problem with a value the folder gave names
// the config without a line (none of its lines holds it); one with a value
// of the section names its line.
TEST(FinetuneSection, AmendmentsReplaceTheKeysTheyGive) {
  const test::TempDir dir;
  ModelConfig scaled = LoadModelConfig(std::string(ROTOR_SOURCE_DIR) +
                                       "/configs/models/smollm2-135m.yaml");
  scaled.rope.max_position_embeddings = 2048;
  scaled.rope.rope_type = RopeType::kYarn;
  scaled.rope.factor = 4.0;
  scaled.rope.original_max_position_embeddings = 512;
  scaled.rope.beta_fast = 16.0;
  scaled.bos_token_id = 7;
  dir.Write("scaled/config.json", HfConfigJson(scaled, "bfloat16"));
  const ModelConfig folder = LoadHfConfig(dir.Path("scaled/config.json"));
  auto amend = [&](const std::string& model,
                   const std::vector<std::string>& overrides = {}) {
    return ParseTrainConfig(model +
                                "data:\n  path: data\ntrain:\n  init_from: " +
                                dir.Path("scaled") + "\n",
                            "amend.yaml", overrides)
        .model;
  };
  // No section, or an empty one: the folder's model.
  const auto yaml = [](const ModelConfig& model) {
    TrainConfig config;
    config.model = model;
    return TrainConfigToYaml(config);
  };
  EXPECT_EQ(yaml(amend("")), yaml(folder));
  EXPECT_EQ(amend("model: {}\n").rope.beta_fast, 16.0);

  const ModelConfig linear = amend(
      "model:\n  rms_norm_eps: null\n  rope_theta: null\n"
      "  rope_scaling: {rope_type: linear, factor: 2}\n");
  EXPECT_EQ(linear.rms_norm_eps, std::nullopt);  // null: the default
  EXPECT_EQ(linear.rope.rope_theta, 10000.0);
  EXPECT_EQ(linear.rope.rope_type, RopeType::kLinear);  // as a whole
  EXPECT_EQ(linear.rope.factor, 2.0);
  EXPECT_EQ(linear.rope.beta_fast, RopeScalingConfig().beta_fast);
  EXPECT_EQ(linear.rope.original_max_position_embeddings, std::nullopt);
  EXPECT_EQ(linear.hidden_size, folder.hidden_size);  // the folder's
  EXPECT_EQ(linear.rope.max_position_embeddings, 2048);
  EXPECT_EQ(linear.bos_token_id, 7);

  const ModelConfig unscaled = amend("model:\n  rope_scaling: null\n");
  EXPECT_EQ(unscaled.rope.rope_type, RopeType::kDefault);
  EXPECT_EQ(unscaled.rope.factor, std::nullopt);

  ROTOR_EXPECT_ERROR(amend("model:\n  vocab_size: 5\n"),
                     "amend.yaml: model.bos_token_id: must be below "
                     "vocab_size 5, got 7");
  ROTOR_EXPECT_ERROR(amend("model:\n  bos_token_id: 60000\n"),
                     "amend.yaml:2:17: model.bos_token_id: must be below "
                     "vocab_size 49152, got 60000");
  // The top-level key of that name is not rope_scaling's.
  ROTOR_EXPECT_ERROR(
      amend("model:\n  original_max_position_embeddings: 100\n"),
      "amend.yaml:2:37: model.original_max_position_embeddings: 100 "
      "contradicts rope_scaling.original_max_position_embeddings 512");
  ROTOR_EXPECT_ERROR(amend("model:\n  max_position_embeddings: null\n"),
                     "amend.yaml: model.max_position_embeddings: required "
                     "but missing");

  // A null through an alias (config.json's `dtype`) takes the default too.
  EXPECT_EQ(folder.torch_dtype, "bfloat16");
  EXPECT_EQ(amend("model:\n  dtype: null\n").torch_dtype, std::nullopt);
  // An unknown key is named at its line.
  ROTOR_EXPECT_ERROR(amend("model:\n  foo: 1\n"),
                     "amend.yaml:2:3: model.foo: unknown key");

  // A null original_max_position_embeddings is no value, as anywhere in a
  // config: the key is left out, so it is the folder's pre-training length
  // (512, not max_position_embeddings), for llama3 too (which requires
  // it), whether the file or an override gives the null.
  EXPECT_EQ(amend("model:\n  rope_scaling: {rope_type: yarn, factor: 4, "
                  "original_max_position_embeddings: null}\n")
                .rope.original_max_position_embeddings,
            512);
  EXPECT_EQ(amend("model:\n  rope_scaling: {rope_type: llama3, factor: 4, "
                  "low_freq_factor: 1, high_freq_factor: 4, "
                  "original_max_position_embeddings: null}\n")
                .rope.original_max_position_embeddings,
            512);
  EXPECT_EQ(amend("model:\n  rope_scaling: {rope_type: yarn, factor: 4, "
                  "original_max_position_embeddings: 1024}\n",
                  {"model.rope_scaling.original_max_position_embeddings=null"})
                .rope.original_max_position_embeddings,
            512);
}

}  // namespace
}  // namespace rotor::train
