// Checkpoints (train/checkpoint.h): an exact round trip of weights, AdamW
// moments and trainer state; clear errors for missing or corrupt files and
// checkpoints of another architecture; half-written temporary folders are
// invisible; pruning keeps the newest N; loading a trained model
// (train.init_from and LoadCheckpointModel) and its tokenizer.
#include "train/checkpoint.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "core/random.h"
#include "nn/transformer.h"
#include "tests/nn/fused_storage.h"
#include "tests/temp_dir.h"
#include "tests/test_util.h"
#include "tests/train/train_test_util.h"
#include "train/config/model_config.h"
#include "train/io/atomic_file.h"
#include "train/io/safetensors.h"
#include "train/tokenizer/byte_tokenizer.h"
#include "train/trainer.h"

namespace rotor::train {
namespace {

namespace fs = std::filesystem;

nn::TransformerConfig Config(int64_t hidden, bool tied) {
  return ResolveTransformerConfig(ParseModelConfigText(
      "model:\n  vocab_size: 13\n  hidden_size: " + std::to_string(hidden) +
          "\n  intermediate_size: 16\n  num_hidden_layers: 2\n"
          "  num_attention_heads: 2\n  num_key_value_heads: 1\n"
          "  max_position_embeddings: 16\n  tie_word_embeddings: " +
          (tied ? "true" : "false") + "\n",
      "test.yaml"));
}

// Two AdamW steps on a fixed batch, so the weights and both moments are
// generic (not the initial values, not zero).
void TrainTwoSteps(nn::Transformer& model, AdamW& optimizer) {
  std::vector<int32_t> ids, targets;
  Rng rng(3);
  for (int i = 0; i < 12; ++i) {
    ids.push_back(static_cast<int32_t>(rng.Below(13)));
    targets.push_back(static_cast<int32_t>(rng.Below(13)));
  }
  for (int step = 0; step < 2; ++step) {
    model.ZeroGrad();
    model.Loss(ids, targets, 2, 6).Backward();
    optimizer.Step(1e-2);
  }
}

std::vector<std::vector<float>> Values(const std::vector<Tensor>& tensors) {
  std::vector<std::vector<float>> out;
  for (const Tensor& t : tensors) out.push_back(t.ToVector());
  return out;
}

TrainerState SampleState() {
  TrainerState state;
  state.step = 2;
  state.sampler.rng_state = 0xFEDCBA9876543210ull;  // above 2^63
  state.sampler.batches_drawn = 5;
  state.tokens_seen = 123456789012;
  state.best_val_loss = 2.718281828459045;
  state.smoothed_loss = 0.1 + 0.2;  // no short decimal form
  state.min_smoothed_loss = 1.0 / 3.0;
  state.elapsed_seconds = 12.5;
  return state;
}

TEST(Checkpoint, SaveLoadRoundTripsWeightsMomentsAndStateExactly) {
  test::TempDir dir;
  nn::Transformer model(Config(8, false), 1);
  AdamW optimizer(model.NamedParameters(), AdamWSettings{});
  TrainTwoSteps(model, optimizer);
  const TrainerState state = SampleState();
  const std::string path = CheckpointDir(dir.path(), 2);
  EXPECT_EQ(path, dir.path() + "/checkpoints/step_00000002");
  SaveCheckpoint(path, model, &optimizer, state, "output_dir: x\n");
  EXPECT_EQ(dir.List("checkpoints/step_00000002"),
            (std::vector<std::string>{"config.yaml", "model.safetensors",
                                      "optimizer.safetensors",
                                      "trainer_state.json"}));

  // A differently initialised model and a fresh optimizer.
  nn::Transformer restored(Config(8, false), 99);
  AdamW restored_optimizer(restored.NamedParameters(), AdamWSettings{});
  ASSERT_NE(Values(restored.Parameters()), Values(model.Parameters()));
  LoadModelWeights(path, restored);
  LoadOptimizerState(path, restored_optimizer);
  EXPECT_EQ(Values(restored.Parameters()), Values(model.Parameters()));
  // Loading wrote into the parameters: the fused projections still share
  // their storage, and so did training.
  EXPECT_TRUE(test::FusedProjectionsShareStorage(restored));
  EXPECT_TRUE(test::FusedProjectionsShareStorage(model));
  EXPECT_EQ(Values(restored_optimizer.first_moments()),
            Values(optimizer.first_moments()));
  EXPECT_EQ(Values(restored_optimizer.second_moments()),
            Values(optimizer.second_moments()));
  EXPECT_EQ(restored_optimizer.step(), 2);

  const TrainerState loaded = LoadTrainerState(path);
  EXPECT_EQ(loaded.step, state.step);
  EXPECT_EQ(loaded.sampler.rng_state, state.sampler.rng_state);
  EXPECT_EQ(loaded.sampler.batches_drawn, state.sampler.batches_drawn);
  EXPECT_EQ(loaded.tokens_seen, state.tokens_seen);
  EXPECT_EQ(loaded.best_val_loss, state.best_val_loss);  // bitwise
  EXPECT_EQ(loaded.smoothed_loss, state.smoothed_loss);
  EXPECT_EQ(loaded.min_smoothed_loss, state.min_smoothed_loss);
  EXPECT_EQ(loaded.elapsed_seconds, state.elapsed_seconds);
  EXPECT_EQ(LoadCheckpointConfig(path), "output_dir: x\n");

  // The weights file opens as plain safetensors with HF names.
  const SafetensorsFile file =
      SafetensorsFile::Read(path + "/model.safetensors");
  EXPECT_NE(file.Find("lm_head.weight"), nullptr);
  EXPECT_NE(file.Find("model.layers.1.self_attn.k_proj.weight"), nullptr);
  EXPECT_EQ(file.metadata().at("format"), "pt");
}

TEST(Checkpoint, StateBeforeAnyStepRoundTripsItsNaNAndInfinity) {
  test::TempDir dir;
  nn::Transformer model(Config(8, true), 1);
  const std::string path = CheckpointDir(dir.path(), 0);
  SaveCheckpoint(path, model, nullptr, TrainerState{}, "");
  const TrainerState loaded = LoadTrainerState(path);
  EXPECT_TRUE(std::isnan(loaded.smoothed_loss));
  EXPECT_TRUE(std::isinf(loaded.best_val_loss));
  EXPECT_TRUE(std::isinf(loaded.min_smoothed_loss));
  EXPECT_FALSE(fs::exists(path + "/optimizer.safetensors"));  // weights only
}

TEST(Checkpoint, SavingAgainReplacesTheFolderAtomically) {
  test::TempDir dir;
  nn::Transformer model(Config(8, true), 1);
  const std::string path = CheckpointDir(dir.path(), 4);
  SaveCheckpoint(path, model, nullptr, SampleState(), "first\n");
  SaveCheckpoint(path, model, nullptr, SampleState(), "second\n");
  EXPECT_EQ(LoadCheckpointConfig(path), "second\n");
  EXPECT_EQ(dir.List("checkpoints"),
            std::vector<std::string>{"step_00000004"});  // no leftovers
}

TEST(Checkpoint, ListIgnoresHalfWrittenFoldersAndPruneKeepsTheNewest) {
  test::TempDir dir;
  nn::Transformer model(Config(8, true), 1);
  for (int64_t step : {100, 2, 10, 1}) {
    SaveCheckpoint(CheckpointDir(dir.path(), step), model, nullptr,
                   TrainerState{}, "");
  }
  // What a run killed while saving step 200 leaves behind, and clutter.
  dir.Write("checkpoints/step_00000200.tmp-AbC123/model.safetensors", "half");
  dir.Write("checkpoints/notes.txt", "hello");
  fs::create_directories(dir.Path("checkpoints/best"));
  const std::string root = dir.path() + "/checkpoints/";
  EXPECT_EQ(ListCheckpoints(dir.path()),
            (std::vector<std::string>{
                root + "step_00000001", root + "step_00000002",
                root + "step_00000010", root + "step_00000100"}));
  EXPECT_TRUE(ListCheckpoints(dir.Path("elsewhere")).empty());

  PruneCheckpoints(dir.path(), 2);
  EXPECT_EQ(ListCheckpoints(dir.path()),
            (std::vector<std::string>{root + "step_00000010",
                                      root + "step_00000100"}));
  PruneCheckpoints(dir.path(), 5);  // fewer than N: nothing to do
  EXPECT_EQ(ListCheckpoints(dir.path()).size(), 2u);
  // Leftovers next to a complete folder of their step are deleted; those of
  // a step with no complete folder may be its only copy and stay.
  dir.Write("checkpoints/step_00000100.tmp-XyZ789/model.safetensors", "half");
  dir.Write("checkpoints/step_00000100.tmp-Q1.old/model.safetensors", "old");
  PruneCheckpoints(dir.path(), 2);
  EXPECT_FALSE(fs::exists(dir.Path("checkpoints/step_00000100.tmp-XyZ789")));
  EXPECT_FALSE(fs::exists(dir.Path("checkpoints/step_00000100.tmp-Q1.old")));
  EXPECT_TRUE(fs::exists(dir.Path("checkpoints/step_00000200.tmp-AbC123")));
  EXPECT_TRUE(fs::exists(dir.Path("checkpoints/notes.txt")));
  EXPECT_TRUE(fs::exists(dir.Path("checkpoints/best")));
  EXPECT_EQ(ListCheckpoints(dir.path()).size(), 2u);
}

// Pruning keeps the newest keep_last_n, the checkpoint with the lowest
// validation loss however old (steps saved without an evaluation do not
// compete), and the one just saved even when higher steps exist.
TEST(Checkpoint, PruneKeepsTheBestAndTheJustSaved) {
  test::TempDir dir;
  nn::Transformer model(Config(8, true), 1);
  const double no_eval = std::nan("");
  for (const auto& [step, val_loss] : std::vector<std::pair<int64_t, double>>{
           {10, 2.5}, {20, 2.0}, {30, no_eval}, {40, 9.0}, {50, 7.0}}) {
    TrainerState state;
    state.step = step;
    state.val_loss = val_loss;
    SaveCheckpoint(CheckpointDir(dir.path(), step), model, nullptr, state, "");
  }
  PruneCheckpoints(dir.path(), 2, CheckpointDir(dir.path(), 50));
  EXPECT_EQ(dir.List("checkpoints"),
            (std::vector<std::string>{"step_00000020", "step_00000040",
                                      "step_00000050"}));
  TrainerState early;
  early.step = 5;
  SaveCheckpoint(CheckpointDir(dir.path(), 5), model, nullptr, early, "");
  PruneCheckpoints(dir.path(), 2, CheckpointDir(dir.path(), 5));
  EXPECT_EQ(dir.List("checkpoints"),
            (std::vector<std::string>{"step_00000005", "step_00000020",
                                      "step_00000040", "step_00000050"}));
}

class CheckpointErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = std::make_unique<nn::Transformer>(Config(8, false), 1);
    optimizer_ =
        std::make_unique<AdamW>(model_->NamedParameters(), AdamWSettings{});
    TrainTwoSteps(*model_, *optimizer_);
    path_ = CheckpointDir(dir_.path(), 2);
    SaveCheckpoint(path_, *model_, optimizer_.get(), SampleState(), "x\n");
  }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

