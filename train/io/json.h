// JSON for rotor's own files (safetensors headers, meta.json of a prepared
// data set, trainer_state.json, metrics.jsonl, the report's results), on
// nlohmann-json (Debian's nlohmann-json3-dev). This header adds what rotor
// needs on top of the library and nothing else:
//
//   Json meta = Json::object();          // nlohmann::ordered_json: objects
//   meta["tokens"] = 1234;               // keep insertion order, so files
//   std::string text = meta.dump(2);     // rotor writes are stable to diff
//   Json back = ParseJson(text, "meta.json");
//   uint64_t tokens = JsonMember<uint64_t>(back, "tokens", "meta.json");
//
// - ParseJson rejects repeated keys (the library would keep the last one
//   silently) and nesting deeper than kMaxJsonDepth, and its errors name the
//   source, the position and the JSON path.
// - JsonMember / JsonAs read a value of one type strictly (no 1.5 -> 1, no
//   -1 -> uint64_t), with errors naming the source and the key.
// Integers keep all 64 bits; doubles are written with the shortest text that
// reads back to the same double.
//
// Include this header from .cc files only: nlohmann-json is a private
// dependency of rotor_train.
#ifndef ROTOR_TRAIN_IO_JSON_H_
#define ROTOR_TRAIN_IO_JSON_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "core/fields.h"

namespace rotor::train {

using Json = nlohmann::ordered_json;

inline constexpr int kMaxJsonDepth = 128;

// Parses one JSON document (surrounded by optional whitespace). `source`
// names the text in error messages, e.g. a file path:
//   "meta.json: invalid JSON: parse error at line 1, column 9: ..."
//   "meta.json: duplicate key \"a\" at /train"
Json ParseJson(std::string_view text, std::string_view source);

// `value` as T: bool, int64_t, uint64_t, double or std::string. Throws
// rotor::Error naming `where` when the type does not fit (for the integer
// types also a fraction, a sign or a range that does not fit).
template <typename T>
T JsonAs(const Json& value, std::string_view where);

// The member `key` of object `object` as T, as JsonAs; a missing key (or an
// `object` that is no object) throws naming `where` and the key.
template <typename T>
T JsonMember(const Json& object, std::string_view key, std::string_view where);

// Whether `text` is valid UTF-8, as JSON strings must be: dump() throws on
// any other string. ShowAsJson quotes a string for a message, with each
// invalid byte shown as U+FFFD.
bool IsValidUtf8(std::string_view text);
std::string ShowAsJson(std::string_view text);

// A double that may be NaN or infinite, for output that shows numbers
// (rotor eval --json, rotor score --json, metrics.jsonl) or whose reader
// takes every non-finite value alike: JSON has neither NaN nor infinity, so
// both become null, and NumberOrFallback reads a null (or missing) member
// back as the fallback (trainer_state.json: each member's "not measured").
// Files that must read a NaN back as NaN write RecordJson's stored form.
Json FiniteOrNull(double value);
double NumberOrFallback(const Json& object, std::string_view key,
                        double fallback, std::string_view where);

// The name of a value that is not finite: "nan", "inf" or "-inf"
// (metrics.jsonl's "non_finite", the results files' NaN and -infinity);
// NonFiniteFromName reads one back (nullopt for any other text).
const char* NonFiniteName(double value);
std::optional<double> NonFiniteFromName(std::string_view name);

// A record as a JSON object through its field table, the function
//   template <typename Visitor> void VisitFields(Visitor& v, Record& r)
// beside the record (e.g. train/eval/passkey_eval.h), whose rows are a
// config table's (core/fields.h), in the order of the object's keys:
//   v(Key{name, help}, member, check)                in both forms;
//   v(Key{name, help}, member, check, StoredOnly{})  in the stored form only;
//   v(Key{name, help}, figure, check, ShownOnly{})   a figure computed from
//                                                    the members, in the
//                                                    shown form only.
//   v(Key{name, help}, member, check, StoredLast{})   in both forms, and
//                                                    last in the stored one.
// The checks are field::Int, field::Real, field::RealAtLeast and
// field::Choice (an enum by its name). The stored form is a file rotor
// reads back (RecordFromJson: the JsonMember errors, a check's "WHERE:
// \"KEY\": must be >= 1, got 0", and for a name that is none "WHERE: " +
// the Choice's refusal); the shown form is what a reader of the figures
// wants (rotor eval --json). A RealAtLeast value that is not finite is, in
// the stored form, null for +infinity (a perplexity past a double's range)
// and NonFiniteName's "nan" or "-inf" otherwise (a model that diverged),
// each read back as what it was; in the shown form, null for all three
// (FiniteOrNull), as rotor eval --json shows every number.
enum class RecordForm { kStored, kShown };

namespace json_internal {

// Whether a row marked with `Extra` is in `form`.
template <typename... Extra>
bool InForm(RecordForm form) {
  if constexpr ((std::is_same_v<Extra, StoredOnly> || ...)) {
    return form == RecordForm::kStored;
  } else if constexpr ((std::is_same_v<Extra, ShownOnly> || ...)) {
    return form == RecordForm::kShown;
  } else {
    return true;
  }
}

// Writes the rows in `form`: with `last` false the rows that come first,
// with `last` true the StoredLast rows of the stored form.
class RecordWriter {
 public:
  RecordWriter(Json& object, RecordForm form, bool last)
      : object_(object), form_(form), last_(last) {}
  template <typename T, typename Check, typename... Extra>
  void operator()(const Key& key, const T& value, const Check& check,
                  const Extra&...) {
    const bool stored_last =
        form_ == RecordForm::kStored &&
        (std::is_same_v<Extra, StoredLast> || ... || false);
    if (InForm<Extra...>(form_) && stored_last == last_) {
      object_[key.name] = Value(value, check);
    }
  }

