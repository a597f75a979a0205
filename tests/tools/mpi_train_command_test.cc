// `mpiexec -np 2 build/rotor train` as a user runs it (docs/distributed.md),
// on configs/tiny.yaml and a small prepared data set, on this machine:
//
// - two ranks sharing a step's two micro-batches train bitwise like one
//   process accumulating the same two (untied embeddings), and within a
//   stated bound with tied embeddings, whose two uses are summed in another
//   order; the validation loss agrees; rank 0 alone prints;
// - a checkpoint of two ranks resumes on one, and one process's on two,
//   continuing the same run bit for bit;
// - sharding AdamW's moments (ZeRO stage 1) changes no bit;
// - a batch that the ranks cannot share equally is refused, and so are
//   ranks that would start from different checkpoints;
// - a rank killed with SIGKILL stops the job within a bounded time with
//   rotor's own message, the newest checkpoint is intact, and the same
//   command resumes from it.
//
// Skipped, saying so, when rotor was built without MPI.
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "nn/lora.h"
#include "nn/transformer.h"
#include "tests/temp_dir.h"
#include "tests/test_util.h"
#include "tests/tools/run_rotor.h"
#include "tests/train/train_test_util.h"
#include "train/checkpoint.h"
#include "train/distributed/communicator.h"
#include "train/distributed/gradient_buckets.h"
#include "train/io/atomic_file.h"
#include "train/io/json.h"
#include "train/io/safetensors.h"

namespace rotor::tools {
namespace {

namespace fs = std::filesystem;

using test::RotorResult;

std::string Quote(const std::string& text) { return "'" + text + "'"; }

// mpiexec as CI runs it: as root (Open MPI refuses root without the flag),
// with more ranks than cores allowed, and bounded by `timeout` so that a
// hang fails the test instead of stalling the suite.
std::string Launcher(int ranks) {
  return StrCat("timeout -k 10 120 ", ROTOR_MPIEXEC,
                " --allow-run-as-root --oversubscribe -np ", ranks);
}

// The step lines of metrics.jsonl (loss, grad_norm, lr, tokens_seen), and
// the evaluation lines' val_loss, in file order.
struct Metrics {
  std::vector<std::string> steps;
  std::vector<double> losses;
  std::vector<double> val_losses;
};

Metrics ReadMetrics(const std::string& output_dir) {
  const std::string path = output_dir + "/metrics.jsonl";
  std::ifstream in(path);
  Metrics metrics;
  for (std::string line; std::getline(in, line);) {
    train::Json json = train::ParseJson(line, path);
    if (json.contains("val_loss")) {
      metrics.val_losses.push_back(json["val_loss"].get<double>());
    } else {
      json.erase("tokens_per_second");
      json.erase("allreduce_wait_share");
      metrics.steps.push_back(json.dump());
      metrics.losses.push_back(json["loss"].get<double>());
    }
  }
  return metrics;
}

// The largest |a - b| over every weight of two model.safetensors files.
double MaxWeightDifference(const std::string& a, const std::string& b) {
  const train::SafetensorsFile first = train::SafetensorsFile::Read(a);
  const train::SafetensorsFile second = train::SafetensorsFile::Read(b);
  double largest = 0.0;
  for (const auto& tensor : first.tensors()) {
    const std::vector<float> x = first.ReadF32(tensor.name);
    const std::vector<float> y = second.ReadF32(tensor.name);
    EXPECT_EQ(x.size(), y.size()) << tensor.name;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      largest = std::max(largest, std::fabs(double{x[i]} - y[i]));
    }
  }
  return largest;
}

size_t Count(const std::string& text, const std::string& part) {
  size_t count = 0;
  for (size_t at = text.find(part); at != std::string::npos;
       at = text.find(part, at + 1)) {
    ++count;
  }
  return count;
}

class MpiTrain : public test::PreparedDataTest {
 protected:
  void SetUp() override {
#if !ROTOR_WITH_MPI
    GTEST_SKIP() << "rotor was built without MPI (no libopenmpi-dev when "
                    "CMake ran, or -DROTOR_WITH_MPI=OFF): nothing to run "
                    "under mpiexec";
#endif
  }

