// The stored measurements of rotor extend-report: a variant's JSON reads
// back as written, a missing file is no result, and results.json holds
// every variant.
#include "train/extend/results.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "core/limits.h"
#include "tests/temp_dir.h"
#include "tests/test_util.h"
#include "train/io/atomic_file.h"
#include "train/io/json.h"

namespace rotor::train {
namespace {

VariantResult Example() {
  VariantResult r;
  r.method = RopeType::kYarn;
  r.finetuned = true;
  r.perplexity = {{128, 1.25, 3.4903429574618414, 640}};
  PasskeyCell cell;
  cell.length = 128;
  cell.depth = 0.25;
  cell.correct = 3;
  cell.digits_right = 17;
  cell.trials = 4;
  r.passkey = {cell};
  r.eval_seconds = 1.5;
  r.finetune_seconds = 12.25;
  return r;
}

TEST(VariantResult, JsonRoundTripAndFiles) {
  test::TempDir dir;
  const std::string path = VariantResultPath(dir.path(), RopeType::kYarn, true);
  EXPECT_EQ(path, dir.Path("results/yarn-finetuned.json"));
  EXPECT_FALSE(LoadVariantResult(path).has_value());
  std::filesystem::create_directories(dir.Path("results"));
  SaveVariantResult(path, Example());
  const std::optional<VariantResult> back = LoadVariantResult(path);
  ASSERT_TRUE(back.has_value());
  const std::string written = ReadFile(path);
  SaveVariantResult(path, *back);
  EXPECT_EQ(ReadFile(path), written);  // reads back as written
  EXPECT_EQ(back->perplexity[0].perplexity, 3.4903429574618414);
  EXPECT_EQ(back->passkey[0].digits_right, 17);

  Json unknown = ParseJson(written, path);
  unknown["method"] = "rope9";
  WriteFileAtomically(path, unknown.dump());
  ROTOR_EXPECT_ERROR(LoadVariantResult(path),
                     path + ": unknown method \"rope9\"");
}

// The seconds of each part of an evaluation read back; a result without
// them (written before the report timed parts) writes no key; a part of
// another name is refused naming it.
TEST(VariantResult, EvalPartSecondsReadBack) {
  test::TempDir dir;
  const std::string path = dir.Path("yarn-finetuned.json");
  VariantResult r = Example();
  r.eval_part_seconds = {{EvalPart::kPerplexity, 0.25},
                         {EvalPart::kRetrieval, 1.125}};
  SaveVariantResult(path, r);
  const std::optional<VariantResult> back = LoadVariantResult(path);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->eval_part_seconds, r.eval_part_seconds);
  Json json = ParseJson(ReadFile(path), path);
  EXPECT_EQ(json["eval_part_seconds"],
            ParseJson(R"({"perplexity": 0.25, "retrieval": 1.125})", "want"));

  SaveVariantResult(path, Example());
  EXPECT_EQ(ReadFile(path).find("eval_part_seconds"), std::string::npos);

