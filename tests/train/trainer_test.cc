// The training loop (train/trainer.h) on configs/tiny.yaml and a small
// prepared text data set: the loss falls; stopping after k steps and
// resuming gives bitwise the weights, moments and metrics of an
// uninterrupted run; resume=none and bad data refuse to start and overwrite
// nothing; the watchdog stops on NaN and on exploding losses.
#include "train/trainer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/temp_dir.h"
#include "tests/test_util.h"
#include "tests/train/train_test_util.h"
#include "train/data/token_file.h"
#include "train/io/atomic_file.h"
#include "train/io/json.h"

namespace rotor::train {
namespace {

namespace fs = std::filesystem;

// Every file under `dir` (recursively) with its bytes.
std::map<std::string, std::string> Snapshot(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) {
      files[entry.path().string()] = ReadFile(entry.path().string());
    }
  }
  return files;
}

// metrics.jsonl without the wall-clock field (tokens_per_second).
std::vector<std::string> MetricsWithoutTiming(const std::string& output_dir) {
  const std::string path = output_dir + "/metrics.jsonl";
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    Json json = ParseJson(line, path);
    json.erase("tokens_per_second");
    lines.push_back(json.dump());
  }
  return lines;
}

std::vector<std::vector<float>> Weights(nn::Transformer& model) {
  std::vector<std::vector<float>> out;
  for (const Tensor& p : model.Parameters()) out.push_back(p.ToVector());
  return out;
}

class TrainerTest : public test::PreparedDataTest {
 protected:
  TrainConfig Config(const std::string& output,
                     const std::vector<std::string>& overrides = {}) const {
    return test::TinyConfig(data_, dir_.Path(output), overrides);
  }

  std::ostringstream log_;
};

// Documents packed into rows (data.document_mask, data.document_positions)
// on documents of about 60 bytes, so most rows of 32 tokens hold several:
// training learns, and validation runs its rows as training does (the same
// loss as Evaluate with the packing, not the one without).
TEST_F(TrainerTest, DocumentPackingTrainsAndValidatesTheSameWay) {
  const test::TempDir short_documents;
  const std::string data = test::PrepareTextData(short_documents, 80, 2);
  const TrainConfig config =
      test::TinyConfig(data, dir_.Path("run"),
                       {"train.max_steps=20", "data.document_mask=true",
                        "data.document_positions=true"});
  Trainer trainer(config, log_);
  const TrainSummary summary = trainer.Run();
  EXPECT_LT(summary.val_loss, std::log(257.0) - 1.0) << log_.str();
  const TokenFile val(data + "/val.bin");
  const TrainSection& t = config.train;
  const DocumentPacking packing{true, true};
  EXPECT_EQ(Evaluate(trainer.model(), val, t.batch_size, t.seq_len,
                     config.eval.max_batches, packing)
                .loss,
            summary.val_loss);
  EXPECT_NE(Evaluate(trainer.model(), val, t.batch_size, t.seq_len,
                     config.eval.max_batches)
                .loss,
            summary.val_loss);
}

TEST_F(TrainerTest, LossFallsOnText) {
  Trainer trainer(Config("run", {"train.max_steps=30"}), log_);
  const TokenFile val(data_ + "/val.bin");
  const ValidationResult before = Evaluate(trainer.model(), val, 4, 32, 4);
  // An untrained model is close to uniform over 257 tokens.
  EXPECT_NEAR(before.loss, std::log(257.0), 0.1);
  const TrainSummary summary = trainer.Run();
  EXPECT_EQ(summary.steps, 30);
  // Byte statistics and common words: well below uniform in 30 steps.
  EXPECT_LT(summary.val_loss, before.loss - 2.0) << log_.str();
  EXPECT_LT(summary.train_loss, before.loss - 2.0);
  const ValidationResult after = Evaluate(trainer.model(), val, 4, 32, 4);
  EXPECT_EQ(after.loss, summary.val_loss);  // evaluation is deterministic
  EXPECT_NEAR(after.perplexity, std::exp(after.loss), 1e-9);
  // Byte tokens: one token per byte, plus one separator per document.
  EXPECT_NEAR(after.bits_per_byte,
              after.loss * static_cast<double>(val.size()) /
                  static_cast<double>(val.size() - val.document_count()) /
                  std::log(2.0),
              1e-12);
  EXPECT_EQ(after.tokens, 4 * 4 * 32);

  EXPECT_EQ(summary.checkpoint, dir_.Path("run/checkpoints/step_00000030"));
  EXPECT_EQ(dir_.List("run/checkpoints"),
            (std::vector<std::string>{"step_00000020", "step_00000030"}));
  // metrics.jsonl: a loss line every step, an eval line every 10 (the
  // terminal shows every 5th step).
  const std::vector<std::string> metrics =
      MetricsWithoutTiming(dir_.Path("run"));
  ASSERT_EQ(metrics.size(), 30u + 3u);
  EXPECT_NE(metrics.back().find("\"val_loss\""), std::string::npos);
  EXPECT_NE(log_.str().find("step 30/30"), std::string::npos);
}

