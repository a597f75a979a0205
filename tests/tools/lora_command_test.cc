// LoRA as a user runs it: rotor export --random makes a base (an HF
// folder), rotor train fine-tunes it with finetune.lora (r 4 on every
// projection, embeddings and norms trained in full, activation
// checkpointing, YaRN x2), rotor eval, generate and score read the LoRA
// checkpoint (base + adapters), rotor export merges the adapters into a
// plain HF folder, and that folder gives the adapter model's logits within
// float32 rounding, the same greedy continuation and the same loss.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/autograd.h"
#include "nn/lora.h"
#include "tests/temp_dir.h"
#include "tests/test_util.h"
#include "tests/tools/run_rotor.h"
#include "tests/train/train_test_util.h"
#include "train/checkpoint.h"
#include "train/config/hf_config.h"
#include "train/hf/peft_adapter.h"
#include "train/io/json.h"
#include "train/io/safetensors.h"

namespace rotor::tools {
namespace {

std::string Quote(const std::string& text) { return "'" + text + "'"; }

// The logits of 64 fixed tokens, at the extended length.
std::vector<float> FixedLogits(nn::Transformer& model) {
  std::vector<int32_t> ids;
  for (int i = 0; i < 64; ++i) ids.push_back((i * 37 + 11) % 256);
  NoGradGuard no_grad;
  model.SetSequenceLength(64);
  return model.Logits(ids, 1, 64).ToVector();
}

constexpr char kBaseModel[] = R"(model:
  vocab_size: 257
  hidden_size: 32
  intermediate_size: 48
  num_hidden_layers: 2
  num_attention_heads: 4
  num_key_value_heads: 2
  max_position_embeddings: 32
  rope_theta: 10000.0
  tie_word_embeddings: false
)";

class LoraCli : public test::PreparedDataTest {
 protected:
  test::RotorResult Run(const std::string& args) const {
    return test::RunRotor(dir_, args);
  }

  // A Hugging Face folder of kBaseModel with random weights, dir/base.
  std::string ExportBase() const {
    const std::string base = dir_.Path("base");
    const test::RotorResult r =
        Run("export --random " + Quote(dir_.Write("base.yaml", kBaseModel)) +
            " --seed 3 --output " + Quote(base));
    EXPECT_EQ(r.status, 0) << r.err;
    return base;
  }

