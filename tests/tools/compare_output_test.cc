// build/rotor's outputs for checking rotor against other tools, as a user
// runs them on a checkpoint of configs/tiny.yaml's model (random weights,
// saved here): `rotor score` (the JSON equals ScoreTokens to the last bit,
// the table shows the same numbers, --logits writes the model's logits),
// `rotor eval --json` (the same figures as the text), and `rotor generate
// --token-ids` / `--prompt-ids` (greedy ids are the argmax chain). Bad ids
// are errors naming their source and position.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/autograd.h"
#include "nn/transformer.h"
#include "tests/temp_dir.h"
#include "tests/test_util.h"
#include "tests/tools/run_rotor.h"
#include "tests/train/train_test_util.h"
#include "train/checkpoint.h"
#include "train/config/model_config.h"
#include "train/eval/score.h"
#include "train/io/atomic_file.h"
#include "train/io/json.h"
#include "train/io/plot.h"
#include "train/io/plot_mark.h"
#include "train/io/safetensors.h"
#include "train/tokenizer/byte_tokenizer.h"

namespace rotor::tools {
namespace {

namespace fs = std::filesystem;

using Result = test::RotorResult;
using train::Json;
using train::TokenId;

constexpr int64_t kVocab = 257;

std::string Quote(const std::string& text) { return "'" + text + "'"; }

// Expects rotor's text output `text` to hold each line printf(format,
// number) of `lines`: pairs of a format and the key of `json` whose number
// it prints.
void ExpectNumberLines(
    const std::string& text, const Json& json,
    const std::vector<std::pair<const char*, const char*>>& lines) {
  for (const auto& [format, key] : lines) {
    char line[128];
    std::snprintf(line, sizeof(line), format, json.at(key).get<double>());
    EXPECT_CONTAINS(text, line);
  }
}

class CompareOutput : public test::PreparedDataTest {
 protected:
  // A checkpoint of the tiny model with random weights large enough
  // (initializer_range 0.3) that greedy choices are clear-cut; `tokenizer`
  // as SaveCheckpoint takes it.
  void SetUp() override { checkpoint_ = SaveTinyCheckpoint("run", "byte"); }

  // `edit` changes configs/tiny.yaml's text first (e.g. its RoPE
  // settings, which leave the weights as they are).
  std::string SaveTinyCheckpoint(
      const std::string& output_dir, const std::string& tokenizer,
      const std::function<std::string(const std::string&)>& edit =
          nullptr) const {
    std::string yaml = train::ReadFile(test::TinyConfigPath());
    if (edit) yaml = edit(yaml);
    nn::TransformerConfig config = train::ResolveTransformerConfig(
        train::ParseTrainConfig(yaml, "tiny.yaml").model);
    config.initializer_range = 0.3;
    const nn::Transformer model(config, 11);
    const std::string path = train::CheckpointDir(dir_.Path(output_dir), 1);
    train::SaveCheckpoint(path, model, nullptr, train::TrainerState{}, yaml,
                          tokenizer);
    return path;
  }

  Result Run(const std::string& args) const {
    return test::RunRotor(dir_, args);
  }

  // `rotor score` on the checkpoint with `args`, one thread.
  Result Score(const std::string& args) const {
    return Run("score --threads 1 --checkpoint " + Quote(checkpoint_) + " " +
               args);
  }