  json["eval_part_seconds"]["prefill"] = 2.0;
  WriteFileAtomically(path, json.dump());
  ROTOR_EXPECT_ERROR(LoadVariantResult(path),
                     path + ": eval_part_seconds: unknown part \"prefill\"");
  json["eval_part_seconds"] = Json::object({{"passkey", "slow"}});
  WriteFileAtomically(path, json.dump());
  ROTOR_EXPECT_ERROR(LoadVariantResult(path), "eval_part_seconds.passkey");
}

// A variant whose loss overflows exp has an infinite perplexity, which
// JSON holds as null: the file reads back with it, so a rerun reuses it.
TEST(VariantResult, InfinitePerplexityReadsBack) {
  test::TempDir dir;
  const std::string path = dir.Path("linear-zeroshot.json");
  VariantResult r = Example();
  r.perplexity.push_back(
      {512, 800.0, std::numeric_limits<double>::infinity(), 640});
  SaveVariantResult(path, r);
  EXPECT_NE(ReadFile(path).find("\"perplexity\": null"), std::string::npos);
  const std::optional<VariantResult> back = LoadVariantResult(path);
  ASSERT_TRUE(back.has_value());
  ASSERT_EQ(back->perplexity.size(), 2u);
  EXPECT_EQ(back->perplexity[1].loss, 800.0);
  EXPECT_EQ(back->perplexity[1].perplexity,
            std::numeric_limits<double>::infinity());
  EXPECT_EQ(back->perplexity[0].perplexity, 3.4903429574618414);
}

// A variant that diverged has a NaN loss and perplexity: the file keeps
// them as "nan", and a rerun reads NaN back, not the +infinity of a loss
// that only overflowed exp.
TEST(VariantResult, NanLossReadsBackAsNan) {
  test::TempDir dir;
  const std::string path = dir.Path("linear-zeroshot.json");
  VariantResult r = Example();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  r.perplexity.push_back({512, nan, nan, 640});
  SaveVariantResult(path, r);
  EXPECT_NE(ReadFile(path).find("\"loss\": \"nan\""), std::string::npos);
  const std::optional<VariantResult> back = LoadVariantResult(path);
  ASSERT_TRUE(back.has_value());
  ASSERT_EQ(back->perplexity.size(), 2u);
  EXPECT_TRUE(std::isnan(back->perplexity[1].loss));
  EXPECT_TRUE(std::isnan(back->perplexity[1].perplexity));
  EXPECT_EQ(back->perplexity[1].tokens, 640);
}

// Each record's keys in the order results files have had since they began
// (the count last), which scripts reading them may rely on.
TEST(VariantResult, StoresEachRecordsKeysInTheirFirstOrder) {
  test::TempDir dir;
  const std::string path = dir.Path("yarn-finetuned.json");
  VariantResult r = Example();
  RetrievalCell cell;
  cell.task = RetrievalTask::kNiahSingle;
  cell.length = 128;
  cell.depth = 0.5;
  cell.trials = 2;
  cell.correct = 1;
  cell.match_sum = 1.5;
  r.retrieval = {cell};
  SaveVariantResult(path, r);
  const Json json = ParseJson(ReadFile(path), path);
  const auto keys = [](const Json& object) {
    std::vector<std::string> names;
    for (const auto& item : object.items()) names.push_back(item.key());
    return names;
  };
  EXPECT_EQ(
      keys(json["perplexity"][0]),
      (std::vector<std::string>{"length", "loss", "perplexity", "tokens"}));
  EXPECT_EQ(keys(json["passkey"][0]),
            (std::vector<std::string>{"length", "depth", "correct",
                                      "digits_right", "num_digits", "trials"}));
  EXPECT_EQ(keys(json["retrieval"][0]),
            (std::vector<std::string>{"task", "length", "depth", "correct",
                                      "match_sum", "trials"}));
}

// A file as rotor wrote it before the stricter reader, with every value
// at its row's limits, reads; a value one past a limit is refused naming
// the file, the record's JSON path, the key, the limit and the value.
TEST(VariantResult, ReadsValuesAtTheLimitsAndRefusesOnePast) {
  test::TempDir dir;
  const std::string path = dir.Path("yarn-finetuned.json");
  const int64_t max_int = std::numeric_limits<int64_t>::max();
  const int64_t trials = limits::kMaxEvalTrials;
  Json file = {{"method", "yarn"}, {"finetuned", true}};
  file["perplexity"] = Json::array(
      {Json{{"length", 1}, {"loss", 0.0}, {"perplexity", 1.0}, {"tokens", 1}},
       Json{{"length", limits::kMaxPositions},
            {"loss", std::numeric_limits<double>::max()},
            {"perplexity", nullptr},
            {"tokens", max_int}}});
  file["passkey"] = Json::array({Json{{"length", 1},
                                      {"depth", 0.0},
                                      {"correct", 0},
                                      {"digits_right", 0},
                                      {"num_digits", 1},
                                      {"trials", 1}},
                                 Json{{"length", limits::kMaxPositions},
                                      {"depth", 1.0},
                                      {"correct", trials},
                                      {"digits_right", max_int},
                                      {"num_digits", kPasskeyMaxDigits},
                                      {"trials", trials}}});
  file["retrieval"] =
      Json::array({Json{{"task", "niah_single"},
                        {"length", 1},
                        {"depth", 0.0},
                        {"correct", 0},
                        {"match_sum", 0.0},
                        {"trials", 1}},
                   Json{{"task", "variable_tracking"},
                        {"length", limits::kMaxPositions},
                        {"depth", 1.0},
                        {"correct", trials},
                        {"match_sum", static_cast<double>(trials)},
                        {"trials", trials}}});
  file["eval_seconds"] = 1.5;
  file["finetune_seconds"] = 0.0;
  WriteFileAtomically(path, file.dump(2));
  const std::optional<VariantResult> back = LoadVariantResult(path);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->perplexity[1].length, limits::kMaxPositions);
  EXPECT_EQ(back->perplexity[1].tokens, max_int);
  EXPECT_EQ(back->perplexity[1].perplexity,
            std::numeric_limits<double>::infinity());
  EXPECT_EQ(back->passkey[1].digits_right, max_int);
  EXPECT_EQ(back->passkey[1].num_digits, kPasskeyMaxDigits);
  EXPECT_EQ(back->retrieval[1].match_sum, static_cast<double>(trials));

