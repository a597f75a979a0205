// Scoring the RULER-style retrieval tasks (their prompts:
// tests/train/data/retrieval_examples_test.cc): RULER's string match, the
// means over cells, the evaluation grid.
#include "train/eval/retrieval.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/test_util.h"
#include "tests/train/train_test_util.h"
#include "train/tokenizer/byte_tokenizer.h"

namespace rotor::train {
namespace {

TEST(Retrieval, StringMatchAllIsTheShareOfValuesWritten) {
  EXPECT_EQ(RetrievalMatchFraction(" 1234567.", {"1234567"}), 1.0);
  EXPECT_EQ(RetrievalMatchFraction(" 123456", {"1234567"}), 0.0);
  EXPECT_EQ(RetrievalMatchFraction(" 1, 2 and 4", {"1", "2", "3", "4"}), 0.75);
  EXPECT_EQ(RetrievalMatchFraction(" abcde, Fghij", {"ABCDE", "FGHIJ"}), 1.0);
}

// The overview of every task at a length (extend-report's retrieval.png and
// report.html's chart) pools the tasks measured there; the report's "why
// 0%" hint needs no example answered, not even in part.
TEST(Retrieval, MeanOverTasksAndWhetherAnythingWasAnswered) {
  const std::vector<RetrievalCell> cells = {
      {RetrievalTask::kNiahSingle, 400, 0.0, 10, 2, 2.0},
      {RetrievalTask::kNiahSingle, 400, 1.0, 10, 4, 4.0},
      {RetrievalTask::kNiahSingle, 600, 0.0, 10, 0, 0.0},
      {RetrievalTask::kVariableTracking, 600, 0.0, 10, 6, 6.0}};
  EXPECT_DOUBLE_EQ(*RetrievalMeanAccuracyAt(cells, 400), 0.3);
  EXPECT_DOUBLE_EQ(*RetrievalMeanAccuracyAt(cells, 600), 0.3);
  EXPECT_FALSE(RetrievalMeanAccuracyAt(cells, 500));
  EXPECT_TRUE(AnyRetrievalAnswered(cells));
  std::vector<RetrievalCell> none = cells;
  for (RetrievalCell& cell : none) {
    cell.correct = 0;
    cell.match_sum = 0.0;
  }
  EXPECT_FALSE(AnyRetrievalAnswered(none));
  none[2].match_sum = 0.5;  // one value of a multi-value answer written
  EXPECT_TRUE(AnyRetrievalAnswered(none));
}

TEST(Retrieval, GridCellsPerTaskLengthAndDepth) {
  const ByteTokenizer bytes;
  nn::Transformer model(test::TinyTransformerConfig(1024), 7);
  RetrievalEvalOptions options;
  options.tasks = {RetrievalTask::kNiahSingle,
                   RetrievalTask::kVariableTracking};
  options.lengths = {600, 700};
  options.depths = {0.0, 1.0};
  options.trials = 1;
  const std::vector<RetrievalCell> cells =
      EvaluateRetrieval(model, bytes, options);
  ASSERT_EQ(cells.size(), 8u);
  EXPECT_EQ(cells[0].task, RetrievalTask::kNiahSingle);
  EXPECT_EQ(cells[3].length, 700);
  EXPECT_EQ(cells[3].depth, 1.0);
  EXPECT_EQ(cells[4].task, RetrievalTask::kVariableTracking);
  const std::vector<RetrievalCell> again =
      EvaluateRetrieval(model, bytes, options);
  for (size_t i = 0; i < cells.size(); ++i) {
    EXPECT_EQ(cells[i].trials, 1);
    EXPECT_EQ(cells[i].correct, again[i].correct);
    EXPECT_EQ(cells[i].string_match_all(), again[i].string_match_all());
    EXPECT_GE(cells[i].string_match_all(), 0.0);
    EXPECT_LE(cells[i].string_match_all(), 1.0);
  }
}

}  // namespace
}  // namespace rotor::train