  std::string checkpoint_;
};

TEST_F(CompareOutput, ScoreJsonIsScoreTokensAtFullPrecision) {
  const std::vector<TokenId> ids = {256, 'T', 'h', 'e', ' ', 'c', 'a', 't'};
  const std::string file = dir_.Write("ids.json",
                                      "[256, 84, 104, 101, 32, "
                                      "99, 97, 116]");
  const Result r = Score("--tokens " + Quote(file) + " --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const Json json = train::ParseJson(r.out, "score --json");

  test::ThreadCountGuard one_thread(1);
  const auto model = train::LoadCheckpointModel(checkpoint_, {});
  const train::TokenScores scores = train::ScoreTokens(*model, ids, false);
  EXPECT_EQ(json.at("checkpoint"), checkpoint_);
  EXPECT_EQ(json.at("ids").get<std::vector<TokenId>>(), ids);
  const Json& log_probs = json.at("log_probs");
  ASSERT_EQ(log_probs.size(), ids.size());
  EXPECT_TRUE(log_probs[0].is_null());
  for (size_t t = 1; t < ids.size(); ++t) {
    EXPECT_EQ(log_probs[t].get<double>(), scores.log_probs[t]) << "token " << t;
  }
  EXPECT_EQ(json.at("sum_log_prob").get<double>(), scores.sum_log_prob);
  EXPECT_EQ(json.at("mean_nll").get<double>(), scores.mean_nll);
  EXPECT_EQ(json.at("perplexity").get<double>(), scores.perplexity);

  // The same ids written as plain integers, and the text they spell: the
  // model was trained on documents after 256, which --text puts first too.
  dir_.Write("ids.txt", "256 84,104\n101, 32 99 97 116\n");
  EXPECT_EQ(Score("--tokens " + Quote(dir_.Path("ids.txt")) + " --json").out,
            r.out);
  EXPECT_EQ(Score("--text 'The cat' --json").out, r.out);
  const Json text = train::ParseJson(
      Score("--text 'The cat' --json --no-add-special-tokens").out, "");
  EXPECT_EQ(text.at("ids").get<std::vector<TokenId>>(),
            std::vector<TokenId>(ids.begin() + 1, ids.end()));
}

// The table shows each token's id, text (escaped) and log-prob, then the
// totals, with the numbers of --json.
TEST_F(CompareOutput, ScoreTableShowsTheSameNumbers) {
  const std::string args =
      "--text " + Quote("a\tb \xC3\xA9\n") + " --no-add-special-tokens";
  const Result r = Score(args);
  ASSERT_EQ(r.status, 0) << r.err;
  const Json json = train::ParseJson(Score(args + " --json").out, "");
  EXPECT_CONTAINS(r.out, "checkpoint   " + checkpoint_ + "\n");
  EXPECT_CONTAINS(r.out,
                  "tokens       7 (6 scored: the first is only "
                  "context)\n");
  EXPECT_CONTAINS(r.out, "position        id      log-prob  token\n");
  EXPECT_CONTAINS(r.out, "       0        97             -  \"a\"\n");
  const char* shown[] = {"\"a\"",     "\"\\t\"",   "\"b\"",  "\" \"",
                         "\"\\xc3\"", "\"\\xa9\"", "\"\\n\""};
  const std::vector<TokenId> ids = {'a', '\t', 'b', ' ', 0xC3, 0xA9, '\n'};
  for (size_t t = 1; t < ids.size(); ++t) {
    char line[128];
    std::snprintf(line, sizeof(line), "%8zu  %8d  %12.6f  %s\n", t, ids[t],
                  json.at("log_probs")[t].get<double>(), shown[t]);
    EXPECT_CONTAINS(r.out, line);
  }
  ExpectNumberLines(r.out, json,
                    {{"sum          %.6f nats\n", "sum_log_prob"},
                     {"mean nll     %.6f nats/token\n", "mean_nll"},
                     {"perplexity   %.6g\n", "perplexity"}});
}

TEST_F(CompareOutput, ScoreWritesTheLogitsAsSafetensors) {
  const std::vector<TokenId> ids = {256, 'x', 'y', 'z'};
  const std::string logits = dir_.Path("logits.safetensors");
  const Result r = Score("--tokens " +
                         Quote(dir_.Write("ids",
                                          "256 120 121 "
                                          "122")) +
                         " --logits " + Quote(logits));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_CONTAINS(r.out, "logits       " + logits + "\n");
  const train::SafetensorsFile file = train::SafetensorsFile::Read(logits);
  const std::vector<int64_t> shape = {4, kVocab};
  const std::vector<float> written = file.ReadF32("logits", &shape);
  const train::SafetensorsFile::TensorInfo* input_ids = file.Find("input_ids");
  ASSERT_NE(input_ids, nullptr);
  EXPECT_EQ(input_ids->dtype, train::SafetensorsDtype::kI32);
  EXPECT_EQ(input_ids->shape, std::vector<int64_t>{4});
  const auto* id_data = static_cast<const TokenId*>(file.Data(*input_ids));
  EXPECT_EQ(std::vector<TokenId>(id_data, id_data + 4), ids);

  test::ThreadCountGuard one_thread(1);
  const auto model = train::LoadCheckpointModel(checkpoint_, {});
  NoGradGuard no_grad;
  model->SetSequenceLength(4);
  EXPECT_EQ(written, model->Logits(ids, 1, 4).ToVector());
}

// Status 1 and the file and position for bad ids; status 2 for bad flags.
TEST_F(CompareOutput, ScoreRefusesBadIds) {
  const std::vector<std::pair<std::string, std::string>> files = {
      {"1 2 257", "item 2 (257) is outside the model's vocabulary [0, 257)"},
      {"[0, -1]", "item 1 (-1) is outside the model's vocabulary"},
      {"1, 2 x", "item 2 ('x') is not an integer token id"},
      {"[1, 2.5]", "item 1 ('2.5') is not an integer token id"},
      {"[1, [2]]", "item 1 ('[2]') is not an integer token id"},
      {"[1, 2", "invalid JSON"},
      {"{\"ids\": [1]}", "item 0 ('{\"ids\":') is not an integer"},
      {"", "no token ids"},
      {" \n", "no token ids"},
      {"[]", "no token ids"},
  };
  for (const auto& [contents, message] : files) {
    SCOPED_TRACE(contents);
    const std::string file = dir_.Write("bad", contents);
    const Result r = Score("--tokens " + Quote(file));
    EXPECT_EQ(r.status, 1);
    EXPECT_CONTAINS(r.err, "rotor score: error: " + file + ": " + message);
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
  Result r = Score("--tokens " + Quote(dir_.Path("missing")));
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, dir_.Path("missing"));
  r = Score("--text '' --no-add-special-tokens");
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "--text: no token ids");
  r = Score("--text ''");  // the BOS alone
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "--text: 1 token; score needs at least 2");

