// build/rotor train / eval / generate as a user runs them, on
// configs/tiny.yaml and a small prepared data set: exit status 0 and the
// expected output on success, 2 and a usage message for bad flags, 1 and an
// error naming the problem for bad configs, checkpoints and data, with
// nothing overwritten.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/ops/gemm.h"
#include "tests/temp_dir.h"
#include "tests/test_util.h"
#include "tests/tools/run_rotor.h"
#include "tests/train/train_test_util.h"
#include "train/config/train_config.h"
#include "train/io/atomic_file.h"
#include "train/io/json.h"

namespace rotor::tools {
namespace {

namespace fs = std::filesystem;

using Result = test::RotorResult;

std::string Quote(const std::string& text) { return "'" + text + "'"; }

class RotorCli : public test::PreparedDataTest {
 protected:
  // Runs `LAUNCHER build/rotor ARGS` (ARGS already shell-quoted; LAUNCHER
  // e.g. "prlimit --as=N").
  Result Run(const std::string& args, const std::string& launcher = "") const {
    return test::RunRotor(dir_, args, launcher);
  }

  // `rotor train` on the tiny config, writing to dir/NAME.
  Result Train(const std::string& name, const std::string& extra = "") const {
    return Run("train " + Quote(test::TinyConfigPath()) + " " +
               Quote("data.path=" + data_) + " " +
               Quote("output_dir=" + dir_.Path(name)) + " train.max_steps=8 " +
               extra);
  }

  std::map<std::string, std::string> Snapshot(const std::string& dir) const {
    std::map<std::string, std::string> files;
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
      if (entry.is_regular_file()) {
        files[entry.path().string()] = train::ReadFile(entry.path().string());
      }
    }
    return files;
  }
};

TEST_F(RotorCli, TrainEvalGenerateEndToEnd) {
  Result r = Train("run", "--samples 1");
  ASSERT_EQ(r.status, 0) << r.err;
  // A three-line summary, not the whole config (that goes to a file).
  EXPECT_CONTAINS(r.out, "model: llama, ");
  EXPECT_CONTAINS(r.out, " parameters: 2 layers of 32, 4 heads on 2 kv");
  EXPECT_CONTAINS(r.out, "4 x 32 = 128 tokens per step, 8 steps (1024 tokens)");
  EXPECT_CONTAINS(r.out, "output: " + dir_.Path("run") + "\n");
  EXPECT_EQ(r.out.find("rms_norm_eps"), std::string::npos) << r.out;
  const train::TrainConfig resolved =
      train::LoadTrainConfig(dir_.Path("run/resolved_config.yaml"), {});
  EXPECT_EQ(resolved.train.max_steps, 8);
  EXPECT_CONTAINS(r.out, "step 8/8");
  EXPECT_CONTAINS(r.out, "done: 8 steps");
  // A sample of at most 200 characters (and "..." when cut).
  const size_t sample = r.out.find("--- sample 1 (prompt \"The \") ---\n");
  ASSERT_NE(sample, std::string::npos) << r.out;
  const size_t text_start = r.out.find('\n', sample) + 1;
  const std::string text =
      r.out.substr(text_start, r.out.find('\n', text_start) - text_start);
  EXPECT_EQ(text.rfind("The ", 0), 0u) << text;
  EXPECT_LE(text.size(), 200u + 3u) << text;
  // --print-config prints every key, numbers in their shortest form, and
  // trains nothing.
  r = Train("printed", "--print-config train.lr=0.1");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_CONTAINS(r.out, "  lr: 0.1\n");
  EXPECT_CONTAINS(r.out, "rms_norm_eps");
  EXPECT_FALSE(fs::exists(dir_.Path("printed"))) << r.out;
  const std::string checkpoint = dir_.Path("run/checkpoints/step_00000008");
  EXPECT_TRUE(fs::exists(checkpoint + "/model.safetensors"));
  EXPECT_TRUE(fs::exists(dir_.Path("run/metrics.jsonl")));

  // Rerunning the same command resumes and finds nothing left to do.
  r = Train("run", "--samples 0");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_CONTAINS(r.out, "resuming from " + checkpoint + " at step 8");

  r = Run("eval --checkpoint " + Quote(checkpoint) + " --max-batches 2");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_CONTAINS(r.out, "(256 tokens evaluated, seq_len 32)");
  EXPECT_CONTAINS(r.out, "val_loss");
  EXPECT_CONTAINS(r.out, "perplexity");
  EXPECT_CONTAINS(r.out, "bits/byte");

  const std::string generate = "generate --checkpoint " + Quote(checkpoint) +
                               " --prompt 'The cat' --max-new-tokens 12 ";
  r = Run(generate + "--temperature 0");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("The cat", 0), 0u) << r.out;
  const std::string greedy = r.out;
  EXPECT_EQ(Run(generate + "--temperature 0").out, greedy);
  r = Run(generate + "--top-k 5 --top-p 0.9 --seed 3");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(Run(generate + "--top-k 5 --top-p 0.9 --seed 3").out, r.out);
  // The run's output_dir stands for its newest checkpoint, as in eval.
  EXPECT_EQ(Run("generate --checkpoint " + Quote(dir_.Path("run")) +
                " --prompt 'The cat' --max-new-tokens 12 --temperature 0")
                .out,
            greedy);
}

