// The Hugging Face round trip as a user runs it: rotor export --random makes
// an HF folder, rotor train fine-tunes it from a YAML whose model: section
// only adds YaRN (train.init_from is the folder), rotor export writes the
// result, and that folder passes the independent double-precision reference
// forward (tests/train/hf/reference_llama.h). Bad folders fail with a message
// that names the problem and write nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/temp_dir.h"
#include "tests/test_util.h"
#include "tests/tools/run_rotor.h"
#include "tests/train/hf/hf_folder_writer.h"
#include "tests/train/hf/reference_llama.h"
#include "tests/train/train_test_util.h"
#include "train/checkpoint.h"
#include "train/io/atomic_file.h"

namespace rotor::tools {
namespace {

namespace fs = std::filesystem;

using Result = test::RotorResult;

std::string Quote(const std::string& text) { return "'" + text + "'"; }

// A byte-level Llama with every bias, pre-trained (so to speak) at 32
// positions.
constexpr char kBaseModel[] = R"(model:
  vocab_size: 257
  hidden_size: 32
  intermediate_size: 48
  num_hidden_layers: 2
  num_attention_heads: 4
  num_key_value_heads: 2
  max_position_embeddings: 32
  rope_theta: 10000.0
  rms_norm_eps: 1.0e-5
  tie_word_embeddings: false
  attention_bias: true
  mlp_bias: true
)";

// kBaseModel's config.json, as transformers writes it.
nlohmann::json HfConfig() {
  return {{"model_type", "llama"},
          {"architectures", {"LlamaForCausalLM"}},
          {"hidden_size", 32},
          {"intermediate_size", 48},
          {"num_hidden_layers", 2},
          {"num_attention_heads", 4},
          {"num_key_value_heads", 2},
          {"vocab_size", 257},
          {"max_position_embeddings", 32}};
}

// The bytes of every file in `dir`.
int64_t FolderBytes(const std::string& dir) {
  int64_t bytes = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file()) bytes += entry.file_size();
  }
  return bytes;
}

// The logits of `length` fixed byte ids through rotor's model of
// `checkpoint` and through the independent reference's reading of the HF
// folder `folder`: the largest difference over the largest logit.
double RelativeLogitError(const std::string& checkpoint,
                          const std::string& folder, int64_t length) {
  std::vector<int32_t> ids;
  for (int64_t i = 0; i < length; ++i) {
    ids.push_back(static_cast<int32_t>((i * 37 + 11) % 256));
  }
  auto model = train::LoadCheckpointModel(checkpoint, {});
  model->SetSequenceLength(length);
  const Tensor logits = model->Logits(ids, 1, length);
  const std::vector<double> reference = test::hf::ReferenceLogits(
      folder, std::vector<int>(ids.begin(), ids.end()));
  EXPECT_EQ(reference.size(), static_cast<size_t>(logits.numel()));
  double worst = 0.0, scale = 0.0;
  for (size_t i = 0; i < reference.size(); ++i) {
    worst = std::max(worst, std::abs(logits.data()[i] - reference[i]));
    scale = std::max(scale, std::abs(reference[i]));
  }
  return worst / scale;
}

class HfCli : public test::PreparedDataTest {
 protected:
  Result Run(const std::string& args) const {
    return test::RunRotor(dir_, args);
  }

  // rotor export --random of kBaseModel into dir/NAME, bf16 shards.
  std::string ExportRandom(const std::string& name) const {
    const std::string config = dir_.Write("base.yaml", kBaseModel);
    const Result r = Run("export --random " + Quote(config) +
                         " --dtype bfloat16 --max-shard-size 20000 --seed 3 "
                         "--output " +
                         Quote(dir_.Path(name)));
    EXPECT_EQ(r.status, 0) << r.err;
    return dir_.Path(name);
  }

  // The YaRN x2 fine-tune of the HF folder `base` into dir/NAME.
  std::string FineTuneConfig(const std::string& base,
                             const std::string& name) const {
    return dir_.Write(name + ".yaml", R"(output_dir: )" + dir_.Path(name) + R"(
model:
  max_position_embeddings: 64
  rope_scaling:
    rope_type: yarn
    factor: 2
    original_max_position_embeddings: 32
data:
  path: )" + data_ + R"(
train:
  init_from: )" + base + R"(
  batch_size: 2
  seq_len: 64
  max_steps: 3
  lr: 1.0e-3
  warmup_steps: 1
eval:
  every_n_steps: 0
  max_batches: 1
logging:
  progress: false
)");
  }
};