  const std::vector<std::pair<std::string, std::string>> usage = {
      {"", "Exactly 1 option from [--tokens,--text] is required"},
      {"--text a --tokens b", "and 2 were given"},
      {"--tokens b --no-add-special-tokens",
       "--no-add-special-tokens: goes with --text"},
      {"--tokens ''", "--tokens: needs a value"},
      {"--text a --logits ''", "--logits: needs a value"},
  };
  for (const auto& [args, message] : usage) {
    SCOPED_TRACE(args);
    r = Score(args);
    EXPECT_EQ(r.status, 2);
    EXPECT_CONTAINS(r.err, message);
  }
  EXPECT_EQ(Run("score --text a").status, 2);  // no --checkpoint
}

// --text is encoded with the checkpoint's own tokenizer, found through a
// run's output_dir too: here a copy of the byte tokenizer's tokenizer.json
// (a trailing newline makes it another file than the one "byte" stands
// for), in which the text <|endoftext|> is the special token 256 (13 bytes
// in "byte").
TEST_F(CompareOutput, ScoreEncodesTextWithTheCheckpointsTokenizer) {
  const std::string tokenizer =
      dir_.Write("tokenizer.json", train::ByteTokenizerJson() + "\n");
  SaveTinyCheckpoint("bpe", tokenizer);
  for (const auto& [special, ids] :
       {std::pair<std::string, std::string>{"", "[256, 97, 256]"},
        {" --no-add-special-tokens", "[97, 256]"}}) {
    const Result r = Run("score --checkpoint " + Quote(dir_.Path("bpe")) +
                         " --text 'a<|endoftext|>' --json" + special);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(train::ParseJson(r.out, "").at("ids"), Json::parse(ids));
  }
  const Result r = Score("--text 'a<|endoftext|>' --json");
  EXPECT_EQ(train::ParseJson(r.out, "").at("ids").size(), 15u);  // 256 first
}

// --json holds every figure of the text, at full precision.
TEST_F(CompareOutput, EvalJsonHasTheFiguresOfTheText) {
  const std::string eval = "eval --threads 1 --checkpoint " +
                           Quote(checkpoint_) + " --data " + Quote(data_);
  Result text = Run(eval + " --max-batches 2");
  ASSERT_EQ(text.status, 0) << text.err;
  Result r = Run(eval + " --max-batches 2 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  Json json = train::ParseJson(r.out, "eval --json");
  EXPECT_EQ(json.at("checkpoint"), checkpoint_);
  EXPECT_EQ(json.at("data"), data_ + "/val.bin");
  EXPECT_EQ(json.at("seq_len"), 32);
  EXPECT_EQ(json.at("tokens"), 256);
  EXPECT_CONTAINS(text.out, "(256 tokens evaluated, seq_len 32)");
  ExpectNumberLines(text.out, json,
                    {{"val_loss     %.4f nats/token\n", "loss"},
                     {"perplexity   %.6g\n", "perplexity"},
                     {"bits/byte    %.4f", "bits_per_byte"}});

  const std::string tables =
      eval + " --lengths 8,16 --documents 1 --method sliding --passkey" +
      " --passkey-lengths 128 --depths 0,1 --trials 2 --plot " +
      Quote(dir_.Path("ppl.png")) + " --passkey-plot " +
      Quote(dir_.Path("passkey.png"));
  text = Run(tables);
  ASSERT_EQ(text.status, 0) << text.err;
  r = Run(tables + " --json --force");  // the plots exist now
  ASSERT_EQ(r.status, 0) << r.err;
  json = train::ParseJson(r.out, "eval --json");
  EXPECT_EQ(json.at("rope"), Json::parse(R"({"rope_type": "default",
                            "max_position_embeddings": 64})"));
  const Json& by_length = json.at("perplexity_by_length");
  EXPECT_EQ(by_length.at("method"), "sliding");
  EXPECT_EQ(by_length.at("stride"), 4);
  EXPECT_EQ(by_length.at("documents"), 1);
  ASSERT_EQ(by_length.at("results").size(), 2u);
  for (const Json& row : by_length.at("results")) {
    char line[128];
    std::snprintf(
        line, sizeof(line), "%8lld  %10lld  %9.4f  %11.3f  %9.4f\n",
        row.at("length").get<long long>(), row.at("tokens").get<long long>(),
        row.at("loss").get<double>(), row.at("perplexity").get<double>(),
        row.at("bits_per_byte").get<double>());
    EXPECT_CONTAINS(text.out, line);
  }
  const Json& passkey = json.at("passkey");
  EXPECT_EQ(passkey.at("lengths"), Json::parse("[128]"));
  EXPECT_EQ(passkey.at("depths"), Json::parse("[0.0, 1.0]"));
  ASSERT_EQ(passkey.at("cells").size(), 2u);
  const Json& mean = passkey.at("by_length").at(0);
  char row[128];
  std::snprintf(row, sizeof(row),
                "     128  %5.0f%%  %5.0f%%  %5.0f%%  %5.0f%%\n",
                100 * passkey.at("cells")[0].at("accuracy").get<double>(),
                100 * passkey.at("cells")[1].at("accuracy").get<double>(),
                100 * mean.at("accuracy").get<double>(),
                100 * mean.at("digit_accuracy").get<double>());
  EXPECT_CONTAINS(text.out, row);
  // The plots are drawn as without --json; where gnuplot cannot, the
  // object says why instead of naming a file.
  for (const Json* section : {&by_length, &passkey}) {
    const Json& plot = section->at("plot");
    if (plot.is_null()) {
      EXPECT_TRUE(section->at("plot_problem").is_string());
    } else {
      EXPECT_TRUE(fs::exists(plot.get<std::string>()));
    }
  }
}

// --rope-from A,B: the first file's settings are the model's, and each
// other file's curve is measured on the same documents and lengths, in its
// own table and a "compared" entry, drawn in the same plot; the first
// file's figures are those it gives alone.
TEST_F(CompareOutput, EvalComparesSeveralRopeSettingsInOnePlot) {
  const std::string configs = std::string(ROTOR_SOURCE_DIR) + "/configs/";
  const std::string linear = configs + "extend/linear-4x.yaml";
  const std::string dynamic = configs + "extend/dynamic-4x.yaml";
  const std::string eval = "eval --threads 1 --checkpoint " +
                           Quote(checkpoint_) + " --data " + Quote(data_) +
                           " --lengths 8,16 --documents 1 --force --plot " +
                           Quote(dir_.Path("compare.png"));
  Result r = Run(eval + " --json --rope-from " + Quote(linear + "," + dynamic));
  ASSERT_EQ(r.status, 0) << r.err;
  const Json both = train::ParseJson(r.out, "eval --json");
  const Json& section = both.at("perplexity_by_length");
  EXPECT_EQ(both.at("rope").at("rope_type"), "linear");
  ASSERT_EQ(section.at("compared").size(), 1u);
  const Json& other = section.at("compared")[0];
  EXPECT_EQ(other.at("rope_from"), dynamic);
  EXPECT_EQ(other.at("rope_type"), "dynamic");
  ASSERT_EQ(other.at("results").size(), 2u);
  EXPECT_NE(other.at("results"), section.at("results"));
  r = Run(eval + " --json --rope-from " + Quote(dynamic));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(
      other.at("results"),
      train::ParseJson(r.out, "").at("perplexity_by_length").at("results"));
  r = Run(eval + " --rope-from " + Quote(linear + "," + dynamic));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_CONTAINS(r.out, "rope         dynamic (dynamic-4x) from " + dynamic);
  r = Run("eval --checkpoint " + Quote(checkpoint_) + " --rope-from " +
          Quote(linear + "," + dynamic));
  EXPECT_EQ(r.status, 2);
  EXPECT_CONTAINS(r.err,
                  "several --rope-from files compare perplexity "
                  "against length: give --lengths");
}

// --rope-from takes what rope --config takes: a Hugging Face config.json
// (or its folder) gives its model's whole RoPE, here linear-4x.yaml's, and
// measures what that file does. An empty path, a file given twice, an
// empty --retrieval and a task given twice were silently ignored or run
// twice; each is refused, naming the flag or the value.
TEST_F(CompareOutput, EvalRopeFromTakesAConfigJsonAndRefusesEmptyOrRepeats) {
  const std::string linear =
      std::string(ROTOR_SOURCE_DIR) + "/configs/extend/linear-4x.yaml";
  const std::string config_json = dir_.Write(
      "hf/config.json",
      R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
          "hidden_size": 64, "intermediate_size": 128,
          "num_hidden_layers": 2, "num_attention_heads": 4,
          "num_key_value_heads": 2, "vocab_size": 300,
          "max_position_embeddings": 1024, "rms_norm_eps": 1e-05,
          "rope_theta": 10000.0, "tie_word_embeddings": true,
          "hidden_act": "silu",
          "rope_scaling": {"rope_type": "linear", "factor": 4.0}})");
  const std::string eval = "eval --threads 1 --checkpoint " +
                           Quote(checkpoint_) + " --data " + Quote(data_) +
                           " --lengths 8,16 --documents 1 --force --plot " +
                           Quote(dir_.Path("rope.png"));
  Result r = Run(eval + " --json --rope-from " + Quote(linear));
  ASSERT_EQ(r.status, 0) << r.err;
  const Json expected =
      train::ParseJson(r.out, "").at("perplexity_by_length").at("results");
  for (const std::string& path : {config_json, dir_.Path("hf")}) {
    r = Run(eval + " --json --rope-from " + Quote(path));
    ASSERT_EQ(r.status, 0) << path << ": " << r.err;
    const Json json = train::ParseJson(r.out, "");
    EXPECT_EQ(json.at("rope").at("rope_type"), "linear") << path;
    EXPECT_EQ(json.at("perplexity_by_length").at("results"), expected) << path;
  }
  r = Run(eval + " --rope-from ''");
  EXPECT_EQ(r.status, 2);
  EXPECT_CONTAINS(r.err, "--rope-from: an empty value");
  r = Run(eval + " --rope-from " + Quote(linear + "," + linear));
  EXPECT_EQ(r.status, 2);
  EXPECT_CONTAINS(r.err, "--rope-from: '" + linear + "' is given twice");
  r = Run(eval + " --retrieval ''");
  EXPECT_EQ(r.status, 2);
  EXPECT_CONTAINS(r.err, "--retrieval: needs a value");
  r = Run(eval + " --retrieval niah_single,niah_single");
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "retrieval task 'niah_single' is given twice");
}