  test::TempDir dir_;
  std::unique_ptr<nn::Transformer> model_;
  std::unique_ptr<AdamW> optimizer_;
  std::string path_;
};

TEST_F(CheckpointErrors, MissingFiles) {
  fs::remove(File("model.safetensors"));
  ROTOR_EXPECT_ERROR(LoadModelWeights(path_, *model_), "cannot open",
                     File("model.safetensors"));
  fs::remove(File("optimizer.safetensors"));
  ROTOR_EXPECT_ERROR(LoadOptimizerState(path_, *optimizer_), "cannot open",
                     File("optimizer.safetensors"));
  fs::remove(File("trainer_state.json"));
  ROTOR_EXPECT_ERROR(LoadTrainerState(path_), "cannot open",
                     File("trainer_state.json"));
}

TEST_F(CheckpointErrors, TruncatedWeights) {
  const std::string bytes = ReadFile(File("model.safetensors"));
  WriteFileAtomically(File("model.safetensors"),
                      bytes.substr(0, bytes.size() - 100));
  ROTOR_EXPECT_ERROR(LoadModelWeights(path_, *model_),
                     File("model.safetensors"));
  WriteFileAtomically(File("model.safetensors"), bytes.substr(0, 5));
  ROTOR_EXPECT_ERROR(LoadModelWeights(path_, *model_),
                     File("model.safetensors"), "not a safetensors file");
}