// eval, score and generate multiply in the run's train.precision, or in
// --precision's; bf16 where it cannot run is refused, naming the flag or
// the checkpoint and what is missing. The bf16 score of a sentence is
// within 2 % of fp32's: each product's operands are rounded to 8 mantissa
// bits (relative error 2^-8 each), and a 2-layer model's mean negative
// log-likelihood moves by far less than that.
TEST_F(RotorCli, EvaluationRunsInTheRunsPrecisionOrTheFlags) {
  const std::string problem = BfloatMatmulProblem();
  Result r = Train("bf16", "train.precision=bf16 --samples 0");
  if (!problem.empty()) {
    EXPECT_EQ(r.status, 1);
    EXPECT_CONTAINS(r.err, "train.precision is bf16, but " + problem);
    r = Run("score --checkpoint " + Quote(dir_.Path("bf16")) +
            " --text 'The cat' --precision bf16");
    EXPECT_EQ(r.status, 1);
    GTEST_SKIP() << problem;
  }
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string score = "score --checkpoint " + Quote(dir_.Path("bf16")) +
                            " --text 'The cat sat on the mat.' --json";
  const auto mean_nll = [&](const std::string& flags,
                            const std::string& launcher = "") {
    const Result scored = Run(score + flags, launcher);
    EXPECT_EQ(scored.status, 0) << scored.err;
    return train::ParseJson(scored.out, "score")["mean_nll"].get<double>();
  };
  const double run_precision = mean_nll("");
  EXPECT_EQ(mean_nll(" --precision bf16"), run_precision);
  const double fp32 = mean_nll(" --precision fp32");
  EXPECT_NE(fp32, run_precision);
  EXPECT_NEAR(run_precision, fp32, 0.02 * fp32);
  // The OpenBLAS backend has no bf16: the run's precision is refused with
  // the way out; fp32 runs there.
  r = Run(score, "ROTOR_GEMM=openblas");
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, dir_.Path("bf16") +
                             ": its run's train.precision is bf16, but "
                             "bf16 matmuls run on oneDNN, but the matmul "
                             "backend is openblas");
  EXPECT_CONTAINS(r.err, "give --precision fp32");
  r = Run("eval --checkpoint " + Quote(dir_.Path("bf16")) +
              " --max-batches 1 --precision bf16",
          "ROTOR_GEMM=openblas");
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "--precision bf16: bf16 matmuls run on oneDNN");
  EXPECT_NEAR(mean_nll(" --precision fp32", "ROTOR_GEMM=openblas"), fp32,
              1e-4 * fp32);
  r = Run("generate --checkpoint " + Quote(dir_.Path("bf16")) +
          " --prompt 'The' --max-new-tokens 4 --precision fp16");
  EXPECT_EQ(r.status, 2);
  EXPECT_CONTAINS(r.err, "--precision");
}

