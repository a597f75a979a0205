// rotor extend-report end to end on the tiny model: base training, passkey
// practice, zero-shot and fine-tuned variants, the report's tables and
// plots, and the
// reuse of finished runs and results on a second run (or the refusal to
// reuse a run of other settings).
#include "train/extend/runner.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string_view>
#include <vector>

#include "tests/temp_dir.h"
#include "tests/test_util.h"
#include "tests/train/train_test_util.h"
#include "train/data/prepare.h"
#include "train/extend/results.h"
#include "train/io/atomic_file.h"
#include "train/io/plot.h"
#include "train/tokenizer/bpe_trainer.h"

namespace rotor::train {
namespace {

// A report config on configs/tiny.yaml reading `data`, one thread, written
// to dir/report.yaml: the base run in dir/base with `base_overrides` (and no
// evaluations or checkpoints before its end), then `base_more` (lines of the
// base: section), the report in dir/report, and `rest` (top-level lines).
ExtendReportConfig TinyReport(const test::TempDir& dir, const std::string& data,
                              const std::string& base_overrides,
                              const std::string& base_more,
                              const std::string& rest) {
  const std::string yaml =
      "base:\n  config: " + test::TinyConfigPath() +
      "\n  overrides: [data.path=" + data + ", output_dir=" + dir.Path("base") +
      ", eval.every_n_steps=0, checkpoint.every_n_steps=0, " + base_overrides +
      "]\n" + base_more + "output_dir: " + dir.Path("report") +
      "\nthreads: 1\n" + rest;
  return ParseExtendReportConfig(yaml, dir.Write("report.yaml", yaml));
}

// With base.practice, a passkey-practice run continues the base at its own
// length and becomes the model that is extended; the fine-tunes take
// finetune.passkey_fraction.
TEST(ExtendReport, PasskeyPracticeBecomesTheBase) {
  test::TempDir dir;
  const std::string data = test::PrepareTextData(dir);
  const ExtendReportConfig config = TinyReport(
      dir, data,
      "model.max_position_embeddings=112, train.seq_len=112, "
      "train.batch_size=2, train.max_steps=2",
      "  practice: {steps: 2, passkey_fraction: 0.5, output_dir: " +
          dir.Path("practice") + "}\n",
      "factor: 2\n"
      "methods: [yarn]\n"
      "finetune: {steps: 1, warmup_steps: 1, passkey_fraction: 0.25,\n"
      "           tokens_per_step: 224}\n"
      "eval: {lengths: [112], documents: 1, passkey_lengths: [112],\n"
      "       depths: [1], trials: 1}\n");
  std::ostringstream log;
  const ExtendReportSummary summary = RunExtendReport(config, log);
  EXPECT_NE(log.str().find("passkey practice (2 steps with 0.5 passkey rows "
                           "at length 112"),
            std::string::npos)
      << log.str();
  const std::string practice_config =
      ReadFile(dir.Path("practice/checkpoints/step_00000002/config.yaml"));
  EXPECT_NE(practice_config.find("init_from: " + dir.Path("base")),
            std::string::npos);
  EXPECT_NE(practice_config.find("passkey_fraction: 0.5"), std::string::npos);
  EXPECT_NE(practice_config.find("seq_len: 112"), std::string::npos);
  const std::string yarn_config = ReadFile(
      dir.Path("report/finetune/yarn/checkpoints/step_00000001/config.yaml"));
  EXPECT_NE(yarn_config.find("init_from: " + dir.Path("practice")),
            std::string::npos);
  EXPECT_NE(yarn_config.find("passkey_fraction: 0.25"), std::string::npos);
  EXPECT_NE(yarn_config.find("seq_len: 224"), std::string::npos);
  EXPECT_NE(ReadFile(summary.report_path)
                .find("passkey practice: 2 steps with 0.5 passkey rows"),
            std::string::npos);

  // A practice run made by hand from the same base checkpoint, named
  // another way (the run's folder or its newest checkpoint: context-
  // extension.md 7.1 then 7.6), is the report's own.
  const std::string saved =
      dir.Path("practice/checkpoints/step_00000002/config.yaml");
  std::string edited = ReadFile(saved);
  const std::string base_line =
      "init_from: " + dir.Path("base/checkpoints/step_00000002");
  ASSERT_NE(edited.find(base_line), std::string::npos) << edited;
  edited.replace(edited.find(base_line), base_line.size(),
                 "init_from: " + dir.Path("base") + "/");
  WriteFileAtomically(saved, edited);
  std::ostringstream reused;
  RunExtendReport(config, reused);
  EXPECT_EQ(reused.str().find("passkey practice (2 steps"), std::string::npos)
      << reused.str();

  // A finished practice run of other settings is not silently reused.
  const ExtendReportConfig other = LoadExtendReportConfig(
      dir.Path("report.yaml"), {"base.practice.passkey_fraction=0.75"});
  std::ostringstream again;
  ROTOR_EXPECT_ERROR(
      RunExtendReport(other, again),
      "passkey practice: " + dir.Path("practice") + " holds another run",
      "data.passkey_fraction 0.5 (checkpoint) vs 0.75 (config)",
      "delete that folder");
}

// A fine-tune whose rows cannot fit (finetune.retrieval_fraction beside the
// base config's passkey_fraction, which fills in the absent
// finetune.passkey_fraction) is refused before the base trains, not after
// the base run and its practice.
TEST(ExtendReport, RefusesAFinetuneConfigBeforeAnythingTrains) {
  test::TempDir dir;
  const std::string data = test::PrepareTextData(dir);
  const ExtendReportConfig config = TinyReport(
      dir, data,
      "model.max_position_embeddings=112, train.seq_len=112, "
      "train.batch_size=2, train.max_steps=2, data.passkey_fraction=0.9",
      "  practice: {steps: 2, passkey_fraction: 0.5, output_dir: " +
          dir.Path("practice") + "}\n",
      "factor: 2\n"
      "methods: [yarn]\n"
      "finetune: {steps: 1, warmup_steps: 1, retrieval_fraction: 0.25,\n"
      "           tokens_per_step: 224}\n"
      "eval: {lengths: [112], documents: 1, passkey_lengths: [112],\n"
      "       depths: [1], trials: 1}\n");
  std::ostringstream log;
  ROTOR_EXPECT_ERROR(RunExtendReport(config, log), "yarn fine-tune",
                     "data.retrieval_fraction", "0.25");
  EXPECT_FALSE(std::filesystem::exists(dir.Path("base"))) << log.str();
  EXPECT_FALSE(std::filesystem::exists(dir.Path("practice")));
}

// With base.practice.examples_only_steps, the ladder's curriculum: a first
// run of examples only from the base, then the practice from its weights,
// both reused when run again; report.md says so.
TEST(ExtendReport, TheCurriculumsFirstPhaseComesBeforePractice) {
  test::TempDir dir;
  const std::string data = test::PrepareTextData(dir);
  const ExtendReportConfig config = TinyReport(
      dir, data,
      "model.max_position_embeddings=112, train.seq_len=112, "
      "train.batch_size=2, train.max_steps=2",
      "  practice: {steps: 2, passkey_fraction: 0.5, examples_only_steps: 3,\n"
      "             output_dir: " +
          dir.Path("practice") + "}\n",
      "factor: 2\n"
      "methods: [default]\n"
      "finetune: {steps: 0}\n"
      "eval: {lengths: [112], documents: 1, passkey_lengths: [112],\n"
      "       depths: [1], trials: 1, retrieval_tasks: []}\n");
  std::ostringstream log;
  const ExtendReportSummary summary = RunExtendReport(config, log);
  EXPECT_NE(log.str().find("practice's first phase (3 steps at length 112, "
                           "examples only -> " +
                           dir.Path("practice-examples-only")),
            std::string::npos)
      << log.str();
  const std::string first = ReadFile(
      dir.Path("practice-examples-only/checkpoints/step_00000003/config.yaml"));
  EXPECT_NE(first.find("init_from: " + dir.Path("base")), std::string::npos);
  EXPECT_NE(first.find("passkey_fraction: 1\n"), std::string::npos) << first;
  const std::string practice =
      ReadFile(dir.Path("practice/checkpoints/step_00000002/config.yaml"));
  EXPECT_NE(practice.find("init_from: " + dir.Path("practice-examples-only")),
            std::string::npos)
      << practice;
  EXPECT_NE(practice.find("passkey_fraction: 0.5\n"), std::string::npos);
  EXPECT_NE(ReadFile(summary.report_path)
                .find("passkey practice: 3 steps of examples only, then 2 "
                      "steps with 0.5 passkey rows"),
            std::string::npos);
  // Run again: both phases are reused, neither announced nor trained.
  EXPECT_NE(log.str().find("passkey practice ("), std::string::npos)
      << log.str();
  std::ostringstream reused;
  RunExtendReport(config, reused);
  EXPECT_EQ(reused.str().find("first phase (3 steps"), std::string::npos)
      << reused.str();
  EXPECT_EQ(reused.str().find("passkey practice ("), std::string::npos)
      << reused.str();
}

TEST(ExtendReport, TinyModelEndToEnd) {
  test::TempDir dir;
  const std::string data = test::PrepareTextData(dir);
  const ExtendReportConfig config = TinyReport(
      dir, data, "train.max_steps=3", "",
      "factor: 4\n"
      "methods: [default, dynamic, yarn]\n"
      "finetune: {steps: 2, warmup_steps: 1}\n"
      "eval: {lengths: [32, 128], documents: 2, passkey_lengths: [128],\n"
      "       depths: [0, 1], trials: 2, retrieval_tasks: [niah_single],\n"
      "       retrieval_lengths: [384], retrieval_trials: 1}\n");
  std::ostringstream log;
  const ExtendReportSummary summary = RunExtendReport(config, log);
  EXPECT_EQ(summary.report_path, dir.Path("report/report.md"));
  const std::string report = ReadFile(summary.report_path);
  for (const char* row :
       {"| default (zero-shot) |", "| dynamic (zero-shot) |",
        "| yarn (zero-shot) |", "| default + fine-tune |",
        "| yarn + fine-tune |", "## Passkey retrieval", "A 5-digit key hidden",
        "writes all 5 digits", "## Checks",
        "unscaled RoPE degrades sharply at 128"}) {
    EXPECT_NE(report.find(row), std::string::npos) << row << "\n" << report;
  }
  EXPECT_EQ(report.find("dynamic + fine-tune"), std::string::npos);
  // Retrieval: a table, the overview heat map when gnuplot can draw it,
  // and, as a 3-step model answers nothing, why.
  const size_t retrieval = report.find("### niah_single");
  ASSERT_NE(retrieval, std::string::npos) << report;
  EXPECT_NE(report.find("No retrieval question was answered", retrieval),
            std::string::npos)
      << report;
  if (GnuplotAvailable()) {
    EXPECT_NE(report.find("(retrieval.png)", retrieval), std::string::npos)
        << report;
    EXPECT_EQ(ReadFile(dir.Path("report/retrieval.png")).substr(1, 3), "PNG");
  }
  // The fine-tunes are ordinary runs that started from the base.
  const std::string yarn_config = ReadFile(
      dir.Path("report/finetune/yarn/checkpoints/step_00000002/config.yaml"));
  EXPECT_NE(yarn_config.find("rope_type: yarn"), std::string::npos);
  EXPECT_NE(yarn_config.find("seq_len: 128"), std::string::npos);
  EXPECT_NE(yarn_config.find("init_from: " + dir.Path("base")),
            std::string::npos);
  EXPECT_NE(ReadFile(dir.Path("report/results.json")).find("\"variants\""),
            std::string::npos);
  // Each evaluation timed by part: this grid has all three, and they add
  // up to no more than the whole.
  const std::optional<VariantResult> yarn = LoadVariantResult(
      VariantResultPath(dir.Path("report"), RopeType::kYarn, true));
  ASSERT_TRUE(yarn.has_value());
  double parts = 0.0;
  for (EvalPart part : kEvalParts) {
    ASSERT_EQ(yarn->eval_part_seconds.count(part), 1u) << EvalPartName(part);
    EXPECT_GT(yarn->eval_part_seconds.at(part), 0.0) << EvalPartName(part);
    parts += yarn->eval_part_seconds.at(part);
  }
  EXPECT_LE(parts, yarn->eval_seconds);
  EXPECT_NE(
      ReadFile(dir.Path("report/logs/finetune-yarn.log")).find("step 2/2"),
      std::string::npos);

  // A second run reuses every finished piece.
  std::ostringstream again;
  RunExtendReport(config, again);
  EXPECT_EQ(again.str().find("training the base model"), std::string::npos);
  EXPECT_EQ(again.str().find("fine-tuning"), std::string::npos);
  EXPECT_NE(again.str().find("yarn-finetuned: done before"), std::string::npos);
  EXPECT_EQ(ReadFile(summary.report_path).substr(0, 200),
            report.substr(0, 200));
}

// A stored result or fine-tune is reused only when what it was computed
// from is the same: the base's weights, the tokenizer, the data, the
// method's settings, the evaluation grid. Once, a changed eval.trials or
// finetune.lr, or a base trained further, kept the old numbers under the
// new settings.
TEST(ExtendReport, ReusesOnlyWhatTheSameInputsMade) {
  test::TempDir dir;
  const std::string data = test::PrepareTextData(dir);
  TinyReport(dir, data, "train.max_steps=2", "",
             "factor: 4\n"
             "methods: [yarn]\n"
             "finetune: {steps: 1, warmup_steps: 1}\n"
             "eval: {lengths: [32], documents: 1, passkey_lengths: [128],\n"
             "       depths: [1], trials: 1}\n");
  auto run = [&](const std::vector<std::string>& overrides) {
    std::ostringstream log;
    RunExtendReport(LoadExtendReportConfig(dir.Path("report.yaml"), overrides),
                    log);
    return log.str();
  };
  run({});
  const std::string results = dir.Path("report/results/yarn-zeroshot.json");
  EXPECT_NE(ReadFile(results).find("\"eval\": \"xxh3-64:"), std::string::npos);

  // The same inputs, the report's folder spelled another way: all reused.
  const std::string same = run({"output_dir=" + dir.path() + "/./report"});
  EXPECT_NE(same.find("yarn-zeroshot: done before"), std::string::npos) << same;
  EXPECT_NE(same.find("yarn-finetuned: done before"), std::string::npos)
      << same;

  // Another evaluation grid: both evaluations again, no training.
  const std::string grid = run({"eval.trials=2"});
  EXPECT_NE(grid.find("yarn-zeroshot: " + results +
                      " was computed from other inputs (eval)"),
            std::string::npos)
      << grid;
  EXPECT_NE(grid.find("yarn-finetuned: "), std::string::npos);
  EXPECT_EQ(grid.find("fine-tuning"), std::string::npos) << grid;
  EXPECT_EQ(grid.find("done before"), std::string::npos) << grid;

  // Another learning rate: the fine-tune again; the zero-shot result kept,
  // and the report says so.
  const std::string lr = run({"eval.trials=2", "finetune.lr=0.001"});
  EXPECT_NE(lr.find("yarn-zeroshot: done before"), std::string::npos) << lr;
  EXPECT_NE(lr.find(dir.Path("report/finetune/yarn") +
                    " was trained from other inputs (method); training it "
                    "again"),
            std::string::npos)
      << lr;
  EXPECT_NE(lr.find("fine-tuning"), std::string::npos);
  EXPECT_NE(ReadFile(dir.Path("report/report.md"))
                .find("Reused from an earlier invocation, computed from the "
                      "same base, tokenizer, data, method settings and "
                      "evaluation grid: yarn-zeroshot."),
            std::string::npos);

  // Other base weights (the base trained one step further): all again.
  const std::string base = run({"eval.trials=2", "finetune.lr=0.001",
                                "base.overrides=[data.path=" + data +
                                    ", output_dir=" + dir.Path("base") +
                                    ", eval.every_n_steps=0, "
                                    "checkpoint.every_n_steps=0, "
                                    "train.max_steps=3]"});
  EXPECT_NE(base.find("yarn-zeroshot: " + results +
                      " was computed from other inputs (base"),
            std::string::npos)
      << base;
  EXPECT_NE(base.find("was trained from other inputs (base"), std::string::npos)
      << base;
  EXPECT_EQ(base.find("done before"), std::string::npos) << base;

  // The base run is the user's folder: a finished one of other settings
  // stops the report instead of being reused.
  ROTOR_EXPECT_ERROR(run({"base.overrides=[data.path=" + data +
                          ", output_dir=" + dir.Path("base") +
                          ", eval.every_n_steps=0, checkpoint.every_n_steps=0, "
                          "train.max_steps=3, train.seed=7]"}),
                     "base run: " + dir.Path("base") + " holds another run",
                     "train.seed 1337 (checkpoint) vs 7");
}

// With finetune.lora, each fine-tuned method is fine-tuned a second time
// with LoRA on the same budget: its own run (a frozen base, adapters only
// in its checkpoint), its own rows in every table, its settings listed; a
// finished LoRA run of other LoRA settings is trained again.
TEST(ExtendReport, ComparesFullAndLoraFineTuning) {
  test::TempDir dir;
  const std::string data = test::PrepareTextData(dir);
  const std::string rest =
      "factor: 4\n"
      "methods: [default, yarn]\n"
      "finetune: {steps: 2, warmup_steps: 1, lr: 1.0e-3, min_lr: 1.0e-4,\n"
      "           lora: {r: 4, alpha: 8, target_modules: [q_proj, v_proj],\n"
      "                  trainable: [norm], lr: 2.0e-3}}\n"
      "eval: {lengths: [32, 128], documents: 2, passkey_lengths: [128],\n"
      "       depths: [1], trials: 1}\n";
  const ExtendReportConfig config =
      TinyReport(dir, data, "train.max_steps=3", "", rest);
  std::ostringstream log;
  const ExtendReportSummary summary = RunExtendReport(config, log);
  const std::string report = ReadFile(summary.report_path);
  for (const char* part :
       {"| yarn + fine-tune |", "| yarn + LoRA fine-tune |",
        "| default + LoRA fine-tune |",
        "each fine-tuned in full and with LoRA on the same budget",
        "| LoRA fine-tune | evaluate LoRA |",
        "LoRA fine-tunes (`finetune.lora`): the same steps, tokens and "
        "schedule with the base frozen: r 4, alpha 8, dropout 0 on q_proj "
        "v_proj; trained in full: norm; lr 0.002 -> 0.0002"}) {
    EXPECT_NE(report.find(part), std::string::npos) << part << "\n" << report;
  }
  const std::string run = dir.Path("report/finetune/yarn-lora");
  const std::string checkpoint = run + "/checkpoints/step_00000002";
  const std::string yarn_config = ReadFile(checkpoint + "/config.yaml");
  EXPECT_NE(yarn_config.find("finetune:"), std::string::npos);
  EXPECT_NE(yarn_config.find("lr: 0.002"), std::string::npos);
  EXPECT_NE(
      ReadFile(checkpoint + "/model.safetensors").find("base_weights_hash"),
      std::string::npos);
  EXPECT_NE(ReadFile(dir.Path("report/results/yarn-finetuned-lora.json"))
                .find("\"lora\": true"),
            std::string::npos);

  // The LoRA run is reused only with its own settings: with others it is
  // trained again, and the full fine-tunes are kept.
  const ExtendReportConfig other =
      LoadExtendReportConfig(dir.Path("report.yaml"), {"finetune.lora.r=8"});
  std::ostringstream again;
  RunExtendReport(other, again);
  EXPECT_NE(again.str().find("yarn-finetuned-lora: " + run +
                             " was trained from other inputs (method)"),
            std::string::npos)
      << again.str();
  EXPECT_NE(again.str().find("yarn-finetuned: done before"), std::string::npos)
      << again.str();
  EXPECT_NE(ReadFile(checkpoint + "/config.yaml").find("r: 8"),
            std::string::npos);
}

// A base trained here from a config whose data holds another tokenizer's
// ids (no data.tokenizer in the config): the report takes the data's own
// tokenizer as the model's, for the passkey prompts too.
TEST(ExtendReport, BaseTrainedOnDataOfAnotherTokenizer) {
  test::TempDir dir;
  test::PrepareTextData(dir);
  std::string text;
  for (int i = 0; i < 50; ++i) text += "the cat sat on the mat. ";
  const std::vector<std::string_view> documents = {text};
  BpeTrainerOptions bpe;
  bpe.vocab_size = 257;  // the tiny model's vocabulary: no merges
  const std::string tokenizer = dir.Write(
      "bpe.json",
      BpeTokenizerJson(TrainBpe(CountWords(documents, bpe.split_pattern), bpe),
                       bpe));
  PrepareOptions prepare;
  prepare.inputs = {dir.Path("text")};
  prepare.output = dir.Path("bpe-data");
  prepare.val_fraction = 0.25;
  prepare.tokenizer = tokenizer;
  RunPrepare(prepare);
  const ExtendReportConfig config =
      TinyReport(dir, dir.Path("bpe-data"), "train.max_steps=1", "",
                 "factor: 2\nmethods: [default]\nfinetune: {steps: 0}\n"
                 "eval: {lengths: [32], documents: 1, passkey_lengths: [112],\n"
                 "       depths: [1], trials: 1, retrieval_tasks: []}\n");
  std::ostringstream log;
  const ExtendReportSummary summary = RunExtendReport(config, log);
  EXPECT_NE(ReadFile(summary.report_path)
                .find("Perplexity per token (tokenizer `" +
                      dir.Path("bpe-data") + "/tokenizer.json`)"),
            std::string::npos);
}

}  // namespace
}  // namespace rotor::train