TEST_F(CheckpointErrors, AnotherArchitecture) {
  // Wider model: the first tensor already has the wrong shape.
  nn::Transformer wider(Config(16, false), 1);
  ROTOR_EXPECT_ERROR(LoadModelWeights(path_, wider),
                     "tensor 'model.embed_tokens.weight' has shape [13, 8], "
                     "expected [13, 16]");
  // Tied model: every tensor it needs is there, plus lm_head.weight.
  nn::Transformer tied(Config(8, true), 1);
  ROTOR_EXPECT_ERROR(LoadModelWeights(path_, tied), "has 21 tensors",
                     "the model has 20 parameters");
  // And the other way round: lm_head.weight is missing.
  const std::string tied_path = CheckpointDir(dir_.path(), 3);
  SaveCheckpoint(tied_path, tied, nullptr, TrainerState{}, "");
  ROTOR_EXPECT_ERROR(LoadModelWeights(tied_path, *model_),
                     "no tensor named 'lm_head.weight'");
}

TEST_F(CheckpointErrors, BadOptimizerMetadata) {
  std::vector<SafetensorsEntry> moments;
  const auto& params = optimizer_->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& m = optimizer_->first_moments()[i];
    moments.push_back({"exp_avg." + params[i].first, SafetensorsDtype::kF32,
                       m.shape(), m.data()});
    moments.push_back({"exp_avg_sq." + params[i].first, SafetensorsDtype::kF32,
                       m.shape(), m.data()});
  }
  WriteSafetensors(File("optimizer.safetensors"), moments, {{"step", "two"}});
  ROTOR_EXPECT_ERROR(LoadOptimizerState(path_, *optimizer_),
                     File("optimizer.safetensors"),
                     "\"step\" is 'two', not a non-negative integer");
  WriteSafetensors(File("optimizer.safetensors"), moments);
  ROTOR_EXPECT_ERROR(LoadOptimizerState(path_, *optimizer_),
                     "__metadata__ has no \"step\"");
  moments.pop_back();
  WriteSafetensors(File("optimizer.safetensors"), moments, {{"step", "2"}});
  ROTOR_EXPECT_ERROR(LoadOptimizerState(path_, *optimizer_),
                     "no tensor named 'exp_avg_sq.lm_head.weight'");
}

