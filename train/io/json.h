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
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/error.h"

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

// A double that may be NaN or infinite: JSON has neither, so those become
// null, and NumberOrFallback reads a null (or missing) member back as the
// fallback.
Json FiniteOrNull(double value);
double NumberOrFallback(const Json& object, std::string_view key,
                        double fallback, std::string_view where);

// A record as a JSON object through its field table, the function
//   template <typename Visitor> void VisitFields(Visitor& v, Record& r)
// beside the record (e.g. train/eval/passkey_eval.h), whose rows are, in
// the order of the object's keys:
//   v(key, member)          a member, in both forms;
//   v(key, member, names)   an enum member by its name, names.name(member),
//                           read through names.from_name (a text that is no
//                           name: "WHERE: " + names.refusal(text));
//   v.Stored(key, member)   a member of the stored form only;
//   v.Figure(key, value)    a figure computed from the members, in the
//                           shown form only.
// The stored form is a file rotor reads back (RecordFromJson, with the
// JsonMember errors); the shown form is what a reader of the figures wants
// (rotor eval --json). A number JSON cannot hold is written as null.
enum class RecordForm { kStored, kShown };

namespace json_internal {

class RecordWriter {
 public:
  RecordWriter(Json& object, RecordForm form) : object_(object), form_(form) {}
  template <typename T>
  void operator()(const char* key, const T& member) {
    object_[key] = member;
  }
  template <typename T, typename Names>
  void operator()(const char* key, const T& member, const Names& names) {
    object_[key] = names.name(member);
  }
  template <typename T>
  void Stored(const char* key, const T& member) {
    if (form_ == RecordForm::kStored) object_[key] = member;
  }
  void Figure(const char* key, double value) {
    if (form_ == RecordForm::kShown) object_[key] = value;
  }

 private:
  Json& object_;
  RecordForm form_;
};

class RecordReader {
 public:
  RecordReader(const Json& object, std::string_view where)
      : object_(object), where_(where) {}
  template <typename T>
  void operator()(const char* key, T& member) {
    Read(key, member);
  }
  template <typename T, typename Names>
  void operator()(const char* key, T& member, const Names& names) {
    const std::string text = JsonMember<std::string>(object_, key, where_);
    const auto value = names.from_name(text);
    ROTOR_CHECK(value.has_value(), where_, ": ", names.refusal(text));
    member = *value;
  }
  template <typename T>
  void Stored(const char* key, T& member) {
    Read(key, member);
  }
  void Figure(const char*, double) {}

 private:
  template <typename T>
  void Read(const char* key, T& member) {
    if constexpr (std::is_same_v<T, int>) {
      member = static_cast<int>(JsonMember<int64_t>(object_, key, where_));
    } else {
      member = JsonMember<T>(object_, key, where_);
    }
  }

  const Json& object_;
  std::string_view where_;
};

}  // namespace json_internal

template <typename Record>
Json RecordJson(Record record, RecordForm form) {
  Json object = Json::object();
  json_internal::RecordWriter writer(object, form);
  VisitFields(writer, record);
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
