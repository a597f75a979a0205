// The memory estimate of a training run (train/config/memory_estimate.h):
// its parameter count is the model's, it stays below what a real step
// holds (a lower bound, so a refusal is certain), and a run that cannot fit
// is refused naming the keys.
#include "train/config/memory_estimate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <sstream>

#include "core/memory_limit.h"
#include "core/tensor.h"
#include "tests/test_util.h"
#include "tests/train/train_test_util.h"
#include "train/trainer.h"

namespace rotor::train {
namespace {

class MemoryEstimateTest : public test::PreparedDataTest {
 protected:
  TrainConfig Config(const std::vector<std::string>& overrides = {}) const {
    return test::TinyConfig(data_, dir_.Path("run"), overrides);
  }
};

TEST_F(MemoryEstimateTest, ParameterCountIsTheModels) {
  for (const char* tied : {"true", "false"}) {
    SCOPED_TRACE(tied);
    const nn::TransformerConfig config = ResolveTransformerConfig(
        Config({StrCat("model.tie_word_embeddings=", tied)}).model);
    const nn::Transformer model(config, 1);
    EXPECT_EQ(ParameterCount(config),
              static_cast<double>(model.NumParameters()));
  }
}

// The tensors a real training step holds at its peak (weights, gradients,
// AdamW's moments, the activations kept for backward and more) are at
// least the estimate's model state and activations.
TEST_F(MemoryEstimateTest, IsALowerBoundOfARealStep) {
  // Logits dominate the tiny model; wide layers make the layers dominate.
  for (const std::vector<std::string>& model :
       {std::vector<std::string>{},
        {"model.hidden_size=64", "model.intermediate_size=256",
         "model.num_attention_heads=8", "model.num_key_value_heads=8",
         "model.tie_word_embeddings=false"}}) {
    std::vector<std::string> overrides = {
        "train.max_steps=1", "train.batch_size=8", "train.seq_len=64",
        "model.max_position_embeddings=64", "eval.max_batches=1"};
    overrides.insert(overrides.end(), model.begin(), model.end());
    const TrainConfig config = Config(overrides);
    SCOPED_TRACE(TrainConfigToYaml(config));
    const MemoryEstimate estimate = EstimateTrainingMemory(
        ResolveTransformerConfig(config.model), config.train);
    ResetPeakMemory();
    const size_t live_before = GetMemoryStats().live_bytes;
    {
      std::ostringstream log;
      Trainer trainer(config, log);
      trainer.Run();
    }
    const double peak =
        static_cast<double>(GetMemoryStats().peak_live_bytes - live_before);
    EXPECT_GE(peak, estimate.model_state_bytes + estimate.activation_bytes);
    EXPECT_GT(estimate.activation_bytes, estimate.model_state_bytes / 4);
    EXPECT_EQ(estimate.batch_bytes, 2.0 * sizeof(TokenId) * 8 * 64);
    std::filesystem::remove_all(config.output_dir);
  }
}

TEST_F(MemoryEstimateTest, ARunThatCannotFitIsRefusedNamingTheKeys) {
  // Each size is within rotor's limits; together they need petabytes.
  const TrainConfig config =
      Config({"model.hidden_size=65536", "model.intermediate_size=262144",
              "model.num_hidden_layers=4096", "model.num_attention_heads=64",
              "model.num_key_value_heads=64"});
  const nn::TransformerConfig model = ResolveTransformerConfig(config.model);
  ROTOR_EXPECT_ERROR(
      CheckTrainingFitsInMemory(config, model), config.file,
      ": this run needs at least ", " of memory, more than the ",
      "model.hidden_size 65536", "model.intermediate_size 262144",
      "model.num_hidden_layers 4096", "train.batch_size 4", "train.seq_len 32");
  ROTOR_EXPECT_ERROR(CheckModelFitsInMemory(model, "checkpoint c"),
                     "checkpoint c: the model's weights need ",
                     "model.num_hidden_layers 4096");
  // The tiny config fits anywhere.
  const TrainConfig tiny = Config();
  EXPECT_NO_THROW(
      CheckTrainingFitsInMemory(tiny, ResolveTransformerConfig(tiny.model)));
}

// 8 layers; per token and layer 4H + 2hD + 2gD + 3I = 832 floats.
nn::TransformerConfig EightLayers(int64_t vocab_size) {
  nn::TransformerConfig model;
  model.vocab_size = vocab_size;
  model.hidden_size = 64;
  model.intermediate_size = 128;
  model.num_hidden_layers = 8;
  model.num_attention_heads = 4;
  model.num_key_value_heads = 2;
  model.head_dim = 16;
  return model;
}

TEST(MemoryEstimate, ActivationCheckpointingKeepsOnlyLayerInputs) {
  const nn::TransformerConfig model = EightLayers(100);
  TrainSection train;
  const double all = EstimateTrainingMemory(model, train).activation_bytes;
  train.activation_checkpointing_every = 1;
  const double layers = EstimateTrainingMemory(model, train).activation_bytes;
  train.activation_checkpointing_every = 2;
  const double half = EstimateTrainingMemory(model, train).activation_bytes;
  // Per token and layer: 4H + 2hD + 2gD + 3I = 256 + 128 + 64 + 384 = 832.
  // The loss keeps one chunk of 1,024 rows of logits.
  const double tokens = 8.0 * 256.0;
  const double logits = 1024.0 * 100;
  EXPECT_DOUBLE_EQ(all, 4 * (tokens * (8 * 832 + 64) + logits));
  EXPECT_DOUBLE_EQ(layers, 4 * (tokens * (8 * 64 + 832 + 64) + logits));
  EXPECT_DOUBLE_EQ(half, 4 * (tokens * (4 * 832 + 4 * 64 + 832 + 64) + logits));
}

TEST(MemoryEstimate, TheLossKeepsOneChunkOfLogits) {
  const nn::TransformerConfig model = EightLayers(49152);
  TrainSection train;
  train.batch_size = 1;
  train.seq_len = 8192;
  train.loss_chunk_rows = 8192;
  const double whole = EstimateTrainingMemory(model, train).activation_bytes;
  train.loss_chunk_rows = 512;
  const double chunked = EstimateTrainingMemory(model, train).activation_bytes;
  EXPECT_DOUBLE_EQ(whole - chunked, 4.0 * (8192 - 512) * 49152);
  train.loss_chunk_rows = 100000;  // more rows than the batch has
  EXPECT_DOUBLE_EQ(EstimateTrainingMemory(model, train).activation_bytes,
                   whole);
}

TEST(UsableMemory, IsPositiveAndNamesItsLimit) {
  const MemoryLimit limit = UsableMemory();
  EXPECT_GT(limit.bytes, 0u);
  EXPECT_FALSE(limit.source.empty());
}

TEST(FormatBytes, PicksABinaryUnit) {
  EXPECT_EQ(FormatBytes(100), "100 bytes");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(3.0 * (1 << 30)), "3.0 GiB");
  EXPECT_EQ(FormatBytes(std::ldexp(1.0, 70)), "1024.0 EiB");
}

}  // namespace
}  // namespace rotor::train
