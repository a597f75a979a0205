// Fine-tuning with a frozen base through the trainer and the checkpoints
// (train/trainer.h, train/checkpoint.h LoadFinetuneBase and
// LoadFinetuneWeights): a LoRA run on configs/tiny.yaml from a base
// checkpoint saves only the adapters and trainables, with the base's path
// and weights hash, keeps AdamW moments only for them and leaves the base
// untouched; stopping and resuming is bitwise the uninterrupted run (with
// dropout, gradient accumulation and activation checkpointing); a wrong or
// changed base is refused naming both hashes; LoadCheckpointModel gives the
// trained adapter model; a LoRA checkpoint is no init_from.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/autograd.h"
#include "nn/lora.h"
#include "tests/test_util.h"
#include "tests/train/train_test_util.h"
#include "train/checkpoint.h"
#include "train/io/atomic_file.h"
#include "train/io/safetensors.h"
#include "train/io/weights_hash.h"
#include "train/trainer.h"

namespace rotor::train {
namespace {

namespace fs = std::filesystem;

class FinetuneTest : public test::PreparedDataTest {
 protected:
  // A base model: `steps` of full training of configs/tiny.yaml with `seed`.
  std::string TrainBase(const std::string& name, uint64_t seed = 1337,
                        int steps = 3) {
    Trainer trainer(test::TinyConfig(data_, dir_.Path(name),
                                     {StrCat("train.max_steps=", steps),
                                      StrCat("train.seed=", seed)}),
                    log_);
    trainer.Run();
    return dir_.Path(name);
  }

  // A LoRA run of `steps` on `base` (r 4 on every projection, dropout 0.1,
  // norms trained in full).
  TrainConfig LoraConfig(const std::string& base, const std::string& output,
                         int steps = 8,
                         std::vector<std::string> overrides = {}) const {
    std::vector<std::string> all = {
        "train.init_from=" + base,
        StrCat("train.max_steps=", steps),
        "train.gradient_accumulation_steps=2",
        "train.activation_checkpointing=layers",
        "checkpoint.every_n_steps=4",
        "eval.every_n_steps=4",
        "finetune.lora={r: 4, alpha: 8, dropout: 0.1, target_modules: "
        "[q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj]}",
        "finetune.trainable=[norm]"};
    all.insert(all.end(), overrides.begin(), overrides.end());
    return test::TinyConfig(data_, dir_.Path(output), all);
  }

