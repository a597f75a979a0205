// rotor extend-report: the per-method overrides give valid configs, the
// report config is parsed strictly, and a tiny report runs end to end
// (base training, zero-shot and fine-tuned variants, tables, reuse of
// finished results on a second run).
#include "train/extend/report.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "tests/temp_dir.h"
#include "tests/test_util.h"
#include "tests/train/train_test_util.h"
#include "train/checkpoint.h"
#include "train/config/train_config.h"

namespace rotor::train {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(ExtensionOverrides, EveryMethodGivesAValidConfig) {
  for (RopeType method : {RopeType::kDefault, RopeType::kLinear, RopeType::kNtk,
                          RopeType::kDynamic, RopeType::kYarn,
                          RopeType::kLlama3, RopeType::kLongRope}) {
    SCOPED_TRACE(RopeTypeName(method));
    const TrainConfig config = LoadTrainConfig(
        test::TinyConfigPath(), ExtensionOverrides(method, 4, 32, 8, 10000.0));
    const RopeScalingConfig& rope = config.model.rope;
    EXPECT_EQ(rope.rope_type, method);
    // Dynamic keeps L0 = max_position_embeddings at the training length.
    EXPECT_EQ(rope.max_position_embeddings,
              method == RopeType::kDynamic ? 32 : 128);
    if (method != RopeType::kDefault) EXPECT_EQ(rope.factor, 4.0);
    if (method == RopeType::kYarn || method == RopeType::kLlama3 ||
        method == RopeType::kLongRope) {
      EXPECT_EQ(rope.original_max_position_embeddings, 32);
    }
    if (method == RopeType::kLongRope) {
      // Short factors 1 (unchanged up to L0), long factors rising to s.
      ASSERT_EQ(rope.long_factor->size(), 4u);
      EXPECT_EQ(rope.short_factor->front(), 1.0);
      EXPECT_EQ(rope.long_factor->back(), 4.0);
      for (size_t i = 1; i < 4; ++i) {
        EXPECT_GE((*rope.long_factor)[i], (*rope.long_factor)[i - 1]);
      }
    }
  }
}

// configs/extend/*-{4,8}x.yaml: fine-tuning configs whose architecture is
// the default model's (so init_from: runs/default works) and whose RoPE
// settings are those rotor extend-report uses; dynamic is model-only.
TEST(ExampleConfigs, ExtendTheDefaultModelWithEveryMethod) {
  const std::string dir = std::string(ROTOR_SOURCE_DIR) + "/configs/";
  const TrainConfig base = LoadTrainConfig(dir + "default.yaml");
  const nn::TransformerConfig base_architecture =
      ResolveTransformerConfig(base.model);
  for (const char* method :
       {"linear", "ntk", "yarn", "llama3", "longrope", "dynamic"}) {
    for (int factor : {4, 8}) {
      const std::string path =
          dir + "extend/" + method + "-" + std::to_string(factor) + "x.yaml";
      SCOPED_TRACE(path);
      const RopeType type = *RopeTypeFromName(method);
      const std::vector<std::string> expected = ExtensionOverrides(
          type, factor, 256, base_architecture.head_dim, 10000.0);
      // Applying the file's RoPE settings or the report's to the default
      // config gives the same RoPE config.
      const TrainConfig from_file =
          LoadTrainConfig(dir + "default.yaml", RopeOverridesFromConfig(path));
      const TrainConfig from_report =
          LoadTrainConfig(dir + "default.yaml", expected);
      EXPECT_EQ(TrainConfigToYaml(from_file), TrainConfigToYaml(from_report));
      if (type == RopeType::kDynamic) continue;
      const TrainConfig config = LoadTrainConfig(path);
      EXPECT_EQ(config.train.init_from, "runs/default");
      EXPECT_EQ(config.train.seq_len, 256 * factor);
      EXPECT_EQ(config.train.batch_size * config.train.seq_len, 4096);
      EXPECT_NO_THROW(CheckSameArchitecture(
          base_architecture, ResolveTransformerConfig(config.model), path));
      EXPECT_EQ(config.model.rope.rope_type, type);
    }
  }
}

TEST(ExtendReportConfig, ParsesDefaultsAndRejectsMistakes) {
  const ExtendReportConfig config = ParseExtendReportConfig(
      "base: {config: b.yaml}\nfactor: 8\n", "r.yaml", {"finetune.steps=50"});
  EXPECT_EQ(config.base_config, "b.yaml");
  EXPECT_EQ(config.factor, 8.0);
  EXPECT_EQ(config.finetune_steps, 50);
  EXPECT_EQ(config.methods.size(), 7u);
  EXPECT_EQ(config.finetune_skip, std::vector<RopeType>{RopeType::kDynamic});

  ROTOR_EXPECT_ERROR(ParseExtendReportConfig("factor: 4\n", "r.yaml"),
                     "base.config", "is required");
  ROTOR_EXPECT_ERROR(
      ParseExtendReportConfig("base: {config: b.yaml}\nmethods: [yarn, "
                              "rope9]\n",
                              "r.yaml"),
      "r.yaml:2:", "methods", "unknown method 'rope9'");
  ROTOR_EXPECT_ERROR(
      ParseExtendReportConfig("base: {config: b.yaml}\nfinetune: {skip: []}\n",
                              "r.yaml"),
      "finetune.skip", "must list dynamic");
  ROTOR_EXPECT_ERROR(
      ParseExtendReportConfig("base: {config: b.yaml}\nfactor: 1\n", "r.yaml"),
      "r.yaml:2:", "factor", "(1, 64]");
  ROTOR_EXPECT_ERROR(
      ParseExtendReportConfig("base: {config: b.yaml}\nfactor: 4\nfactor: 8\n",
                              "r.yaml"),
      "r.yaml:3:", "factor: duplicate key");
  ROTOR_EXPECT_ERROR(
      ParseExtendReportConfig("base: {config: b.yaml}\neval: {lenghts: []}\n",
                              "r.yaml"),
      "eval.lenghts", "unknown key");
  ROTOR_EXPECT_ERROR(
      ParseExtendReportConfig(
          "base: {config: b.yaml}\neval: {passkey_lengths: [64]}\n", "r.yaml"),
      "eval.passkey_lengths", "must be >= ");
  ROTOR_EXPECT_ERROR(
      ParseExtendReportConfig("base: {config: b.yaml, practice: {steps: 10}}\n",
                              "r.yaml"),
      "base.practice.output_dir", "is required");
  ROTOR_EXPECT_ERROR(
      ParseExtendReportConfig("base: {config: b.yaml, practice: {steps: 10,\n"
                              "  output_dir: p, passkey_fraction: 0}}\n",
                              "r.yaml"),
      "r.yaml:2:", "base.practice.passkey_fraction", "(0, 1]");
  ROTOR_EXPECT_ERROR(
      ParseExtendReportConfig("base: {config: b.yaml, practice: {stesp: 10}}\n",
                              "r.yaml"),
      "base.practice.stesp", "unknown key");
  ROTOR_EXPECT_ERROR(
      ParseExtendReportConfig(
          "base: {config: b.yaml}\nfinetune: {passkey_fraction: 2}\n",
          "r.yaml"),
      "r.yaml:2:", "finetune.passkey_fraction", "[0, 1]");
  // The shipped report config parses.
  const ExtendReportConfig shipped = LoadExtendReportConfig(
      std::string(ROTOR_SOURCE_DIR) + "/configs/extend/report.yaml");
  EXPECT_EQ(shipped.base_config, "configs/default.yaml");
  EXPECT_EQ(shipped.finetune_steps, 200);
  EXPECT_GT(shipped.practice_steps, 0);
}

// With base.practice, a passkey-practice run continues the base at its own
// length and becomes the model that is extended; the fine-tunes take
// finetune.passkey_fraction.
TEST(ExtendReport, PasskeyPracticeBecomesTheBase) {
  test::TempDir dir;
  const std::string data = test::PrepareTextData(dir);
  const std::string report_yaml =
      "base:\n  config: " + test::TinyConfigPath() +
      "\n  overrides: [data.path=" + data + ", output_dir=" + dir.Path("base") +
      ", model.max_position_embeddings=112, train.seq_len=112,"
      " train.batch_size=2, train.max_steps=2, eval.every_n_steps=0,"
      " checkpoint.every_n_steps=0]\n"
      "  practice: {steps: 2, passkey_fraction: 0.5, output_dir: " +
      dir.Path("practice") +
      "}\n"
      "output_dir: " +
      dir.Path("report") +
      "\n"
      "factor: 2\n"
      "methods: [yarn]\n"
      "finetune: {steps: 1, warmup_steps: 1, passkey_fraction: 0.25,\n"
      "           tokens_per_step: 224}\n"
      "eval: {lengths: [112], documents: 1, passkey_lengths: [112],\n"
      "       depths: [1], trials: 1}\n"
      "threads: 1\n";
  const ExtendReportConfig config = ParseExtendReportConfig(
      report_yaml, dir.Write("report.yaml", report_yaml));
  std::ostringstream log;
  const ExtendReportSummary summary = RunExtendReport(config, log);
  EXPECT_NE(log.str().find("passkey practice (2 steps at length 112"),
            std::string::npos)
      << log.str();
  const std::string practice_config =
      Read(dir.Path("practice/checkpoints/step_00000002/config.yaml"));
  EXPECT_NE(practice_config.find("init_from: " + dir.Path("base")),
            std::string::npos);
  EXPECT_NE(practice_config.find("passkey_fraction: 0.5"), std::string::npos);
  EXPECT_NE(practice_config.find("seq_len: 112"), std::string::npos);
  const std::string yarn_config = Read(
      dir.Path("report/finetune/yarn/checkpoints/step_00000001/config.yaml"));
  EXPECT_NE(yarn_config.find("init_from: " + dir.Path("practice")),
            std::string::npos);
  EXPECT_NE(yarn_config.find("passkey_fraction: 0.25"), std::string::npos);
  EXPECT_NE(yarn_config.find("seq_len: 224"), std::string::npos);
  EXPECT_NE(Read(summary.report_path).find("2 steps of passkey practice"),
            std::string::npos);

  // A finished practice run of other settings is not silently reused.
  const ExtendReportConfig other =
      ParseExtendReportConfig(report_yaml, dir.path() + "/report.yaml",
                              {"base.practice.passkey_fraction=0.75"});
  std::ostringstream again;
  ROTOR_EXPECT_ERROR(
      RunExtendReport(other, again),
      "passkey practice: " + dir.Path("practice") + " holds another run",
      "data.passkey_fraction 0.5 (checkpoint) vs 0.75 (config)",
      "delete that folder");
}

TEST(ExtendReport, TinyModelEndToEnd) {
  test::TempDir dir;
  const std::string data = test::PrepareTextData(dir);
  const std::string report_yaml =
      "base:\n  config: " + test::TinyConfigPath() +
      "\n  overrides: [data.path=" + data + ", output_dir=" + dir.Path("base") +
      ", train.max_steps=3, eval.every_n_steps=0, checkpoint.every_n_steps=0]\n"
      "output_dir: " +
      dir.Path("report") +
      "\n"
      "factor: 4\n"
      "methods: [default, dynamic, yarn]\n"
      "finetune: {steps: 2, warmup_steps: 1}\n"
      "eval: {lengths: [32, 128], documents: 2, passkey_lengths: [128],\n"
      "       depths: [0, 1], trials: 2}\n"
      "threads: 1\n";
  const ExtendReportConfig config = ParseExtendReportConfig(
      report_yaml, dir.Write("report.yaml", report_yaml));
  std::ostringstream log;
  const ExtendReportSummary summary = RunExtendReport(config, log);
  EXPECT_EQ(summary.report_path, dir.Path("report/report.md"));
  const std::string report = Read(summary.report_path);
  for (const char* row :
       {"| default (zero-shot) |", "| dynamic (zero-shot) |",
        "| yarn (zero-shot) |", "| default + fine-tune |",
        "| yarn + fine-tune |", "## Passkey retrieval", "## Checks",
        "unscaled RoPE degrades sharply at 128"}) {
    EXPECT_NE(report.find(row), std::string::npos) << row << "\n" << report;
  }
  EXPECT_EQ(report.find("dynamic + fine-tune"), std::string::npos);
  // The fine-tunes are ordinary runs that started from the base.
  const std::string yarn_config = Read(
      dir.Path("report/finetune/yarn/checkpoints/step_00000002/config.yaml"));
  EXPECT_NE(yarn_config.find("rope_type: yarn"), std::string::npos);
  EXPECT_NE(yarn_config.find("seq_len: 128"), std::string::npos);
  EXPECT_NE(yarn_config.find("init_from: " + dir.Path("base")),
            std::string::npos);
  EXPECT_NE(Read(dir.Path("report/results.json")).find("\"variants\""),
            std::string::npos);
  EXPECT_NE(Read(dir.Path("report/logs/finetune-yarn.log")).find("step 2/2"),
            std::string::npos);

  // A second run reuses every finished piece.
  std::ostringstream again;
  RunExtendReport(config, again);
  EXPECT_EQ(again.str().find("training the base model"), std::string::npos);
  EXPECT_EQ(again.str().find("fine-tuning"), std::string::npos);
  EXPECT_NE(again.str().find("yarn-finetuned: done before"), std::string::npos);
  EXPECT_EQ(Read(summary.report_path).substr(0, 200), report.substr(0, 200));
}

}  // namespace
}  // namespace rotor::train
