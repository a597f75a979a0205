// train.init_from: weights only (fresh optimizer and step), the RoPE
// settings of the new config, run folders resolved to their newest
// checkpoint, resuming taking precedence, architecture mismatches named;
// LoadCheckpointModel with RoPE overrides or whole model settings; the new
// config keys.
#include <gtest/gtest.h>

#include <sstream>

#include "tests/temp_dir.h"
#include "tests/test_util.h"
#include "tests/train/train_test_util.h"
#include "train/checkpoint.h"
#include "train/trainer.h"

namespace rotor::train {
namespace {

const char kYarn[] =
    "model.rope_scaling={rope_type: yarn, factor: 2, "
    "original_max_position_embeddings: 32}";

// Trains the tiny base model for 3 steps into <dir>/base.
std::string TrainBase(const test::TempDir& dir) {
  const std::string data = test::PrepareTextData(dir);
  const TrainConfig config =
      test::TinyConfig(data, dir.Path("base"),
                       {"train.max_steps=3", "eval.every_n_steps=0",
                        "checkpoint.every_n_steps=0"});
  std::ostringstream log;
  Trainer(config, log).Run();
  return data;
}

TrainConfig FinetuneConfig(const test::TempDir& dir, const std::string& data,
                           std::vector<std::string> overrides) {
  std::vector<std::string> all = {"eval.every_n_steps=0",
                                  "checkpoint.every_n_steps=0",
                                  "train.init_from=" + dir.Path("base"),
                                  "train.seq_len=64",
                                  "model.max_position_embeddings=64",
                                  kYarn,
                                  "train.max_steps=2"};
  all.insert(all.end(), overrides.begin(), overrides.end());
  return test::TinyConfig(data, dir.Path("ft"), all);
}

TEST(InitFrom, CopiesTheWeightsOnlyAndUsesTheNewRope) {
  test::TempDir dir;
  const std::string data = TrainBase(dir);
  const std::string base_checkpoint = ListCheckpoints(dir.Path("base")).back();
  const auto base = LoadCheckpointModel(base_checkpoint, {});

  std::ostringstream log;
  Trainer finetune(FinetuneConfig(dir, data, {}), log);
  // The run folder resolved to its newest checkpoint.
  EXPECT_NE(log.str().find("initialising the weights from " + base_checkpoint),
            std::string::npos)
      << log.str();
  EXPECT_EQ(finetune.state().step, 0);  // fresh schedule and step
  EXPECT_EQ(finetune.model().config().rope.rope_type, RopeType::kYarn);
  EXPECT_EQ(finetune.model().config().rope.max_position_embeddings, 64);
  const auto expected = base->NamedParameters();
  const auto actual = finetune.model().NamedParameters();
  ASSERT_EQ(expected.size(), actual.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(expected[i].first, actual[i].first);
    EXPECT_EQ(expected[i].second.ToVector(), actual[i].second.ToVector())
        << expected[i].first;
  }
  const TrainSummary summary = finetune.Run();
  EXPECT_EQ(summary.steps, 2);
  // The fine-tune's checkpoint records where it started.
  EXPECT_NE(LoadCheckpointConfig(summary.checkpoint).find("init_from"),
            std::string::npos);

  // Rerunning continues the fine-tune itself (resume wins over init_from).
  std::ostringstream again;
  Trainer resumed(FinetuneConfig(dir, data, {"train.max_steps=3"}), again);
  EXPECT_EQ(resumed.state().step, 2);
  EXPECT_NE(again.str().find("resuming from"), std::string::npos);
  EXPECT_EQ(again.str().find("initialising"), std::string::npos);
}

TEST(InitFrom, ArchitectureMismatchIsNamed) {
  test::TempDir dir;
  const std::string data = TrainBase(dir);
  std::ostringstream log;
  ROTOR_EXPECT_ERROR(Trainer(FinetuneConfig(dir, data,
                                            {"model.hidden_size=24",
                                             "model.num_hidden_layers=3"}),
                             log),
                     "init_from", "architecture differs",
                     "hidden_size 32 (checkpoint) vs 24 (config)",
                     "num_hidden_layers 2 (checkpoint) vs 3 (config)");
  ROTOR_EXPECT_ERROR(
      Trainer(
          FinetuneConfig(dir, data, {"train.init_from=" + dir.Path("nothing")}),
          log),
      "train.init_from", dir.Path("nothing"), "does not exist",
      "train the base model first");
  test::TempDir empty;
  ROTOR_EXPECT_ERROR(ResolveCheckpointPath(empty.path()), empty.path(),
                     "neither a checkpoint folder");
}

TEST(PasskeyMix, TrainingWithAPasskeyShareChangesOnlyTheRowsItReplaces) {
  test::TempDir dir;
  const std::string data = test::PrepareTextData(dir);
  auto run = [&](const std::string& name, const std::string& fraction) {
    std::ostringstream log;
    Trainer trainer(test::TinyConfig(data, dir.Path(name),
                                     {"data.passkey_fraction=" + fraction,
                                      "model.max_position_embeddings=128",
                                      "train.seq_len=128", "train.max_steps=2",
                                      "eval.every_n_steps=0"}),
                    log);
    return trainer.Run().train_loss;
  };
  const double text = run("text", "0");
  EXPECT_EQ(run("text_again", "0"), text);
  const double mixed = run("mixed", "0.5");
  EXPECT_EQ(run("mixed_again", "0.5"), mixed);  // deterministic
  EXPECT_NE(mixed, text);
}

TEST(LoadCheckpointModel, AppliesRopeSettingsAndRejectsArchitectureOnes) {
  test::TempDir dir;
  TrainBase(dir);
  TrainConfig config;
  const auto model = LoadCheckpointModel(
      dir.Path("base"), {"model.max_position_embeddings=64", kYarn}, &config);
  EXPECT_EQ(model->config().rope.rope_type, RopeType::kYarn);
  EXPECT_EQ(config.model.rope.factor, 2.0);
  const auto plain = LoadCheckpointModel(dir.Path("base"), {});
  EXPECT_EQ(plain->config().rope.rope_type, RopeType::kDefault);
  EXPECT_EQ(plain->NamedParameters()[0].second.ToVector(),
            model->NamedParameters()[0].second.ToVector());
  ROTOR_EXPECT_ERROR(
      LoadCheckpointModel(dir.Path("base"), {"model.intermediate_size=48"}),
      "with overrides", "intermediate_size 64 (checkpoint) vs 48 (config)");

  // The same settings given whole.
  const auto whole = LoadCheckpointModelAs(dir.Path("base"), config.model);
  EXPECT_EQ(whole->config().rope.rope_type, RopeType::kYarn);
  EXPECT_EQ(whole->config().rope.max_position_embeddings, 64);
  EXPECT_EQ(whole->NamedParameters()[0].second.ToVector(),
            model->NamedParameters()[0].second.ToVector());
  ModelConfig other = config.model;
  other.intermediate_size = 48;
  ROTOR_EXPECT_ERROR(LoadCheckpointModelAs(dir.Path("base"), other),
                     "intermediate_size 64 (checkpoint) vs 48 (config)");
}

TEST(TrainConfig, PasskeyFractionAndInitFromKeys) {
  const TrainConfig config = test::TinyConfig(
      "data", "out",
      {"data.passkey_fraction=0.1", "train.init_from=runs/base",
       "train.seq_len=104", "model.max_position_embeddings=104"});
  EXPECT_EQ(config.data.passkey_fraction, 0.1);
  EXPECT_EQ(config.train.init_from, "runs/base");
  const TrainConfig round_trip =
      ParseTrainConfig(TrainConfigToYaml(config), "resolved.yaml");
  EXPECT_EQ(round_trip.data.passkey_fraction, 0.1);
  EXPECT_EQ(round_trip.train.init_from, "runs/base");
  EXPECT_EQ(test::TinyConfig("data", "out").train.init_from, "");
  EXPECT_EQ(test::TinyConfig("data", "out").data.passkey_fraction, 0.0);
  ROTOR_EXPECT_ERROR(
      test::TinyConfig("data", "out", {"data.passkey_fraction=0.1"}),
      "data.passkey_fraction", "needs train.seq_len >= 104", "got 32");
  ROTOR_EXPECT_ERROR(
      test::TinyConfig("data", "out", {"data.passkey_fraction=1.5"}),
      "data.passkey_fraction", "[0, 1]", "1.5");
}

}  // namespace
}  // namespace rotor::train