  std::ostringstream log_;
};

std::set<std::string> TensorNames(const std::string& file) {
  std::set<std::string> names;
  const SafetensorsFile read = SafetensorsFile::Read(file);
  for (const auto& info : read.tensors()) {
    names.insert(info.name);
  }
  return names;
}

TEST_F(FinetuneTest, SavesOnlyWhatTrainsAndLeavesTheBaseAlone) {
  const std::string base = TrainBase("base");
  Trainer trainer(LoraConfig(base, "lora"), log_);
  EXPECT_CONTAINS(log_.str(), "with a frozen base: LoRA r=4 on 14 projections");
  const TrainSummary summary = trainer.Run();
  EXPECT_EQ(summary.steps, 8);

  // The base has no gradient buffer; adapters and norms do.
  std::set<std::string> trainable;
  nn::Transformer& model = trainer.model();
  for (const auto& [name, tensor] : model.NamedParameters()) {
    const bool trains = name.find(".lora_") != std::string::npos ||
                        name.find("norm.weight") != std::string::npos;
    EXPECT_EQ(tensor.requires_grad(), trains) << name;
    EXPECT_EQ(tensor.grad().defined(), trains) << name;
    if (trains) trainable.insert(name);
  }
  EXPECT_EQ(trainable.size(), 14u * 2u + 5u);

  const std::string checkpoint = summary.checkpoint;
  EXPECT_EQ(TensorNames(checkpoint + "/model.safetensors"), trainable);
  std::set<std::string> moments;
  for (const std::string& name : trainable) {
    moments.insert("exp_avg." + name);
    moments.insert("exp_avg_sq." + name);
  }
  EXPECT_EQ(TensorNames(checkpoint + "/optimizer.safetensors"), moments);

  // The frozen weights are the base's, bit for bit; the hash is theirs.
  const auto loaded = LoadCheckpointModel(base, {});
  const auto base_parameters = loaded->NamedParameters();
  for (const auto& [name, tensor] : base_parameters) {
    if (name.find("norm.weight") != std::string::npos) continue;
    for (const auto& [trained_name, trained] : model.NamedParameters()) {
      if (trained_name == name) {
        EXPECT_EQ(trained.ToVector(), tensor.ToVector()) << name;
      }
    }
  }
  const auto metadata =
      SafetensorsFile::Read(checkpoint + "/model.safetensors").metadata();
  EXPECT_EQ(metadata.at("base_model"), base);
  EXPECT_EQ(metadata.at("base_weights_hash"), WeightsHash(base_parameters));
}

TEST_F(FinetuneTest, StopAndResumeIsBitwiseTheUninterruptedRun) {
  const std::string base = TrainBase("base");
  TrainSummary whole;
  {
    Trainer trainer(LoraConfig(base, "whole"), log_);
    whole = trainer.Run();
  }
  {
    Trainer first(LoraConfig(base, "split"), log_);
    EXPECT_EQ(first.Run(/*stop_after_steps=*/3).steps, 3);
  }
  Trainer second(LoraConfig(base, "split"), log_);
  EXPECT_EQ(second.state().step, 3);
  const TrainSummary resumed = second.Run();
  EXPECT_EQ(resumed.steps, 8);
  EXPECT_EQ(resumed.train_loss, whole.train_loss);
  EXPECT_EQ(resumed.val_loss, whole.val_loss);
  for (const char* file : {"model.safetensors", "optimizer.safetensors"}) {
    EXPECT_EQ(ReadFile(whole.checkpoint + "/" + file),
              ReadFile(resumed.checkpoint + "/" + file))
        << file;
  }
  // Dropout matters: without it the run differs.
  Trainer no_dropout(
      LoraConfig(base, "no_dropout", 8, {"finetune.lora.dropout=0"}), log_);
  EXPECT_NE(no_dropout.Run().train_loss, whole.train_loss);
}

TEST_F(FinetuneTest, AWrongOrChangedBaseIsRefusedNamingBothHashes) {
  const std::string base = TrainBase("base");
  const std::string other = TrainBase("other", /*seed=*/7);
  std::string checkpoint;
  {
    Trainer trainer(LoraConfig(base, "lora", 2), log_);
    checkpoint = trainer.Run().checkpoint;
  }
  const std::string base_hash =
      SafetensorsFile::Read(checkpoint + "/model.safetensors")
          .metadata()
          .at("base_weights_hash");
  const std::string other_hash =
      WeightsHash(LoadCheckpointModel(other, {})->NamedParameters());
  ASSERT_NE(base_hash, other_hash);
  // Resuming on another base.
  ROTOR_EXPECT_ERROR(
      Trainer(LoraConfig(other, "lora", 4), log_),
      checkpoint + " was trained on the base " + base + " with weights hash " +
          base_hash,
      "but the base " + other, "now has weights hash " + other_hash,
      "Point train.init_from at the base this checkpoint was trained on");
  // Evaluating after the base changed in place.
  const std::string base_file =
      ListCheckpoints(base).back() + "/model.safetensors";
  WriteFileAtomically(base_file, ReadFile(ListCheckpoints(other).back() +
                                          "/model.safetensors"));
  ROTOR_EXPECT_ERROR(LoadCheckpointModel(checkpoint, {}),
                     "with weights hash " + base_hash,
                     "now has weights hash " + other_hash);
  // A base that is gone.
  fs::rename(base, dir_.Path("moved"));
  ROTOR_EXPECT_ERROR(LoadCheckpointModel(checkpoint, {}),
                     checkpoint +
                         "/config.yaml: loading the frozen base "
                         "(train.init_from, relative to the current "
                         "folder): train.init_from: " +
                         base + " does not exist",
                     "check the path");
}

TEST_F(FinetuneTest, LoadCheckpointModelGivesTheTrainedAdapters) {
  const std::string base = TrainBase("base");
  Trainer trainer(LoraConfig(base, "lora", 4), log_);
  const TrainSummary summary = trainer.Run();
  const auto loaded = LoadCheckpointModel(summary.checkpoint, {});
  EXPECT_EQ(nn::CountLoraLayers(*loaded), 14);
  EXPECT_FALSE(loaded->training());  // no dropout
  std::vector<int32_t> ids(2 * 16);
  for (size_t i = 0; i < ids.size(); ++i)
    ids[i] = static_cast<int32_t>(i * 7 % 200);
  NoGradGuard no_grad;
  trainer.model().Eval();
  EXPECT_EQ(loaded->Logits(ids, 2, 16).ToVector(),
            trainer.model().Logits(ids, 2, 16).ToVector());
  // The adapters changed the model.
  EXPECT_NE(LoadCheckpointModel(base, {})->Logits(ids, 2, 16).ToVector(),
            loaded->Logits(ids, 2, 16).ToVector());
}

TEST_F(FinetuneTest, ResumingWithOtherLoraSettingsIsRefused) {
  const std::string base = TrainBase("base");
  {
    Trainer trainer(LoraConfig(base, "lora", 2), log_);
    trainer.Run();
  }
  ROTOR_EXPECT_ERROR(
      Trainer(LoraConfig(base, "lora", 4,
                         {"finetune.lora.alpha=4", "finetune.lora.dropout=0"}),
              log_),
      "cannot resume from " + dir_.Path("lora/checkpoints/step_00000002"),
      "other data or fine-tuning settings: finetune.lora.alpha 8 "
      "(checkpoint) vs 4 (config), finetune.lora.dropout 0.1 (checkpoint) vs "
      "0 (config)");
}

TEST_F(FinetuneTest, ALoraCheckpointIsNoInitFrom) {
  const std::string base = TrainBase("base");
  {
    Trainer trainer(LoraConfig(base, "lora", 2), log_);
    trainer.Run();
  }
  ROTOR_EXPECT_ERROR(
      Trainer(test::TinyConfig(data_, dir_.Path("next"),
                               {"train.init_from=" + dir_.Path("lora")}),
              log_),
      "is a checkpoint of a fine-tuning run with a frozen base",
      "export it first (rotor export merges the adapters");
}

}  // namespace
}  // namespace rotor::train
