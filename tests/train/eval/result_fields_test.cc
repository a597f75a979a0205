// The field tables of the evaluation's records (length_eval.h,
// passkey_eval.h, retrieval.h) through RecordJson: the stored form of the
// report's results files and the shown form of rotor eval --json, each
// with its keys in the order those files and that output had before the
// tables, and the stored form reads back.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/fields.h"
#include "tests/test_util.h"
#include "train/eval/length_eval.h"
#include "train/eval/passkey_eval.h"
#include "train/eval/retrieval.h"
#include "train/io/json.h"

namespace rotor::train {
namespace {

// Reads `json` as a Record from "f.json".
template <typename Record>
Record Read(const std::string& json) {
  return RecordFromJson<Record>(Json::parse(json), "f.json");
}

// `r` as `stored` (the results files: the count last, as they always had
// it) and `shown` (rotor eval --json), and the stored form read back.
LengthPerplexity BothFormsBack(LengthPerplexity r, const std::string& stored,
                               const std::string& shown) {
  EXPECT_EQ(RecordJson(r, RecordForm::kStored).dump(), stored);
  EXPECT_EQ(RecordJson(r, RecordForm::kShown).dump(), shown);
  return Read<LengthPerplexity>(stored);
}

TEST(ResultFields, LengthPerplexity) {
  const LengthPerplexity r{128, 1.25, 3.4903429574618414, 640};
  const LengthPerplexity back = BothFormsBack(
      r,
      R"({"length":128,"loss":1.25,"perplexity":3.4903429574618414,"tokens":640})",
      R"({"length":128,"tokens":640,"loss":1.25,"perplexity":3.4903429574618414})");
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

// An infinite perplexity (or loss) is null in both forms and reads back as
// +infinity.
TEST(ResultFields, NullReadsAsInfinity) {
  const double inf = std::numeric_limits<double>::infinity();
  const LengthPerplexity back =
      BothFormsBack({8, inf, inf, 8},
                    R"({"length":8,"loss":null,"perplexity":null,"tokens":8})",
                    R"({"length":8,"tokens":8,"loss":null,"perplexity":null})");
  EXPECT_EQ(back.loss, inf);
  EXPECT_EQ(back.perplexity, inf);
  EXPECT_EQ(back.tokens, 8);
  // A missing key is still missing, not infinite.
  ROTOR_EXPECT_ERROR(
      RecordFromJson<LengthPerplexity>(
          Json::parse(R"({"length":8,"tokens":8,"loss":1.0})"), "f.json"),
      "f.json: missing key \"perplexity\"");
}

// A NaN loss (a model that diverged) is "nan" in the results files and
// reads back as NaN, not as the +infinity that null stands for; rotor eval
// --json shows it as null, as it shows every number that is not finite.
TEST(ResultFields, NanIsKeptApartFromInfinity) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const LengthPerplexity back = BothFormsBack(
      {8, nan, nan, 8},
      R"({"length":8,"loss":"nan","perplexity":"nan","tokens":8})",
      R"({"length":8,"tokens":8,"loss":null,"perplexity":null})");
  EXPECT_TRUE(std::isnan(back.loss));
  EXPECT_TRUE(std::isnan(back.perplexity));
  // A finite loss with an infinite perplexity keeps both.
  const double inf = std::numeric_limits<double>::infinity();
  const LengthPerplexity overflow = Read<LengthPerplexity>(
      RecordJson(LengthPerplexity{8, 800.0, inf, 8}, RecordForm::kStored)
          .dump());
  EXPECT_EQ(overflow.loss, 800.0);
  EXPECT_EQ(overflow.perplexity, inf);
  // -infinity is named too, and refused by the check like any value below
  // the bound.
  EXPECT_EQ(
      RecordJson(LengthPerplexity{8, -inf, 1.0, 8}, RecordForm::kStored).dump(),
      R"({"length":8,"loss":"-inf","perplexity":1.0,"tokens":8})");
  ROTOR_EXPECT_ERROR(
      Read<LengthPerplexity>(
          R"({"length":8,"loss":"-inf","perplexity":1.0,"tokens":8})"),
      "f.json: \"loss\": must be >= 0, got -inf");
  ROTOR_EXPECT_ERROR(
      Read<LengthPerplexity>(
          R"({"length":8,"loss":"NaN","perplexity":1.0,"tokens":8})"),
      "f.json: \"loss\": expected a number (null: +infinity; \"nan\", "
      "\"-inf\"), got \"NaN\"");
}

// A value outside its row's check is refused as a config reader refuses
// it: the file, the key, the bound and the value.
TEST(ResultFields, ValuesOutsideTheirChecks) {
  const std::string ppl = R"(,"tokens":8,"perplexity":2.0})";
  ROTOR_EXPECT_ERROR(Read<LengthPerplexity>(R"({"length":0,"loss":1.0)" + ppl),
                     "f.json: \"length\": must be >= 1, got 0");
  ROTOR_EXPECT_ERROR(Read<LengthPerplexity>(R"({"length":8,"loss":-1.0)" + ppl),
                     "f.json: \"loss\": must be >= 0, got -1.0");
  ROTOR_EXPECT_ERROR(Read<LengthPerplexity>(R"({"length":8,"loss":"x")" + ppl),
                     "f.json: \"loss\": expected a number (null: +infinity; "
                     "\"nan\", \"-inf\"), got \"x\"");
  ROTOR_EXPECT_ERROR(Read<LengthPerplexity>(R"({"length":8,"loss":true)" + ppl),
                     "f.json: \"loss\": expected a number, got boolean");
  ROTOR_EXPECT_ERROR(
      Read<LengthPerplexity>(
          R"({"length":8,"tokens":8,"loss":1.0,"perplexity":0.5})"),
      "f.json: \"perplexity\": must be >= 1, got 0.5");
  const std::string counts =
      R"("trials":4,"correct":3,"digits_right":17,"num_digits":)";
  ROTOR_EXPECT_ERROR(
      Read<PasskeyCell>(R"({"length":128,"depth":1.5,)" + counts + "5}"),
      "f.json: \"depth\": must be in [0, 1], got 1.5");
  ROTOR_EXPECT_ERROR(
      Read<PasskeyCell>(R"({"length":128,"depth":1,)" + counts + "19}"),
      "f.json: \"num_digits\": must be <= 18 (rotor's limit), got 19");
  ROTOR_EXPECT_ERROR(
      Read<RetrievalCell>(R"({"task":"niah_single","length":512,"depth":1.0,)"
                          R"("trials":0,"correct":0,"match_sum":0})"),
      "f.json: \"trials\": must be >= 1, got 0");
}

// Every key of each record says what its number is (what rotor keys
// shows for a config key).
TEST(ResultFields, EveryKeyHasHelp) {
  std::vector<KeyPaths::Entry> entries = KeyPathsOf<LengthPerplexity>();
  for (const auto& more :
       {KeyPathsOf<PasskeyCell>(), KeyPathsOf<RetrievalCell>()}) {
    entries.insert(entries.end(), more.begin(), more.end());
  }
  EXPECT_EQ(entries.size(), 4u + 8u + 8u);
  for (const KeyPaths::Entry& entry : entries) {
    EXPECT_GT(std::string(entry.help).size(), 5u) << entry.path;
  }
}

TEST(ResultFields, PasskeyCell) {
  PasskeyCell c;
  c.length = 128;
  c.depth = 0.25;
  c.correct = 3;
  c.digits_right = 17;
  c.trials = 4;
  EXPECT_EQ(RecordJson(c, RecordForm::kStored).dump(),
            R"({"length":128,"depth":0.25,"correct":3,)"
            R"("digits_right":17,"num_digits":5,"trials":4})");
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
            R"("correct":1,"match_sum":1.5,"trials":2})");
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