TEST_F(HfCli, ExtendAnHfModelWithYarnAndExportIt) {
  const std::string base = ExportRandom("base");
  EXPECT_TRUE(fs::exists(base + "/model.safetensors.index.json"));
  int shards = 0;
  for (const auto& entry : fs::directory_iterator(base)) {
    shards += entry.path().filename().string().rfind("model-0", 0) == 0;
  }
  EXPECT_GE(shards, 3) << "65 KB of bf16 in shards of at most 20000 bytes";
  EXPECT_EQ(train::ReadFile(base + "/tokenizer.json"),
            train::ByteTokenizerJson());

  Result r =
      Run("train " + Quote(FineTuneConfig(base, "run")) + " --samples 0");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_CONTAINS(r.out, "initialising the weights from " + base);
  EXPECT_CONTAINS(r.out, "step 3/3");

  // Export keeps the base's dtype unless told otherwise: the bfloat16 base
  // gives a bfloat16 folder, half the size of float32.
  const std::string as_base = dir_.Path("as_base");
  r = Run("export --checkpoint " + Quote(dir_.Path("run")) + " --output " +
          Quote(as_base));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(
                train::ReadFile(as_base + "/config.json"))["torch_dtype"],
            "bfloat16");
  const std::string exported = dir_.Path("exported");
  r = Run("export --checkpoint " + Quote(dir_.Path("run")) + " --output " +
          Quote(exported) + " --dtype float32");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_LT(FolderBytes(as_base), 0.6 * FolderBytes(exported));
  const nlohmann::json config =
      nlohmann::json::parse(train::ReadFile(exported + "/config.json"));
  EXPECT_EQ(config["max_position_embeddings"], 64);
  EXPECT_EQ(config["rope_scaling"]["rope_type"], "yarn");
  EXPECT_EQ(config["rope_scaling"]["factor"], 2.0);
  EXPECT_EQ(config["rope_scaling"]["original_max_position_embeddings"], 32);
  EXPECT_EQ(config["attention_bias"], true);
  EXPECT_EQ(config["mlp_bias"], true);
  EXPECT_EQ(config["bos_token_id"], 256);

  // The exported folder, read by the reference alone, computes what the
  // fine-tuned checkpoint computes in rotor, at the extended length.
  EXPECT_LT(RelativeLogitError(dir_.Path("run"), exported, 64), 2e-5);

  // The exported byte-level model pairs with byte-level data again.
  r = Run("eval --checkpoint " + Quote(exported) + " --data " + Quote(data_) +
          " --seq-len 64 --max-batches 1");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_CONTAINS(r.out, "val_loss");

  // Perplexity against length marks the length each folder was trained
  // at, not the one an override stretches it to: the base's 32, and the
  // export's original_max_position_embeddings 32 (its max is 64).
  for (const std::string& folder : {base, exported}) {
    r = Run("eval --checkpoint " + Quote(folder) + " --data " + Quote(data_) +
            " --lengths 16,64 --documents 1 --json --plot " +
            Quote(dir_.Path("ppl.png")) +
            " --force model.max_position_embeddings=64");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(
        nlohmann::json::parse(r.out)["perplexity_by_length"]["trained_length"],
        32)
        << folder;
  }
}

TEST_F(HfCli, BadFoldersFailNamingTheProblemAndWriteNothing) {
  test::hf::HfWriteOptions options;
  options.bad.drop_tensor = "model.layers.1.mlp.up_proj.weight";
  const std::string bad =
      test::hf::WriteRandomHfFolder(dir_.Path("bad"), HfConfig(), options).path;

  Result r = Run("export --checkpoint " + Quote(bad) + " --output " +
                 Quote(dir_.Path("out")));
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "missing tensor model.layers.1.mlp.up_proj.weight");
  EXPECT_FALSE(fs::exists(dir_.Path("out")));

  r = Run("train " + Quote(FineTuneConfig(bad, "run")));
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "missing tensor model.layers.1.mlp.up_proj.weight");
  EXPECT_FALSE(fs::exists(dir_.Path("run/checkpoints")));

  // An HF folder names no data.
  const std::string base = ExportRandom("base");
  r = Run("eval --checkpoint " + Quote(base));
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "give --data DIR");

  // export replaces an earlier export, nothing else.
  const std::string other = dir_.Write("other/notes.txt", "keep me");
  r = Run("export --checkpoint " + Quote(base) + " --output " +
          Quote(dir_.Path("other")));
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "was not written by rotor export");
  EXPECT_EQ(train::ReadFile(other), "keep me");
  // Nor does it replace its own input (--dtype bfloat16 would round the
  // only copy of the float32 weights).
  r = Run("export --checkpoint " + Quote(base) + " --output " + Quote(base));
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "read by this command");
}

