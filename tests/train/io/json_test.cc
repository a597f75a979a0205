// The JSON reader/writer: round trips, escapes, exact integers, and the
// errors for malformed text.
#include "train/io/json.h"

#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tests/temp_dir.h"

namespace rotor::train {
namespace {

TEST(Json, ParsesEveryKindOfValue) {
  const JsonValue v = ParseJson(
      R"( {"n": null, "t": true, "f": false, "i": -42, "d": 2.5e-3,
           "s": "a\"b\\c\/\n\u00e9\ud83d\ude00", "a": [1, [], {}], "o": {"k": "v"}} )",
      "test");
  EXPECT_TRUE(v.Get("n").is_null());
  EXPECT_TRUE(v.Get("t").AsBool());
  EXPECT_FALSE(v.Get("f").AsBool());
  EXPECT_EQ(v.Get("i").AsInt64(), -42);
  EXPECT_DOUBLE_EQ(v.Get("d").AsDouble(), 0.0025);
  EXPECT_EQ(v.Get("s").AsString(), "a\"b\\c/\n\xC3\xA9\xF0\x9F\x98\x80");
  ASSERT_EQ(v.Get("a").items().size(), 3u);
  EXPECT_TRUE(v.Get("a").items()[1].is_array());
  EXPECT_EQ(v.Get("o").Get("k").AsString(), "v");
  // Members keep their order.
  EXPECT_EQ(v.members()[0].first, "n");
  EXPECT_EQ(v.members()[7].first, "o");
}

TEST(Json, IntegersAreExactUpTo64Bits) {
  const JsonValue v =
      ParseJson("[18446744073709551615, 9007199254740993]", "t");
  EXPECT_EQ(v.items()[0].AsUint64(), 18446744073709551615ull);
  EXPECT_EQ(v.items()[1].AsInt64(), 9007199254740993ll);  // 2^53 + 1
  ROTOR_EXPECT_ERROR(v.items()[0].AsInt64(), "out of range");
  ROTOR_EXPECT_ERROR(ParseJson("-1", "t").AsUint64(), "non-negative", "-1");
  ROTOR_EXPECT_ERROR(ParseJson("1.5", "t").AsInt64(), "integer", "1.5");
}

TEST(Json, DumpsCompactAndPrettyAndRoundTrips) {
  JsonValue v = JsonValue::Object();
  v.Set("b", JsonValue::Array());
  v.Set("a", JsonValue::Number(0.05));
  JsonValue list = JsonValue::Array();
  list.Append(JsonValue::Integer(1));
  list.Append(JsonValue::String("x\ty\x01"));
  v.Set("list", list);
  v.Set("a", JsonValue::Bool(true));  // replaces, keeps position
  EXPECT_EQ(v.Dump(), R"({"b":[],"a":true,"list":[1,"x\ty\u0001"]})");
  EXPECT_EQ(v.Dump(2),
            "{\n  \"b\": [],\n  \"a\": true,\n  \"list\": [\n    1,\n"
            "    \"x\\ty\\u0001\"\n  ]\n}");
  EXPECT_EQ(ParseJson(v.Dump(2), "t").Dump(), v.Dump());
  EXPECT_EQ(JsonValue::Number(0.05).Dump(), "0.05");
  EXPECT_EQ(JsonValue::Number(1.0 / 3.0).Dump(), "0.3333333333333333");
  EXPECT_EQ(ParseJson(JsonValue::Number(1.0 / 3.0).Dump(), "t").AsDouble(),
            1.0 / 3.0);
}

TEST(Json, RejectsMalformedTextNamingSourceAndOffset) {
  ROTOR_EXPECT_ERROR(ParseJson("{\"a\": 1,}", "cfg.json"), "cfg.json", "byte 8",
                     "string key");
  ROTOR_EXPECT_ERROR(ParseJson("{\"a\": 1, \"a\": 2}", "x"), "duplicate key",
                     "\"a\"");
  ROTOR_EXPECT_ERROR(ParseJson("[1, 2", "x"), "']'", "end of the text");
  ROTOR_EXPECT_ERROR(ParseJson("\"abc", "x"), "unterminated string");
  ROTOR_EXPECT_ERROR(ParseJson("\"a\nb\"", "x"), "control character");
  ROTOR_EXPECT_ERROR(ParseJson("\"\\q\"", "x"), "unknown escape");
  ROTOR_EXPECT_ERROR(ParseJson("\"\\ud800\"", "x"), "unpaired surrogate");
  ROTOR_EXPECT_ERROR(ParseJson("01", "x"), "unexpected text after");
  ROTOR_EXPECT_ERROR(ParseJson("-", "x"), "digits");
  ROTOR_EXPECT_ERROR(ParseJson("1.", "x"), "digits after '.'");
  ROTOR_EXPECT_ERROR(ParseJson("tru", "x"), "expected 'true'");
  ROTOR_EXPECT_ERROR(ParseJson("", "x"), "expected a value");
  ROTOR_EXPECT_ERROR(ParseJson(std::string(200, '['), "x"), "nested deeper");
  ROTOR_EXPECT_ERROR(ParseJson("{}", "x").Get("k"), "missing key \"k\"");
  ROTOR_EXPECT_ERROR(ParseJson("[]", "x").AsString(), "expected type string",
                     "got array");
  ROTOR_EXPECT_ERROR(JsonValue::Number(1.0 / 0.0), "finite");
}

}  // namespace
}  // namespace rotor::train