// Stop after k = 5 steps, then resume in a new Trainer to n = 12: bitwise
// the weights, AdamW moments, trainer state and metrics of one uninterrupted
// run at the same thread count (1 and 2). Gradient accumulation is on, and
// k is not a multiple of the checkpoint or evaluation interval.
class TrainerResumeTest : public TrainerTest,
                          public ::testing::WithParamInterface<int> {};

TEST_P(TrainerResumeTest, StopAndResumeIsBitwiseTheUninterruptedRun) {
  const std::vector<std::string> overrides = {
      "train.max_steps=12",
      "train.gradient_accumulation_steps=2",
      "train.threads=" + std::to_string(GetParam()),
      "checkpoint.every_n_steps=4",
      "eval.every_n_steps=4",
      "logging.log_every_n_steps=1"};
  TrainSummary whole;
  {
    Trainer trainer(Config("whole", overrides), log_);
    whole = trainer.Run();
  }
  {
    Trainer first(Config("split", overrides), log_);
    const TrainSummary part = first.Run(/*stop_after_steps=*/5);
    EXPECT_EQ(part.steps, 5);
    EXPECT_EQ(part.checkpoint, dir_.Path("split/checkpoints/step_00000005"));
  }
  Trainer second(Config("split", overrides), log_);
  EXPECT_EQ(second.state().step, 5);
  EXPECT_NE(log_.str().find("resuming from " +
                            dir_.Path("split/checkpoints/step_00000005") +
                            " at step 5"),
            std::string::npos);
  const TrainSummary resumed = second.Run();
  EXPECT_EQ(resumed.steps, 12);
  EXPECT_EQ(resumed.train_loss, whole.train_loss);
  EXPECT_EQ(resumed.val_loss, whole.val_loss);

  const std::string a = dir_.Path("whole/checkpoints/step_00000012");
  const std::string b = dir_.Path("split/checkpoints/step_00000012");
  EXPECT_EQ(ReadFile(a + "/model.safetensors"),
            ReadFile(b + "/model.safetensors"));
  EXPECT_EQ(ReadFile(a + "/optimizer.safetensors"),
            ReadFile(b + "/optimizer.safetensors"));
  // The same config but for its first line, output_dir.
  const std::string config_a = ReadFile(a + "/config.yaml");
  const std::string config_b = ReadFile(b + "/config.yaml");
  EXPECT_EQ(config_a.rfind("output_dir: ", 0), 0u);
  EXPECT_EQ(config_a.substr(config_a.find('\n')),
            config_b.substr(config_b.find('\n')));
  const TrainerState sa = LoadTrainerState(a), sb = LoadTrainerState(b);
  EXPECT_EQ(sa.sampler.rng_state, sb.sampler.rng_state);
  EXPECT_EQ(sa.sampler.batches_drawn, 24u);  // 12 steps x 2 micro-batches
  EXPECT_EQ(sb.sampler.batches_drawn, 24u);
  EXPECT_EQ(sa.tokens_seen, sb.tokens_seen);
  EXPECT_EQ(sa.smoothed_loss, sb.smoothed_loss);
  EXPECT_EQ(sa.min_smoothed_loss, sb.min_smoothed_loss);
  EXPECT_EQ(sa.best_val_loss, sb.best_val_loss);

  const std::vector<std::string> metrics =
      MetricsWithoutTiming(dir_.Path("whole"));
  EXPECT_EQ(metrics.size(), 12u + 3u);
  EXPECT_EQ(MetricsWithoutTiming(dir_.Path("split")), metrics);
}

INSTANTIATE_TEST_SUITE_P(Threads, TrainerResumeTest, ::testing::Values(1, 2));