// A folder that merely holds a config.json (an app's settings, a git
// checkout, a downloaded model) is not an earlier export: export refuses
// it, naming what replacing it would delete, and leaves it as it was. An
// earlier export with a file added since is refused too; an empty folder
// and an untouched earlier export are replaced.
TEST_F(HfCli, ExportReplacesOnlyWhatAnEarlierExportWrote) {
  const std::string config = dir_.Write("base.yaml", kBaseModel);
  const auto export_to = [&](const std::string& output) {
    return Run("export --random " + Quote(config) + " --output " +
               Quote(output));
  };
  const auto files_of = [](const std::string& folder) {
    std::vector<std::string> files;
    for (const auto& entry : fs::recursive_directory_iterator(folder)) {
      files.push_back(entry.path().string() + "=" +
                      (entry.is_regular_file() ? train::ReadFile(entry.path())
                                               : std::string("(folder)")));
    }
    std::sort(files.begin(), files.end());
    return files;
  };

  dir_.Write("settings/.git/HEAD", "ref: refs/heads/main\n");
  dir_.Write("settings/config.json", R"({"app":"settings"})");
  dir_.Write("settings/notes.txt", "keep");
  const std::vector<std::string> settings = files_of(dir_.Path("settings"));
  Result r = export_to(dir_.Path("settings"));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_CONTAINS(r.err, dir_.Path("settings") +
                             " exists and was not written by rotor export");
  EXPECT_CONTAINS(r.err, ".git/");
  EXPECT_CONTAINS(r.err, "notes.txt");
  EXPECT_EQ(files_of(dir_.Path("settings")), settings);

  // A downloaded model: neither another model nor itself replaces it.
  const std::string downloaded =
      test::hf::WriteRandomHfFolder(dir_.Path("downloaded"), HfConfig(), {})
          .path;
  const std::vector<std::string> weights = files_of(downloaded);
  r = export_to(downloaded);
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "was not written by rotor export");
  EXPECT_CONTAINS(r.err, "model.safetensors");
  r = Run("export --checkpoint " + Quote(downloaded) + " --output " +
          Quote(downloaded));
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "was not written by rotor export");
  EXPECT_EQ(files_of(downloaded), weights);

  // An earlier export is replaced, unless something was added to it.
  const std::string exported = dir_.Path("exported");
  r = export_to(exported);
  ASSERT_EQ(r.status, 0) << r.err;
  r = export_to(exported);
  EXPECT_EQ(r.status, 0) << r.err;
  dir_.Write("exported/README.md", "my notes");
  const std::vector<std::string> annotated = files_of(exported);
  r = export_to(exported);
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "README.md");
  EXPECT_EQ(files_of(exported), annotated);

  fs::create_directories(dir_.Path("empty"));
  r = export_to(dir_.Path("empty"));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir_.Path("empty/model.safetensors")));
}

// An export killed while writing leaves OUT.tmp-XXXXXX (110 MB in one of
// 16 kills of a real one): the next export of OUT removes it, with or
// without an earlier OUT, and leaves other folders' alone.
TEST_F(HfCli, ExportRemovesTheLeftoversOfAKilledExport) {
  const std::string config = dir_.Write("base.yaml", kBaseModel);
  for (const bool earlier : {false, true}) {
    SCOPED_TRACE(earlier ? "over an earlier export" : "a new folder");
    dir_.Write("out.tmp-AbC123/model.safetensors", "half of it");
    dir_.Write("out.tmp-Q1w2E3.old/config.json", "{}");
    dir_.Write("out2.tmp-ZzZ999/model.safetensors", "another output's");
    const Result r = Run("export --random " + Quote(config) + " --output " +
                         Quote(dir_.Path("out")));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(fs::exists(dir_.Path("out/model.safetensors")));
    EXPECT_FALSE(fs::exists(dir_.Path("out.tmp-AbC123")));
    EXPECT_FALSE(fs::exists(dir_.Path("out.tmp-Q1w2E3.old")));
    EXPECT_TRUE(fs::exists(dir_.Path("out2.tmp-ZzZ999")));
  }
}