  // One past each limit: {section, record, key, value, message's end}.
  struct Past {
    const char* section;
    int record;
    const char* key;
    Json value;
    std::string says;
  };
  const std::string positions =
      StrCat("must be <= ", limits::kMaxPositions, " (rotor's limit), got ",
             limits::kMaxPositions + 1);
  const std::string too_many =
      StrCat("must be <= ", trials, " (rotor's limit), got ", trials + 1);
  const double above_one = std::nextafter(1.0, 2.0);
  const std::vector<Past> cases = {
      {"perplexity", 0, "length", 0, "must be >= 1, got 0"},
      {"perplexity", 1, "length", limits::kMaxPositions + 1, positions},
      {"perplexity", 0, "loss", -5e-324, "must be >= 0, got -5e-324"},
      {"perplexity", 0, "perplexity", std::nextafter(1.0, 0.0),
       "must be >= 1, got 0.9999999999999999"},
      {"perplexity", 0, "tokens", 0, "must be >= 1, got 0"},
      {"passkey", 0, "length", 0, "must be >= 1, got 0"},
      {"passkey", 1, "length", limits::kMaxPositions + 1, positions},
      {"passkey", 0, "depth", -5e-324, "must be in [0, 1], got -5e-324"},
      {"passkey", 1, "depth", above_one,
       "must be in [0, 1], got 1.0000000000000002"},
      {"passkey", 0, "correct", -1, "must be >= 0, got -1"},
      {"passkey", 1, "correct", trials + 1, too_many},
      {"passkey", 0, "digits_right", -1, "must be >= 0, got -1"},
      {"passkey", 0, "num_digits", 0, "must be >= 1, got 0"},
      {"passkey", 1, "num_digits", kPasskeyMaxDigits + 1,
       StrCat("must be <= ", kPasskeyMaxDigits, " (rotor's limit), got ",
              kPasskeyMaxDigits + 1)},
      {"passkey", 0, "trials", 0, "must be >= 1, got 0"},
      {"passkey", 1, "trials", trials + 1, too_many},
      {"retrieval", 0, "length", 0, "must be >= 1, got 0"},
      {"retrieval", 1, "length", limits::kMaxPositions + 1, positions},
      {"retrieval", 0, "depth", -5e-324, "must be in [0, 1], got -5e-324"},
      {"retrieval", 1, "depth", above_one,
       "must be in [0, 1], got 1.0000000000000002"},
      {"retrieval", 0, "correct", -1, "must be >= 0, got -1"},
      {"retrieval", 1, "correct", trials + 1, too_many},
      {"retrieval", 0, "match_sum", -5e-324,
       StrCat("must be in [0, ", trials, "], got -5e-324")},
      {"retrieval", 1, "match_sum", std::nextafter(trials + 0.0, 1e9),
       StrCat("must be in [0, ", trials, "], got 16384.000000000004")},
      {"retrieval", 0, "trials", 0, "must be >= 1, got 0"},
      {"retrieval", 1, "trials", trials + 1, too_many},
  };
  for (const Past& c : cases) {
    Json past = file;
    past[c.section][c.record][c.key] = c.value;
    WriteFileAtomically(path, past.dump(2));
    ROTOR_EXPECT_ERROR(LoadVariantResult(path),
                       StrCat(path, ": /", c.section, "/", c.record, ": \"",
                              c.key, "\": ", c.says));
  }
}

TEST(VariantResult, LookUps) {
  const std::vector<VariantResult> results = {Example()};
  EXPECT_EQ(PerplexityAt(results[0], 128)->tokens, 640);
  EXPECT_EQ(PerplexityAt(results[0], 256), nullptr);
  EXPECT_TRUE(HasPasskeyLength(results[0], 128));
  EXPECT_FALSE(HasPasskeyLength(results[0], 256));
  EXPECT_EQ(FindVariant(results, RopeType::kYarn, true), &results[0]);
  EXPECT_EQ(FindVariant(results, RopeType::kYarn, false), nullptr);
  EXPECT_EQ(VariantName(RopeType::kLongRope, false), "longrope-zeroshot");
  EXPECT_EQ(FindVariant(results, RopeType::kYarn, true, /*lora=*/true),
            nullptr);
}