// A run killed after its last checkpoint (here: the newest checkpoint
// deleted) logged steps that the resumed run logs again; they are dropped,
// so the metrics still read like one run.
TEST_F(TrainerTest, ResumingAfterAKillKeepsTheMetricsOfOneRun) {
  const std::vector<std::string> overrides = {"train.max_steps=12",
                                              "checkpoint.every_n_steps=4",
                                              "eval.every_n_steps=4"};
  std::vector<std::vector<float>> weights;
  {
    Trainer trainer(Config("run", overrides), log_);
    trainer.Run();
    weights = Weights(trainer.model());
  }
  const std::vector<std::string> metrics =
      MetricsWithoutTiming(dir_.Path("run"));
  fs::remove_all(dir_.Path("run/checkpoints/step_00000012"));
  // And a half-written line at the end, as a kill mid-write leaves.
  std::ofstream(dir_.Path("run/metrics.jsonl"), std::ios::app)
      << "{\"step\": 12, \"lo";
  Trainer resumed(Config("run", overrides), log_);
  EXPECT_EQ(resumed.state().step, 8);
  resumed.Run();
  EXPECT_EQ(Weights(resumed.model()), weights);
  EXPECT_EQ(MetricsWithoutTiming(dir_.Path("run")), metrics);
}

TEST_F(TrainerTest, ResumeAutoSkipsAHalfWrittenCheckpoint) {
  {
    Trainer trainer(Config("run", {"train.max_steps=10"}), log_);
    trainer.Run();
  }
  dir_.Write("run/checkpoints/step_00000020.tmp-x1Y2z3/model.safetensors",
             "half");
  Trainer resumed(Config("run", {"train.max_steps=12"}), log_);
  EXPECT_EQ(resumed.state().step, 10);
  EXPECT_EQ(resumed.Run().steps, 12);
}

TEST_F(TrainerTest, ResumeNoneRefusesACheckpointedOutputDirAndWritesNothing) {
  {
    Trainer trainer(Config("run", {"train.max_steps=10"}), log_);
    trainer.Run();
  }
  const auto before = Snapshot(dir_.Path("run"));
  ROTOR_EXPECT_ERROR(
      Trainer(Config("run", {"train.max_steps=20", "train.resume=none"}), log_),
      dir_.Path("run"), "already holds checkpoints", "step_00000010",
      "nothing was overwritten");
  EXPECT_EQ(Snapshot(dir_.Path("run")), before);

  // A resume folder that does not exist, and a checkpoint of another model.
  ROTOR_EXPECT_ERROR(
      Trainer(Config("other", {"train.resume=" + dir_.Path("nowhere")}), log_),
      "train.resume: checkpoint folder " + dir_.Path("nowhere") +
          " does not exist");
  ROTOR_EXPECT_ERROR(
      Trainer(Config("run", {"model.hidden_size=48"}), log_),
      "tensor 'model.embed_tokens.weight' has shape [257, 32], expected "
      "[257, 48]");
  EXPECT_EQ(Snapshot(dir_.Path("run")), before);
  EXPECT_FALSE(fs::exists(dir_.Path("other")));
}

TEST_F(TrainerTest, BadDataIsRejectedBeforeTraining) {
  ROTOR_EXPECT_ERROR(
      Trainer(test::TinyConfig(dir_.Path("nodata"), dir_.Path("run")), log_),
      dir_.Path("nodata") + " has no train.bin/val.bin",
      "rotor prepare --input TEXTS --output");
  // A file that is not a token file.
  fs::create_directories(dir_.Path("bad"));
  fs::copy_file(data_ + "/val.bin", dir_.Path("bad/val.bin"));
  dir_.Write("bad/train.bin", "this is text, not tokens");
  ROTOR_EXPECT_ERROR(
      Trainer(test::TinyConfig(dir_.Path("bad"), dir_.Path("run")), log_),
      dir_.Path("bad/train.bin"));
  // Validation split shorter than one window of seq_len + 1 tokens.
  fs::copy_file(data_ + "/train.bin", dir_.Path("bad/train.bin"),
                fs::copy_options::overwrite_existing);
  WriteTokenFile(dir_.Path("bad/val.bin"), {256, 1, 2, 3}, {257, 1, 256, 3});
  ROTOR_EXPECT_ERROR(
      Trainer(test::TinyConfig(dir_.Path("bad"), dir_.Path("run")), log_),
      dir_.Path("bad/val.bin"), "has 4 tokens, fewer than seq_len + 1 = 33");
  // A vocabulary larger than the model's.
  WriteTokenFile(dir_.Path("bad/val.bin"), std::vector<TokenId>(100, 7),
                 {300, 1, 256, 99});
  ROTOR_EXPECT_ERROR(
      Trainer(test::TinyConfig(dir_.Path("bad"), dir_.Path("run")), log_),
      "model.vocab_size (257) is smaller than the data's vocabulary (300",
      dir_.Path("bad/val.bin"));
  EXPECT_FALSE(fs::exists(dir_.Path("run")));
}

