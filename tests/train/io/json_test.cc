// rotor's layer over nlohmann-json (train/io/json.h): repeated keys and deep
// nesting rejected with the JSON path, errors that name the source, strict
// typed reads, exact 64-bit integers, shortest round-tripping doubles and
// insertion-ordered objects.
#include "train/io/json.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <string>

#include "tests/test_util.h"

namespace rotor::train {
namespace {

TEST(Json, ParsesEveryKindOfValueKeepingMemberOrder) {
  const Json v = ParseJson(
      R"( {"n": null, "t": true, "f": false, "i": -42, "d": 2.5e-3,
           "s": "a\"b\\c\/\n\u00e9\ud83d\ude00", "a": [1, [], {}], "o": {"k": "v"}} )",
      "test");
  EXPECT_TRUE(v["n"].is_null());
  EXPECT_TRUE(JsonMember<bool>(v, "t", "test"));
  EXPECT_FALSE(JsonMember<bool>(v, "f", "test"));
  EXPECT_EQ(JsonMember<int64_t>(v, "i", "test"), -42);
  EXPECT_DOUBLE_EQ(JsonMember<double>(v, "d", "test"), 0.0025);
  EXPECT_EQ(JsonMember<std::string>(v, "s", "test"),
            "a\"b\\c/\n\xC3\xA9\xF0\x9F\x98\x80");
  ASSERT_EQ(v["a"].size(), 3u);
  EXPECT_TRUE(v["a"][1].is_array());
  EXPECT_EQ(JsonMember<std::string>(v["o"], "k", "test"), "v");
  EXPECT_EQ(v.begin().key(), "n");
  EXPECT_EQ((--v.end()).key(), "o");
}

TEST(Json, IntegersAreExactUpTo64BitsAndReadStrictly) {
  const Json v = ParseJson("[18446744073709551615, 9007199254740993]", "t");
  EXPECT_EQ(JsonAs<uint64_t>(v[0], "t"), 18446744073709551615ull);
  EXPECT_EQ(JsonAs<int64_t>(v[1], "t"), 9007199254740993ll);  // 2^53 + 1
  ROTOR_EXPECT_ERROR(JsonAs<int64_t>(v[0], "t"), "out of range");
  ROTOR_EXPECT_ERROR(JsonAs<uint64_t>(ParseJson("-1", "t"), "t"),
                     "non-negative", "-1");
  ROTOR_EXPECT_ERROR(JsonAs<int64_t>(ParseJson("1.5", "t"), "t"), "integer",
                     "1.5");
  ROTOR_EXPECT_ERROR(JsonAs<std::string>(ParseJson("[]", "t"), "where"),
                     "where", "expected a string", "array");
  ROTOR_EXPECT_ERROR(JsonAs<bool>(ParseJson("1", "t"), "t"), "true or false");
}

TEST(Json, DumpsInOrderAndDoublesRoundTrip) {
  Json v = Json::object();
  v["b"] = Json::array();
  v["a"] = 0.05;
  v["list"] = {1, "x\ty\x01"};
  v["a"] = true;  // replaces, keeps position
  EXPECT_EQ(v.dump(), R"({"b":[],"a":true,"list":[1,"x\ty\u0001"]})");
  EXPECT_EQ(ParseJson(v.dump(2), "t").dump(), v.dump());
  EXPECT_EQ(Json(0.05).dump(), "0.05");
  EXPECT_EQ(Json(1.0 / 3.0).dump(), "0.3333333333333333");
  EXPECT_EQ(JsonAs<double>(ParseJson(Json(1.0 / 3.0).dump(), "t"), "t"),
            1.0 / 3.0);
}

TEST(Json, NonFiniteNumbersTravelAsNull) {
  const Json v = {
      {"inf", FiniteOrNull(std::numeric_limits<double>::infinity())},
      {"x", FiniteOrNull(2.5)}};
  EXPECT_EQ(v.dump(), R"({"inf":null,"x":2.5})");
  const Json back = ParseJson(v.dump(), "t");
  EXPECT_EQ(NumberOrFallback(back, "inf", -1.0, "t"), -1.0);
  EXPECT_EQ(NumberOrFallback(back, "x", -1.0, "t"), 2.5);
  EXPECT_EQ(NumberOrFallback(back, "absent", 7.0, "t"), 7.0);
  ROTOR_EXPECT_ERROR(
      NumberOrFallback(ParseJson(R"({"x":"a"})", "t"), "x", 0, "state.json"),
      "state.json", "\"x\"", "expected a number");
}

TEST(Json, RejectsMalformedTextNamingSourcePositionAndPath) {
  ROTOR_EXPECT_ERROR(ParseJson("{\"a\": 1,}", "cfg.json"), "cfg.json",
                     "line 1, column 9");
  ROTOR_EXPECT_ERROR(ParseJson(R"({"a": 1, "a": 2})", "x"),
                     "x: duplicate key \"a\" at /");
  ROTOR_EXPECT_ERROR(
      ParseJson(R"({"t": {"s": [0, {"k": 1, "k": 2}]}})", "meta.json"),
      "meta.json: duplicate key \"k\" at /t/s/1");
  // The same key in different objects is fine.
  EXPECT_NO_THROW(ParseJson(R"([{"k": 1}, {"k": 2}, {"o": {"k": 3}}])", "x"));
  ROTOR_EXPECT_ERROR(ParseJson("[1, 2", "x"), "x:", "end of input");
  ROTOR_EXPECT_ERROR(ParseJson("\"abc", "x"), "x:", "missing closing quote");
  ROTOR_EXPECT_ERROR(ParseJson("\"\\ud800\"", "x"), "surrogate");
  ROTOR_EXPECT_ERROR(ParseJson("01", "x"), "x:", "parse error");
  ROTOR_EXPECT_ERROR(ParseJson("", "x"), "x:", "parse error");
  ROTOR_EXPECT_ERROR(ParseJson(std::string(200, '['), "x"), "nested deeper");
  ROTOR_EXPECT_ERROR(JsonMember<int64_t>(ParseJson("{}", "x"), "k", "x"),
                     "x: missing key \"k\"");
  ROTOR_EXPECT_ERROR(JsonMember<int64_t>(ParseJson("[]", "x"), "k", "x"),
                     "expected an object");
}

// Parsing is linear in the number of keys: 100k keys in one object (a
// hostile safetensors header) once took over a minute. Linear parsing takes
// tens of milliseconds; the bound is generous for a loaded machine.
TEST(Json, ParsesAHundredThousandKeysInLinearTime) {
  std::string text = "{";
  for (int i = 0; i < 100'000; ++i) {
    text += (i ? ",\"key" : "\"key") + std::to_string(i) +
            "\":" + std::to_string(i);
  }
  text += "}";
  const auto start = std::chrono::steady_clock::now();
  const Json parsed = ParseJson(text, "many.json");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_LT(seconds, 2.0);
  ASSERT_EQ(parsed.size(), 100'000u);
  EXPECT_EQ(parsed.begin().key(), "key0");
  EXPECT_EQ(JsonMember<int64_t>(parsed, "key99999", "many.json"), 99'999);
  // A repeat of the first key is still found among them.
  ROTOR_EXPECT_ERROR(
      ParseJson(text.substr(0, text.size() - 1) + ",\"key0\":1}", "many.json"),
      "many.json: duplicate key \"key0\" at /");
}

}  // namespace
}  // namespace rotor::train