// One run per output_dir: a second `rotor train` on a folder in use is
// refused, naming the pid that holds it, and changes nothing; the lock of a
// run killed with SIGKILL (the kernel drops it) does not block the next.
TEST_F(RotorCli, OneRunPerOutputDir) {
  ASSERT_EQ(Train("run").status, 0);
  const std::string run = dir_.Path("run");
  // A run in progress, for as long as this test needs it.
  const std::string endless =
      "train " + Quote(test::TinyConfigPath()) + " " +
      Quote("data.path=" + data_) + " " + Quote("output_dir=" + run) +
      " train.max_steps=100000000 checkpoint.every_n_steps=100000000"
      " eval.every_n_steps=0 --samples 0";
  const std::string pid_file = dir_.Path("pid");
  ASSERT_EQ(std::system(("sh -c 'echo $$ > " + Quote(pid_file) + "; exec " +
                         ROTOR_BINARY_DIR + "/rotor " + endless +
                         " >/dev/null 2>&1' &")
                            .c_str()),
            0);
  std::string pid;
  for (int i = 0; i < 600 && (pid.empty() || pid.back() != '\n'); ++i) {
    std::system("sleep 0.05");
    if (fs::exists(pid_file)) pid = train::ReadFile(pid_file);
  }
  ASSERT_FALSE(pid.empty());
  pid.pop_back();
  struct KillOnExit {  // whatever fails below
    std::string pid;
    ~KillOnExit() { std::system(("kill -9 " + pid + " 2>/dev/null").c_str()); }
  } guard{pid};
  // Wait until it holds the folder's lock.
  for (int i = 0;
       i < 600 && std::system(("grep -q ' " + pid + " ' /proc/locks").c_str());
       ++i) {
    std::system("sleep 0.05");
  }
  const auto before = Snapshot(dir_.Path("run/checkpoints"));
  Result r = Train("run");
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "output_dir " + run + " is in use by pid " + pid);
  r = Run("train " + Quote(test::TinyConfigPath()) + " " +
          Quote("data.path=" + data_) + " " + Quote("output_dir=" + run) +
          " train.resume=none");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(Snapshot(dir_.Path("run/checkpoints")), before);

  ASSERT_EQ(std::system(("kill -9 " + pid).c_str()), 0);
  for (int i = 0;
       i < 600 && std::system(("kill -0 " + pid + " 2>/dev/null").c_str()) == 0;
       ++i) {
    std::system("sleep 0.05");
  }
  EXPECT_TRUE(fs::exists(run + "/train.lock"));
  r = Train("run", "--samples 0");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_CONTAINS(
      r.out, "resuming from " + run + "/checkpoints/step_00000008 at step 8");
}

// Exit status 2 and "rotor CMD: PROBLEM (see 'rotor CMD --help')", naming
// the flag or argument; CLI11's own texts where CLI11 finds the problem.
// `item` `count` times, comma-separated: a --lengths or --depths list.
std::string ManyItems(const std::string& item, int count) {
  std::string list = item;
  for (int i = 1; i < count; ++i) list += "," + item;
  return list;
}