// Two micro-batches of 4 draw the same windows as one batch of 8, and the
// accumulated gradient is their token-weighted mean: the same training up
// to float summation order.
// With passkey rows (whose loss scores only the copied key, so micro-batches
// score different numbers of tokens) this holds only because each
// micro-batch's mean is weighted by its share of the *scored* tokens.
TEST_F(TrainerTest, GradientAccumulationMatchesOneLargerBatch) {
  for (const bool passkey : {false, true}) {
    std::vector<std::string> common = {"train.max_steps=3"};
    if (passkey) {
      common.insert(common.end(),
                    {"model.max_position_embeddings=112", "train.seq_len=112",
                     "data.passkey_fraction=0.5"});
    }
    const std::string tag = passkey ? "passkey-" : "";
    std::vector<std::string> large_overrides = common;
    large_overrides.push_back("train.batch_size=8");
    std::vector<std::string> accumulated_overrides = common;
    accumulated_overrides.insert(
        accumulated_overrides.end(),
        {"train.batch_size=4", "train.gradient_accumulation_steps=2"});
    Trainer large(Config(tag + "large", large_overrides), log_);
    Trainer accumulated(Config(tag + "accumulated", accumulated_overrides),
                        log_);
    const TrainSummary a = large.Run();
    const TrainSummary b = accumulated.Run();
    EXPECT_NEAR(a.train_loss, b.train_loss, 1e-5) << tag;
    EXPECT_EQ(large.state().tokens_seen, accumulated.state().tokens_seen);
    const auto wa = Weights(large.model()), wb = Weights(accumulated.model());
    ASSERT_EQ(wa.size(), wb.size());
    for (size_t i = 0; i < wa.size(); ++i) {
      test::ExpectNear(wb[i].data(), wa[i].data(), wa[i].size(), 1e-5, 1e-4,
                       tag + "parameter " + std::to_string(i));
    }
  }
}

// train.activation_checkpointing changes memory and time, never the run:
// losses and weights are bitwise those without it.
TEST_F(TrainerTest, ActivationCheckpointingTrainsBitwiseTheSame) {
  const std::vector<std::string> common = {
      "train.max_steps=3", "train.gradient_accumulation_steps=2"};
  std::vector<std::string> checkpointed = common;
  checkpointed.push_back("train.activation_checkpointing=layers");
  Trainer plain(Config("plain", common), log_);
  Trainer recomputed(Config("recomputed", checkpointed), log_);
  const TrainSummary a = plain.Run();
  const TrainSummary b = recomputed.Run();
  EXPECT_EQ(a.train_loss, b.train_loss);
  const auto wa = Weights(plain.model()), wb = Weights(recomputed.model());
  ASSERT_EQ(wa.size(), wb.size());
  for (size_t i = 0; i < wa.size(); ++i) EXPECT_EQ(wa[i], wb[i]) << i;
}

