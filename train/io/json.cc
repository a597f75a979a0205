#include "train/io/json.h"

#include <cmath>
#include <limits>
#include <unordered_set>
#include <vector>

#include "core/error.h"
#include "train/io/message.h"

namespace rotor::train {

namespace {

// "[json.exception.parse_error.101] parse error at ..." -> "parse error at
// ...", with the token the library quotes ("number overflow parsing
// '<900 KB of digits>'", "...; last read: '<token>'; expected ...") cut to
// an Excerpt.
std::string WithoutLibraryPrefix(const char* what) {
  std::string text = what;
  const size_t end = text.find("] ");
  if (end != std::string::npos) text = text.substr(end + 2);
  for (const char* opening : {"last read: '", "parsing '"}) {
    const size_t start = text.find(opening);
    if (start == std::string::npos) continue;
    const size_t begin = start + std::string_view(opening).size();
    const size_t expected = text.rfind("; expected ");
    const size_t close =
        text.rfind('\'', expected == std::string::npos || expected < begin
                             ? std::string::npos
                             : expected);
    if (close == std::string::npos || close < begin) continue;
    return text.substr(0, begin) +
           Excerpt(std::string_view(text).substr(begin, close - begin)) +
           text.substr(close);
  }
  return text;
}

// Builds the document from the parser's SAX events, rejecting repeated keys
// and deep nesting, and knowing where it is (a JSON-pointer path) for errors.
// A member is appended to its object's vector directly: the library's own
// builder inserts through ordered_map::operator[], a linear search per key,
// so an object of n keys cost O(n^2).
class StrictDomBuilder : public nlohmann::json_sax<Json> {
 public:
  explicit StrictDomBuilder(std::string_view source) : source_(source) {}

  Json& root() { return root_; }

  bool null() override { return Add(nullptr); }
  bool boolean(bool value) override { return Add(value); }
  bool number_integer(number_integer_t value) override { return Add(value); }
  bool number_unsigned(number_unsigned_t value) override { return Add(value); }
  bool number_float(number_float_t value, const string_t&) override {
    return Add(value);
  }
  bool string(string_t& value) override { return Add(std::move(value)); }
  bool binary(binary_t& value) override {
    return Add(Json::binary(std::move(value)));
  }
  bool start_object(size_t) override { return Open(Json::object()); }
  bool start_array(size_t) override { return Open(Json::array()); }
  bool end_object() override { return Close(); }
  bool end_array() override { return Close(); }
  bool key(string_t& key) override {
    Container& object = open_.back();
    ROTOR_CHECK(object.keys.insert(key).second, source_, ": duplicate key \"",
                Excerpt(key), "\" at ", PathOf(open_.size() - 1));
    object.key = std::move(key);
    return true;
  }
  bool parse_error(size_t, const std::string&,
                   const nlohmann::detail::exception& error) override {
    throw Error(StrCat(source_,
                       ": invalid JSON: ", WithoutLibraryPrefix(error.what())));
  }

 private:
  struct Container {
    Json* value;
    std::unordered_set<std::string> keys;  // objects: the keys seen so far
    std::string key;                       // objects: the member being read
  };