TEST_F(RotorCli, BadFlagsExitTwoWithAUsageMessage) {
  const std::string config = Quote(test::TinyConfigPath());
  const std::string checkpoint = Quote(dir_.Path("nowhere"));
  const std::string eval = "eval --checkpoint " + checkpoint + " ";
  const std::string generate =
      "generate --checkpoint " + checkpoint + " --prompt a ";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "Usage: rotor [OPTIONS] COMMAND"},
      {"fly", "rotor: unknown command 'fly'"},
      {"--bogus", "rotor: unknown command '--bogus'"},
      {"train", "rotor train: config is required"},
      {"train " + config + " --bogus", "rotor train: unknown flag '--bogus'"},
      {"train --bogus", "rotor train: unknown flag '--bogus'"},
      {"train " + config + " stray",
       "'stray' is neither a flag nor a key.path=value override"},
      {"train " + config + " --samples -1",
       "--samples: expects an integer >= 0, got '-1'"},
      {"train " + config + " --samples", "--samples: 1 required N missing"},
      {"train " + config + " --help=yes",
       "help was given a disallowed flag override"},
      {"eval", "rotor eval: --checkpoint is required"},
      {eval + "extra", "unexpected argument 'extra'"},
      {eval + "--seq-len 0",
       "--seq-len: expects an integer in [1, 16777216], got '0'"},
      {eval + "--lengths 256,abc",
       "--lengths: expects an integer in [1, 16777216], got 'abc'"},
      {eval + "--lengths 0",
       "--lengths: expects an integer in [1, 16777216], got '0'"},
      {eval + "--passkey --passkey-lengths 64,-1",
       "--passkey-lengths: expects an integer in [1, 16777216], got '-1'"},
      {eval + "--passkey --lengths 64 --depths 0,1.5",
       "--depths: must be in [0, 1], got 1.5"},
      {eval + "--passkey --lengths 64 --depths 0,half",
       "--depths: expects a number, got 'half'"},
      {eval + "--lengths 64 --method last",
       "--method: last not in {truncate,sliding}"},
      {"generate --checkpoint " + checkpoint,
       "rotor generate: Exactly 1 option from [--prompt,--prompt-ids] is "
       "required"},
      {generate + "--top-p 0", "--top-p: must be in [1e-09, 1], got 0"},
      {generate + "--temperature hot",
       "--temperature: expects a number, got 'hot'"},
      {generate + "--top-k 1.5", "--top-k: expects an integer >= 0, got '1.5'"},
      {generate + "--seed -3", "--seed: expects an integer >= 0, got '-3'"},
      {generate + "stray", "unexpected argument 'stray'"},
      // Sizes beyond rotor's limits (core/limits.h).
      {generate + "--max-new-tokens 9223372036854775807",
       "--max-new-tokens: expects an integer in [0, 16777215], got "
       "'9223372036854775807'"},
      {generate + "--threads 4294967296",
       "--threads: expects an integer in [0, 4096], got '4294967296'"},
      {eval + "--seq-len 4611686018427387904",
       "--seq-len: expects an integer in [1, 16777216]"},
      {eval + "--batch-size 4611686018427387904",
       "--batch-size: expects an integer in [1, 1048576]"},
      {eval + "--lengths 64,1099511627776",
       "--lengths: expects an integer in [1, 16777216], got '1099511627776'"},
      // Evaluation counts past their bounds (core/limits.h): 2^63-1 trials
      // reached a raw vector::reserve, 2^31 with --retrieval ran without end.
      {eval + "--passkey --lengths 64 --trials 9223372036854775807",
       "--trials: expects an integer in [1, 16384], got "
       "'9223372036854775807'"},
      {eval + "--passkey --lengths 64 --retrieval niah_single --trials "
              "2147483648",
       "--trials: expects an integer in [1, 16384], got '2147483648'"},
      {eval + "--lengths 64 --documents 4294967296",
       "--documents: expects an integer in [1, 1048576], got '4294967296'"},
      {eval + "--lengths 64 --method sliding --stride 4294967296",
       "--stride: expects an integer in [1, 16777216], got '4294967296'"},
      {eval + "--lengths " + ManyItems("64", 1025),
       "--lengths: lists 1025 items, more than rotor's limit of 1024"},
      {eval + "--passkey --lengths 64 --passkey-lengths " +
           ManyItems("64", 1025),
       "--passkey-lengths: lists 1025 items, more than rotor's limit of 1024"},
      {eval + "--passkey --lengths 64 --depths " + ManyItems("0.5", 1025),
       "--depths: lists 1025 items, more than rotor's limit of 1024"},
      {"extend-report", "rotor extend-report: config is required"},
      {"extend-report " + config + " stray",
       "'stray' is neither a flag nor a key.path=value override"},
  };
  for (const auto& [args, message] : cases) {
    SCOPED_TRACE(args);
    const Result r = Run(args);
    EXPECT_EQ(r.status, 2);
    EXPECT_CONTAINS(r.err, message);
    const std::string command = args.substr(0, args.find(' '));
    if (!command.empty() && command != "fly" && command != "--bogus") {
      EXPECT_CONTAINS(r.err, "(see 'rotor " + command + " --help')");
    }
  }
}

TEST_F(RotorCli, HelpListsCommandsAndTheirFlags) {
  Result r = Run("--help");
  EXPECT_EQ(r.status, 0);
  for (const char* command : {"train", "eval", "generate", "score", "prepare",
                              "extend-report", "rope", "tokenizer"}) {
    EXPECT_CONTAINS(r.out, std::string("\n  ") + command + " ");
  }
  EXPECT_EQ(Run("help").out, r.out);
  r = Run("--version");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, std::string("rotor ") + ROTOR_VERSION + "\n");

  const std::map<std::string, std::vector<std::string>> flags = {
      {"train", {"CONFIG.yaml", "key.path=value", "--samples N"}},
      {"eval",
       {"--checkpoint DIR", "--lengths LIST", "--method", "--passkey ",
        "--passkey-lengths LIST", "--depths LIST", "--rope-from PATH", "--json",
        "--threads N", "key.path=value"}},
      {"generate",
       {"--checkpoint DIR", "--prompt TEXT", "--prompt-ids IDS", "--token-ids",
        "--max-new-tokens N", "--temperature X", "--top-k N", "--top-p X",
        "--seed N"}},
      {"score",
       {"--checkpoint DIR", "--tokens FILE", "--text TEXT",
        "--no-add-special-tokens", "--logits FILE", "--json", "--threads N"}},
      {"extend-report", {"CONFIG.yaml", "key.path=value"}},
  };
  for (const auto& [command, expected] : flags) {
    SCOPED_TRACE(command);
    r = Run(command + " --help");
    EXPECT_EQ(r.status, 0);
    EXPECT_CONTAINS(r.out, "Usage: rotor " + command);
    for (const std::string& flag : expected) EXPECT_CONTAINS(r.out, flag);
  }
}