TEST(VariantResult, LoraVariantsHaveTheirOwnFiles) {
  test::TempDir dir;
  const std::string path =
      VariantResultPath(dir.path(), RopeType::kYarn, true, /*lora=*/true);
  EXPECT_EQ(path, dir.Path("results/yarn-finetuned-lora.json"));
  std::filesystem::create_directories(dir.Path("results"));
  VariantResult lora = Example();
  lora.lora = true;
  SaveVariantResult(path, lora);
  const std::optional<VariantResult> back = LoadVariantResult(path);
  ASSERT_TRUE(back.has_value());
  EXPECT_TRUE(back->lora);
  // Files of full fine-tunes have no "lora" key and read as full ones.
  SaveVariantResult(path, Example());
  EXPECT_EQ(ReadFile(path).find("lora"), std::string::npos);
  EXPECT_FALSE(LoadVariantResult(path)->lora);
  const std::vector<VariantResult> results = {Example(), lora};
  EXPECT_EQ(FindVariant(results, RopeType::kYarn, true, true), &results[1]);
  EXPECT_EQ(FindVariant(results, RopeType::kYarn, true), &results[0]);
}

// A variant file as rotor wrote it before the records had field tables
// (each record's keys in another order) and before the report had
// retrieval tasks or inputs reads as it did.
TEST(VariantResult, ReadsFilesOfEarlierVersions) {
  test::TempDir dir;
  const std::string path = dir.Write("results/yarn-finetuned.json",
                                     R"({"method": "yarn", "finetuned": true,
          "perplexity": [{"length": 128, "loss": 1.25,
                          "perplexity": 3.4903429574618414, "tokens": 640}],
          "passkey": [{"length": 128, "depth": 0.25, "correct": 3,
                       "digits_right": 17, "num_digits": 5, "trials": 4}],
          "eval_seconds": 1.5, "finetune_seconds": 12.25})");
  const std::optional<VariantResult> back = LoadVariantResult(path);
  ASSERT_TRUE(back.has_value());
  const VariantResult want = Example();
  EXPECT_EQ(back->method, want.method);
  EXPECT_TRUE(back->finetuned);
  ASSERT_EQ(back->perplexity.size(), 1u);
  EXPECT_EQ(back->perplexity[0].tokens, 640);
  EXPECT_EQ(back->perplexity[0].perplexity, 3.4903429574618414);
  ASSERT_EQ(back->passkey.size(), 1u);
  EXPECT_EQ(back->passkey[0].correct, 3);
  EXPECT_EQ(back->passkey[0].trials, 4);
  EXPECT_EQ(back->passkey[0].num_digits, 5);
  EXPECT_TRUE(back->retrieval.empty());
  EXPECT_TRUE(back->inputs.empty());
  EXPECT_TRUE(back->eval_part_seconds.empty());
  // Written again, it is what Example() writes.
  SaveVariantResult(path, *back);
  const std::string again = ReadFile(path);
  SaveVariantResult(path, want);
  EXPECT_EQ(again, ReadFile(path));
}

TEST(SaveAllResults, WritesEveryVariant) {
  test::TempDir dir;
  SaveAllResults(dir.path(), "runs/base/checkpoints/step_00000003", 32, 4.0,
                 {Example(), Example()});
  const Json all =
      ParseJson(ReadFile(dir.Path("results.json")), "results.json");
  EXPECT_EQ(all["base_checkpoint"], "runs/base/checkpoints/step_00000003");
  EXPECT_EQ(all["base_length"], 32);
  EXPECT_EQ(all["factor"], 4.0);
  ASSERT_EQ(all["variants"].size(), 2u);
  test::TempDir one;
  std::filesystem::create_directories(one.Path("results"));
  const std::string path = VariantResultPath(one.path(), RopeType::kYarn, true);
  SaveVariantResult(path, Example());
  EXPECT_EQ(all["variants"][1], ParseJson(ReadFile(path), path));
}

TEST(VariantResult, KeepsWhatItWasComputedFrom) {
  test::TempDir dir;
  std::filesystem::create_directories(dir.Path("results"));
  const std::string path = VariantResultPath(dir.path(), RopeType::kYarn, true);
  VariantResult result = Example();
  result.inputs = {{"base", "xxh3-64:1"}, {"eval", "xxh3-64:2"}};
  SaveVariantResult(path, result);
  EXPECT_EQ(LoadVariantResult(path)->inputs, result.inputs);
  EXPECT_EQ(InputsDifferences(result.inputs, result.inputs), "");
  EXPECT_EQ(InputsDifferences({{"base", "xxh3-64:1"}},
                              {{"base", "xxh3-64:3"}, {"eval", "xxh3-64:2"}}),
            "base, eval");  // a changed part and a missing one
  SaveInputsRecord(dir.Path("run"), result.inputs);
  EXPECT_EQ(LoadInputsRecord(dir.Path("run")), result.inputs);
  EXPECT_TRUE(LoadInputsRecord(dir.Path("none")).empty());
}

}  // namespace
}  // namespace rotor::train