// train.threads changes the speed, never the run: every op cuts its work by
// the shapes alone (products of 256 rows here, cut into row blocks), so 1
// and 2 threads train the same bits, and a run may resume at another count.
TEST_F(TrainerTest, TrainsBitwiseTheSameAtOneAndTwoThreads) {
  const std::vector<std::string> common = {"train.max_steps=3",
                                           "train.batch_size=8"};
  std::vector<std::string> one = common, two = common;
  one.push_back("train.threads=1");
  two.push_back("train.threads=2");
  Trainer serial(Config("one-thread", one), log_);
  const TrainSummary a = serial.Run();
  Trainer parallel(Config("two-threads", two), log_);
  const TrainSummary b = parallel.Run();
  EXPECT_EQ(a.train_loss, b.train_loss);
  EXPECT_EQ(a.val_loss, b.val_loss);
  const auto wa = Weights(serial.model()), wb = Weights(parallel.model());
  ASSERT_EQ(wa.size(), wb.size());
  for (size_t i = 0; i < wa.size(); ++i) EXPECT_EQ(wa[i], wb[i]) << i;
  {  // stopped at one thread after 2 steps, resumed at two
    Trainer first(Config("resumed", one), log_);
    EXPECT_EQ(first.Run(/*stop_after_steps=*/2).steps, 2);
  }
  Trainer second(Config("resumed", two), log_);
  EXPECT_EQ(second.Run().train_loss, a.train_loss);
  const auto wc = Weights(second.model());
  for (size_t i = 0; i < wa.size(); ++i) EXPECT_EQ(wa[i], wc[i]) << i;
}

// train.precision: bf16 (skipped where oneDNN has no bf16 matmul): the
// products run in bf16, so the losses differ from float32's but stay close;
// the run gives the same bits at one and two threads, resumes bitwise, and
// its checkpoints' config says bf16. The precision is the trainer's for its
// lifetime only.
TEST_F(TrainerTest, Bfloat16TrainsCloseToFloat32AndBitwiseAtAnyThreadCount) {
  if (!BfloatMatmulProblem().empty()) {
    GTEST_SKIP() << BfloatMatmulProblem();
  }
  const std::vector<std::string> common = {"train.max_steps=3",
                                           "train.batch_size=8"};
  std::vector<std::string> one = common, two = common;
  one.push_back("train.threads=1");
  two.push_back("train.threads=2");
  Trainer float32(Config("fp32", one), log_);
  const TrainSummary reference = float32.Run();
  for (auto* overrides : {&one, &two})
    overrides->push_back("train.precision=bf16");
  TrainSummary a;
  {
    Trainer serial(Config("one-thread", one), log_);
    EXPECT_EQ(ActiveMatmulPrecision(), MatmulPrecision::kBfloat16);
    a = serial.Run();
    Trainer parallel(Config("two-threads", two), log_);
    const TrainSummary b = parallel.Run();
    EXPECT_EQ(a.train_loss, b.train_loss);
    EXPECT_EQ(a.val_loss, b.val_loss);
    const auto wa = Weights(serial.model()), wb = Weights(parallel.model());
    for (size_t i = 0; i < wa.size(); ++i) EXPECT_EQ(wa[i], wb[i]) << i;
  }
  EXPECT_EQ(ActiveMatmulPrecision(), MatmulPrecision::kFloat32);
  EXPECT_NE(a.val_loss, reference.val_loss);
  EXPECT_NEAR(a.val_loss, reference.val_loss, 0.02 * reference.val_loss);
  const std::string saved = train::ReadFile(
      dir_.Path("one-thread/checkpoints/step_00000003/config.yaml"));
  EXPECT_NE(saved.find("precision: bf16"), std::string::npos) << saved;
  {
    Trainer first(Config("resumed", one), log_);
    EXPECT_EQ(first.Run(/*stop_after_steps=*/2).steps, 2);
  }
  Trainer second(Config("resumed", two), log_);
  EXPECT_EQ(second.Run().train_loss, a.train_loss);
}

// A run may change its precision when it resumes: the checkpoint holds the
// float32 weights and moments whatever the products ran in. The steps after
// it run in the new precision, so the run is no longer bitwise the
// uninterrupted one (docs/performance.md says so).
TEST_F(TrainerTest, AResumeMayChangeThePrecision) {
  if (!BfloatMatmulProblem().empty()) {
    GTEST_SKIP() << BfloatMatmulProblem();
  }
  const std::vector<std::string> steps = {"train.max_steps=4",
                                          "train.batch_size=8"};
  Trainer uninterrupted(Config("fp32", steps), log_);
  const TrainSummary reference = uninterrupted.Run();
  {
    Trainer first(Config("switched", steps), log_);
    EXPECT_EQ(first.Run(/*stop_after_steps=*/2).steps, 2);
  }
  std::vector<std::string> bf16 = steps;
  bf16.push_back("train.precision=bf16");
  Trainer second(Config("switched", bf16), log_);
  const TrainSummary switched = second.Run();
  EXPECT_EQ(switched.steps, 4);
  EXPECT_NE(switched.train_loss, reference.train_loss);
  EXPECT_NEAR(switched.val_loss, reference.val_loss, 0.02 * reference.val_loss);
}