// Greedy generation: the ids are the prompt's (the separator, then the
// text) and, one by one, the argmax of the model's logits over all ids so
// far; --prompt-ids with those ids gives the same.
TEST_F(CompareOutput, GenerateTokenIdsAreTheGreedyArgmaxChain) {
  const std::string generate = "generate --threads 1 --checkpoint " +
                               Quote(checkpoint_) +
                               " --temperature 0 --max-new-tokens 8 ";
  const Result r = Run(generate + "--prompt 'The' --token-ids");
  ASSERT_EQ(r.status, 0) << r.err;
  const std::vector<TokenId> ids =
      train::ParseJson(r.out, "").get<std::vector<TokenId>>();
  const std::vector<TokenId> prompt = {256, 'T', 'h', 'e'};
  ASSERT_GT(ids.size(), prompt.size());
  ASSERT_LE(ids.size(), prompt.size() + 8);
  EXPECT_EQ(std::vector<TokenId>(ids.begin(), ids.begin() + 4), prompt);

  test::ThreadCountGuard one_thread(1);
  const auto model = train::LoadCheckpointModel(checkpoint_, {});
  NoGradGuard no_grad;
  // Every step, and one more when generation stopped early: there the
  // argmax was the end of the text.
  const size_t steps =
      ids.size() < prompt.size() + 8 ? ids.size() + 1 : ids.size();
  for (size_t end = prompt.size(); end < steps; ++end) {
    const std::vector<TokenId> sequence(ids.begin(), ids.begin() + end);
    const int64_t length = static_cast<int64_t>(end);
    model->SetSequenceLength(static_cast<int64_t>(prompt.size()) + 8);
    const Tensor logits = model->Logits(sequence, 1, length);
    const float* last = logits.data() + (length - 1) * kVocab;
    const TokenId argmax =
        static_cast<TokenId>(std::max_element(last, last + kVocab) - last);
    EXPECT_EQ(end < ids.size() ? ids[end] : TokenId{256}, argmax)
        << "step " << end;
  }

  EXPECT_EQ(
      Run(generate + "--prompt-ids '[256, 84, 104, 101]' --token-ids").out,
      r.out);
  // As text, the prompt's ids are decoded (without the separator).
  const Result text = Run(generate + "--prompt 'The'");
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_EQ(Run(generate + "--prompt-ids '256 84 104 101'").out, text.out);
}

