// Hostile and broken inputs through build/rotor as a user runs it: malformed
// configs, corrupted checkpoints and corrupted data folders. Each case must
// end with exit status 1 and an error naming the problem, quickly (no hang,
// no crash), and change no file: every case works in a copy of one small
// real run (configs/tiny.yaml trained for 2 steps, made once per suite) and
// its data, and every file of that copy is compared before and after.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "tests/temp_dir.h"
#include "tests/test_util.h"
#include "tests/train/train_test_util.h"
#include "train/io/atomic_file.h"

namespace rotor::tools {
namespace {

namespace fs = std::filesystem;

// The checkpoint of the suite's run, relative to a case's folder.
constexpr char kCheckpoint[] = "run/checkpoints/step_00000002";

// A training config matching the suite's run; OUT and DATA are replaced by
// the case's run and data folders.
constexpr char kBaseConfig[] =
    "output_dir: OUT\n"
    "model:\n"
    "  vocab_size: 257\n"
    "  hidden_size: 32\n"
    "  intermediate_size: 64\n"
    "  num_hidden_layers: 2\n"
    "  num_attention_heads: 4\n"
    "  num_key_value_heads: 2\n"
    "  max_position_embeddings: 64\n"
    "  tie_word_embeddings: true\n"
    "data:\n"
    "  path: DATA\n"
    "train:\n"
    "  batch_size: 4\n"
    "  seq_len: 32\n"
    "  max_steps: 4\n"
    "  threads: 1\n"
    "logging:\n"
    "  progress: false\n";

std::string Replace(const std::string& text, const std::string& from,
                    const std::string& to) {
  return test::ReplaceOnce(text, from, to);
}

// One bad input. `setup` breaks something in the case's folder (which holds
// copies of the run, "run/", and its data, "data/"); `args` is the rotor
// command line, where CASE stands for that folder.
struct BadInput {
  std::string name;
  std::function<void(const test::TempDir&)> setup;
  std::string args;
  std::string expected;            // a part of the error message
  std::string unexpected = "";     // if given, must not be in the message
  std::string also_expected = "";  // if given, another part of the message
};

void PrintTo(const BadInput& input, std::ostream* out) { *out << input.name; }

// A config case: kBaseConfig changed by `edit`, run with `rotor train`.
BadInput Config(const std::string& name,
                std::function<std::string(const std::string&)> edit,
                const std::string& expected, const std::string& extra = "") {
  return {"Config" + name,
          [edit](const test::TempDir& dir) {
            std::string text = Replace(kBaseConfig, "OUT", dir.Path("run"));
            text = Replace(text, "DATA", dir.Path("data"));
            dir.Write("bad.yaml", edit(text));
          },
          "train CASE/bad.yaml " + extra, expected};
}

// kBaseConfig without its model: section.
std::string WithoutModelSection(const std::string& base) {
  const size_t start = base.find("model:\n");
  const size_t end = base.find("data:\n");
  return base.substr(0, start) + base.substr(end);
}

// A config whose model comes from train.init_from, CASE/`folder` (which
// does not exist), with `model` (amendments, or nothing) and `more`
// appended; the error holds `where` and then `what`.
BadInput InitFrom(const std::string& name, const std::string& folder,
                  const std::string& model, const std::string& where,
                  const std::string& what, const std::string& more = "") {
  return {
      "ConfigInitFrom" + name,
      [=](const test::TempDir& dir) {
        std::string text = Replace(kBaseConfig, "OUT", dir.Path("new"));
        text = Replace(WithoutModelSection(text), "data:\n", model + "data:\n");
        text = Replace(text, "train:\n",
                       "train:\n  init_from: " + dir.Path(folder) + "\n");
        dir.Write("bad.yaml", Replace(text, "DATA", dir.Path("data")) + more);
      },
      "train CASE/bad.yaml",
      where,
      "the model: section is missing",
      what};
}

// kBaseConfig with line `from` replaced by `to`.
BadInput ConfigLine(const std::string& name, const std::string& from,
                    const std::string& to, const std::string& expected) {
  return Config(
      name,
      [from, to](const std::string& text) { return Replace(text, from, to); },
      expected);
}

// `input`, whose message must not hold `unexpected`.
BadInput WithUnexpected(BadInput input, const std::string& unexpected) {
  input.unexpected = unexpected;
  return input;
}

// kBaseConfig with `text` appended.
BadInput ConfigPlus(const std::string& name, const std::string& text,
                    const std::string& expected) {
  return Config(
      name, [text](const std::string& base) { return base + text; }, expected);
}

std::vector<BadInput> ConfigCases() {
  return {
      Config(
          "Empty", [](const std::string&) { return ""; },
          "the model: section is missing"),
      Config(
          "AList", [](const std::string&) { return "[1, 2]\n"; },
          "expected a map with sections"),
      Config(
          "AScalar", [](const std::string&) { return "hello\n"; },
          "expected a map with sections"),
      Config(
          "BillionLaughs",
          [](const std::string&) { return test::BillionLaughsYaml(); },
          "bad.yaml:1:4: an anchor (&name)"),
      ConfigPlus("Anchor", "eval: &e {max_batches: 2}\n",
                 "bad.yaml:20:7: an anchor (&name)"),
      ConfigPlus("UndefinedAlias", "checkpoint: *c\n",
                 "the referenced anchor is not defined"),
      ConfigPlus("SecondDocument", "---\ntrain:\n  lr: 0.5\n",
                 "bad.yaml:20:1: a second YAML document"),
      Config(
          "OverOneMebibyte",
          [](const std::string& base) {
            return base + "#" + std::string(size_t{1} << 20, 'x') + "\n";
          },
          "larger than the limit of 1048576 bytes"),
      // An endless file: reading stops at the limit.
      {"ConfigIsDevZero", [](const test::TempDir&) {}, "train /dev/zero",
       "cannot read config file /dev/zero (/dev/zero is larger than the "
       "limit of 1048576 bytes)"},
      ConfigPlus("UnclosedBracket", "eval: [\n", "not valid YAML"),
      ConfigPlus("UnclosedQuote", "eval: \"abc\n",
                 "bad.yaml:20:7: a quoted string that is never closed"),
      ConfigPlus("UnknownSection", "schedule: cosine\n",
                 "schedule: unknown key"),
      ConfigPlus("DuplicateSection", "train:\n  lr: 0.5\n",
                 "train: duplicate key (first given on line 13)"),
      ConfigLine("DuplicateKey", "  seq_len: 32\n",
                 "  seq_len: 32\n  seq_len: 16\n",
                 "train.seq_len: duplicate key (first given on line 15)"),
      ConfigLine("UnknownTrainKey", "  seq_len: 32\n",
                 "  seq_len: 32\n  warmup: 3\n", "train.warmup: unknown key"),
      ConfigLine("BatchSizeWord", "  batch_size: 4\n", "  batch_size: many\n",
                 "train.batch_size: expected a decimal integer, got 'many'"),
      ConfigLine("BatchSizeZero", "  batch_size: 4\n", "  batch_size: 0\n",
                 "train.batch_size: must be >= 1, got 0"),
      ConfigLine("BatchSizeHuge", "  batch_size: 4\n",
                 "  batch_size: 99999999999999999999\n",
                 "train.batch_size: expected a decimal integer"),
      ConfigLine("SeqLenPastPositions", "  seq_len: 32\n", "  seq_len: 1024\n",
                 "train.seq_len: exceeds model.max_position_embeddings"),
      ConfigLine("MaxStepsFraction", "  max_steps: 4\n", "  max_steps: 1.5\n",
                 "train.max_steps: expected a decimal integer, got '1.5'"),
      ConfigLine("LrNaN", "  seq_len: 32\n", "  seq_len: 32\n  lr: .nan\n",
                 "train.lr: expected a number, got '.nan'"),
      ConfigLine("LrTooLarge", "  seq_len: 32\n", "  seq_len: 32\n  lr: 11\n",
                 "train.lr: must be in [0, 10], got 11"),
      ConfigLine("MinLrAboveLr", "  seq_len: 32\n",
                 "  seq_len: 32\n  lr: 1.0e-3\n  min_lr: 1.0e-2\n",
                 "train.min_lr: must not exceed train.lr"),
      ConfigLine("OneBeta", "  seq_len: 32\n",
                 "  seq_len: 32\n  betas: [0.9]\n",
                 "train.betas: expected a list of two numbers"),
      ConfigLine("BetaOne", "  seq_len: 32\n",
                 "  seq_len: 32\n  betas: [0.9, 1.0]\n",
                 "train.betas: expected numbers in [0, 1), got '1.0'"),
      ConfigLine("NegativeSeed", "  seq_len: 32\n",
                 "  seq_len: 32\n  seed: -3\n",
                 "train.seed: expected a non-negative decimal integer"),
      ConfigLine("TrainNotAMap",
                 "train:\n  batch_size: 4\n  seq_len: 32\n"
                 "  max_steps: 4\n  threads: 1\n",
                 "train: 5\n", "train: expected a map of settings"),
      ConfigLine("ModelAList",
                 "model:\n  vocab_size: 257\n  hidden_size: 32\n"
                 "  intermediate_size: 64\n  num_hidden_layers: 2\n"
                 "  num_attention_heads: 4\n  num_key_value_heads: 2\n"
                 "  max_position_embeddings: 64\n  tie_word_embeddings: true\n",
                 "model: [1, 2]\n", "model: expected a map of model settings"),
      ConfigLine("ModelKeyTypo", "  hidden_size: 32\n", "  hiden_size: 32\n",
                 "model.hiden_size: unknown key"),
      ConfigLine("HeadsDoNotDivideHidden", "  hidden_size: 32\n",
                 "  hidden_size: 30\n", "not divisible"),
      ConfigLine("KvHeadsDoNotDivideHeads", "  num_key_value_heads: 2\n",
                 "  num_key_value_heads: 3\n",
                 "must be a multiple of model.num_key_value_heads (3)"),
      ConfigLine("VocabZero", "  vocab_size: 257\n", "  vocab_size: 0\n",
                 "model.vocab_size"),
      ConfigLine("UnknownRopeType", "  tie_word_embeddings: true\n",
                 "  tie_word_embeddings: true\n"
                 "  rope_scaling: {rope_type: warp, factor: 2}\n",
                 "warp"),
      ConfigLine("DataPathMissing",
                 "  path: ", "  other: ", "data.other: unknown key"),
      ConfigLine("DataNotPrepared", "/data\n", "/nowhere\n",
                 "has no train.bin/val.bin"),
      ConfigPlus("LoggingUnknownKey", "  verbose: maybe\n",
                 "logging.verbose: unknown key"),
      ConfigPlus("KeepLastZero", "checkpoint:\n  keep_last_n: 0\n",
                 "checkpoint.keep_last_n: must be >= 1, got 0"),
      ConfigPlus("EvalEveryNegative", "eval:\n  every_n_steps: -1\n",
                 "eval.every_n_steps: must be >= 0, got -1"),
      ConfigLine("PasskeyLossWord", "data:\n",
                 "data:\n  passkey_loss: answers\n",
                 "data.passkey_loss: passkey loss must be 'retrieval' or "
                 "'all'"),
      ConfigLine("RetrievalTaskUnknown", "data:\n",
                 "data:\n  retrieval_tasks: [niah_double]\n",
                 "data.retrieval_tasks: unknown retrieval task 'niah_double'"),
      ConfigLine("RetrievalAndPasskeyRowsOverOne", "data:\n",
                 "data:\n  passkey_fraction: 0.5\n"
                 "  retrieval_fraction: 0.75\n",
                 "data.retrieval_fraction: must be at most 1 - "
                 "data.passkey_fraction (0.5)"),
      // Checked with the data's tokenizer once it is known.
      ConfigLine("RetrievalRowsLongerThanSeqLen", "data:\n",
                 "data:\n  retrieval_fraction: 0.5\n",
                 "data.retrieval_tasks: a niah_single row needs about"),
      ConfigLine("OutputDirAList", "output_dir: ", "output_dir: [a]\n#",
                 "output_dir: expected a non-empty string"),
      Config(
          "RepeatedOverride", [](const std::string& base) { return base; },
          "command-line override train.lr is given twice",
          "train.lr=0.1 train.lr=0.2"),
      Config(
          "OverrideWithAnchor", [](const std::string& base) { return base; },
          "an anchor (&name)", "'train.betas=[&b 0.9, *b]'"),
      Config(
          "OverrideUnknownKey", [](const std::string& base) { return base; },
          "override 'train.warmup=3': train.warmup: unknown key",
          "train.warmup=3"),
      // ` #2` would be cut as a YAML comment: the run would resume in
      // CASE/run and train on.
      Config(
          "OverrideWithAComment", [](const std::string& base) { return base; },
          "starts a YAML comment", "'output_dir=CASE/run #2'"),
      WithUnexpected(
          Config(
              "OverrideEmptyLastKey",
              [](const std::string& base) { return base; },
              "override 'train.=5' has an empty key in its path", "train.=5"),
          "bad.yaml:1:1"),
      WithUnexpected(
          Config(
              "ModelOverrideNotANumber",
              [](const std::string& base) { return base; },
              "override 'model.hidden_size=abc': model.hidden_size: expected "
              "a decimal integer, got 'abc'",
              "model.hidden_size=abc"),
          "bad.yaml:1:1"),
      Config(
          "OverrideOctal", [](const std::string& base) { return base; },
          "override 'train.max_steps=010': train.max_steps: expected a "
          "decimal integer, got '010'",
          "train.max_steps=010"),
      ConfigLine("MaxStepsHex", "  max_steps: 4\n", "  max_steps: 0x10\n",
                 "bad.yaml:16:14: train.max_steps: expected a decimal integer, "
                 "got '0x10'"),
      // A NUL would cut output_dir to CASE/run, which would resume there.
      Config(
          "OutputDirWithANul",
          [](const std::string& base) {
            return Replace(Replace(base, "output_dir: ", "output_dir: \""),
                           "/run\n", "/run\\0x\"\n");
          },
          "output_dir: holds a control character (0x00 at byte"),
      Config(
          "OverrideWithATab", [](const std::string& base) { return base; },
          "output_dir: holds a control character (0x09",
          "'output_dir=CASE/run\tx'"),
      // The model comes from train.init_from's config.json (the HF
      // recipe's shape, configs/extend/hf-*.yaml): a mistyped or moved
      // folder is named, with the config file, not "the model: section is
      // missing" nor a model key the folder would have given.
      InitFrom("MissingWithoutModel", "nowhere", "",
               "bad.yaml:5:14: train.init_from: ", "nowhere does not exist"),
      InitFrom("OfALoraRunMoved", "moved",
               "model:\n  max_position_embeddings: 128\n", "train.init_from: ",
               "moved does not exist", "finetune:\n  lora:\n    r: 4\n"),
  };
}

// Rewrites the JSON header of a safetensors file with `edit`, keeping the
// data (the length field follows the header's new size).
void EditHeader(const std::string& path,
                const std::function<std::string(std::string)>& edit) {
  const std::string bytes = train::ReadFile(path);
  uint64_t size = 0;
  for (int i = 7; i >= 0; --i) {
    size = (size << 8) | static_cast<unsigned char>(bytes[i]);
  }
  const std::string header = edit(bytes.substr(8, size));
  std::string length(8, '\0');
  for (int i = 0; i < 8; ++i) {
    length[i] =
        static_cast<char>(static_cast<uint64_t>(header.size()) >> (8 * i));
  }
  train::WriteFileAtomically(path, length + header + bytes.substr(8 + size));
}

// A checkpoint case: `corrupt` receives the path of the checkpoint's file
// `file`; eval (or `command`) runs on the checkpoint.
BadInput Checkpoint(
    const std::string& name, const std::string& file,
    std::function<void(const std::string&)> corrupt,
    const std::string& expected,
    const std::string& command = "eval --max-batches 1 --checkpoint CASE/" +
                                 std::string(kCheckpoint),
    const std::string& unexpected = "") {
  return {"Checkpoint" + name,
          [file, corrupt](const test::TempDir& dir) {
            corrupt(dir.Path(std::string(kCheckpoint) + "/" + file));
          },
          command, expected, unexpected};
}

BadInput CheckpointHeader(const std::string& name,
                          std::function<std::string(std::string)> edit,
                          const std::string& expected) {
  return Checkpoint(
      name, "model.safetensors",
      [edit](const std::string& path) { EditHeader(path, edit); }, expected);
}

void Truncate(const std::string& path, size_t size) {
  train::WriteFileAtomically(path, train::ReadFile(path).substr(0, size));
}

// `path` (if any) replaced by a FIFO with no writer.
void ReplaceWithFifo(const std::string& path) {
  fs::remove_all(path);
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0) << path;
}

// The checkpoint's folder made a Hugging Face folder whose config.json
// (`path`) is a "folder", a "fifo" or a "device" (a link to /dev/zero):
// config.yaml removed.
void HfWithConfigJson(const std::string& path, const std::string& kind) {
  fs::remove(fs::path(path).parent_path() / "config.yaml");
  if (kind == "folder") {
    fs::create_directory(path);
  } else if (kind == "fifo") {
    ReplaceWithFifo(path);
  } else {
    fs::create_symlink("/dev/zero", path);
  }
}

const std::string kScoreCheckpoint =
    "score --text The --checkpoint CASE/" + std::string(kCheckpoint);

// Resuming the suite's run with its own config.
const char kResume[] =
    "train CASE/run/checkpoints/step_00000002/config.yaml "
    "output_dir=CASE/run data.path=CASE/data train.max_steps=4";

std::vector<BadInput> CheckpointCases() {
  const std::string weights = "model.safetensors";
  return {
      Checkpoint(
          "WeightsMissing", weights,
          [](const std::string& path) { fs::remove(path); },
          "model.safetensors"),
      Checkpoint(
          "WeightsEmpty", weights,
          [](const std::string& path) { Truncate(path, 0); },
          "too short for the 8-byte header length"),
      Checkpoint(
          "WeightsTruncated", weights,
          [](const std::string& path) { Truncate(path, 1000); },
          "runs past the end of the file"),
      Checkpoint(
          "WeightsLoseTheirLastBytes", weights,
          [](const std::string& path) {
            Truncate(path, fs::file_size(path) - 4);
          },
          "out of range"),
      Checkpoint(
          "WeightsWithTrailingBytes", weights,
          [](const std::string& path) {
            train::WriteFileAtomically(path, train::ReadFile(path) + "xxxx");
          },
          "4 trailing bytes after the last tensor"),
      Checkpoint(
          "HeaderLengthHuge", weights,
          [](const std::string& path) {
            std::string bytes = train::ReadFile(path);
            bytes.replace(0, 8, std::string(8, '\xff'));
            train::WriteFileAtomically(path, bytes);
          },
          "exceeds the limit of 16777216 bytes"),
      CheckpointHeader(
          "HeaderNotJson", [](std::string h) { return "x" + h.substr(1); },
          "header is not a JSON object"),
      CheckpointHeader(
          "HeaderBrokenJson",
          [](std::string h) { return Replace(h, "\"shape\"", "\"shape"); },
          "invalid JSON"),
      CheckpointHeader(
          "HeaderDuplicateKey",
          [](std::string h) {
            return Replace(h, "\"producer\"", "\"step\":\"1\",\"producer\"");
          },
          "duplicate key \"step\" at /__metadata__"),
      CheckpointHeader(
          "HeaderUnknownDtype",
          [](std::string h) { return Replace(h, "\"F32\"", "\"F64\""); },
          "unsupported dtype \"F64\""),
      CheckpointHeader(
          "HeaderWrongShape",
          [](std::string h) { return Replace(h, "[257,32]", "[257,33]"); },
          "but data_offsets span"),
      CheckpointHeader(
          "HeaderRenamedTensor",
          [](std::string h) {
            return Replace(h, "model.embed_tokens.weight",
                           "model.embed_tokens.weigh");
          },
          "model.embed_tokens.weight"),
      CheckpointHeader(
          "HeaderOverEntryLimit",
          [](std::string h) {
            std::string keys;
            for (int i = 0; i < 70'000; ++i) {
              keys += "\"k" + std::to_string(i) + "\":\"\",";
            }
            return Replace(h, "\"format\"", keys + "\"format\"");
          },
          "more than the limit of 65536"),
      // Not a file: a FIFO would block the open forever, a folder or a
      // FIFO for tokenizer.json must not mean "the byte tokenizer".
      Checkpoint(
          "WeightsAreAFifo", weights, ReplaceWithFifo,
          "model.safetensors: not a regular file",
          "score --text The --checkpoint CASE/" + std::string(kCheckpoint)),
      Checkpoint(
          "TokenizerIsAFifo", "tokenizer.json", ReplaceWithFifo,
          "tokenizer.json is not a regular file",
          "score --text The --checkpoint CASE/" + std::string(kCheckpoint)),
      Checkpoint(
          "TokenizerIsAFolder", "tokenizer.json",
          [](const std::string& path) { fs::create_directory(path); },
          "tokenizer.json is not a regular file",
          "score --text The --checkpoint CASE/" + std::string(kCheckpoint)),
      {"PrepareTokenizerIsAFifo",
       [](const test::TempDir& dir) {
         ReplaceWithFifo(dir.Path("tokenizer.json"));
       },
       "prepare --input CASE/run/metrics.jsonl --input "
       "CASE/data/meta.json --tokenizer CASE/tokenizer.json --output "
       "CASE/prepared",
       "tokenizer.json is not a regular file"},
      // A Hugging Face folder whose config.json is not a file: the
      // message names config.json, not the config.yaml it does not have.
      Checkpoint(
          "HfConfigJsonIsAFolder", "config.json",
          [](const std::string& path) { HfWithConfigJson(path, "folder"); },
          "config.json is a folder", kScoreCheckpoint, "config.yaml"),
      Checkpoint(
          "HfConfigJsonIsAFifo", "config.json",
          [](const std::string& path) { HfWithConfigJson(path, "fifo"); },
          "config.json is a FIFO", kScoreCheckpoint, "config.yaml"),
      Checkpoint(
          "HfConfigJsonIsADevice", "config.json",
          [](const std::string& path) { HfWithConfigJson(path, "device"); },
          "config.json is a device", kScoreCheckpoint, "config.yaml"),
      {"InitFromConfigJsonIsAFolder",
       [](const test::TempDir& dir) {
         HfWithConfigJson(dir.Path(std::string(kCheckpoint) + "/config.json"),
                          "folder");
         dir.Write("bad.yaml",
                   WithoutModelSection(
                       Replace(Replace(kBaseConfig, "OUT", dir.Path("new_run")),
                               "DATA", dir.Path("data"))));
       },
       "train CASE/bad.yaml train.init_from=CASE/" + std::string(kCheckpoint),
       "config.json is a folder", "config.yaml"},
      // A PEFT adapter folder holds no model: named, with the merge.
      {"CheckpointIsAPeftAdapterFolder",
       [](const test::TempDir& dir) {
         dir.Write("adapter/adapter_config.json", "{\"peft_type\": \"LORA\"}");
         dir.Write("adapter/adapter_model.safetensors", "");
       },
       "generate --prompt The --checkpoint CASE/adapter",
       "adapter is a PEFT adapter folder (adapter_config.json)", "",
       "merge_and_unload()"},
      // export writes the tokenizer it has loaded, not bytes it never read.
      Checkpoint(
          "TokenizerMalformedForExport", "tokenizer.json",
          [](const std::string& path) {
            train::WriteFileAtomically(path, "{\"model\": {\"type\": \"BPE\"");
          },
          "tokenizer.json: invalid JSON",
          "export --checkpoint CASE/" + std::string(kCheckpoint) +
              " --output CASE/exported"),
      // An endless --tokens file: reading stops at the limit.
      Checkpoint(
          "ScoreTokensIsDevZero", "model.safetensors",
          [](const std::string&) {},
          "/dev/zero is larger than the limit of 268435456 bytes",
          "score --tokens /dev/zero --checkpoint CASE/" +
              std::string(kCheckpoint)),
      // One token is only context: nothing to score (was perplexity nan).
      {"ScoreOneToken",
       [](const test::TempDir& dir) { dir.Write("one.txt", "65\n"); },
       "score --tokens CASE/one.txt --checkpoint CASE/" +
           std::string(kCheckpoint),
       "one.txt: 1 token; score needs at least 2"},
      Checkpoint(
          "ConfigMissing", "config.yaml",
          [](const std::string& path) { fs::remove(path); }, "config.yaml"),
      Checkpoint(
          "ConfigBrokenYaml", "config.yaml",
          [](const std::string& path) {
            train::WriteFileAtomically(path, train::ReadFile(path) + "x: [\n");
          },
          "not valid YAML"),
      Checkpoint(
          "ConfigWithAlias", "config.yaml",
          [](const std::string& path) {
            train::WriteFileAtomically(path,
                                       train::ReadFile(path) + "x: &x 1\n");
          },
          "an anchor (&name)"),
      Checkpoint(
          "ConfigOtherShape", "config.yaml",
          [](const std::string& path) {
            train::WriteFileAtomically(
                path, Replace(train::ReadFile(path), "intermediate_size: 64",
                              "intermediate_size: 48"));
          },
          "has shape [64, 32], expected [48, 32]"),
      Checkpoint(
          "WeightsTruncatedForGenerate", weights,
          [](const std::string& path) { Truncate(path, 1000); },
          "runs past the end of the file",
          "generate --prompt The --max-new-tokens 2 --checkpoint CASE/" +
              std::string(kCheckpoint)),
      Checkpoint(
          "WeightsTruncatedForScore", weights,
          [](const std::string& path) { Truncate(path, 1000); },
          "runs past the end of the file",
          "score --text The --checkpoint CASE/" + std::string(kCheckpoint)),
      Checkpoint(
          "StateBrokenJsonOnResume", "trainer_state.json",
          [](const std::string& path) {
            train::WriteFileAtomically(path, "{\"step\": 2,");
          },
          "trainer_state.json: invalid JSON", kResume),
      Checkpoint(
          "StateStepNegativeOnResume", "trainer_state.json",
          [](const std::string& path) {
            train::WriteFileAtomically(
                path,
                Replace(train::ReadFile(path), "\"step\": 2", "\"step\": -2"));
          },
          "optimizer step 2 does not match trainer step -2", kResume),
      Checkpoint(
          "OptimizerTruncatedOnResume", "optimizer.safetensors",
          [](const std::string& path) { Truncate(path, 5000); },
          "optimizer.safetensors", kResume),
  };
}

// A token file of the case's data folder, broken by `corrupt` (given its
// bytes); the run resumes on it (train) or evaluates on it (eval --data).
BadInput Data(const std::string& name, const std::string& file,
              std::function<std::string(std::string)> corrupt,
              const std::string& expected, bool eval = false) {
  return {"Data" + name,
          [file, corrupt](const test::TempDir& dir) {
            const std::string path = dir.Path("data/" + file);
            train::WriteFileAtomically(path, corrupt(train::ReadFile(path)));
          },
          eval ? "eval --max-batches 1 --data CASE/data --checkpoint CASE/" +
                     std::string(kCheckpoint)
               : std::string(kResume),
          expected};
}

std::string SetU32(std::string bytes, size_t offset, uint32_t value) {
  for (int i = 0; i < 4; ++i)
    bytes[offset + i] = static_cast<char>(value >> (8 * i));
  return bytes;
}

std::vector<BadInput> DataCases() {
  return {
      {"DataTrainMissing",
       [](const test::TempDir& dir) { fs::remove(dir.Path("data/train.bin")); },
       kResume, "train.bin"},
      {"DataIsAFile",
       [](const test::TempDir& dir) {
         fs::remove_all(dir.Path("data"));
         dir.Write("data", "not a folder");
       },
       kResume, "data"},
      Data(
          "TrainEmpty", "train.bin", [](std::string) { return ""; },
          "train.bin"),
      Data(
          "TrainHeaderTruncated", "train.bin",
          [](std::string bytes) { return bytes.substr(0, 40); }, "train.bin"),
      Data(
          "TrainBadMagic", "train.bin",
          [](std::string bytes) { return "XOTORTOK" + bytes.substr(8); },
          "train.bin"),
      Data(
          "TrainFutureVersion", "train.bin",
          [](std::string bytes) { return SetU32(bytes, 8, 99); }, "version"),
      Data(
          "TrainUnknownDtype", "train.bin",
          [](std::string bytes) { return SetU32(bytes, 12, 7); }, "dtype"),
      Data(
          "TrainBodyTruncated", "train.bin",
          [](std::string bytes) { return bytes.substr(0, bytes.size() - 2); },
          "train.bin"),
      Data(
          "TrainOddLength", "train.bin",
          [](std::string bytes) { return bytes + "x"; }, "train.bin"),
      Data(
          "TrainTokenPastVocab", "train.bin",
          [](std::string bytes) {
            bytes[100] = '\xff';
            bytes[101] = '\xff';
            return bytes;
          },
          "65535"),
      Data(
          "ValVocabTooSmall", "val.bin",
          [](std::string bytes) { return SetU32(bytes, 16, 100); }, "val.bin",
          /*eval=*/true),
      Data(
          "ValBadMagic", "val.bin",
          [](std::string bytes) { return "XOTORTOK" + bytes.substr(8); },
          "val.bin", /*eval=*/true),
  };
}

// An output path a command must not write (train/io/output_file.h): an
// existing file without --force, an input of the same command (even with
// --force: the weights it just read, or another name of them), a folder or
// a FIFO (which writing would turn into a regular file).
BadInput Output(
    const std::string& name, const std::string& args,
    const std::string& expected,
    std::function<void(const test::TempDir&)> setup = [](const test::TempDir&) {
    }) {
  return {"Output" + name, std::move(setup), args, expected};
}

void MakeFifo(const test::TempDir& dir) {
  ASSERT_EQ(::mkfifo(dir.Path("out.fifo").c_str(), 0600), 0);
}

// `path` of a case's command ("CASE/...", or an absolute one) in the
// case's folder `dir`.
std::string InCase(const test::TempDir& dir, const std::string& path) {
  return path.rfind("CASE/", 0) == 0 ? dir.Path(path.substr(5)) : path;
}

// A command and the flag of one of its outputs.
struct OutputFlag {
  std::string name;     // e.g. "ScoreLogits"
  std::string command;  // the command line without the flag
  std::string flag;     // "--logits"
  std::string input;    // a file the command reads
};

// Every output path of every command, in every kind of place it must not
// write (docs/limits.md, "Outputs"): an existing file (without --force), a
// folder, a device (/dev/full, also a full disk), a FIFO, a symbolic link
// to an input, an input, and a place no file can be created (/proc: as
// root, a read-only chmod would not stop rotor).
std::vector<BadInput> OutputCases() {
  const std::string checkpoint = "CASE/" + std::string(kCheckpoint);
  const std::string input = "is an input of this command";
  const std::string exists = "already exists; pass --force to replace it";
  const std::string unwritable = "/proc/self/rotor-output";
  const std::vector<OutputFlag> files = {
      {"ScoreLogits", "score --text The --checkpoint " + checkpoint, "--logits",
       checkpoint + "/model.safetensors"},
      {"EvalPlot", "eval --documents 1 --lengths 16 --checkpoint " + checkpoint,
       "--plot", checkpoint + "/model.safetensors"},
      {"PasskeyPlot",
       "eval --passkey --passkey-lengths 64 --depths 0 --trials 1 "
       "--checkpoint " +
           checkpoint,
       "--passkey-plot", checkpoint + "/config.yaml"},
      {"RetrievalPlot",
       "eval --retrieval niah_single --passkey-lengths 448 --depths 0 "
       "--trials 1 --checkpoint " +
           checkpoint,
       "--retrieval-plot", checkpoint + "/config.yaml"},
      {"RopePlot", "rope --config " + checkpoint + "/config.yaml", "--plot",
       checkpoint + "/config.yaml"},
      {"TokenizerTrain", "tokenizer train --input CASE/data --vocab-size 300",
       "--output", "CASE/data/train.bin"},
  };
  std::vector<BadInput> cases;
  for (const OutputFlag& out : files) {
    const std::string forced = out.command + " --force " + out.flag + " ";
    const std::string of_input = out.input;
    const auto link_to_input = [of_input](const test::TempDir& dir) {
      fs::create_symlink(InCase(dir, of_input), dir.Path("link"));
    };
    cases.push_back(Output(
        out.name + "Existing",
        out.command + " " + out.flag + " CASE/run/metrics.jsonl", exists));
    cases.push_back(Output(out.name + "Folder", forced + "CASE/run",
                           "is a folder; rotor writes only regular files"));
    cases.push_back(
        Output(out.name + "DevFull", forced + "/dev/full", "is a device"));
    cases.push_back(Output(out.name + "Fifo", forced + "CASE/out.fifo",
                           "is a FIFO", MakeFifo));
    cases.push_back(Output(out.name + "SymlinkToAnInput", forced + "CASE/link",
                           input, link_to_input));
    cases.push_back(
        Output(out.name + "OverAnInput", forced + out.input, input));
    cases.push_back(Output(out.name + "Unwritable", forced + unwritable,
                           "cannot create a file there"));
  }
  cases.push_back(
      Output("ScoreLogitsOverAHardLinkToItsWeights",
             files[0].command + " --force --logits CASE/link", input,
             [](const test::TempDir& dir) {
               fs::create_hard_link(
                   dir.Path(std::string(kCheckpoint) + "/model.safetensors"),
                   dir.Path("link"));
             }));

  // Output folders: prepare --output, export --output, train's output_dir.
  const std::string prepare =
      "prepare --input CASE/run/metrics.jsonl --input CASE/data/meta.json "
      "--output ";
  const std::string export_to =
      "export --checkpoint " + checkpoint + " --output ";
  const auto link_to_data = [](const test::TempDir& dir) {
    fs::create_symlink(dir.Path("data"), dir.Path("link"));
  };
  for (const auto& [name, command] :
       {std::pair<std::string, std::string>{"Prepare", prepare},
        {"Export", export_to}}) {
    cases.push_back(Output(name + "OutputIsAFile",
                           command + "CASE/data/val.bin",
                           "exists and is not a folder"));
    cases.push_back(Output(name + "OutputDevFull", command + "/dev/full",
                           "exists and is not a folder"));
    cases.push_back(Output(name + "OutputFifo", command + "CASE/out.fifo",
                           "exists and is not a folder", MakeFifo));
    cases.push_back(Output(name + "OutputUnwritable", command + unwritable,
                           "cannot create a temporary directory next to"));
  }
  cases.push_back(Output("PrepareOutputFolder",
                         prepare + "CASE/run/checkpoints",
                         "already exists and is not empty; pass --force"));
  cases.push_back(Output(
      "PrepareOutputSymlinkToAFolder", prepare + "CASE/link",
      "already exists and is not empty", [](const test::TempDir& dir) {
        fs::create_symlink(dir.Path("run/checkpoints"), dir.Path("link"));
      }));
  cases.push_back(Output("PrepareOutputHoldsItsInputs",
                         prepare + "CASE/run --force", "overlaps input"));
  cases.push_back(Output("ExportOutputFolder", export_to + "CASE/data",
                         "was not written by rotor export"));
  cases.push_back(Output("ExportOutputSymlinkToAFolder",
                         export_to + "CASE/link", "exists and is not a folder",
                         link_to_data));
  cases.push_back(Output("ExportOutputIsItsCheckpoint", export_to + checkpoint,
                         "a run's checkpoints folder"));
  cases.push_back(Output("ExportOutputInsideCheckpoints",
                         export_to + "CASE/run/checkpoints/step_00000003",
                         "a run's checkpoints folder"));
  for (const auto& [name, path] : {std::pair<std::string, std::string>{
                                       "IsAFile", "CASE/run/metrics.jsonl"},
                                   {"DevFull", "/dev/full"},
                                   {"Fifo", "CASE/out.fifo"},
                                   {"Unwritable", unwritable}}) {
    BadInput train = Config(
        "OutputDir" + name, [](const std::string& base) { return base; },
        "is not a folder", "output_dir=" + path);
    if (name == "Fifo") {
      const auto write_config = train.setup;
      train.setup = [write_config](const test::TempDir& dir) {
        write_config(dir);
        MakeFifo(dir);
      };
    }
    cases.push_back(std::move(train));
  }
  // A run never writes into its own data, named directly or by a link.
  cases.push_back(Config(
      "OutputDirIsTheData", [](const std::string& base) { return base; },
      "is the data folder", "output_dir=CASE/data"));
  BadInput linked = Config(
      "OutputDirLinksToTheData", [](const std::string& base) { return base; },
      "is the data folder", "output_dir=CASE/link");
  const auto write_config = linked.setup;
  linked.setup = [write_config, link_to_data](const test::TempDir& dir) {
    write_config(dir);
    link_to_data(dir);
  };
  cases.push_back(std::move(linked));
  // extend-report's output_dir, refused before the base trains (the base's
  // output_dir is never made).
  for (const auto& [name, path] : {std::pair<std::string, std::string>{
                                       "IsAFile", "CASE/run/metrics.jsonl"},
                                   {"DevFull", "/dev/full"},
                                   {"Fifo", "CASE/out.fifo"},
                                   {"Unwritable", unwritable}}) {
    cases.push_back(Output(
        "ExtendReportOutputDir" + name, "extend-report CASE/report.yaml",
        "cannot hold the report", [path = path](const test::TempDir& dir) {
          dir.Write("report.yaml",
                    "base:\n  config: " + test::TinyConfigPath() +
                        "\n  overrides: [data.path=" + dir.Path("data") +
                        ", output_dir=" + dir.Path("base") +
                        "]\noutput_dir: " + InCase(dir, path) +
                        "\nfactor: 4\nmethods: [default]\n"
                        "finetune: {steps: 1}\neval: {lengths: [32], "
                        "passkey_lengths: [128]}\n");
          if (path == "CASE/out.fifo") MakeFifo(dir);
        }));
  }
  // extend-report never writes into what it reads: `rotor prepare --force`
  // of the data, or a new export of the base, would replace the report.
  for (const auto& [name, output_dir, expected] :
       std::vector<std::array<std::string, 3>>{
           {"IsTheData", "CASE/data", "is the data folder"},
           {"InsideTheData", "CASE/data/report", "is inside the data folder"},
           {"IsTheBase", "CASE/run", "is the base model folder"},
           {"InsideTheBase", "CASE/run/checkpoints/report",
            "is inside the base model folder"}}) {
    cases.push_back(
        Output("ExtendReportOutputDir" + name, "extend-report CASE/report.yaml",
               expected, [output_dir = output_dir](const test::TempDir& dir) {
                 dir.Write("report.yaml",
                           "base:\n  init_from: " + dir.Path("run") +
                               "\n  data: " + dir.Path("data") +
                               "\noutput_dir: " + InCase(dir, output_dir) +
                               "\nfactor: 4\nmethods: [default]\n"
                               "finetune: {steps: 1}\neval: {lengths: [32], "
                               "passkey_lengths: [128]}\n");
               }));
  }
  // An evaluation count past its bound (core/limits.h) is refused before
  // the base trains.
  cases.push_back(Output(
      "ExtendReportTrialsPastTheLimit",
      "extend-report CASE/report.yaml eval.trials=4294967297",
      "override 'eval.trials=4294967297': eval.trials: must be <= 16384",
      [](const test::TempDir& dir) {
        dir.Write("report.yaml",
                  "base:\n  config: " + test::TinyConfigPath() +
                      "\n  overrides: [data.path=" + dir.Path("data") +
                      ", output_dir=" + dir.Path("base") + "]\noutput_dir: " +
                      dir.Path("report") + "\nfactor: 4\nmethods: [default]\n");
      }));
  return cases;
}

std::vector<BadInput> AllCases() {
  std::vector<BadInput> cases = ConfigCases();
  for (auto* more : {CheckpointCases, DataCases, OutputCases}) {
    for (BadInput& c : more()) cases.push_back(std::move(c));
  }
  return cases;
}

class BadInputMatrix : public ::testing::TestWithParam<BadInput> {
 protected:
  // The suite's run: a prepared data set and tiny.yaml trained 2 steps.
  static void SetUpTestSuite() {
    suite_dir_ = new test::TempDir();
    const std::string data = test::PrepareTextData(*suite_dir_, 6, 20);
    const std::string command = std::string(ROTOR_BINARY_DIR) +
                                "/rotor train '" + test::TinyConfigPath() +
                                "' 'data.path=" + data +
                                "' 'output_dir=" + suite_dir_->Path("run") +
                                "' train.max_steps=2 --samples 0 >/dev/null";
    ASSERT_EQ(std::system(command.c_str()), 0);
  }
  static void TearDownTestSuite() {
    delete suite_dir_;
    suite_dir_ = nullptr;
  }