// Resuming with another batch shape, seed or passkey mix would not continue
// the same run: refused, naming each difference, and nothing is written.
TEST_F(TrainerTest, ResumeWithOtherDataSettingsIsRefused) {
  {
    Trainer trainer(Config("run", {"train.max_steps=2"}), log_);
    trainer.Run();
  }
  const auto before = Snapshot(dir_.Path("run"));
  ROTOR_EXPECT_ERROR(
      Trainer(Config("run",
                     {"train.max_steps=4", "train.seq_len=16", "train.seed=5"}),
              log_),
      "cannot resume from " + dir_.Path("run/checkpoints/step_00000002"),
      "train.seq_len 32 (checkpoint) vs 16 (config), train.seed 1337 "
      "(checkpoint) vs 5 (config)",
      "train.init_from=");
  EXPECT_EQ(Snapshot(dir_.Path("run")), before);
  // More steps (or another learning rate) is fine: the run continues.
  Trainer longer(Config("run", {"train.max_steps=4"}), log_);
  EXPECT_EQ(longer.state().step, 2);
}

// Checkpoints from before data.passkey_loss existed scored every token of
// their passkey rows: their config reads as "all", so resuming them under
// today's default ("retrieval") is refused instead of switching the loss.
TEST_F(TrainerTest, CheckpointsWithoutPasskeyLossReadAsAll) {
  const std::vector<std::string> passkey = {
      "train.max_steps=1", "model.max_position_embeddings=112",
      "train.seq_len=112", "data.passkey_fraction=0.5"};
  {
    Trainer trainer(Config("old", passkey), log_);
    trainer.Run();
  }
  const std::string checkpoint = dir_.Path("old/checkpoints/step_00000001");
  std::string yaml = ReadFile(checkpoint + "/config.yaml");
  const size_t line = yaml.find("  passkey_loss: retrieval\n");
  ASSERT_NE(line, std::string::npos) << yaml;
  yaml.erase(line, std::string("  passkey_loss: retrieval\n").size());
  dir_.Write("old/checkpoints/step_00000001/config.yaml", yaml);
  EXPECT_EQ(LoadCheckpointTrainConfig(checkpoint).data.passkey_loss,
            PasskeyLoss::kAll);
  std::vector<std::string> more = passkey;
  more[0] = "train.max_steps=2";
  ROTOR_EXPECT_ERROR(Trainer(Config("old", more), log_),
                     "data.passkey_loss all (checkpoint) vs retrieval "
                     "(config)");
}

TEST_F(TrainerTest, OutputDirThatIsAFileIsRejected) {
  const std::string file = dir_.Write("taken", "a file");
  ROTOR_EXPECT_ERROR(Trainer(test::TinyConfig(data_, file), log_),
                     "output_dir " + file + " is not a folder");
  EXPECT_EQ(ReadFile(file), "a file");
}

// A NaN weight makes the first loss NaN: the watchdog stops before the
// update and the last checkpoint stays as it was.
TEST_F(TrainerTest, WatchdogStopsOnNaNAndKeepsTheLastCheckpoint) {
  {
    Trainer trainer(Config("run", {"train.max_steps=10"}), log_);
    trainer.Run();
  }
  const auto before = Snapshot(dir_.Path("run/checkpoints"));
  Trainer trainer(Config("run", {"train.max_steps=20"}), log_);
  Tensor norm = trainer.model().NamedParameters()[1].second;
  ASSERT_EQ(trainer.model().NamedParameters()[1].first,
            "model.layers.0.input_layernorm.weight");
  norm.data()[0] = NAN;
  ROTOR_EXPECT_ERROR(trainer.Run(), "training stopped: the loss is nan",
                     "at step 11 (NaN/Inf)", "Lower train.lr",
                     "the last checkpoint is untouched");
  EXPECT_EQ(Snapshot(dir_.Path("run/checkpoints")), before);
  EXPECT_EQ(trainer.state().step, 10);
}