// rotor extend-report on a model you already have: a bf16 HF folder as
// base.init_from and a folder of text files as base.data (prepared with the
// folder's tokenizer), with no base training; every fine-tune is exported
// as an HF folder that the independent reference reads as rotor does. Data
// prepared with another tokenizer is refused before anything runs.
TEST_F(HfCli, ExtendReportOnAnHfFolder) {
  const std::string base = ExportRandom("base");
  const std::string text = fs::path(data_).parent_path().string() + "/text";
  const std::string report = dir_.Path("report");
  const auto report_config = [&](const std::string& data) {
    return dir_.Write("report.yaml",
                      "base:\n  init_from: " + base + "\n  data: " + data +
                          "\noutput_dir: " + report +
                          "\nfactor: 4\nmethods: [default, yarn]\n"
                          "finetune: {steps: 1, warmup_steps: 1, "
                          "tokens_per_step: 256}\n"
                          "eval: {documents: 1, depths: [1], trials: 1,\n"
                          "       retrieval_tasks: [niah_single, "
                          "variable_tracking],\n"
                          "       retrieval_lengths: [448]}\n"
                          "export: hf\nthreads: 1\n");
  };
  Result r = Run("extend-report " + Quote(report_config(text)));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_CONTAINS(r.out, "(an existing model, not trained here; L = 32)");
  EXPECT_CONTAINS(r.out,
                  "prepared " + text + " with byte into " + report + "/data");
  EXPECT_FALSE(fs::exists(report + "/logs/base.log"));
  const std::string markdown = train::ReadFile(report + "/report.md");
  EXPECT_CONTAINS(markdown, "an existing model, not trained here");
  EXPECT_CONTAINS(markdown, "base training: none (an existing model)");
  EXPECT_CONTAINS(markdown, "/export/<method>");
  // The default grid starts at L/4 = 8 and L/2 = 16; passkey lengths are
  // those that fit the prompt (128 and 256 of 8..256).
  const nlohmann::json results =
      nlohmann::json::parse(train::ReadFile(report + "/results.json"));
  std::vector<int64_t> lengths, passkey_lengths;
  for (const auto& point : results["variants"][0]["perplexity"]) {
    lengths.push_back(point["length"]);
  }
  for (const auto& cell : results["variants"][0]["passkey"]) {
    passkey_lengths.push_back(cell["length"]);
  }
  EXPECT_EQ(lengths, (std::vector<int64_t>{8, 16, 32, 64, 128, 256}));
  EXPECT_EQ(passkey_lengths, (std::vector<int64_t>{128, 256}));
  // The retrieval tasks asked for, at their lengths, in the JSON and in a
  // table each.
  std::vector<std::string> retrieval;
  for (const auto& cell : results["variants"][0]["retrieval"]) {
    retrieval.push_back(StrCat(cell["task"].get<std::string>(), "@",
                               cell["length"].get<int64_t>()));
  }
  EXPECT_EQ(retrieval, (std::vector<std::string>{"niah_single@448",
                                                 "variable_tracking@448"}));
  EXPECT_CONTAINS(markdown, "## Retrieval (RULER-style)");
  EXPECT_CONTAINS(markdown, "### variable_tracking\n\n| model | 448 |");

  for (const char* method : {"default", "yarn"}) {
    SCOPED_TRACE(method);
    const std::string exported = report + "/export/" + method;
    const nlohmann::json config =
        nlohmann::json::parse(train::ReadFile(exported + "/config.json"));
    EXPECT_EQ(config["torch_dtype"], "bfloat16");
    EXPECT_EQ(config["max_position_embeddings"], 128);
    EXPECT_LT(RelativeLogitError(exported, exported, 128), 1e-5);
  }
  const nlohmann::json yarn = nlohmann::json::parse(
      train::ReadFile(report + "/export/yarn/config.json"));
  EXPECT_EQ(yarn["rope_scaling"]["rope_type"], "yarn");
  EXPECT_EQ(yarn["rope_scaling"]["factor"], 4.0);
  EXPECT_EQ(yarn["rope_scaling"]["original_max_position_embeddings"], 32);

  // Data in another tokenizer's ids is refused, naming both.
  r = Run("tokenizer train --input " + Quote(text) +
          " --vocab-size 300 --output " + Quote(dir_.Path("bpe.json")));
  ASSERT_EQ(r.status, 0) << r.err;
  r = Run("prepare --input " + Quote(text) + " --output " +
          Quote(dir_.Path("bpe-data")) + " --tokenizer " +
          Quote(dir_.Path("bpe.json")));
  ASSERT_EQ(r.status, 0) << r.err;
  r = Run("extend-report " + Quote(report_config(dir_.Path("bpe-data"))) +
          " output_dir=" + dir_.Path("other"));
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "base.data " + dir_.Path("bpe-data") +
                             " was prepared with tokenizer " +
                             dir_.Path("bpe-data") +
                             "/tokenizer.json, but the model's is byte");
}

}  // namespace
}  // namespace rotor::tools