// Lists, a repeated flag, a positional override after a list flag and the
// --flag=value form, read as the old parser read them.
TEST_F(RotorCli, EvalReadsListsAndOverrides) {
  ASSERT_EQ(Train("run", "--samples 0").status, 0);
  const Result r =
      Run("eval --checkpoint " + Quote(dir_.Path("run")) +
          " --lengths 8,16 --documents=1 --passkey --passkey-lengths 128" +
          " --depths 0,1 --trials 2 --trials 1 "
          "model.rope_scaling.rope_type=linear" +
          " model.rope_scaling.factor=2 --plot " + Quote(dir_.Path("ppl.png")) +
          " --passkey-plot " + Quote(dir_.Path("passkey.png")));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_CONTAINS(r.out, "rope         linear");
  EXPECT_CONTAINS(r.out, "1 documents of");
  EXPECT_CONTAINS(r.out, "\n       8  ");
  EXPECT_CONTAINS(r.out, "\n      16  ");
  // --depths replaces the default five depths.
  EXPECT_CONTAINS(r.out, "  length    0.00    1.00    mean  digits\n");
  EXPECT_CONTAINS(r.out, "\n     128  ");
}

// Exit status 1 and "rotor CMD: error: ..." naming the file, line and key.
TEST_F(RotorCli, BadConfigsCheckpointsAndDataExitOne) {
  const std::string config = Quote(test::TinyConfigPath());
  const std::string broken = dir_.Write(
      "broken.yaml",
      "model:\n  vocab_size: 257\n  hidden_size: 32\n"
      "  intermediate_size: 64\n  num_hidden_layers: 1\n"
      "  num_attention_heads: 4\n  max_position_embeddings: 64\n"
      "data:\n  path: d\ntrain:\n  seq_len: 32\n  batch_size: many\n");
  struct Case {
    std::string args;
    std::vector<std::string> messages;
  };
  const std::vector<Case> cases = {
      {"train " + Quote(dir_.Path("none.yaml")),
       {"rotor train: error: cannot read config file " +
        dir_.Path("none.yaml")}},
      {"train " + Quote(broken),
       {broken +
        ":12:15: train.batch_size: expected a decimal integer, got 'many'"}},
      {"train " + config + " train.warmup=3",
       {"override 'train.warmup=3': train.warmup: unknown key"}},
      {"train " + config + " model.num_key_value_heads=3 " +
           Quote("data.path=" + data_),
       {"model.num_attention_heads (4) must be a multiple of "
        "model.num_key_value_heads (3)"}},
      {"train " + config + " " + Quote("data.path=" + dir_.Path("empty")),
       {dir_.Path("empty") + " has no train.bin/val.bin"}},
      {"train " + config + " " + Quote("data.path=" + data_) + " " +
           Quote("output_dir=" + broken),
       {"output_dir " + broken + " is not a folder"}},
      {"eval --checkpoint " + Quote(dir_.Path("nowhere")),
       {"rotor eval: error: checkpoint folder " + dir_.Path("nowhere") +
        " does not exist"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args);
    const Result r = Run(c.args);
    EXPECT_EQ(r.status, 1);
    for (const std::string& message : c.messages) {
      EXPECT_CONTAINS(r.err, message);
    }
  }

  // A finished run: resume=none refuses it, and nothing changes.
  ASSERT_EQ(Train("run", "--samples 0").status, 0);
  const auto before = Snapshot(dir_.Path("run"));
  Result r = Train("run", "train.resume=none --samples 0");
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "already holds checkpoints");
  EXPECT_EQ(Snapshot(dir_.Path("run")), before);

  // A checkpoint with truncated weights, for eval and generate.
  const std::string copy = dir_.Path("copy");
  fs::copy(dir_.Path("run/checkpoints/step_00000008"), copy);
  const std::string weights = train::ReadFile(copy + "/model.safetensors");
  train::WriteFileAtomically(copy + "/model.safetensors",
                             weights.substr(0, 1000));
  r = Run("eval --checkpoint " + Quote(copy));
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, copy + "/model.safetensors");
  r = Run("generate --prompt a --checkpoint " + Quote(copy));
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, copy + "/model.safetensors");
  // A checkpoint whose config.yaml is broken.
  fs::remove(copy + "/model.safetensors");
  fs::copy_file(dir_.Path("run/checkpoints/step_00000008/model.safetensors"),
                copy + "/model.safetensors");
  train::WriteFileAtomically(copy + "/config.yaml",
                             "model: {vocab_size: 257}\n");
  r = Run("eval --checkpoint " + Quote(copy));
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, copy + "/config.yaml");
}