// eval's plots go to ppl_by_length.png and passkey.png in the working
// folder by default: a second eval there replaces the plots the first drew
// (it once failed: "--passkey-plot passkey.png already exists"), but a
// user's file at that path, or at a path given with --plot, is never
// replaced without --force.
TEST_F(CompareOutput, EvalReplacesItsOwnPlotsAndNoOtherFile) {
  if (!train::GnuplotAvailable()) GTEST_SKIP() << "gnuplot is not installed";
  const std::string work = dir_.Path("work");
  fs::create_directories(work);
  const std::string in_work = "cd " + Quote(work) + " &&";
  const std::string eval = "eval --threads 1 --checkpoint " +
                           Quote(checkpoint_) + " --data " + Quote(data_) +
                           " --lengths 8,16 --documents 1 --passkey "
                           "--passkey-lengths 128 --depths 1 --trials 1";
  const std::string ppl = work + "/ppl_by_length.png";
  const std::string passkey = work + "/passkey.png";
  for (int run = 0; run < 2; ++run) {
    const Result r = test::RunRotor(dir_, eval, in_work);
    ASSERT_EQ(r.status, 0) << "run " << run << ": " << r.err;
    EXPECT_CONTAINS(r.out, "plot         ppl_by_length.png");
    EXPECT_CONTAINS(r.out, "plot         passkey.png");
    EXPECT_TRUE(train::IsRotorPlot(ppl));
    EXPECT_TRUE(train::IsRotorPlot(passkey));
  }
  // A user's files: at the default path, at a path given, even a PNG.
  const std::string notes = "my notes, not a plot\n";
  train::WriteFileAtomically(ppl, notes);
  Result r = test::RunRotor(dir_, eval, in_work);
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err,
                  "--plot ppl_by_length.png already exists; pass --force to "
                  "replace it, or name another file (without --force rotor "
                  "replaces only a plot it drew itself, and this file is "
                  "none)");
  EXPECT_EQ(train::ReadFile(ppl), notes);
  const std::string photo =
      dir_.Write("photo.png", std::string("\x89PNG\r\n\x1a\n", 8) + "...");
  r = test::RunRotor(dir_,
                     eval + " --plot " + Quote(dir_.Path("plot.png")) +
                         " --passkey-plot " + Quote(photo),
                     in_work);
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err, "--passkey-plot " + photo + " already exists");
  EXPECT_EQ(train::ReadFile(photo),
            std::string("\x89PNG\r\n\x1a\n", 8) + "...");
  EXPECT_FALSE(fs::exists(dir_.Path("plot.png")));
  // A plot rotor drew, at a path given, is replaced; --force replaces any.
  r = test::RunRotor(dir_, eval + " --force", in_work);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(train::IsRotorPlot(ppl));
  fs::copy_file(passkey, dir_.Path("copy.png"));
  r = test::RunRotor(
      dir_, eval + " --passkey-plot " + Quote(dir_.Path("copy.png")), in_work);
  EXPECT_EQ(r.status, 0) << r.err;
}