  std::string LoraConfig(const std::string& base) const {
    return dir_.Write("lora.yaml", "output_dir: " + dir_.Path("run") + R"(
model:
  max_position_embeddings: 64
  rope_scaling: {rope_type: yarn, factor: 2, original_max_position_embeddings: 32}
data:
  path: )" + data_ + R"(
train:
  init_from: )" + base + R"(
  batch_size: 2
  seq_len: 64
  max_steps: 4
  lr: 1.0e-2
  warmup_steps: 1
  activation_checkpointing: layers
  threads: 1
eval:
  every_n_steps: 0
  max_batches: 1
logging:
  progress: false
finetune:
  lora:
    r: 4
    alpha: 16
    dropout: 0.05
    target_modules: [q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj]
  trainable: [embed_tokens, norm]
)");
  }
};

TEST_F(LoraCli, TrainEvaluateAndExportMerged) {
  const std::string base = dir_.Path("base");
  const std::string base_config = dir_.Write("base.yaml", kBaseModel);
  test::RotorResult r = Run("export --random " + Quote(base_config) +
                            " --seed 3 --output " + Quote(base));
  ASSERT_EQ(r.status, 0) << r.err;

  r = Run("train " + Quote(LoraConfig(base)) + " --samples 1");
  ASSERT_EQ(r.status, 0) << r.err;
  // The sample after training is the trained model's, without dropout:
  // what rotor generate writes from the checkpoint with the same settings.
  const test::RotorResult sample =
      Run("generate --threads 1 --checkpoint " + Quote(dir_.Path("run")) +
          " --prompt 'The ' --max-new-tokens 200 --temperature 0.8 --seed 1");
  ASSERT_EQ(sample.status, 0) << sample.err;
  // train shows the first 200 characters of it.
  EXPECT_CONTAINS(r.out, "--- sample 1 (prompt \"The \") ---\n" +
                             sample.out.substr(0, 150));
  EXPECT_CONTAINS(r.out, "fine-tuning " + base + " (xxh3-64:");
  EXPECT_CONTAINS(r.out, "LoRA r=4 on 14 projections");
  EXPECT_CONTAINS(train::ReadFile(dir_.Path("run/resolved_config.yaml")),
                  "finetune:");  // the resolved config
  EXPECT_CONTAINS(r.out, "step 4/4");

  // Merged onto its own base, it would destroy the base it was loaded
  // from (and so itself): refused, the base untouched.
  const std::string base_weights = train::ReadFile(base + "/model.safetensors");
  r = Run("export --checkpoint " + Quote(dir_.Path("run")) + " --output " +
          Quote(base));
  EXPECT_EQ(r.status, 1);
  // Every file of the base model is an input, read or not
  // (NoteModelFilesAsInputs).
  EXPECT_CONTAINS(r.err, base +
                             " holds config.json, generation_config.json, "
                             "model.safetensors, tokenizer.json and "
                             "tokenizer_config.json, read by this command");
  EXPECT_EQ(train::ReadFile(base + "/model.safetensors"), base_weights);

  const std::string exported = dir_.Path("exported");
  r = Run("export --checkpoint " + Quote(dir_.Path("run")) + " --output " +
          Quote(exported));
  ASSERT_EQ(r.status, 0) << r.err;
  // A plain model: the base's tensor names, no adapters.
  std::set<std::string> base_names, exported_names;
  for (const auto& [name, tensor] :
       train::LoadCheckpointModel(base, {})->NamedParameters()) {
    base_names.insert(name);
  }
  const train::SafetensorsFile file =
      train::SafetensorsFile::Read(exported + "/model.safetensors");
  for (const auto& info : file.tensors()) exported_names.insert(info.name);
  EXPECT_EQ(exported_names, base_names);

  // Merged logits against the adapter model's at the extended length.
  // Measured: max |merged - adapter| = 8.9e-8 with max |logit| = 0.45
  // (3 float32 ulps of the largest logit); the bound is 1e-6 * max |logit|
  // (15 ulps).
  auto adapter = train::LoadCheckpointModel(dir_.Path("run"), {});
  EXPECT_EQ(nn::CountLoraLayers(*adapter), 14);
  auto merged = train::LoadCheckpointModel(exported, {});
  std::vector<int32_t> ids;
  for (int i = 0; i < 64; ++i) ids.push_back((i * 37 + 11) % 256);
  NoGradGuard no_grad;
  adapter->SetSequenceLength(64);
  merged->SetSequenceLength(64);
  const std::vector<float> a = adapter->Logits(ids, 1, 64).ToVector();
  const std::vector<float> m = merged->Logits(ids, 1, 64).ToVector();
  const std::vector<float> b =
      train::LoadCheckpointModel(base, {})->Logits(ids, 1, 64).ToVector();
  double worst = 0.0, scale = 0.0, trained = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::fabs(double(a[i]) - m[i]));
    scale = std::max(scale, std::fabs(double(a[i])));
    trained = std::max(trained, std::fabs(double(a[i]) - b[i]));
  }
  std::ostringstream measured;
  measured << "max |merged - adapter| " << worst << ", max |logit| " << scale;
  RecordProperty("measured", measured.str());
  EXPECT_LE(worst, 1e-6 * scale) << "scale " << scale;
  EXPECT_GT(trained, 1e-2) << "the fine-tuning changed nothing";

  // Both evaluate, to the same loss.
  const auto eval_loss = [&](const std::string& checkpoint) {
    const test::RotorResult e = Run(
        "eval --threads 1 --checkpoint " + Quote(checkpoint) + " --data " +
        Quote(data_) + " --seq-len 64 --batch-size 2 --max-batches 2 --json");
    EXPECT_EQ(e.status, 0) << e.err;
    return train::ParseJson(e.out, "eval --json").at("loss").get<double>();
  };
  // Generation and scoring read the LoRA checkpoint as the merged folder.
  const auto generate = [&](const std::string& checkpoint) {
    const test::RotorResult g =
        Run("generate --threads 1 --checkpoint " + Quote(checkpoint) +
            " --prompt 'The cat' --max-new-tokens 8 --temperature 0 "
            "--token-ids");
    EXPECT_EQ(g.status, 0) << g.err;
    return g.out;
  };
  EXPECT_EQ(generate(dir_.Path("run")), generate(exported));
  const test::RotorResult scored =
      Run("score --checkpoint " + Quote(dir_.Path("run")) +
          " --text 'The cat sat' --json");
  EXPECT_EQ(scored.status, 0) << scored.err;

  const double adapter_loss = eval_loss(dir_.Path("run"));
  const double merged_loss = eval_loss(exported);
  EXPECT_NEAR(adapter_loss, merged_loss, 1e-5 * adapter_loss);
  EXPECT_NE(adapter_loss, eval_loss(base));
}