TEST_F(CheckpointErrors, BrokenTrainerState) {
  WriteFileAtomically(File("trainer_state.json"), "{\"step\": 2,");
  ROTOR_EXPECT_ERROR(LoadTrainerState(path_), File("trainer_state.json"));
  WriteFileAtomically(File("trainer_state.json"), "{\"step\": 2}");
  ROTOR_EXPECT_ERROR(LoadTrainerState(path_), File("trainer_state.json"),
                     "missing key \"sampler_rng_state\"");
  WriteFileAtomically(
      File("trainer_state.json"),
      "{\"step\": 2, \"sampler_rng_state\": 1, \"sampler_batches_drawn\": 1,"
      " \"tokens_seen\": 1, \"best_val_loss\": \"low\"}");
  ROTOR_EXPECT_ERROR(LoadTrainerState(path_), File("trainer_state.json"),
                     "expected a number, got string");
  WriteFileAtomically(File("trainer_state.json"), "[]");
  ROTOR_EXPECT_ERROR(LoadTrainerState(path_), File("trainer_state.json"));
}

// ---- Loading a trained model: train.init_from (weights only, fresh
// optimizer and step, the RoPE settings of the new config, run folders
// resolved to their newest checkpoint, resuming taking precedence,
// architecture mismatches named) and LoadCheckpointModel with RoPE overrides
// or whole model settings.

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
  // An override replaces the default of its key (a key given twice is an
  // error).
  for (const std::string& replacement : overrides) {
    const std::string key = replacement.substr(0, replacement.find('=') + 1);
    all.erase(std::remove_if(all.begin(), all.end(),
                             [&](const std::string& assignment) {
                               return assignment.rfind(key, 0) == 0;
                             }),
              all.end());
  }
  all.insert(all.end(), overrides.begin(), overrides.end());
  return test::TinyConfig(data, dir.Path("ft"), all);
}

TEST(InitFrom, CopiesTheWeightsOnlyAndUsesTheNewRope) {
  test::TempDir dir;
  const std::string data = TrainBase(dir);
  const std::string base_checkpoint = ListCheckpoints(dir.Path("base")).back();
  const auto base = LoadCheckpointModel(base_checkpoint, {});

  {  // one Trainer at a time holds the output_dir
    std::ostringstream log;
    Trainer finetune(FinetuneConfig(dir, data, {}), log);
    // The run folder resolved to its newest checkpoint.
    EXPECT_NE(
        log.str().find("initialising the weights from " + base_checkpoint),
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
  }

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
      "check the path");
  // A run folder without checkpoints yet is a base to train first.
  test::TempDir empty_run;
  ROTOR_EXPECT_ERROR(
      Trainer(
          FinetuneConfig(dir, data, {"train.init_from=" + empty_run.path()}),
          log),
      "train.init_from", "neither a checkpoint folder",
      "train the base model first");
  test::TempDir empty;
  ROTOR_EXPECT_ERROR(ResolveCheckpointPath(empty.path()), empty.path(),
                     "neither a checkpoint folder");
}

