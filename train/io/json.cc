#include "train/io/json.h"

#include <cmath>
#include <limits>
#include <set>
#include <vector>

#include "core/error.h"

namespace rotor::train {

namespace {

// Follows the parser's events to know where it is (a JSON-pointer path),
// which keys each open object has seen, and how deep it is.
class StrictParseListener {
 public:
  explicit StrictParseListener(std::string_view source) : source_(source) {}

  bool operator()(int /*depth*/, Json::parse_event_t event, Json& parsed) {
    using Event = Json::parse_event_t;
    switch (event) {
      case Event::object_start:
      case Event::array_start:
        ROTOR_CHECK(open_.size() < static_cast<size_t>(kMaxJsonDepth), source_,
                    ": nested deeper than ", kMaxJsonDepth, " levels at ",
                    Path());
        open_.push_back(Container{event == Event::object_start, {}, "", 0});
        break;
      case Event::key: {
        Container& object = open_.back();
        object.key = parsed.get<std::string>();
        ROTOR_CHECK(object.keys.insert(object.key).second, source_,
                    ": duplicate key \"", object.key, "\" at ",
                    PathOf(open_.size() - 1));
        break;
      }
      case Event::object_end:
      case Event::array_end:
        open_.pop_back();
        ElementDone();
        break;
      case Event::value:
        ElementDone();
        break;
    }
    return true;
  }

 private:
  struct Container {
    bool is_object;
    std::set<std::string> keys;
    std::string key;  // objects: the member being read
    size_t index;     // arrays: the element being read
  };

  void ElementDone() {
    if (!open_.empty() && !open_.back().is_object) ++open_.back().index;
  }

  // The path of the first `levels` open containers' current members, e.g.
  // "/train/sources/3"; "/" for the top level.
  std::string PathOf(size_t levels) const {
    std::string path;
    for (size_t i = 0; i < levels; ++i) {
      path += "/" + (open_[i].is_object ? open_[i].key
                                        : std::to_string(open_[i].index));
    }
    return path.empty() ? "/" : path;
  }
  std::string Path() const { return PathOf(open_.size()); }

  std::string source_;
  std::vector<Container> open_;
};

// "[json.exception.parse_error.101] parse error at ..." -> "parse error at
// ...".
std::string WithoutLibraryPrefix(const char* what) {
  const std::string text = what;
  const size_t end = text.find("] ");
  return end == std::string::npos ? text : text.substr(end + 2);
}

}  // namespace

Json ParseJson(std::string_view text, std::string_view source) {
  try {
    return Json::parse(text.begin(), text.end(), StrictParseListener(source));
  } catch (const Json::exception& e) {
    throw Error(
        StrCat(source, ": invalid JSON: ", WithoutLibraryPrefix(e.what())));
  }
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

Json FiniteOrNull(double value) {
  return std::isfinite(value) ? Json(value) : Json(nullptr);
}

double NumberOrFallback(const Json& object, std::string_view key,
                        double fallback, std::string_view where) {
  const auto member = object.find(std::string(key));
  if (member == object.end() || member->is_null()) return fallback;
  return JsonAs<double>(*member, StrCat(where, ": \"", key, "\""));
}

}  // namespace rotor::train