 private:
  template <typename T, typename Check>
  Json Value(const T& value, const Check&) const {
    return value;
  }
  template <typename Enum>
  Json Value(Enum value, const field::Choice<Enum>& check) const {
    return check.name(value);
  }
  Json Value(double value, const field::RealAtLeast&) const;

  Json& object_;
  RecordForm form_;
  bool last_;
};

class RecordReader {
 public:
  RecordReader(const Json& object, std::string_view where)
      : object_(object), where_(where) {}
  template <typename T, typename Check, typename... Extra>
  void operator()(const Key& key, T&& member, const Check& check,
                  const Extra&...) {
    if constexpr (!(std::is_same_v<Extra, ShownOnly> || ...)) {
      Read(key.name, member, check);
    }
  }

 private:
  template <typename Int>
  void Read(const char* key, Int& member, const field::Int& check) {
    const int64_t value = JsonMember<int64_t>(object_, key, where_);
    ROTOR_CHECK(value >= check.min, Where(key), ": must be >= ", check.min,
                ", got ", value);
    ROTOR_CHECK(value <= check.max, Where(key), ": must be <= ", check.max,
                " (rotor's limit), got ", value);
    member = static_cast<Int>(value);
  }
  void Read(const char* key, double& member, const field::Real& check) {
    member = JsonMember<double>(object_, key, where_);
    ROTOR_CHECK(member >= check.min && member <= check.max, Where(key),
                ": must be in [", check.min, ", ", check.max, "], got ",
                NumberText(member));
  }
  void Read(const char* key, double& member, const field::RealAtLeast& check);
  template <typename Enum>
  void Read(const char* key, Enum& member, const field::Choice<Enum>& check) {
    const std::string text = JsonMember<std::string>(object_, key, where_);
    const std::optional<Enum> value = check.from_name(text);
    ROTOR_CHECK(value.has_value(), where_, ": ", check.refusal(text));
    member = *value;
  }
  // `where` and the key, as JsonMember names them.
  std::string Where(const char* key) const;
  // A value for a message, with every digit it needs to read back: 1.5,
  // 1.0000000000000002 (not the "1" of 6 digits), -inf.
  static std::string NumberText(double value);

  const Json& object_;
  std::string_view where_;
};

}  // namespace json_internal

template <typename Record>
Json RecordJson(Record record, RecordForm form) {
  Json object = Json::object();
  for (const bool last : {false, true}) {
    json_internal::RecordWriter writer(object, form, last);
    VisitFields(writer, record);
  }
  return object;
}

// Every record of `records`, as a JSON array.
template <typename Record>
Json RecordsJson(const std::vector<Record>& records, RecordForm form) {
  Json array = Json::array();
  for (const Record& record : records) {
    array.push_back(RecordJson(record, form));
  }
  return array;
}

template <typename Record>
Record RecordFromJson(const Json& object, std::string_view where) {
  Record record;
  json_internal::RecordReader reader(object, where);
  VisitFields(reader, record);
  return record;
}

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_IO_JSON_H_