  // `rotor train` on the tiny config into dir/NAME, on `ranks` processes
  // (1: without mpiexec, as today).
  std::string TrainArgs(const std::string& name,
                        const std::string& extra) const {
    return "train " + Quote(test::TinyConfigPath()) + " " +
           Quote("data.path=" + data_) + " " +
           Quote("output_dir=" + dir_.Path(name)) + " --samples 0 " + extra;
  }

  RotorResult Train(int ranks, const std::string& name,
                    const std::string& extra) const {
    return test::RunRotor(dir_, TrainArgs(name, extra),
                          ranks == 1 ? "" : Launcher(ranks));
  }

  std::string Checkpoint(const std::string& name, int64_t step) const {
    return train::CheckpointDir(dir_.Path(name), step);
  }
};

// Two micro-batches of 4 per step: one process accumulates them, two ranks
// take one each. Untied, every parameter gets one gradient per micro-batch
// and the sum is g0 + g1 either way: the same bits. Tied, the embedding
// gets two per micro-batch (lookup and output projection): one process
// adds ((g0a + g0b) + g1a) + g1b, two ranks (g0a + g0b) + (g1a + g1b), so
// the bits may differ. Bound: losses within 1e-6 relative, weights within
// 1e-4 after 20 steps (measured on the Brown corpus: 4e-8 and 7.5e-6; AdamW
// divides by the gradient's running RMS, so a last-bit difference in a
// near-zero gradient can move a weight by more than its own size).
TEST_F(MpiTrain, TwoRanksTrainLikeOneProcessOverTheSameMicroBatches) {
  const std::string common =
      "train.max_steps=20 train.gradient_accumulation_steps=2 "
      "logging.log_every_n_steps=1 ";
  for (const bool tied : {false, true}) {
    SCOPED_TRACE(tied ? "tied embeddings" : "untied embeddings");
    const std::string tie =
        common + "model.tie_word_embeddings=" + (tied ? "true" : "false");
    const std::string one = tied ? "one_tied" : "one";
    const std::string two = tied ? "two_tied" : "two";
    RotorResult r = Train(1, one, tie);
    ASSERT_EQ(r.status, 0) << r.err;
    r = Train(2, two, tie);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_CONTAINS(r.out,
                    "data-parallel: 2 ranks (2 on this machine) x 1 "
                    "thread, 4 sequences each per step");
    EXPECT_EQ(Count(r.out, "step 20/20"), 1u) << "rank 0 alone prints";
    EXPECT_EQ(Count(r.out, "tokens per step, "), 1u);  // the summary

    const Metrics single = ReadMetrics(dir_.Path(one));
    const Metrics ranks = ReadMetrics(dir_.Path(two));
    ASSERT_EQ(single.steps.size(), 20u);
    ASSERT_EQ(ranks.val_losses.size(), single.val_losses.size());
    ASSERT_EQ(ranks.losses.size(), single.losses.size());
    for (size_t i = 0; i < single.losses.size(); ++i) {
      EXPECT_NEAR(ranks.losses[i], single.losses[i], 1e-6 * single.losses[i]);
    }
    for (size_t i = 0; i < single.val_losses.size(); ++i) {
      EXPECT_NEAR(ranks.val_losses[i], single.val_losses[i],
                  (tied ? 1e-6 : 1e-12) * single.val_losses[i]);
    }
    const std::string model = "/model.safetensors";
    if (!tied) {
      EXPECT_EQ(ranks.steps, single.steps);
      for (const char* file :
           {"/model.safetensors", "/optimizer.safetensors"}) {
        EXPECT_TRUE(train::ReadFile(Checkpoint(one, 20) + file) ==
                    train::ReadFile(Checkpoint(two, 20) + file))
            << file << " differs";
      }
    } else {
      const double difference = MaxWeightDifference(
          Checkpoint(one, 20) + model, Checkpoint(two, 20) + model);
      EXPECT_LT(difference, 1e-4);
      std::cout << "tied embeddings, 20 steps: largest weight difference "
                << difference << "\n";
    }
    EXPECT_EQ(train::LoadTrainerState(Checkpoint(one, 20)).world_size, 1);
    const train::TrainerState state =
        train::LoadTrainerState(Checkpoint(two, 20));
    EXPECT_EQ(state.world_size, 2);
    EXPECT_EQ(state.sampler.batches_drawn, 40u);
  }
}

// The sampler state does not depend on the rank count, so a checkpoint
// continues on any count that splits the batch: 2 ranks to step 8, with a
// checkpoint at 4; step 8 removed, one process resumes from 4 and reaches
// the same step-8 weights bit for bit; and the other way round.
TEST_F(MpiTrain, ACheckpointResumesOnAnotherRankCountAsTheSameRun) {
  const std::string args =
      "train.max_steps=8 train.gradient_accumulation_steps=2 "
      "checkpoint.every_n_steps=4 model.tie_word_embeddings=false";
  for (const auto& [first, then] : {std::pair{2, 1}, std::pair{1, 2}}) {
    SCOPED_TRACE(StrCat(first, " ranks, then ", then));
    const std::string name = StrCat("run", first, then);
    RotorResult r = Train(first, name, args);
    ASSERT_EQ(r.status, 0) << r.err;
    const std::string uninterrupted =
        train::ReadFile(Checkpoint(name, 8) + "/model.safetensors");
    fs::remove_all(Checkpoint(name, 8));
    r = Train(then, name, args);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_CONTAINS(
        r.out,
        StrCat("resuming from ", Checkpoint(name, 4), " at step 4 (saved by ",
               first, " rank", first == 1 ? "" : "s", ", continued by ", then,
               ": the global batch is the same, so is the data "
               "stream)"));
    EXPECT_TRUE(train::ReadFile(Checkpoint(name, 8) + "/model.safetensors") ==
                uninterrupted);
    EXPECT_EQ(train::LoadTrainerState(Checkpoint(name, 8)).world_size, then);
  }
}

// ZeRO stage 1 shards AdamW's moments, not the arithmetic: the weights and
// the checkpoint's moments are the unsharded run's bits, and a sharded run
// resumes its own checkpoint (written whole) as the same run.
TEST_F(MpiTrain, ShardedOptimizerStateGivesTheSameRun) {
  const std::string args =
      "train.max_steps=8 checkpoint.every_n_steps=4 train.zero_stage=";
  ASSERT_EQ(Train(2, "whole", args + "0").status, 0);
  RotorResult r = Train(2, "sharded", args + "1");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_CONTAINS(r.out, "AdamW moments sharded (ZeRO stage 1)");
  for (const char* file : {"/model.safetensors", "/optimizer.safetensors"}) {
    for (const int64_t step : {4, 8}) {
      EXPECT_TRUE(train::ReadFile(Checkpoint("whole", step) + file) ==
                  train::ReadFile(Checkpoint("sharded", step) + file))
          << file << " of step " << step << " differs";
    }
  }
  fs::remove_all(Checkpoint("sharded", 8));
  r = Train(2, "sharded", args + "1");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_CONTAINS(r.out, "at step 4");
  EXPECT_TRUE(train::ReadFile(Checkpoint("whole", 8) + "/model.safetensors") ==
              train::ReadFile(Checkpoint("sharded", 8) + "/model.safetensors"));
}

// A LoRA run (docs/lora.md): the gradient buckets and the ZeRO shards hold
// the trainable parameters only (adapters and norms; the base has no
// gradients), and two ranks, sharded or not, train the single process's
// bits (untied embeddings, no dropout: one micro-batch per rank).
TEST_F(MpiTrain, LoraRunsSumAndShardOnlyTheTrainableParameters) {
  const std::string untied = "model.tie_word_embeddings=false ";
  ASSERT_EQ(Train(1, "base", untied + "train.max_steps=2").status, 0);
  const std::string lora =
      untied + "train.max_steps=6 train.gradient_accumulation_steps=2 " +
      Quote("train.init_from=" + dir_.Path("base")) +
      " 'finetune.lora={r: 4, target_modules: [q_proj, v_proj, down_proj]}'"
      " 'finetune.trainable=[norm]' train.zero_stage=";
  RotorResult r = Train(1, "one", lora + "0");
  ASSERT_EQ(r.status, 0) << r.err;
  // Buckets of 0.001 MiB: the trainable parameters make fewer than all would.
  const auto buckets = [this](bool trainable_only) {
    const train::TrainConfig config = test::TinyConfig(
        data_, dir_.Path("unused"), {"model.tie_word_embeddings=false"});
    nn::Transformer model(train::ResolveTransformerConfig(config.model), 1);
    nn::SetUpFinetuning(
        model,
        {true, {4, 8.0, 0.0}, {"q_proj", "v_proj", "down_proj"}, {"norm"}}, 1);
    return train::GradientBuckets(train::SingleProcessCommunicator(),
                                  trainable_only ? model.TrainableParameters()
                                                 : model.Parameters(),
                                  static_cast<int64_t>(0.001 * (1 << 20)))
        .num_buckets();
  };
  ASSERT_LT(buckets(true), buckets(false));
  for (const char* zero : {"0", "1"}) {
    SCOPED_TRACE(StrCat("zero_stage ", zero));
    const std::string name = StrCat("two", zero);
    r = Train(2, name, lora + zero + " train.allreduce_bucket_mb=0.001");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_CONTAINS(r.out, "LoRA r=4 on 6 projections");
    EXPECT_CONTAINS(r.out, StrCat("gradients summed in ", buckets(true),
                                  " buckets of <= 0.001 MiB"));
    for (const char* file : {"/model.safetensors", "/optimizer.safetensors"}) {
      EXPECT_TRUE(train::ReadFile(Checkpoint("one", 6) + file) ==
                  train::ReadFile(Checkpoint(name, 6) + file))
          << file << " differs";
    }
  }
}

TEST_F(MpiTrain, ABatchTheRanksCannotShareEquallyIsRefused) {
  const RotorResult r = Train(3, "three", "train.max_steps=2");
  EXPECT_NE(r.status, 0);
  EXPECT_CONTAINS(r.err,
                  "3 ranks cannot share a step's 4 sequences "
                  "(train.batch_size 4 x train.gradient_accumulation_steps "
                  "1) equally; rotor does not round a share. Run 2 or 4 "
                  "ranks");
  EXPECT_FALSE(fs::exists(dir_.Path("three/checkpoints")));
  // More ranks than sequences: only fewer ranks can work (this used to spin
  // forever looking for a larger rank count).
  const RotorResult more =
      Train(3, "more", "train.max_steps=2 train.batch_size=2");
  EXPECT_NE(more.status, 0);
  EXPECT_CONTAINS(more.err,
                  "3 ranks cannot share a step's 2 sequences "
                  "(train.batch_size 2 x train.gradient_accumulation_steps "
                  "1) equally; rotor does not round a share. Run 2 ranks");
}

// Each rank reads output_dir itself: a machine that does not share it
// would start fresh while rank 0 resumes. Open MPI's MPMD syntax ("-np 1 A
// : -np 1 B") gives the two ranks different output_dirs, one with a
// checkpoint: the job stops before training, naming the problem.
TEST_F(MpiTrain, RanksThatStartFromDifferentStatesAreRefused) {
  const std::string args = "train.max_steps=4 checkpoint.every_n_steps=2";
  ASSERT_EQ(Train(1, "trained", args).status, 0);
  const std::string resumed = TrainArgs("trained", "train.max_steps=6");
  const RotorResult r =
      test::RunRotor(dir_, TrainArgs("fresh", "train.max_steps=6"),
                     Launcher(1) + " '" + ROTOR_BINARY_DIR + "/rotor' " +
                         resumed + " : -np 1");
  EXPECT_NE(r.status, 0);
  EXPECT_CONTAINS(r.err, "the ranks start from different states (step ");
  EXPECT_CONTAINS(r.err,
                  "every rank must see the same output_dir, data.path "
                  "and train.init_from");
  EXPECT_FALSE(fs::exists(Checkpoint("trained", 6)));
}

// The processes of this test's job: those whose command line names its
// output_dir, with the rank the launcher gave each.
std::vector<std::pair<pid_t, int>> RanksOf(const std::string& output_dir) {
  std::vector<std::pair<pid_t, int>> ranks;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream cmdline(entry.path() / "cmdline");
    std::ifstream environ(entry.path() / "environ");
    const std::string command((std::istreambuf_iterator<char>(cmdline)), {});
    const std::string variables((std::istreambuf_iterator<char>(environ)), {});
    const std::string key = std::string(1, '\0') + "OMPI_COMM_WORLD_RANK=";
    const size_t at = variables.find(key);
    if (command.find(output_dir) == std::string::npos ||
        at == std::string::npos) {
      continue;
    }
    ranks.emplace_back(std::stoi(name),
                       std::atoi(variables.c_str() + at + key.size()));
  }
  return ranks;
}