// A learning rate far too high: the loss blows up after warm-up and the
// watchdog stops the run instead of training on garbage.
TEST_F(TrainerTest, WatchdogStopsAnExplodingLoss) {
  Trainer trainer(
      Config("run", {"train.lr=10", "train.min_lr=10", "train.warmup_steps=0",
                     "train.clip_grad_norm=0", "train.max_steps=40"}),
      log_);
  try {
    trainer.Run();
    ADD_FAILURE() << "a learning rate of 10 trained to the end:\n"
                  << log_.str();
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("training stopped: the "), std::string::npos)
        << message;
    EXPECT_NE(message.find("Lower train.lr"), std::string::npos) << message;
  }
  EXPECT_LT(trainer.state().step, 40);
}

// A validation loss above ln(DBL_MAX) ~ 709.8 nats has an infinite
// perplexity: the run goes on, metrics.jsonl writes null and names it in
// "non_finite", and the step's checkpoint is written.
// (Weights drawn 5,000 times too large give logits in the thousands, so the
// loss is far above log(DBL_MAX) = 709.8 on every OpenBLAS kernel set; a run
// made to diverge with a huge learning rate got there on some and not on
// others.)
TEST_F(TrainerTest, AnInfinitePerplexityIsLoggedAsNullAndFlagged) {
  Trainer trainer(
      Config("run", {"model.initializer_range=100", "train.lr=1e-6",
                     "train.min_lr=1e-7", "train.loss_explosion_ratio=0",
                     "train.max_steps=10"}),
      log_);
  const TrainSummary summary = trainer.Run();
  ASSERT_GT(summary.val_loss, 710.0) << log_.str();
  EXPECT_NE(log_.str().find("ppl inf"), std::string::npos) << log_.str();
  EXPECT_TRUE(
      fs::exists(dir_.Path("run/checkpoints/step_00000010/model.safetensors")));
  const std::vector<std::string> metrics =
      MetricsWithoutTiming(dir_.Path("run"));
  const Json last = ParseJson(metrics.back(), "metrics.jsonl");
  EXPECT_TRUE(last["val_perplexity"].is_null()) << metrics.back();
  EXPECT_EQ(last["non_finite"], Json({{"val_perplexity", "inf"}}))
      << metrics.back();
}

// A rate that blows up during a long warm-up is caught during the warm-up
// (the watchdog used to wait for its end, step 31).
TEST_F(TrainerTest, WatchdogWatchesTheWarmUp) {
  Trainer trainer(
      Config("run", {"train.lr=10", "train.min_lr=1", "train.warmup_steps=30",
                     "checkpoint.every_n_steps=5"}),
      log_);
  ROTOR_EXPECT_ERROR(trainer.Run(), "training stopped: the smoothed loss",
                     "(loss explosion)", "the best one",
                     "(lowest validation loss) is never pruned");
  EXPECT_LT(trainer.state().step, 30) << log_.str();
}

// A run whose validation loss only gets worse (the watchdog off) keeps its
// best checkpoint besides the keep_last_n = 2 newest.
TEST_F(TrainerTest, TheBestCheckpointIsNeverPruned) {
  Trainer trainer(
      Config("run", {"train.lr=3", "train.min_lr=1", "train.warmup_steps=30",
                     "train.loss_explosion_ratio=0", "train.max_steps=30",
                     "checkpoint.every_n_steps=5", "eval.every_n_steps=5"}),
      log_);
  trainer.Run();
  int64_t best_step = 0;
  double best_loss = INFINITY;
  for (const std::string& line : MetricsWithoutTiming(dir_.Path("run"))) {
    const Json json = ParseJson(line, "metrics.jsonl");
    if (json.contains("val_loss") && json["val_loss"] < best_loss) {
      best_loss = json["val_loss"].get<double>();
      best_step = json["step"].get<int64_t>();
    }
  }
  ASSERT_LT(best_step, 25) << "the best is among the newest: " << log_.str();
  EXPECT_EQ(
      ListCheckpoints(dir_.Path("run")),
      (std::vector<std::string>{CheckpointDir(dir_.Path("run"), best_step),
                                CheckpointDir(dir_.Path("run"), 25),
                                CheckpointDir(dir_.Path("run"), 30)}));
}

