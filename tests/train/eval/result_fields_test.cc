// The field tables of the evaluation's records (length_eval.h,
// passkey_eval.h, retrieval.h) through RecordJson: the stored form of the
// report's results files and the shown form of rotor eval --json, each
// with its keys in the order those files and that output had before the
// tables, and the stored form reads back.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tests/test_util.h"
#include "train/eval/length_eval.h"
#include "train/eval/passkey_eval.h"
#include "train/eval/retrieval.h"
#include "train/io/json.h"

namespace rotor::train {
namespace {

TEST(ResultFields, LengthPerplexity) {
  const LengthPerplexity r{128, 1.25, 3.4903429574618414, 640};
  const std::string both =
      R"({"length":128,"tokens":640,"loss":1.25,"perplexity":3.4903429574618414})";
  EXPECT_EQ(RecordJson(r, RecordForm::kStored).dump(), both);
  EXPECT_EQ(RecordJson(r, RecordForm::kShown).dump(), both);
  const LengthPerplexity back =
      RecordFromJson<LengthPerplexity>(Json::parse(both), "f.json");
  EXPECT_EQ(back.length, 128);
  EXPECT_EQ(back.loss, 1.25);
  EXPECT_EQ(back.perplexity, 3.4903429574618414);
  EXPECT_EQ(back.tokens, 640);
  // A perplexity past a double's range is null, as FiniteOrNull writes it.
  const LengthPerplexity overflow{8, 800.0,
                                  std::numeric_limits<double>::infinity(), 8};
  EXPECT_EQ(RecordJson(overflow, RecordForm::kShown).dump(),
            R"({"length":8,"tokens":8,"loss":800.0,"perplexity":null})");
  ROTOR_EXPECT_ERROR(
      RecordFromJson<LengthPerplexity>(
          Json::parse(R"({"length":8,"loss":1.0,"perplexity":2.0})"), "f.json"),
      "f.json", "tokens");
}

TEST(ResultFields, PasskeyCell) {
  PasskeyCell c;
  c.length = 128;
  c.depth = 0.25;
  c.correct = 3;
  c.digits_right = 17;
  c.trials = 4;
  EXPECT_EQ(RecordJson(c, RecordForm::kStored).dump(),
            R"({"length":128,"depth":0.25,"trials":4,"correct":3,)"
            R"("digits_right":17,"num_digits":5})");
  EXPECT_EQ(RecordJson(c, RecordForm::kShown).dump(),
            R"({"length":128,"depth":0.25,"trials":4,"correct":3,)"
            R"("accuracy":0.75,"digit_accuracy":0.85})");
  // The key order the results files had before the table reads the same.
  const PasskeyCell back = RecordFromJson<PasskeyCell>(
      Json::parse(R"({"length":128,"depth":0.25,"correct":3,)"
                  R"("digits_right":17,"num_digits":6,"trials":4})"),
      "f.json");
  EXPECT_EQ(back.length, 128);
  EXPECT_EQ(back.depth, 0.25);
  EXPECT_EQ(back.correct, 3);
  EXPECT_EQ(back.digits_right, 17);
  EXPECT_EQ(back.num_digits, 6);
  EXPECT_EQ(back.trials, 4);
}

TEST(ResultFields, RetrievalCell) {
  RetrievalCell c;
  c.task = RetrievalTask::kVariableTracking;
  c.length = 512;
  c.depth = 1.0;
  c.trials = 2;
  c.correct = 1;
  c.match_sum = 1.5;
  EXPECT_EQ(RecordJson(c, RecordForm::kStored).dump(),
            R"({"task":"variable_tracking","length":512,"depth":1.0,)"
            R"("trials":2,"correct":1,"match_sum":1.5})");
  EXPECT_EQ(RecordJson(c, RecordForm::kShown).dump(),
            R"({"task":"variable_tracking","length":512,"depth":1.0,)"
            R"("trials":2,"correct":1,"accuracy":0.5,)"
            R"("string_match_all":0.75})");
  const RetrievalCell back = RecordFromJson<RetrievalCell>(
      Json::parse(R"({"task":"niah_multikey","length":512,"depth":1.0,)"
                  R"("correct":1,"match_sum":1.5,"trials":2})"),
      "f.json");
  EXPECT_EQ(back.task, RetrievalTask::kNiahMultikey);
  EXPECT_EQ(back.match_sum, 1.5);
  EXPECT_EQ(back.trials, 2);
  ROTOR_EXPECT_ERROR(
      RecordFromJson<RetrievalCell>(
          Json::parse(R"({"task":"niah_double","length":512,"depth":1.0,)"
                      R"("correct":1,"match_sum":1.5,"trials":2})"),
          "f.json"),
      "f.json: " + RefuseRetrievalTask("niah_double"));
}

}  // namespace
}  // namespace rotor::train
