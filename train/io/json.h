// A small JSON reader and writer (RFC 8259), enough for rotor's own files:
// safetensors headers, meta.json of a prepared data set, checkpoint state.
//
// JsonValue holds null, a bool, a number, a string, an array or an object.
// Objects keep their keys in insertion order (so files rotor writes are
// stable and easy to diff) and reject duplicate keys when parsing. Numbers
// keep their source text, so integers up to 2^64 round-trip exactly
// (AsInt64 / AsUint64) while AsDouble gives the usual double.
//
//   JsonValue meta = JsonValue::Object();
//   meta.Set("tokens", JsonValue::Integer(1234));
//   std::string text = meta.Dump(2);          // pretty-printed, 2 spaces
//   JsonValue back = ParseJson(text, "meta.json");
//   uint64_t tokens = back.Get("tokens").AsUint64();
//
// Parse errors throw rotor::Error naming the source ("meta.json"), the byte
// offset, and what was expected.
#ifndef ROTOR_TRAIN_JSON_H_
#define ROTOR_TRAIN_JSON_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rotor::train {

class JsonValue {
 public:
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };

  JsonValue() = default;  // null
  static JsonValue Bool(bool value);
  static JsonValue Integer(int64_t value);
  static JsonValue Unsigned(uint64_t value);
  // Finite doubles only (JSON has no NaN/Inf); written with 17 significant
  // digits so the value round-trips.
  static JsonValue Number(double value);
  static JsonValue String(std::string value);
  static JsonValue Array();
  static JsonValue Object();

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::kNull; }
  bool is_bool() const { return type_ == Type::kBool; }
  bool is_number() const { return type_ == Type::kNumber; }
  bool is_string() const { return type_ == Type::kString; }
  bool is_array() const { return type_ == Type::kArray; }
  bool is_object() const { return type_ == Type::kObject; }

  // Typed access; each throws rotor::Error if the type (or, for the integer
  // forms, the value: fraction, sign, range) does not fit.
  bool AsBool() const;
  double AsDouble() const;
  int64_t AsInt64() const;
  uint64_t AsUint64() const;
  const std::string& AsString() const;

  // Arrays.
  const std::vector<JsonValue>& items() const;
  void Append(JsonValue value);

  // Objects, in insertion order.
  const std::vector<std::pair<std::string, JsonValue>>& members() const;
  // Replaces the value if `key` exists, else appends.
  void Set(const std::string& key, JsonValue value);
  // nullptr if absent (or if this is not an object).
  const JsonValue* Find(std::string_view key) const;
  // Throws rotor::Error naming the key if absent.
  const JsonValue& Get(std::string_view key) const;

  // Serializes. indent < 0: compact, no spaces ({"a":[1,2]}); indent >= 0:
  // one member per line, nested levels indented by `indent` spaces.
  std::string Dump(int indent = -1) const;

  // "null", "bool", "number", "string", "array", "object".
  static const char* TypeName(Type type);

 private:
  friend class JsonParser;
  void DumpTo(std::string& out, int indent, int depth) const;

  Type type_ = Type::kNull;
  bool bool_ = false;
  std::string text_;  // number source text, or the string's value
  std::vector<JsonValue> items_;
  std::vector<std::pair<std::string, JsonValue>> members_;
};

// Parses one JSON value (surrounded by optional whitespace). `source` names
// the text in error messages, e.g. a file path.
JsonValue ParseJson(std::string_view text, std::string_view source);

// Appends `value` as a JSON string literal (with quotes and escapes).
void AppendJsonString(std::string& out, std::string_view value);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_JSON_H_