// Resuming from another run's checkpoint into an output_dir with
// checkpoints, or from an older checkpoint of output_dir, would mix two
// histories that pruning takes for one (and delete the new checkpoints): it
// is refused, naming both, and nothing is written.
TEST_F(TrainerTest, ResumeRefusesToMixTwoHistoriesInOneOutputDir) {
  const std::vector<std::string> every10 = {"checkpoint.every_n_steps=10",
                                            "eval.every_n_steps=10"};
  auto with = [&](std::vector<std::string> overrides) {
    overrides.insert(overrides.end(), every10.begin(), every10.end());
    return overrides;
  };
  Trainer(Config("other", with({"train.max_steps=20"})), log_).Run();
  Trainer(Config("run", with({"train.max_steps=60"})), log_).Run();
  const auto before = Snapshot(dir_.Path("run"));
  const std::string other = CheckpointDir(dir_.Path("other"), 20);
  ROTOR_EXPECT_ERROR(
      Trainer(
          Config("run", with({"train.resume=" + other, "train.max_steps=45"})),
          log_),
      "train.resume=" + other, "is outside output_dir " + dir_.Path("run"),
      "already holds checkpoints", "step_00000060", "nothing was written");
  const std::string older = CheckpointDir(dir_.Path("run"), 50);
  ROTOR_EXPECT_ERROR(
      Trainer(
          Config("run", with({"train.resume=" + older, "train.max_steps=70"})),
          log_),
      "train.resume=" + older, "is not the newest checkpoint",
      "also holds step_00000060", "nothing was written");
  EXPECT_EQ(Snapshot(dir_.Path("run")), before);

  // Into an output_dir of its own, the other run continues.
  Trainer resumed(
      Config("fresh", with({"train.resume=" + other, "train.max_steps=45"})),
      log_);
  EXPECT_EQ(resumed.Run().checkpoint, CheckpointDir(dir_.Path("fresh"), 45));
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

// Retrieval rows change the run and replay exactly; a row length that
// cannot hold a task is refused before training, naming the task, the
// tokenizer and the seq_len that would.
TEST(RetrievalMix, TrainingWithRetrievalRowsIsDeterministicAndChecked) {
  test::TempDir dir;
  const std::string data = test::PrepareTextData(dir);
  auto config = [&](const std::string& name, const std::string& fraction,
                    const std::string& seq_len) {
    return test::TinyConfig(
        data, dir.Path(name),
        {"data.passkey_fraction=0.25", "data.retrieval_fraction=" + fraction,
         "data.retrieval_tasks=[niah_single]",
         "model.max_position_embeddings=" + seq_len, "train.seq_len=" + seq_len,
         "train.max_steps=2", "eval.every_n_steps=0"});
  };
  auto run = [&](const std::string& name, const std::string& fraction) {
    std::ostringstream log;
    Trainer trainer(config(name, fraction, "384"), log);
    return trainer.Run().train_loss;
  };
  const double passkeys = run("passkeys", "0");
  const double mixed = run("mixed", "0.5");
  EXPECT_EQ(run("mixed_again", "0.5"), mixed);
  EXPECT_NE(mixed, passkeys);
  std::ostringstream log;
  ROTOR_EXPECT_ERROR(Trainer(config("short", "0.5", "256"), log),
                     "data.retrieval_tasks: a niah_single row needs about",
                     "tokens of byte", "train.seq_len + 1 is 257",
                     "set train.seq_len >= ");
}

// The trainer counts tokens_seen in int64_t. A config built in code (the
// extend report's) skips the parser's check of the run's token count, and a
// checkpoint's trainer_state.json can hold any count: both are errors, not
// a wrapped, negative count.
TEST_F(TrainerTest, TokenCountsThatCannotBeCountedAreErrors) {
  TrainConfig config = Config("huge");
  config.train.max_steps = int64_t{1} << 60;  // * 128 tokens per step
  ROTOR_EXPECT_ERROR(Trainer(config, log_),
                     "integer overflow computing the tokens of the run "
                     "(train.max_steps * tokens per step): 1152921504606846976"
                     " * 128");

  Trainer(Config("run", {"train.max_steps=2"}), log_).Run(1);
  const std::string state =
      dir_.Path("run/checkpoints/step_00000001/trainer_state.json");
  Json json = ParseJson(ReadFile(state), state);
  json["tokens_seen"] = std::numeric_limits<int64_t>::max() - 100;
  WriteFileAtomically(state, json.dump());
  Trainer resumed(Config("run", {"train.max_steps=2"}), log_);
  ROTOR_EXPECT_ERROR(resumed.Run(), "integer overflow computing tokens_seen");
}

}  // namespace
}  // namespace rotor::train