// Rank 1 is killed (SIGKILL: no chance to say anything) once the job has
// published its first checkpoint. The job must end by itself in bounded
// time with rotor's words on what happened; the newest complete checkpoint
// loads; rerunning the very same command resumes from it and finishes.
TEST_F(MpiTrain, AKilledRankEndsTheJobAndTheSameCommandResumes) {
  const std::string args =
      TrainArgs("killed",
                "train.max_steps=1500 checkpoint.every_n_steps=100 "
                "eval.every_n_steps=100 logging.log_every_n_steps=100 "
                "train.collective_timeout_seconds=20");
  const std::string command = Launcher(2) + " '" + ROTOR_BINARY_DIR +
                              "/rotor' " + args + " >'" + dir_.Path("out") +
                              "' 2>'" + dir_.Path("err") + "' </dev/null";
  const pid_t job = fork();
  ASSERT_GE(job, 0);
  if (job == 0) {
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  using Clock = std::chrono::steady_clock;
  const auto waited = [start = Clock::now()] {
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  const std::string first = Checkpoint("killed", 100);
  while (!fs::exists(first) && waited() < 60) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(fs::exists(first)) << train::ReadFile(dir_.Path("err"));
  bool killed = false;
  for (const auto& [pid, rank] : RanksOf(dir_.Path("killed"))) {
    if (rank == 1) killed = kill(pid, SIGKILL) == 0;
  }
  ASSERT_TRUE(killed) << "rank 1 not found";

  const double killed_at = waited();
  int status = 0;
  while (waitpid(job, &status, WNOHANG) == 0 && waited() - killed_at < 60) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(WIFEXITED(status) || WIFSIGNALED(status)) << "the job hangs";
  EXPECT_LT(waited() - killed_at, 30.0);
  EXPECT_NE(WEXITSTATUS(status), 0);
  // rotor's own words on rank 0: mpiexec's SIGTERM, or (had MPI reported
  // the lost peer first) the error that ended the job.
  const std::string err = train::ReadFile(dir_.Path("err"));
  const bool told =
      err.find(
          "rotor: rank 0 of 2 stopped by SIGTERM: the launcher ends "
          "every rank when one of them fails") != std::string::npos ||
      err.find("rotor train: error on rank 0 of 2: ") != std::string::npos;
  EXPECT_TRUE(told) << err;
  EXPECT_CONTAINS(err, "rank 1");  // mpiexec names the rank that died

  const std::vector<std::string> published =
      train::ListCheckpoints(dir_.Path("killed"));
  ASSERT_FALSE(published.empty());
  const std::string newest = published.back();
  const train::TrainerState state = train::LoadTrainerState(newest);
  EXPECT_LT(state.step, 1500) << "the job finished before the kill";
  EXPECT_EQ(state.world_size, 2);
  EXPECT_NO_THROW(train::LoadCheckpointModel(newest, {}));

  const RotorResult again = test::RunRotor(dir_, args, Launcher(2));
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_CONTAINS(again.out, StrCat("resuming from ", newest, " at step ",
                                    state.step, "\n"));
  EXPECT_CONTAINS(again.out, "done: 1500 steps");
}

}  // namespace
}  // namespace rotor::tools