  // Appends `value` to the innermost open container (or makes it the
  // document) and returns where it now lives.
  Json* Place(Json value) {
    if (open_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    Container& parent = open_.back();
    if (parent.value->is_array()) {
      Json::array_t& array = parent.value->get_ref<Json::array_t&>();
      array.push_back(std::move(value));
      return &array.back();
    }
    // ordered_map is a vector of pairs, and key() has checked the key is new.
    Json::object_t::Container& members =
        parent.value->get_ref<Json::object_t&>();
    members.emplace_back(parent.key, std::move(value));
    return &members.back().second;
  }
  bool Add(Json value) {
    Place(std::move(value));
    return true;
  }
  bool Open(Json container) {
    ROTOR_CHECK(open_.size() < static_cast<size_t>(kMaxJsonDepth), source_,
                ": nested deeper than ", kMaxJsonDepth, " levels at ",
                PathOf(open_.size()));
    open_.push_back(Container{Place(std::move(container)), {}, ""});
    return true;
  }
  bool Close() {
    open_.pop_back();
    return true;
  }

  // The path of the first `levels` open containers' current members, e.g.
  // "/train/sources/3"; "/" for the top level. An array's current element is
  // its last one while that element is open, else the next one.
  std::string PathOf(size_t levels) const {
    std::string path;
    for (size_t i = 0; i < levels; ++i) {
      const Container& open = open_[i];
      if (open.value->is_object()) {
        path += "/" + Excerpt(open.key);
      } else {
        const size_t size = open.value->size();
        path += "/" + std::to_string(i + 1 < open_.size() ? size - 1 : size);
      }
    }
    return path.empty() ? "/" : path;
  }

  std::string source_;
  Json root_;
  std::vector<Container> open_;
};

}  // namespace

Json ParseJson(std::string_view text, std::string_view source) {
  StrictDomBuilder builder(source);
  Json::sax_parse(text.begin(), text.end(), &builder);
  return std::move(builder.root());
}

template <>
bool JsonAs<bool>(const Json& value, std::string_view where) {
  ROTOR_CHECK(value.is_boolean(), where, ": expected true or false, got ",
              value.type_name());
  return value.get<bool>();
}

template <>
int64_t JsonAs<int64_t>(const Json& value, std::string_view where) {
  ROTOR_CHECK(value.is_number_integer(), where, ": expected an integer, got ",
              value.dump());
  if (value.is_number_unsigned()) {
    ROTOR_CHECK(value.get<uint64_t>() <=
                    static_cast<uint64_t>(std::numeric_limits<int64_t>::max()),
                where, ": ", value.dump(), " is out of range for int64");
  }
  return value.get<int64_t>();
}

template <>
uint64_t JsonAs<uint64_t>(const Json& value, std::string_view where) {
  ROTOR_CHECK(value.is_number_unsigned(), where,
              ": expected a non-negative integer, got ", value.dump());
  return value.get<uint64_t>();
}

template <>
double JsonAs<double>(const Json& value, std::string_view where) {
  ROTOR_CHECK(value.is_number(), where, ": expected a number, got ",
              value.type_name());
  return value.get<double>();
}

template <>
std::string JsonAs<std::string>(const Json& value, std::string_view where) {
  ROTOR_CHECK(value.is_string(), where, ": expected a string, got ",
              value.type_name());
  return value.get<std::string>();
}

template <typename T>
T JsonMember(const Json& object, std::string_view key, std::string_view where) {
  ROTOR_CHECK(object.is_object(), where, ": expected an object, got ",
              object.type_name());
  const auto member = object.find(std::string(key));
  ROTOR_CHECK(member != object.end(), where, ": missing key \"", key, "\"");
  return JsonAs<T>(*member, StrCat(where, ": \"", key, "\""));
}

template bool JsonMember<bool>(const Json&, std::string_view, std::string_view);
template int64_t JsonMember<int64_t>(const Json&, std::string_view,
                                     std::string_view);
template uint64_t JsonMember<uint64_t>(const Json&, std::string_view,
                                       std::string_view);
template double JsonMember<double>(const Json&, std::string_view,
                                   std::string_view);
template std::string JsonMember<std::string>(const Json&, std::string_view,
                                             std::string_view);

bool IsValidUtf8(std::string_view text) {
  try {
    Json(text).dump();
    return true;
  } catch (const Json::type_error&) {
    return false;
  }
}

std::string ShowAsJson(std::string_view text) {
  return Json(text).dump(-1, ' ', false, Json::error_handler_t::replace);
}

Json FiniteOrNull(double value) {
  return std::isfinite(value) ? Json(value) : Json(nullptr);
}

const char* NonFiniteName(double value) {
  return std::isnan(value) ? "nan" : value > 0 ? "inf" : "-inf";
}

std::optional<double> NonFiniteFromName(std::string_view name) {
  for (const double value : {std::numeric_limits<double>::quiet_NaN(),
                             std::numeric_limits<double>::infinity(),
                             -std::numeric_limits<double>::infinity()}) {
    if (name == NonFiniteName(value)) return value;
  }
  return std::nullopt;
}

double NumberOrFallback(const Json& object, std::string_view key,
                        double fallback, std::string_view where) {
  const auto member = object.find(std::string(key));
  if (member == object.end() || member->is_null()) return fallback;
  return JsonAs<double>(*member, StrCat(where, ": \"", key, "\""));
}

namespace json_internal {

Json RecordWriter::Value(double value, const field::RealAtLeast&) const {
  if (std::isfinite(value) || form_ == RecordForm::kShown) {
    return FiniteOrNull(value);
  }
  if (value == std::numeric_limits<double>::infinity()) return nullptr;
  return NonFiniteName(value);
}

void RecordReader::Read(const char* key, double& member,
                        const field::RealAtLeast& check) {
  const auto found = object_.is_object() ? object_.find(key) : object_.end();
  if (found != object_.end() && found->is_null()) {
    member = std::numeric_limits<double>::infinity();
  } else if (found != object_.end() && found->is_string()) {
    const std::optional<double> value =
        NonFiniteFromName(found->get<std::string>());
    ROTOR_CHECK(value.has_value(), Where(key),
                ": expected a number (null: +infinity; \"nan\", \"-inf\"), "
                "got ",
                ShowAsJson(found->get<std::string>()));
    member = *value;
  } else {
    member = JsonMember<double>(object_, key, where_);
  }
  ROTOR_CHECK(std::isnan(member) || member >= check.min, Where(key),
              ": must be >= ", check.min, ", got ", NumberText(member));
}

std::string RecordReader::NumberText(double value) {
  return std::isfinite(value) ? Json(value).dump() : NonFiniteName(value);
}

std::string RecordReader::Where(const char* key) const {
  return StrCat(where_, ": \"", key, "\"");
}

}  // namespace json_internal

}  // namespace rotor::train