  // Every file and folder under `dir`, with the files' contents.
  static std::map<std::string, std::string> Snapshot(const std::string& dir) {
    std::map<std::string, std::string> entries;
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
      entries[entry.path().string()] =
          entry.is_regular_file() ? train::ReadFile(entry.path().string())
                                  : "(folder)";
    }
    return entries;
  }

  static inline test::TempDir* suite_dir_ = nullptr;
  test::TempDir case_dir_;
  test::TempDir output_;  // stdout and stderr of the command
};

TEST_P(BadInputMatrix, ExitsOneNamingTheProblemAndChangesNothing) {
  const BadInput& input = GetParam();
  fs::copy(suite_dir_->Path("run"), case_dir_.Path("run"),
           fs::copy_options::recursive);
  fs::copy(suite_dir_->Path("data"), case_dir_.Path("data"),
           fs::copy_options::recursive);
  input.setup(case_dir_);
  const auto before = Snapshot(case_dir_.path());

  std::string args = input.args;
  for (size_t at; (at = args.find("CASE")) != std::string::npos;) {
    args.replace(at, 4, case_dir_.path());
  }
  // No case may hang (a FIFO opened for writing waits for a reader).
  const std::string command = "timeout 120 " + std::string(ROTOR_BINARY_DIR) +
                              "/rotor " + args + " >'" +
                              output_.Path("stdout") + "' 2>'" +
                              output_.Path("stderr") + "' </dev/null";
  const int raw = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(raw)) << "killed by a signal: " << command;
  const std::string err = train::ReadFile(output_.Path("stderr"));
  EXPECT_EQ(WEXITSTATUS(raw), 1) << err;
  EXPECT_CONTAINS(err, input.expected);
  if (!input.also_expected.empty()) {
    EXPECT_CONTAINS(err, input.also_expected);
  }
  if (!input.unexpected.empty()) {
    EXPECT_EQ(err.find(input.unexpected), std::string::npos) << err;
  }
  EXPECT_EQ(Snapshot(case_dir_.path()), before);
}

INSTANTIATE_TEST_SUITE_P(BadInput, BadInputMatrix,
                         ::testing::ValuesIn(AllCases()),
                         [](const ::testing::TestParamInfo<BadInput>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace rotor::tools