// rotor export --adapter: PEFT's adapter folder. The expected names, shapes
// and keys are written from PEFT's source, not from rotor's writer:
// PeftModel wraps the causal LM as base_model (LoraModel) .model, so every
// key starts "base_model.model."; get_peft_model_state_dict keeps the
// "lora_" tensors and drops the adapter name ("...q_proj.lora_A.default.
// weight" -> "...q_proj.lora_A.weight"); lora_A is nn.Linear(in, r), so
// [r, in], lora_B nn.Linear(r, out), [out, r]; a ModulesToSaveWrapper's
// copy is saved under the wrapped module's own path
// ("base_model.model.model.embed_tokens.weight"); adapter_config.json is
// LoraConfig's fields (peft/tuners/lora/config.py).
TEST_F(LoraCli, ExportAdapterInPeftFormatAndLoadItBack) {
  const std::string base = ExportBase();
  test::RotorResult r;
  r = Run("train " + Quote(LoraConfig(base)));
  ASSERT_EQ(r.status, 0) << r.err;

  // A checkpoint that is no LoRA run is refused.
  r = Run("export --checkpoint " + Quote(base) + " --adapter --output " +
          Quote(dir_.Path("none")));
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, base +
                             " is not a LoRA checkpoint (its config.yaml has "
                             "no finetune.lora)");

  const std::string adapter = dir_.Path("adapter");
  r = Run("export --checkpoint " + Quote(dir_.Path("run")) +
          " --adapter --output " + Quote(adapter));
  ASSERT_EQ(r.status, 0) << r.err;
  // The run extended RoPE (YaRN x2), which the base's config.json lacks:
  // the adapter folder holds the base's config as the run has it, and the
  // message says how to load the base with it (it once only said that
  // the settings differ).
  EXPECT_CONTAINS(r.out,
                  "note: the run changed its base's max_position_embeddings "
                  "and rope_scaling, which PEFT would take from the base's "
                  "config.json: the adapter folder holds the base's "
                  "config.json as the run has it, base_config/config.json\n");
  EXPECT_CONTAINS(r.out,
                  "  config = AutoConfig.from_pretrained(\"" + adapter +
                      "/base_config\")\n"
                      "  base = AutoModelForCausalLM.from_pretrained(\"" +
                      base +
                      "\", config=config)\n"
                      "  model = PeftModel.from_pretrained(base, \"" +
                      adapter + "\")\n");

  // hidden 32, 4 heads of 8, 2 kv heads (k/v out 16), intermediate 48, r 4.
  std::map<std::string, std::vector<int64_t>> expected;
  const std::string p = "base_model.model.model.";
  const std::map<std::string, std::pair<int64_t, int64_t>> projections = {
      {"self_attn.q_proj", {32, 32}}, {"self_attn.k_proj", {32, 16}},
      {"self_attn.v_proj", {32, 16}}, {"self_attn.o_proj", {32, 32}},
      {"mlp.gate_proj", {32, 48}},    {"mlp.up_proj", {32, 48}},
      {"mlp.down_proj", {48, 32}}};
  for (int layer = 0; layer < 2; ++layer) {
    const std::string l = p + "layers." + std::to_string(layer) + ".";
    for (const auto& [module, in_out] : projections) {
      expected[l + module + ".lora_A.weight"] = {4, in_out.first};
      expected[l + module + ".lora_B.weight"] = {in_out.second, 4};
    }
    expected[l + "input_layernorm.weight"] = {32};
    expected[l + "post_attention_layernorm.weight"] = {32};
  }
  expected[p + "embed_tokens.weight"] = {257, 32};
  expected[p + "norm.weight"] = {32};
  std::map<std::string, std::vector<int64_t>> written;
  const train::SafetensorsFile file =
      train::SafetensorsFile::Read(adapter + "/adapter_model.safetensors");
  for (const auto& info : file.tensors()) {
    written[info.name] = info.shape;
    EXPECT_EQ(info.dtype, train::SafetensorsDtype::kF32) << info.name;
  }
  EXPECT_EQ(written, expected);
  EXPECT_EQ(file.metadata().at("format"), "pt");  // safetensors.torch's

  const train::Json config = train::ParseJson(
      train::ReadFile(adapter + "/adapter_config.json"), "adapter_config");
  EXPECT_EQ(config.at("peft_type"), "LORA");
  EXPECT_EQ(config.at("task_type"), "CAUSAL_LM");
  EXPECT_EQ(config.at("r"), 4);
  EXPECT_TRUE(config.at("lora_alpha").is_number_integer());
  EXPECT_EQ(config.at("lora_alpha"), 16);
  EXPECT_EQ(config.at("lora_dropout"), 0.05);
  EXPECT_EQ(config.at("target_modules"),
            train::Json({"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj",
                         "up_proj", "down_proj"}));
  EXPECT_EQ(config.at("bias"), "none");
  EXPECT_EQ(config.at("fan_in_fan_out"), false);
  EXPECT_EQ(config.at("use_rslora"), false);
  EXPECT_EQ(config.at("use_dora"), false);
  EXPECT_EQ(config.at("base_model_name_or_path"), base);
  EXPECT_EQ(config.at("modules_to_save"),
            train::Json({"embed_tokens", "input_layernorm",
                         "post_attention_layernorm", "norm"}));

  // Loaded back onto its base (with the run's RoPE), merged: the merged
  // export's logits within float32 rounding.
  const std::string merged_dir = dir_.Path("merged");
  r = Run("export --checkpoint " + Quote(dir_.Path("run")) + " --output " +
          Quote(merged_dir));
  ASSERT_EQ(r.status, 0) << r.err;
  // base_config/config.json is rotor's HF config of the extended model,
  // the merged export's config.json, and reads back as the run's model.
  const std::string base_config =
      train::ReadFile(adapter + "/base_config/config.json");
  EXPECT_EQ(base_config, train::ReadFile(merged_dir + "/config.json"));
  const train::Json extended = train::ParseJson(base_config, "base_config");
  EXPECT_EQ(extended.at("max_position_embeddings"), 64);
  EXPECT_EQ(extended.at("rope_scaling").at("rope_type"), "yarn");
  EXPECT_EQ(extended.at("rope_scaling").at("factor"), 2.0);
  EXPECT_EQ(extended.at("rope_scaling").at("original_max_position_embeddings"),
            32);
  EXPECT_TRUE(train::ParseJson(train::ReadFile(base + "/config.json"), "base")
                  .value("rope_scaling", train::Json())
                  .is_null());
  EXPECT_EQ(
      train::HfConfigJson(
          train::LoadHfConfig(adapter + "/base_config/config.json"), "float32"),
      train::HfConfigJson(
          train::LoadCheckpointModelConfig(dir_.Path("run")).model, "float32"));
  // The folder lists it in its marker: the export may replace it.
  r = Run("export --checkpoint " + Quote(dir_.Path("run")) +
          " --adapter --output " + Quote(adapter));
  ASSERT_EQ(r.status, 0) << r.err;
  train::TrainConfig run;
  train::LoadCheckpointModel(dir_.Path("run"), {}, &run);
  auto loaded = train::LoadCheckpointModel(base, train::ModelEdit{run.model});
  train::LoadPeftAdapter(adapter, *loaded);
  EXPECT_EQ(nn::CountLoraLayers(*loaded), 14);
  nn::MergeLora(*loaded);
  const std::vector<float> a = FixedLogits(*loaded);
  const std::vector<float> m =
      FixedLogits(*train::LoadCheckpointModel(merged_dir, {}));
  double worst = 0.0, scale = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::fabs(double(a[i]) - m[i]));
    scale = std::max(scale, std::fabs(double(a[i])));
  }
  std::ostringstream measured;
  measured << "max |peft merged - merged export| " << worst << ", max |logit| "
           << scale;
  RecordProperty("measured", measured.str());
  EXPECT_LE(worst, 1e-6 * scale) << measured.str();

  // A tensor PEFT would not have written is refused, naming it.
  const std::string odd = dir_.Path("odd");
  std::filesystem::create_directories(odd);
  std::filesystem::copy(adapter + "/adapter_config.json", odd);
  const std::vector<float> bias(32, 0.0f);
  train::WriteSafetensors(
      odd + "/adapter_model.safetensors",
      {{"base_model.model.model.layers.0.self_attn.q_proj.bias",
        train::SafetensorsDtype::kF32,
        {32},
        bias.data()}});
  auto other = train::LoadCheckpointModel(base, train::ModelEdit{run.model});
  try {
    train::LoadPeftAdapter(odd, *other);
    ADD_FAILURE() << "loaded";
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.what(),
                    "tensor base_model.model.model.layers.0.self_attn.q_proj."
                    "bias is neither an adapter of target_modules");
  }
}

