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

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_IO_JSON_H_