// score and generate take eval's RoPE overrides (--rope-from PATH and
// model.key=value), so a zero-shot GGUF, exported with a scaling, can be
// checked in rotor: with linear x4 the loss is another than the unscaled
// model's, and the same as a checkpoint whose config has that scaling;
// bad overrides are refused, naming them. Both commands once refused
// overrides as unexpected arguments and --rope-from as an unknown flag.
TEST_F(CompareOutput, ScoreAndGenerateTakeRopeOverridesAsEvalDoes) {
  const std::string scaled =
      SaveTinyCheckpoint("scaled", "byte", [](const std::string& yaml) {
        return test::ReplaceOnce(
            test::ReplaceOnce(yaml, "max_position_embeddings: 64",
                              "max_position_embeddings: 256"),
            "rope_scaling: null",
            "rope_scaling: {rope_type: linear, factor: 4}");
      });
  std::string ids;
  for (int i = 0; i < 48; ++i) ids += std::to_string((i * 37 + 11) % 256) + " ";
  const std::string tokens = dir_.Write("ids.txt", ids);
  const std::string overrides =
      " model.max_position_embeddings=256 "
      "'model.rope_scaling={rope_type: linear, factor: 4}'";
  const std::string linear_4x =
      std::string(ROTOR_SOURCE_DIR) + "/configs/extend/linear-4x.yaml";
  const auto loss = [&](const std::string& checkpoint,
                        const std::string& args) {
    const Result r = Run("score --threads 1 --json --tokens " + Quote(tokens) +
                         " --checkpoint " + Quote(checkpoint) + args);
    EXPECT_EQ(r.status, 0) << args << ": " << r.err;
    return r.status == 0
               ? train::ParseJson(r.out, "").at("mean_nll").get<double>()
               : -1.0;
  };
  const double unscaled = loss(checkpoint_, "");
  const double expected = loss(scaled, "");
  EXPECT_NE(unscaled, expected);
  EXPECT_EQ(loss(checkpoint_, overrides), expected);
  EXPECT_EQ(loss(checkpoint_, " --rope-from " + Quote(linear_4x)), expected);
  EXPECT_EQ(loss(checkpoint_, " --rope-from " + Quote(scaled)), expected);

  const auto generated = [&](const std::string& checkpoint,
                             const std::string& args) {
    const Result r =
        Run("generate --threads 1 --temperature 0 "
            "--max-new-tokens 40 --token-ids --prompt-ids " +
            Quote(ids) + " --checkpoint " + Quote(checkpoint) + args);
    EXPECT_EQ(r.status, 0) << args << ": " << r.err;
    return r.out;
  };
  const std::string greedy = generated(scaled, "");
  EXPECT_NE(generated(checkpoint_, ""), greedy);
  EXPECT_EQ(generated(checkpoint_, overrides), greedy);
  EXPECT_EQ(generated(checkpoint_, " --rope-from " + Quote(linear_4x)), greedy);

  const std::string score =
      "score --text The --checkpoint " + Quote(checkpoint_) + " ";
  const std::string generate =
      "generate --prompt The --checkpoint " + Quote(checkpoint_) + " ";
  const std::vector<std::tuple<std::string, int, std::string>> cases = {
      {"model.hidden_size=64", 1, "hidden_size 32 (checkpoint) vs 64 (config)"},
      {"model.rope_scaling.rope_type=warp", 1, "warp"},
      {"'model.rope_scaling={rope_type: linear, factor: 0}'", 1,
       "model.rope_scaling.factor"},
      // YaRN measured from 32 tokens, where the model was pre-trained at 64:
      // the context-extension lint's error, as eval reports it.
      {"model.max_position_embeddings=128 'model.rope_scaling={rope_type: "
       "yarn, factor: 4, original_max_position_embeddings: 32}'",
       1, "with overrides: "},
      {"train.lr=1", 1, "train.lr"},
      {"factor", 2, "unexpected argument 'factor'"},
      {"--rope-from ''", 2, "--rope-from: needs a value"},
      {"--rope-from " + Quote(dir_.Path("missing.yaml")), 1, "missing.yaml"},
  };
  for (const std::string& command : {score, generate}) {
    for (const auto& [args, status, message] : cases) {
      SCOPED_TRACE(command + args);
      const Result r = Run(command + args);
      EXPECT_EQ(r.status, status);
      EXPECT_CONTAINS(r.err, message);
    }
  }
}

TEST_F(CompareOutput, GenerateRefusesBadPromptIds) {
  const std::string generate =
      "generate --checkpoint " + Quote(checkpoint_) + " --prompt-ids ";
  const std::vector<std::tuple<std::string, int, std::string>> cases = {
      {"'[256, 257]'", 1,
       "--prompt-ids: item 1 (257) is outside the model's vocabulary "
       "[0, 257)"},
      {"-1", 1, "--prompt-ids: item 0 (-1) is outside"},
      {"'1 x'", 2, "--prompt-ids: item 1 ('x') is not an integer token id"},
      {"'[1,'", 2, "--prompt-ids: invalid JSON"},
      {"' , '", 2, "--prompt-ids: no token ids"},
      {"''", 2, "--prompt-ids: needs a value"},
      {"1 --prompt a", 2, "Exactly 1 option from [--prompt,--prompt-ids]"},
  };
  for (const auto& [ids, status, message] : cases) {
    SCOPED_TRACE(ids);
    const Result r = Run(generate + ids);
    EXPECT_EQ(r.status, status);
    EXPECT_CONTAINS(r.err, message);
  }
}

}  // namespace
}  // namespace rotor::tools