// The adapter names its base by an absolute path, so PEFT finds it from
// anywhere, though the run gave train.init_from relative to its folder.
TEST_F(LoraCli, AdapterNamesItsBaseByAnAbsolutePath) {
  ExportBase();
  test::RotorResult r;
  const std::string in_dir = "cd " + Quote(dir_.path()) + " &&";
  r = test::RunRotor(dir_, "train " + Quote(LoraConfig("./base/")), in_dir);
  ASSERT_EQ(r.status, 0) << r.err;
  r = test::RunRotor(dir_, "export --checkpoint run --adapter --output adapter",
                     in_dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find("is a rotor checkpoint"), std::string::npos);
  const train::Json config = train::ParseJson(
      train::ReadFile(dir_.Path("adapter/adapter_config.json")),
      "adapter_config");
  EXPECT_EQ(config.at("base_model_name_or_path"), dir_.Path("base"));
}

// A base trained by rotor is no folder PEFT can load: the adapter export
// says so, and how to make one.
TEST_F(LoraCli, AdapterOfARotorBaseSaysHowToMakeItsBase) {
  const std::string base = dir_.Path("rbase");
  test::RotorResult r =
      Run("train " +
          Quote(dir_.Write("rbase.yaml",
                           std::string(kBaseModel) + "data:\n  path: " + data_ +
                               "\ntrain:\n  batch_size: 2\n  seq_len: 32\n"
                               "  max_steps: 1\n  threads: 1\n"
                               "eval:\n  every_n_steps: 0\n"
                               "logging:\n  progress: false\noutput_dir: " +
                               base + "\n")));
  ASSERT_EQ(r.status, 0) << r.err;
  // A rotor checkpoint as init_from takes the whole model section.
  const std::string lora = train::ReadFile(LoraConfig(base));
  r = Run("train " +
          Quote(dir_.Write(
              "lora-rotor.yaml",
              test::ReplaceOnce(
                  lora, "model:\n",
                  test::ReplaceOnce(kBaseModel,
                                    "  max_position_embeddings: 32\n", "")))));
  ASSERT_EQ(r.status, 0) << r.err;
  r = Run("export --checkpoint " + Quote(dir_.Path("run")) +
          " --adapter --output " + Quote(dir_.Path("adapter")));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_CONTAINS(r.out, "note: the base, " + base +
                             ", is a rotor checkpoint, which PEFT cannot "
                             "load; export it as a Hugging Face folder "
                             "(rotor export --checkpoint " +
                             base + " --output BASE)");
}

