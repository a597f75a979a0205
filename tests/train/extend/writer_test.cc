// report.md from made-up measurements: the tables, the retrieval overview
// and its hint, and the checks judged against the thresholds of the report
// config's `checks:`.
#include "train/extend/writer.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "tests/temp_dir.h"
#include "tests/train/train_test_util.h"
#include "train/io/atomic_file.h"
#include "train/io/plot.h"

namespace rotor::train {
namespace {

// A variant with perplexity `at_l` at 112 and `at_sl` at 224, and passkey
// accuracy `at_l_passkey` / `at_sl_passkey` (of 10 trials, depth 0.5).
VariantResult Variant(RopeType method, bool finetuned, double at_l,
                      double at_sl, int at_l_passkey, int at_sl_passkey) {
  VariantResult r;
  r.method = method;
  r.finetuned = finetuned;
  r.perplexity = {{112, 0.0, at_l, 1000}, {224, 0.0, at_sl, 1000}};
  for (auto [length, correct] :
       {std::pair{112, at_l_passkey}, std::pair{224, at_sl_passkey}}) {
    PasskeyCell cell;
    cell.length = length;
    cell.depth = 0.5;
    cell.correct = correct;
    cell.digits_right = 5 * correct;
    cell.trials = 10;
    r.passkey.push_back(cell);
  }
  r.eval_seconds = 10.0;
  r.finetune_seconds = finetuned ? 100.0 : 0.0;
  return r;
}

// niah_single at 112 and 224 and niah_multikey at 224, depth 0.5, 10
// examples each: `correct` of them answered whole and `partial` of them
// with half the values (RULER's string_match_all 0.5 each).
std::vector<RetrievalCell> Retrieval(int correct, int partial) {
  std::vector<RetrievalCell> cells;
  for (auto [task, length] : {std::pair{RetrievalTask::kNiahSingle, 112},
                              std::pair{RetrievalTask::kNiahSingle, 224},
                              std::pair{RetrievalTask::kNiahMultikey, 224}}) {
    RetrievalCell cell;
    cell.task = task;
    cell.length = length;
    cell.depth = 0.5;
    cell.trials = 10;
    cell.correct = correct;
    cell.match_sum = correct + 0.5 * partial;
    cells.push_back(cell);
  }
  return cells;
}

// report.md for a tiny base extended 2x (112 -> 224) with `overrides` on
// the report config; with `retrieval`, the retrieval tasks of Retrieval()
// measured on every variant, the yarn fine-tune's being `finetuned_cells`.
std::string Report(
    const test::TempDir& dir, const std::vector<std::string>& overrides,
    bool retrieval = false,
    const std::vector<RetrievalCell>& finetuned_cells = Retrieval(0, 0)) {
  const std::string yaml = "base: {config: " + test::TinyConfigPath() +
                           "}\noutput_dir: " + dir.Path("report") +
                           "\nfactor: 2\nmethods: [default, yarn]\n"
                           "finetune: {steps: 50}\n"
                           "eval: {depths: [0.5], trials: 10}\n";
  const ExtendReportConfig config =
      ParseExtendReportConfig(yaml, "report.yaml", overrides);
  ReportPlan plan;
  plan.base = test::TinyConfig("data", dir.Path("base"));
  plan.base_length = 112;
  plan.extended_length = 224;
  plan.lengths = {112, 224};
  plan.passkey_lengths = {112, 224};
  if (retrieval) {
    plan.retrieval = {{RetrievalTask::kNiahSingle, {112, 224}},
                      {RetrievalTask::kNiahMultikey, {224}}};
  }
  ReportRun run;
  run.base_checkpoint = "base/checkpoints/step_00000040";
  run.val_path = "data/val.bin";
  run.base_train_seconds = 300.0;
  std::vector<VariantResult> results = {
      Variant(RopeType::kDefault, false, 4.0, 8.0, 10, 0),
      Variant(RopeType::kYarn, false, 4.4, 5.0, 9, 2),
      Variant(RopeType::kYarn, true, 3.9, 4.2, 9, 9)};
  // The fine-tune's evaluation timed by part (without retrieval); the
  // zero-shot results as stored before the report timed parts.
  results.back().eval_part_seconds = {{EvalPart::kPerplexity, 3.0},
                                      {EvalPart::kPasskey, 6.0}};
  if (retrieval) {
    for (VariantResult& r : results) r.retrieval = Retrieval(0, 0);
    results.back().retrieval = finetuned_cells;
  }
  std::filesystem::create_directories(config.output_dir);
  const std::string path = WriteReport(config, plan, run, results);
  EXPECT_EQ(path, dir.Path("report/report.md"));
  return ReadFile(path);
}

void ExpectHas(const std::string& report, const std::string& text) {
  EXPECT_NE(report.find(text), std::string::npos) << text << "\n" << report;
}

constexpr char kRetrievalImage[] = "![retrieval accuracy](retrieval.png)";
constexpr char kRetrievalHint[] = "No retrieval question was answered";

TEST(WriteReport, TablesAndChecksAtTheDefaultThresholds) {
  test::TempDir dir;
  const std::string report = Report(dir, {});
  ExpectHas(report, "| default (zero-shot) | **4.000** | 8.000 | 2.000 |");
  ExpectHas(report, "| yarn + fine-tune | 3.900 | **4.200** | 1.050 |");
  ExpectHas(report, "| yarn + fine-tune | 90% | 90% |");
  ExpectHas(report,
            "| unscaled RoPE degrades sharply at 224 (zero-shot, ratio > "
            "1.5) | 8.000 vs 4.000 at 112 (x2.00) | yes |");
  ExpectHas(report,
            "| yarn + 50 steps: perplexity at 224 within 10% of the base at "
            "112 | 4.200 (x1.050) | yes |");
  ExpectHas(report,
            "| passkey at 224 after yarn fine-tuning >= 90% (base at 112 >= "
            "95%) | 90% (base at 112: 100%) | yes |");
  // 300 s of base training, 3 evaluations of 10 s and a 100 s fine-tune.
  ExpectHas(report,
            "| the whole comparison (base training included) under 1h00m | "
            "7m10s | yes |");
  // Each evaluation by part: "-" for a part not measured or not recorded.
  ExpectHas(report,
            "| model | perplexity | passkey | retrieval | evaluation |\n"
            "|---|---:|---:|---:|---:|\n"
            "| default (zero-shot) | - | - | - | 0m10s |\n"
            "| yarn (zero-shot) | - | - | - | 0m10s |\n"
            "| yarn + fine-tune | 0m03s | 0m06s | - | 0m10s |\n");
  ExpectHas(report,
            "  - yarn: `model.max_position_embeddings=224` "
            "`model.rope_scaling={rope_type: yarn, factor: 2, "
            "original_max_position_embeddings: 112, beta_fast: 32, "
            "beta_slow: 1, truncate: true}`");
  // No retrieval tasks: no retrieval section, picture, hint or check.
  EXPECT_EQ(report.find("## Retrieval"), std::string::npos);
  EXPECT_EQ(report.find("niah_single at"), std::string::npos);
  EXPECT_EQ(report.find("retrieval.png"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir.Path("report/retrieval.png")));
  EXPECT_EQ(report.find(kRetrievalHint), std::string::npos);
}

// The retrieval section gets an overview heat map like the passkey's
// (variants by length, the mean over tasks and depths), drawn when gnuplot
// is installed and shown in the section; a length not every task fits is
// marked in the picture and the text says so.
TEST(WriteReport, RetrievalOverviewIsDrawnInItsSection) {
  test::TempDir dir;
  const std::string report =
      Report(dir, {"finetune.retrieval_fraction=0.25"}, true, Retrieval(6, 0));
  const size_t section = report.find("## Retrieval (RULER-style)");
  const size_t checks = report.find("## Checks");
  ASSERT_NE(section, std::string::npos) << report;
  ExpectHas(report, "| yarn + fine-tune | 60% | 60% |");
  // The yarn fine-tune's niah_single at sL against its check's 80% (the
  // recipe practises the tasks).
  ExpectHas(report,
            "| niah_single at 224 after yarn fine-tuning >= 80% | 60% | no |");
  EXPECT_GT(report.find("niah_single at 224 after"), checks);
  if (!GnuplotAvailable()) {
    EXPECT_EQ(report.find(kRetrievalImage), std::string::npos);
    ExpectHas(report, "retrieval.png");  // named among the plot notes
    return;
  }
  const size_t image = report.find(kRetrievalImage);
  ASSERT_NE(image, std::string::npos) << report;
  EXPECT_GT(image, section) << report;
  EXPECT_LT(image, checks) << report;
  ExpectHas(report, "at a length marked \"1 of 2\"");
  EXPECT_EQ(ReadFile(dir.Path("report/retrieval.png")).substr(1, 3), "PNG");
}

// When no model answers any retrieval question, the report says why that
// usually happens and what to try; one answer, even in part (RULER's
// string_match_all), and it does not.
TEST(WriteReport, RetrievalHintOnlyWhenNothingIsAnswered) {
  {
    test::TempDir dir;
    const std::string report = Report(dir, {}, true, Retrieval(0, 0));
    ExpectHas(report, kRetrievalHint);
    ExpectHas(report, "data.passkey_fraction");
    ExpectHas(report, "7.1 \"passkey practice\"");
    // Not practised: no niah_single check.
    EXPECT_EQ(report.find("niah_single at 224 after"), std::string::npos);
    EXPECT_GT(report.find(kRetrievalHint), report.find("## Retrieval"));
    EXPECT_LT(report.find(kRetrievalHint), report.find("## Checks"));
  }
  for (auto [correct, partial] : {std::pair{1, 0}, std::pair{0, 1}}) {
    test::TempDir dir;
    const std::string report =
        Report(dir, {}, true, Retrieval(correct, partial));
    EXPECT_EQ(report.find(kRetrievalHint), std::string::npos)
        << correct << " whole, " << partial << " partial\n"
        << report;
  }
}

TEST(WriteReport, ChecksTakeTheirThresholdsFromTheConfig) {
  test::TempDir dir;
  const std::string report =
      Report(dir,
             {"checks.zeroshot_ppl_ratio_min=2.5",
              "checks.finetuned_ppl_ratio_max=1.02",
              "checks.finetuned_passkey_min=0.95", "checks.max_seconds=400",
              "checks.finetuned_niah_single_min=0.9",
              "finetune.retrieval_fraction=0.25"},
             true, Retrieval(9, 0));
  ExpectHas(report,
            "(zero-shot, ratio > 2.5) | 8.000 vs 4.000 at 112 (x2.00) | no |");
  ExpectHas(report, "within 2% of the base at 112 | 4.200 (x1.050) | no |");
  ExpectHas(report,
            "after yarn fine-tuning >= 95% (base at 112 >= 95%) | 90% "
            "(base at 112: 100%) | no |");
  ExpectHas(report, "under 6m40s | 7m10s | no |");
  ExpectHas(report,
            "| niah_single at 224 after yarn fine-tuning >= 90% | 90% | yes |");
}

}  // namespace
}  // namespace rotor::train