// A PEFT adapter folder (what PeftModel.save_pretrained writes) holds no
// model: the message names PEFT and the merge that makes one, instead of
// the generic "neither a checkpoint folder".
TEST(ResolveCheckpointPath, NamesAPeftAdapterFolderAndHowToMergeIt) {
  test::TempDir dir;
  dir.Write("adapter/adapter_config.json", "{\"peft_type\": \"LORA\"}");
  dir.Write("adapter/adapter_model.safetensors", "");
  ROTOR_EXPECT_ERROR(ResolveCheckpointPath(dir.Path("adapter")),
                     dir.Path("adapter"),
                     "is a PEFT adapter folder (adapter_config.json)",
                     "merge_and_unload()", "then pass OUT");
}

TEST(LoadCheckpointModel, AppliesRopeSettingsAndRejectsArchitectureOnes) {
  test::TempDir dir;
  TrainBase(dir);
  ModelEdit yarn;
  yarn.rope.max_position_embeddings = 64;
  yarn.rope.rope_scaling.emplace();
  yarn.rope.rope_scaling->rope_type = RopeType::kYarn;
  yarn.rope.rope_scaling->factor = 2.0;
  yarn.rope.rope_scaling->original_max_position_embeddings = 32;
  yarn.source = "yarn settings";
  TrainConfig config;
  const auto model = LoadCheckpointModel(dir.Path("base"), yarn, &config);
  EXPECT_EQ(model->config().rope.rope_type, RopeType::kYarn);
  EXPECT_EQ(config.model.rope.factor, 2.0);
  EXPECT_EQ(config.model.rope.max_position_embeddings, 64);
  const auto plain = LoadCheckpointModel(dir.Path("base"));
  EXPECT_EQ(plain->config().rope.rope_type, RopeType::kDefault);
  EXPECT_EQ(plain->NamedParameters()[0].second.ToVector(),
            model->NamedParameters()[0].second.ToVector());

  // The same settings given as a whole model config.
  const auto whole = LoadCheckpointModel(dir.Path("base"), {config.model});
  EXPECT_EQ(whole->config().rope.rope_type, RopeType::kYarn);
  EXPECT_EQ(whole->config().rope.max_position_embeddings, 64);
  EXPECT_EQ(whole->NamedParameters()[0].second.ToVector(),
            model->NamedParameters()[0].second.ToVector());
  ModelEdit other{config.model, {}, "overrides"};
  other.model->intermediate_size = 48;
  ROTOR_EXPECT_ERROR(LoadCheckpointModel(dir.Path("base"), other),
                     "with overrides",
                     "intermediate_size 64 (checkpoint) vs 48 (config)");
  // An edit is checked as a parsed config is.
  yarn.rope.rope_scaling->factor = 0.5;
  ROTOR_EXPECT_ERROR(LoadCheckpointModel(dir.Path("base"), yarn),
                     "yarn settings: model.rope_scaling.factor");
}

// A run's output_dir stands for its newest checkpoint for the tokenizer
// too: the checkpoint's own tokenizer.json copy, not "byte".
TEST(LoadCheckpointTokenizer, ResolvesARunsOutputDir) {
  test::TempDir dir;
  // Not ByteTokenizerJson() itself: that file stands for "byte".
  const std::string tokenizer =
      dir.Write("tokenizer.json", ByteTokenizerJson() + "\n");
  nn::Transformer model(Config(8, true), 1);
  const std::string path = CheckpointDir(dir.Path("run"), 3);
  SaveCheckpoint(path, model, nullptr, TrainerState{}, "", tokenizer);
  for (const std::string& given : {path, dir.Path("run")}) {
    EXPECT_EQ(LoadCheckpointTokenizer(given)->Name(), path + "/tokenizer.json")
        << given;
    EXPECT_NO_THROW(CheckSameTokenizer(given, dir.path()));
    ROTOR_EXPECT_ERROR(CheckSameTokenizer(given, dir.Path("run")),
                       "was trained with tokenizer " + path +
                           "/tokenizer.json but the data in " +
                           dir.Path("run") + " was prepared with byte");
  }
}

// An exported byte-level model's tokenizer.json is the byte tokenizer again,
// so its import pairs with byte-level data.
TEST(TokenizerSpecIn, TheByteTokenizersJsonIsByte) {
  test::TempDir dir;
  dir.Write("tokenizer.json", ByteTokenizerJson());
  EXPECT_EQ(TokenizerSpecIn(dir.path()), "byte");
  dir.Write("tokenizer.json", ByteTokenizerJson() + " ");
  EXPECT_EQ(TokenizerSpecIn(dir.path()), dir.Path("tokenizer.json"));
  // The file exports wrote before its post-processor added <|endoftext|>.
  dir.Write("tokenizer.json", LegacyByteTokenizerJson());
  EXPECT_EQ(TokenizerSpecIn(dir.path()), "byte");
}

}  // namespace
}  // namespace rotor::train