// Absurd sizes end in status 1 and a message naming the key: never a
// crash, an abort or an allocation attempt. Under an address-space limit
// of 1 GB (prlimit) a model that cannot fit is refused before it is built.
// ASan reserves terabytes of shadow address space, so a sanitizer build
// runs without the limit and is checked against physical memory instead
// (every model below needs more than any machine this runs on has).
TEST_F(RotorCli, AbsurdSizesExitOneNamingTheKey) {
  const std::string train = "train " + Quote(test::TinyConfigPath()) + " " +
                            Quote("data.path=" + data_) + " " +
                            Quote("output_dir=" + dir_.Path("out")) + " ";
  const bool address_limit_works = !ROTOR_SANITIZED;
  const std::string one_gigabyte =
      address_limit_works ? "prlimit --as=1000000000" : "";
  // Without the limit the tightest one may be physical memory or a cgroup.
  const std::string which_limit = address_limit_works
                                      ? "left under the address-space limit"
                                      : " left under ";
  struct Case {
    std::string args;
    std::vector<std::string> messages;
  };
  const std::vector<Case> cases = {
      {"train.batch_size=4611686018427387904",
       {"train.batch_size: must be <= 1048576 (rotor's limit), got "
        "4611686018427387904"}},
      {"model.num_hidden_layers=100000000",
       {"model.num_hidden_layers: must be <= 4096 (rotor's limit), got "
        "100000000"}},
      {"model.hidden_size=1099511627776",
       {"model.hidden_size: must be <= 65536 (rotor's limit)"}},
      {"train.gradient_accumulation_steps=4611686018427387904",
       {"train.gradient_accumulation_steps: must be <= 1048576"}},
      {"train.seq_len=64 train.batch_size=1000000",
       {"this run needs at least", which_limit,
        "train.batch_size 1000000, train.seq_len 64"}},
      {"model.hidden_size=4096 model.intermediate_size=16384 "
       "model.num_hidden_layers=32 model.num_attention_heads=32",
       {"this run needs at least", "model.hidden_size 4096",
        "model.num_hidden_layers 32"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args);
    const Result r = Run(train + c.args, one_gigabyte);
    EXPECT_EQ(r.status, 1);
    EXPECT_CONTAINS(r.err, "rotor train: error: ");
    for (const std::string& message : c.messages) {
      EXPECT_CONTAINS(r.err, message);
    }
  }
  EXPECT_FALSE(fs::exists(dir_.Path("out/checkpoints")));

  // A checkpoint whose config.yaml claims a model too large to build.
  ASSERT_EQ(Train("run", "--samples 0").status, 0);
  const std::string copy = dir_.Path("copy");
  fs::copy(dir_.Path("run/checkpoints/step_00000008"), copy);
  std::string config = train::ReadFile(copy + "/config.yaml");
  for (const auto& [key, value] :
       {std::pair{"hidden_size: 32", "hidden_size: 65536"},
        std::pair{"num_hidden_layers: 2", "num_hidden_layers: 4096"}}) {
    const size_t at = config.find(key);
    ASSERT_NE(at, std::string::npos) << key;
    config.replace(at, std::string(key).size(), value);
  }
  train::WriteFileAtomically(copy + "/config.yaml", config);
  for (const std::string command : {"eval", "generate --prompt a"}) {
    const Result r =
        Run(command + " --checkpoint " + Quote(copy), one_gigabyte);
    EXPECT_EQ(r.status, 1) << command;
    EXPECT_CONTAINS(r.err, "checkpoint " + copy + ": the model's weights need");
    EXPECT_CONTAINS(r.err, "model.num_hidden_layers 4096");
  }
}

// Under any address-space limit a run trains or fails with a message, and
// never hangs: OpenBLAS retries a failed work-buffer allocation forever, in
// its own threads at load time (rotor restarts itself without them) and on
// each thread's first sgemm (rotor checks the room first). Before the fix,
// 100 to 300 MB hung until killed. Not in sanitizer builds (ASan needs
// terabytes of address space).
TEST_F(RotorCli, AddressSpaceLimitsFailCleanlyInsteadOfHanging) {
  if (ROTOR_SANITIZED) GTEST_SKIP() << "prlimit --as cannot work under ASan";
  for (const int megabytes : {100, 150, 200, 300}) {
    SCOPED_TRACE(std::to_string(megabytes) + " MB");
    const std::string name = "run" + std::to_string(megabytes);
    const Result r =
        Run("train " + Quote(test::TinyConfigPath()) + " " +
                Quote("data.path=" + data_) + " " +
                Quote("output_dir=" + dir_.Path(name)) +
                " train.max_steps=2 train.threads=2 --samples 0",
            "timeout 120 prlimit --as=" + std::to_string(megabytes) + "000000");
    // Below about 120 MB the libraries alone (oneDNN is 40 MB) leave
    // OpenBLAS no room for its threads' stacks at load time, before main:
    // it then stops at once with its own message, which is no hang either.
    if (r.status != 0 && r.status != 1) {
      EXPECT_LE(megabytes, 100) << r.status << "\n" << r.err;
      EXPECT_NE(r.status, 124) << "timed out";
      EXPECT_CONTAINS(r.err,
                      "OpenBLAS blas_thread_init: pthread_create failed");
      continue;
    }
    if (r.status == 1) {
      EXPECT_CONTAINS(r.err, "rotor train: error: ");
      EXPECT_FALSE(fs::exists(dir_.Path(name + "/checkpoints")));
    } else {
      EXPECT_TRUE(fs::exists(dir_.Path(name + "/checkpoints/step_00000002")));
    }
  }
  // 150 MB leaves room for the model but not for OpenBLAS's buffer, when
  // OpenBLAS multiplies (oneDNN, the default, needs no such buffer).
  const Result r =
      Run("train " + Quote(test::TinyConfigPath()) + " " +
              Quote("data.path=" + data_) + " " +
              Quote("output_dir=" + dir_.Path("small")) + " train.max_steps=2",
          "ROTOR_GEMM=openblas timeout 120 prlimit --as=150000000");
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "OpenBLAS needs 192.0 MiB of address space");
  EXPECT_CONTAINS(r.err, "left under the address-space limit (RLIMIT_AS)");
}