// A run that keeps its base's model settings needs no other config.json:
// the adapter folder has none, and the export says nothing of it.
TEST_F(LoraCli, AdapterOfAnUnchangedBaseHasNoBaseConfig) {
  const std::string base = ExportBase();
  test::RotorResult r;
  std::string config = train::ReadFile(LoraConfig(base));
  config = test::ReplaceOnce(config, "  max_position_embeddings: 64\n", "");
  config = test::ReplaceOnce(config,
                             "  rope_scaling: {rope_type: yarn, factor: 2, "
                             "original_max_position_embeddings: 32}\n",
                             "");
  config = test::ReplaceOnce(config, "seq_len: 64", "seq_len: 32");
  r = Run("train " + Quote(dir_.Write("plain.yaml", config)));
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string adapter = dir_.Path("adapter");
  r = Run("export --checkpoint " + Quote(dir_.Path("run")) +
          " --adapter --output " + Quote(adapter));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(adapter + "/adapter_config.json"));
  EXPECT_FALSE(std::filesystem::exists(adapter + "/base_config"));
  EXPECT_EQ(r.out.find("base_config"), std::string::npos) << r.out;
}

TEST_F(LoraCli, WithoutInitFromItIsRefused) {
  const std::string config = dir_.Write("nobase.yaml", R"(model:
  vocab_size: 257
  hidden_size: 32
  intermediate_size: 48
  num_hidden_layers: 2
  num_attention_heads: 4
  max_position_embeddings: 32
data:
  path: )" + data_ + R"(
train:
  seq_len: 32
finetune:
  lora: {r: 4}
)");
  const test::RotorResult r = Run("train " + Quote(config));
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, config +
                             ":13:3: finetune: fine-tuning with a frozen "
                             "base needs the base: set train.init_from");
}

}  // namespace
}  // namespace rotor::tools
