// What rotor extend-report runs: each method's model settings and the
// practice and fine-tune configs are exactly those the report used to get
// by parsing `key=value` overrides on the base config (the strings below),
// and the overrides report.md lists give the same model back.
#include "train/extend/recipe.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/temp_dir.h"
#include "tests/test_util.h"
#include "tests/train/train_test_util.h"
#include "train/checkpoint.h"
#include "train/config/model_edit.h"
#include "train/config/report_config.h"
#include "train/config/train_config.h"
#include "train/trainer.h"

namespace rotor::train {
namespace {

// `base` with `model` in place of its model, as YAML (every key, 17 digits):
// equal texts mean equal configs.
std::string WithModel(TrainConfig base, const ModelConfig& model) {
  base.model = model;
  return TrainConfigToYaml(base);
}

// The overrides the report parsed before it built configs directly, for the
// tiny model (head_dim 8) trained at 32 and extended 4x.
const std::vector<std::pair<RopeType, std::vector<std::string>>>
    kTinyOverrides = {
        {RopeType::kDefault,
         {"model.max_position_embeddings=128", "model.rope_scaling=null"}},
        {RopeType::kLinear,
         {"model.max_position_embeddings=128",
          "model.rope_scaling={rope_type: linear, factor: 4}"}},
        {RopeType::kNtk,
         {"model.max_position_embeddings=128",
          "model.rope_scaling={rope_type: ntk, factor: 4}"}},
        {RopeType::kDynamic,
         {"model.max_position_embeddings=32",
          "model.rope_scaling={rope_type: dynamic, factor: 4}"}},
        {RopeType::kYarn,
         {"model.max_position_embeddings=128",
          "model.rope_scaling={rope_type: yarn, factor: 4, "
          "original_max_position_embeddings: 32}"}},
        {RopeType::kLlama3,
         {"model.max_position_embeddings=128",
          "model.rope_scaling={rope_type: llama3, factor: 4, low_freq_factor: "
          "1, high_freq_factor: 4, original_max_position_embeddings: 32}"}},
        {RopeType::kLongRope,
         {"model.max_position_embeddings=128",
          "model.rope_scaling={rope_type: longrope, factor: 4, "
          "original_max_position_embeddings: 32, short_factor: [1, 1, 1, 1], "
          "long_factor: [1, 1.75, 3.25, 4]}"}}};

TEST(ExtendModelConfig, EqualsTheOldOverridesForEveryMethod) {
  const TrainConfig base = test::TinyConfig("data", "out");
  for (const auto& [method, overrides] : kTinyOverrides) {
    SCOPED_TRACE(RopeTypeName(method));
    const ModelConfig model = ExtendModelConfig(base.model, method, 4, 32);
    EXPECT_EQ(WithModel(base, model),
              TrainConfigToYaml(test::TinyConfig("data", "out", overrides)));
    // What report.md lists for the method gives the same config.
    EXPECT_EQ(
        TrainConfigToYaml(test::TinyConfig("data", "out", RopeEditText(model))),
        WithModel(base, model));
  }
}

// Long factors that need rounding (16 channels, 8 pairs): rounded to the 6
// digits the report lists, as when they went through text.
TEST(ExtendModelConfig, RoundsLongFactorsAsListed) {
  const TrainConfig base = test::TinyConfig(
      "data", "out",
      {"model.head_dim=16", "model.rope_theta=500000",
       "model.max_position_embeddings=112", "train.seq_len=112"});
  const std::vector<std::string> old = {
      "model.max_position_embeddings=280",
      "model.rope_scaling={rope_type: longrope, factor: 2.5, "
      "original_max_position_embeddings: 112, short_factor: [1, 1, 1, 1, 1, "
      "1, 1, 1], long_factor: [1, 1.07427, 1.28238, 1.58311, 1.91689, "
      "2.21762, 2.42573, 2.5]}"};
  const ModelConfig model =
      ExtendModelConfig(base.model, RopeType::kLongRope, 2.5, 112);
  EXPECT_EQ(RopeEditText(model), old);
  std::vector<std::string> overrides = {
      "model.head_dim=16", "model.rope_theta=500000", "train.seq_len=112"};
  overrides.insert(overrides.end(), old.begin(), old.end());
  EXPECT_EQ(WithModel(base, model),
            TrainConfigToYaml(test::TinyConfig("data", "out", overrides)));
  // Short factors 1 (unchanged up to L0), long factors rising to s.
  const std::vector<double>& long_factor = *model.rope.long_factor;
  EXPECT_TRUE(std::is_sorted(long_factor.begin(), long_factor.end()));
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
      // Applying the file's RoPE settings or the report's to the default
      // config gives the same config.
      TrainConfig from_file = base;
      from_file.model =
          ApplyModelEdit(base.model, {{}, RopeEditFromConfig(path), path});
      EXPECT_EQ(TrainConfigToYaml(from_file),
                WithModel(base, ExtendModelConfig(base.model, type, factor,
                                                  base.train.seq_len)));
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

ExtendReportConfig TinyReport(const std::vector<std::string>& overrides) {
  const std::string yaml = "base:\n  config: " + test::TinyConfigPath() +
                           "\n  overrides: [data.path=d, output_dir=base]\n"
                           "  practice: {steps: 3, output_dir: practice}\n"
                           "output_dir: report\n"
                           "finetune: {steps: 20, warmup_steps: 30}\n"
                           "eval: {passkey_lengths: [112]}\n"
                           "threads: 1\n";
  return ParseExtendReportConfig(yaml, "report.yaml", overrides);
}

TEST(PlanReport, ResolvesTheLengths) {
  const ReportPlan plan = PlanReport(TinyReport({}));
  EXPECT_EQ(plan.base_length, 32);
  EXPECT_EQ(plan.extended_length, 128);
  // L/4 and L/2 show what static scaling costs below L.
  EXPECT_EQ(plan.lengths, (std::vector<int64_t>{8, 16, 32, 64, 128, 256}));
  EXPECT_EQ(plan.passkey_lengths, std::vector<int64_t>{112});
  // Without eval.passkey_lengths: the lengths that fit the prompt.
  EXPECT_EQ(PlanReport(TinyReport({"eval.passkey_lengths=[]"})).passkey_lengths,
            (std::vector<int64_t>{128, 256}));
  // Each retrieval task at the passkey lengths that hold its prompt.
  const ReportPlan longer =
      PlanReport(TinyReport({"eval.passkey_lengths=[112, 400, 600]"}));
  ASSERT_EQ(longer.retrieval.size(), 4u);
  EXPECT_EQ(longer.retrieval[0].task, RetrievalTask::kNiahSingle);
  EXPECT_EQ(longer.retrieval[0].lengths, (std::vector<int64_t>{400, 600}));
  EXPECT_EQ(longer.retrieval[1].lengths, std::vector<int64_t>{600});
  EXPECT_TRUE(longer.retrieval[2].lengths.empty());  // 617 tokens at most
  EXPECT_EQ(longer.retrieval[3].lengths, std::vector<int64_t>{600});
  ROTOR_EXPECT_ERROR(
      PlanReport(TinyReport({"eval.retrieval_lengths=[300, 400]"})),
      "retrieval length 300 is below the shortest niah_single prompt (375 "
      "tokens); set eval.retrieval_lengths");
  ROTOR_EXPECT_ERROR(PlanReport(TinyReport({"eval.passkey_lengths=[64]"})),
                     "passkey length 64 is below the shortest passkey prompt",
                     "set eval.passkey_lengths");
  EXPECT_EQ(plan.base.train.threads, 1);
  EXPECT_FALSE(plan.base.logging.progress);
  EXPECT_EQ(PlanReport(TinyReport({"eval.lengths=[256, 32, 256]"})).lengths,
            (std::vector<int64_t>{32, 256}));
}

// The practice run and a fine-tune equal what the old overrides gave.
TEST(PracticeAndFinetuneConfig, EqualTheOldOverrides) {
  const ExtendReportConfig report =
      TinyReport({"base.practice.passkey_fraction=0.5"});
  const ReportPlan plan = PlanReport(report);
  const std::vector<std::string> practice = {
      "data.path=d", "output_dir=practice", "train.init_from=ckpt",
      "train.resume=auto", "data.passkey_fraction=0.5", "train.max_steps=3",
      "train.warmup_steps=3", "train.threads=1", "eval.every_n_steps=0",
      "checkpoint.every_n_steps=0", "checkpoint.keep_last_n=1",
      "logging.progress=false",
      // The passkey rows need a longer sequence than the tiny model's.
      "train.seq_len=112", "model.max_position_embeddings=112"};
  ROTOR_EXPECT_ERROR(PracticeConfig(report, plan, "ckpt"), "passkey practice",
                     "needs train.seq_len >= 104", "got 32");
  const ExtendReportConfig longer = TinyReport(
      {"base.practice.passkey_fraction=0.5",
       "base.overrides=[data.path=d, output_dir=base, train.seq_len=112, "
       "model.max_position_embeddings=112]"});
  const ReportPlan longer_plan = PlanReport(longer);
  EXPECT_EQ(
      TrainConfigToYaml(PracticeConfig(longer, longer_plan, "ckpt")),
      TrainConfigToYaml(LoadTrainConfig(test::TinyConfigPath(), practice)));

  const std::vector<std::string> yarn = {
      "data.path=d",
      "output_dir=report/finetune/yarn",
      "train.init_from=ckpt",
      "train.resume=auto",
      "train.seq_len=128",
      "train.batch_size=1",  // 128 tokens per step (the base's 4 x 32)
      "train.gradient_accumulation_steps=1",
      "train.max_steps=20",
      "train.lr=0.0005",
      "train.min_lr=5e-05",
      "train.warmup_steps=20",
      "train.threads=1",
      "data.passkey_fraction=0",
      "eval.every_n_steps=0",
      "eval.max_batches=4",
      "checkpoint.every_n_steps=0",
      "checkpoint.keep_last_n=1",
      "logging.progress=false",
      "logging.log_every_n_steps=2",
      "model.max_position_embeddings=128",
      "model.rope_scaling={rope_type: yarn, factor: 4, "
      "original_max_position_embeddings: 32}"};
  EXPECT_EQ(
      TrainConfigToYaml(FinetuneConfig(report, plan, RopeType::kYarn, "ckpt")),
      TrainConfigToYaml(LoadTrainConfig(test::TinyConfigPath(), yarn)));
}

// finetune.lora's fine-tune is the full one's budget with a frozen base, in
// its own folder, at the LoRA rate (the minimum keeps the full run's ratio).
TEST(PracticeAndFinetuneConfig, TheLoraFinetuneIsTheSameBudgetWithAFrozenBase) {
  const ExtendReportConfig report = TinyReport(
      {"finetune.lora={r: 4, dropout: 0.1, trainable: [norm], lr: 2.0e-3}"});
  const ReportPlan plan = PlanReport(report);
  const TrainConfig full =
      FinetuneConfig(report, plan, RopeType::kYarn, "ckpt");
  TrainConfig lora =
      FinetuneConfig(report, plan, RopeType::kYarn, "ckpt", /*lora=*/true);
  EXPECT_EQ(lora.output_dir, "report/finetune/yarn-lora");
  EXPECT_TRUE(lora.finetune.lora.enabled);
  EXPECT_EQ(lora.finetune.lora.r, 4);
  EXPECT_EQ(lora.finetune.lora.dropout, 0.1);
  EXPECT_EQ(lora.finetune.lora.target_modules,
            (std::vector<std::string>{"q_proj", "v_proj"}));
  EXPECT_EQ(lora.finetune.trainable, std::vector<std::string>{"norm"});
  EXPECT_EQ(lora.train.lr, 2e-3);
  EXPECT_DOUBLE_EQ(lora.train.min_lr, 2e-4);
  EXPECT_FALSE(full.finetune.freezes_base());
  lora.output_dir = full.output_dir;
  lora.finetune = full.finetune;
  lora.train.lr = full.train.lr;
  lora.train.min_lr = full.train.min_lr;
  EXPECT_EQ(TrainConfigToYaml(lora), TrainConfigToYaml(full));
}

// The curriculum: practice.examples_only_steps is a first run whose rows are
// all examples, passkey and retrieval rows in the practice's proportion,
// in its own folder; the practice then mixes text with
// practice.retrieval_fraction retrieval rows of practice.retrieval_tasks,
// which the fine-tunes draw from with finetune.retrieval_fraction (without
// it, the base config's data keys as they are).
TEST(PracticeAndFinetuneConfig, TheCurriculumsPhasesAndRetrievalRows) {
  const ExtendReportConfig report = TinyReport(
      {"base.overrides=[data.path=d, output_dir=base, train.seq_len=400, "
       "model.max_position_embeddings=400]",
       "base.practice.passkey_fraction=0.3",
       "base.practice.retrieval_fraction=0.2",
       "base.practice.retrieval_tasks=[niah_single]",
       "base.practice.examples_only_steps=7", "base.practice.warmup_steps=5"});
  const ReportPlan plan = PlanReport(report);
  const TrainConfig practice = PracticeConfig(report, plan, "first");
  EXPECT_EQ(practice.output_dir, "practice");
  EXPECT_EQ(practice.train.init_from, "first");
  EXPECT_EQ(practice.train.max_steps, 3);
  EXPECT_EQ(practice.train.warmup_steps, 3);
  EXPECT_EQ(practice.data.passkey_fraction, 0.3);
  EXPECT_EQ(practice.data.retrieval_fraction, 0.2);
  EXPECT_EQ(practice.data.retrieval_tasks,
            std::vector<RetrievalTask>{RetrievalTask::kNiahSingle});
  TrainConfig first = PracticeFirstPhaseConfig(report, plan, "ckpt");
  EXPECT_EQ(first.output_dir, "practice-examples-only");
  EXPECT_EQ(first.train.init_from, "ckpt");
  EXPECT_EQ(first.train.max_steps, 7);
  EXPECT_EQ(first.train.warmup_steps, 5);
  EXPECT_DOUBLE_EQ(first.data.passkey_fraction, 0.6);
  EXPECT_DOUBLE_EQ(first.data.retrieval_fraction, 0.4);
  // Otherwise the practice run.
  first.output_dir = practice.output_dir;
  first.train.init_from = practice.train.init_from;
  first.train.max_steps = practice.train.max_steps;
  first.train.warmup_steps = practice.train.warmup_steps;
  first.data.passkey_fraction = practice.data.passkey_fraction;
  first.data.retrieval_fraction = practice.data.retrieval_fraction;
  EXPECT_EQ(TrainConfigToYaml(first), TrainConfigToYaml(practice));
  EXPECT_EQ(PracticeDescription(report),
            "7 steps of examples only, then 3 steps with 0.3 passkey rows "
            "and 0.2 retrieval rows (niah_single)");
  EXPECT_EQ(PracticeDescription(TinyReport({})),
            "3 steps with 0.75 passkey rows");

  // Passkey rows alone: the first phase is all passkeys.
  const ExtendReportConfig passkeys =
      TinyReport({"base.overrides=[data.path=d, output_dir=base, "
                  "train.seq_len=112, model.max_position_embeddings=112]",
                  "base.practice.examples_only_steps=2"});
  const TrainConfig all_passkeys =
      PracticeFirstPhaseConfig(passkeys, PlanReport(passkeys), "ckpt");
  EXPECT_EQ(all_passkeys.data.passkey_fraction, 1.0);
  EXPECT_EQ(all_passkeys.data.retrieval_fraction, 0.0);

  // The fine-tunes: the base's data keys, or finetune.retrieval_fraction
  // with the practice's tasks.
  EXPECT_EQ(FinetuneConfig(report, plan, RopeType::kYarn, "ckpt")
                .data.retrieval_fraction,
            0.0);
  const ExtendReportConfig tuned = TinyReport(
      {"base.overrides=[data.path=d, output_dir=base, train.seq_len=400, "
       "model.max_position_embeddings=400]",
       "base.practice.retrieval_tasks=[variable_tracking]",
       "finetune.passkey_fraction=0.5", "finetune.retrieval_fraction=0.25"});
  const TrainConfig yarn =
      FinetuneConfig(tuned, PlanReport(tuned), RopeType::kYarn, "ckpt");
  EXPECT_EQ(yarn.data.retrieval_fraction, 0.25);
  EXPECT_EQ(yarn.data.retrieval_tasks,
            std::vector<RetrievalTask>{RetrievalTask::kVariableTracking});
}

// A rotor checkpoint given as base.init_from brings its own passkey key
// length: a base trained on 2-digit keys was once tested on 5-digit ones
// (the default) and scored 0 % everywhere.
TEST(PlanReport, ARotorBaseBringsItsPasskeyDigits) {
  test::TempDir dir;
  const std::string data = test::PrepareTextData(dir);
  std::ostringstream log;
  Trainer(test::TinyConfig(data, dir.Path("base"),
                           {"data.passkey_digits=2", "train.max_steps=1",
                            "eval.every_n_steps=0"}),
          log)
      .Run();
  const std::string yaml = "base: {init_from: " + dir.Path("base") +
                           ", data: " + data +
                           "}\noutput_dir: " + dir.Path("report") + "\n";
  const ReportPlan plan =
      PlanReport(ParseExtendReportConfig(yaml, dir.Write("r.yaml", yaml)));
  EXPECT_EQ(plan.base.data.passkey_digits, 2);
}

}  // namespace
}  // namespace rotor::train