// A BPE tokenizer from end to end: trained by rotor, used by prepare (its
// copy goes into the data folder), by training (into every checkpoint), by
// generate (which decodes with it), and refused where it would be paired
// with data of another tokenizer.
TEST_F(RotorCli, ATrainedBpeTokenizerFlowsFromDataToCheckpointToGenerate) {
  std::string text;
  for (int i = 0; i < 200; ++i) {
    text += "The quick brown fox " + std::to_string(i % 17) +
            " jumps over the lazy dog. ";
  }
  for (int d = 0; d < 4; ++d) {
    dir_.Write("text/doc" + std::to_string(d), text);
  }
  const std::string tokenizer = dir_.Path("tokenizer.json");
  ASSERT_EQ(Run("tokenizer train --input " + Quote(dir_.Path("text")) +
                " --vocab-size 300 --output " + Quote(tokenizer))
                .status,
            0);
  Result r = Run("prepare --input " + Quote(dir_.Path("text")) + " --output " +
                 Quote(dir_.Path("bpe")) + " --val-fraction 0.25 --tokenizer " +
                 Quote(tokenizer));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(train::ReadFile(dir_.Path("bpe/tokenizer.json")),
            train::ReadFile(tokenizer));
  const std::string meta = train::ReadFile(dir_.Path("bpe/meta.json"));
  EXPECT_CONTAINS(meta, "\"separator\": \"<|endoftext|>\"");
  EXPECT_CONTAINS(meta, "\"separator_id\": 0");  // specials come first

  const std::string train = "train " + Quote(test::TinyConfigPath()) + " " +
                            Quote("output_dir=" + dir_.Path("run")) +
                            " train.max_steps=4 train.seq_len=16 "
                            "model.vocab_size=300 "
                            "checkpoint.every_n_steps=4 --samples 0 ";
  // data.tokenizer must name the data's tokenizer.
  r = Run(train + Quote("data.path=" + dir_.Path("bpe")) +
          " data.tokenizer=byte");
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "data.tokenizer is byte but " + dir_.Path("bpe") +
                             " was prepared with " +
                             dir_.Path("bpe/tokenizer.json"));
  EXPECT_FALSE(fs::exists(dir_.Path("run/checkpoints")));
  r = Run(train + Quote("data.path=" + dir_.Path("bpe")) + " " +
          Quote("data.tokenizer=" + tokenizer));
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string checkpoint = dir_.Path("run/checkpoints/step_00000004");
  EXPECT_EQ(train::ReadFile(checkpoint + "/tokenizer.json"),
            train::ReadFile(tokenizer));

  // A BPE checkpoint cannot start a run on byte data, nor resume on it.
  const std::string on_bytes = "train " + Quote(test::TinyConfigPath()) + " " +
                               Quote("data.path=" + data_) +
                               " train.seq_len=16 model.vocab_size=300 ";
  r = Run(on_bytes + Quote("output_dir=" + dir_.Path("init")) + " " +
          Quote("train.init_from=" + checkpoint));
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "checkpoint " + checkpoint +
                             " was trained with tokenizer " + checkpoint +
                             "/tokenizer.json but the data in " + data_ +
                             " was prepared with byte");
  EXPECT_FALSE(fs::exists(dir_.Path("init/checkpoints")));
  r = Run(on_bytes + Quote("output_dir=" + dir_.Path("run")) +
          " train.max_steps=8");
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "was prepared with byte");

  // Its export declares the ids it trained with: the document separator
  // <|endoftext|> (id 0) as bos and as eos, in config.json and
  // generation_config.json (transformers' generate stops at eos).
  r = Run("export --checkpoint " + Quote(checkpoint) + " --output " +
          Quote(dir_.Path("exported")));
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* file : {"/config.json", "/generation_config.json"}) {
    const train::Json json =
        train::ParseJson(train::ReadFile(dir_.Path("exported") + file), file);
    EXPECT_EQ(json.at("bos_token_id"), 0) << file;
    EXPECT_EQ(json.at("eos_token_id"), 0) << file;
  }
  EXPECT_EQ(train::ParseJson(
                train::ReadFile(dir_.Path("exported") + "/config.json"), "")
                .at("torch_dtype"),
            "float32");  // trained from scratch

  // Generation decodes BPE ids back to text (greedy, so repeatable).
  r = Run("generate --checkpoint " + Quote(checkpoint) +
          " --prompt 'The quick' --max-new-tokens 12 --temperature 0");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("The quick", 0), 0u) << r.out;
  EXPECT_GT(r.out.size(), std::string("The quick\n").size());
  // Byte-level data with a BPE checkpoint: refused, naming both.
  r = Run("eval --checkpoint " + Quote(checkpoint) + " --data " + Quote(data_));
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "was trained with tokenizer " + checkpoint +
                             "/tokenizer.json but the data in " + data_ +
                             " was prepared with byte");
  r = Run("eval --checkpoint " + Quote(checkpoint));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_CONTAINS(r.out, "bits/byte");
  r = Run("eval --checkpoint " + Quote(checkpoint) +
          " --lengths 8,16 --documents 1 --plot " +
          Quote(dir_.Path("ppl.png")));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_CONTAINS(r.out,
                  "  length      tokens       loss   perplexity  "
                  "bits/byte\n");
  // Passkey rows are made of the data's tokens.
  r = Run("train " + Quote(test::TinyConfigPath()) + " " +
          Quote("output_dir=" + dir_.Path("passkey-run")) + " " +
          Quote("data.path=" + dir_.Path("bpe")) +
          " train.max_steps=2 train.seq_len=128 train.batch_size=2 "
          "model.max_position_embeddings=128 model.vocab_size=300 "
          "data.passkey_fraction=0.5 --samples 0");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_CONTAINS(r.out, "step 2/2");
  // So are the retrieval tasks.
  r = Run("eval --checkpoint " + Quote(checkpoint) +
          " --retrieval niah_single,niah_multikey,niah_multivalue,"
          "variable_tracking --passkey-lengths 1024 --depths 0.5 --trials 1 "
          "--json --retrieval-plot " +
          Quote(dir_.Path("retrieval.png")));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(train::ParseJson(r.out, "eval").at("retrieval").at("cells").size(),
            4u);
  // The passkey test is made of the model's tokens.
  r = Run("eval --checkpoint " + Quote(checkpoint) +
          " --passkey --passkey-lengths 128 --depths 0.5 --trials 2 --json "
          "--passkey-plot " +
          Quote(dir_.Path("passkey.png")));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(train::ParseJson(r.out, "eval")
                .at("passkey")
                .at("cells")
                .at(0)
                .at("trials"),
            2);
}

}  // namespace
}  // namespace rotor::tools
