// The one YAML reader behind every rotor config (training, model, report):
// the only header that includes yaml-cpp, and only train/config/*.cc
// include it, so yaml-cpp stays a private dependency of rotor_train.
//
// - LoadConfigYaml / LoadConfigYamlFile parse a document and reject repeated
//   keys anywhere in it (yaml-cpp would keep both and one value would be lost
//   without a word), a second document, anchors and aliases (nested aliases
//   expand exponentially), and files over kMaxConfigBytes (docs/limits.md).
// - ApplyYamlOverride(s) apply command-line "a.b.c=value" overrides.
// - SectionReader reads the keys of one map strictly: unknown keys, wrong
//   types and out-of-range values are errors that read
//     "file:LINE:COL: section.key: problem"
//   or, for a value an override gave,
//     "override 'section.key=value': section.key: problem".
#ifndef ROTOR_TRAIN_CONFIG_YAML_H_
#define ROTOR_TRAIN_CONFIG_YAML_H_

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/fields.h"
#include "nn/rope_scaling.h"
#include "train/config/overrides.h"

namespace rotor::train {

// Parses the YAML text of config file `file` (an empty document is an empty
// map) and rejects repeated keys, anchors, aliases, a second document and
// text over kMaxConfigBytes. Errors read "file:LINE:COL: ...".
YAML::Node LoadConfigYaml(const std::string& yaml_text,
                          const std::string& file);
// The text of config file `path`; throws "cannot read config file PATH
// (reason)", also for a file over kMaxConfigBytes.
std::string ReadConfigText(const std::string& path);
// Reads `path` and parses it as LoadConfigYaml does.
YAML::Node LoadConfigYamlFile(const std::string& path);

// Applies one "a.b.c=value" override to a YAML tree (creating missing maps on
// the way) and returns the key path "a.b.c". The value is the whole text
// after the first '=': a list or map in YAML's flow style when it starts
// with '[' or '{' (train.betas=[0.9,0.99]), else one scalar that YAML
// reads as written (a number, true, null, a path). Text YAML would drop or
// change (a ' #' comment, spaces around it, quotes) and control characters
// are refused, so output_dir=runs/exp #2 never becomes runs/exp. The
// value's nodes have no place in a file (messages name the override).
// Throws rotor::Error naming the override.
std::string ApplyYamlOverride(YAML::Node& root, const std::string& assignment);
// Applies every override in order and returns their key paths, each with
// its override. A key path given twice is an error naming it (one of the
// two values would be lost).
OverriddenKeys ApplyYamlOverrides(YAML::Node& root,
                                  const std::vector<std::string>& assignments);

// "a map", "a list", "null" or the scalar in quotes (control characters
// escaped), for "expected X, got Y".
std::string DescribeYaml(const YAML::Node& node);

// A number as the YAML writers emit it: the shortest text that reads back
// as the same double (0.1, not yaml-cpp's 0.10000000000000001), and .inf,
// -.inf or .nan for the others. Integers keep their own overloads.
YAML::Node YamlNumber(double value);

// One scalar read as T (int64_t, uint64_t, double, bool or std::string), or
// nullopt when `node` is not a scalar of that type ("-1" is no uint64_t).
// Integers are decimal: yaml-cpp would read 010 as octal 8 and 0x10 as 16.
// Every config reader decodes through it, so "expected an integer" means the
// same in every file.
template <typename T>
std::optional<T> DecodeScalar(const YAML::Node& node);

// Reads one section (a YAML map) strictly. Absent and null keys leave the
// output untouched (its default).
class SectionReader {
 public:
  // `path` is the section's key path ("train"; "" for the top level);
  // `overridden` the key paths that overrides set.
  SectionReader(const YAML::Node& node, std::string path,
                const std::string& file, const OverriddenKeys& overridden);

  // Rejects keys not in `known`, listing the known ones.
  void RequireKnownKeys(const std::set<std::string>& known) const;

  // An integer in [min_value, max_value].
  void Read(const char* key, int64_t& out, int64_t min_value,
            int64_t max_value = INT64_MAX) const;
  void Read(const char* key, uint64_t& out) const;
  void Read(const char* key, double& out, double min_value,
            double max_value) const;
  void Read(const char* key, bool& out) const;
  // A non-empty string without control characters (a path or a name).
  void Read(const char* key, std::string& out) const;
  // A two-element list of numbers in [0, 1), e.g. AdamW's betas.
  void ReadPair(const char* key, double& first, double& second) const;
  // A list of scalars; `expected` describes an element ("positive
  // integers").
  void ReadList(const char* key, std::vector<int64_t>& out,
                const char* expected) const;
  void ReadList(const char* key, std::vector<double>& out,
                const char* expected) const;
  void ReadList(const char* key, std::vector<std::string>& out,
                const char* expected) const;

  // The reader of the map under `key` (empty when absent or null).
  SectionReader Sub(const char* key) const;

  // The value of `key` (undefined when absent or null), the map itself, and
  // its key path, for checks made after reading.
  YAML::Node Get(const char* key) const;
  const YAML::Node& node() const { return node_; }
  std::string Join(const std::string& key) const;

  [[noreturn]] void Fail(const YAML::Node& at, const std::string& key_path,
                         const std::string& message) const;

 private:
  template <typename T>
  void ReadListOf(const char* key, std::vector<T>& out,
                  const char* expected) const;

  YAML::Node node_;
  std::string path_;
  const std::string& file_;
  const OverriddenKeys& overridden_;
};

// A YAML value as train/config/model_reader.h reads it.
class YamlValue {
 public:
  YamlValue() = default;
  explicit YamlValue(const YAML::Node& node) : node_(node) {}

  bool Present() const { return node_ && !node_.IsNull(); }
  bool IsMap() const { return node_.IsMap(); }
  bool IsList() const { return node_.IsSequence(); }
  size_t size() const { return node_.size(); }
  YamlValue At(size_t i) const { return YamlValue(node_[i]); }
  template <typename F>
  void ForEachEntry(F f) const {
    for (const auto& entry : node_) {
      f(entry.first.Scalar(), YamlValue(entry.first), YamlValue(entry.second));
    }
  }
  template <typename T>
  std::optional<T> Decode() const {
    return DecodeScalar<T>(node_);
  }
  std::string Describe() const { return DescribeYaml(node_); }
  // ":LINE:COL" (1-based), or "" for a node built in code.
  std::string Position() const;

 private:
  YAML::Node node_;
};

// The value a ConfigProblem is about, for its line: root[a][b] for key
// "a.b" (its element, when the problem names one), or the nearest map on
// that path that is given.
YAML::Node NodeOfProblem(const YAML::Node& root, const ConfigProblem& problem);

// Reads a table's struct (core/fields.h) from one YAML map through
// SectionReader, with its messages: keys the table does not have are
// refused first, listing those it has; then each row is read in the table's
// order. Absent and null keys leave their member as it is (its default).
class YamlTableReader {
 public:
  explicit YamlTableReader(SectionReader section)
      : section_(std::move(section)) {}

  template <typename Struct>
  void ReadAll(Struct& fields) {
    RequireTableKeys(KeyNamesOf<Struct>());
    VisitFields(*this, fields);
  }
  // The same for rows given as a function of the visitor (a map whose keys
  // are members of an enclosing struct).
  template <typename Rows>
  void ReadRows(Rows&& rows) {
    KeyNames names;
    rows(names);
    RequireTableKeys(names.names);
    rows(*this);
  }

  void operator()(const Key& key, int64_t& out, const field::Int& check) {
    section_.Read(key.name, out, check.min, check.max);
  }
  void operator()(const Key& key, uint64_t& out, const field::Unsigned&) {
    section_.Read(key.name, out);
  }
  void operator()(const Key& key, double& out, const field::Real& check) {
    section_.Read(key.name, out, check.min, check.max);
  }
  // A key whose absence means something (unset: take it from elsewhere).
  template <typename T, typename Check>
  void operator()(const Key& key, std::optional<T>& out, const Check& check) {
    if (!section_.Get(key.name)) return;
    T value = out.value_or(T{});
    (*this)(key, value, check);
    out = value;
  }
  void operator()(const Key& key, double& out, const field::RealAbove& check);
  void operator()(const Key& key, bool& out, const field::Flag&) {
    section_.Read(key.name, out);
  }
  void operator()(const Key& key, std::string& out, const field::Text&) {
    section_.Read(key.name, out);
  }
  void operator()(const Key& key, std::vector<int64_t>& out,
                  const field::Ints& check) {
    section_.ReadList(key.name, out, check.expected);
    RequireAtMost(key, out.size(), check.max_items);
  }
  void operator()(const Key& key, std::vector<double>& out,
                  const field::Numbers& check) {
    section_.ReadList(key.name, out, check.expected);
    RequireAtMost(key, out.size(), check.max_items);
  }
  void operator()(const Key& key, std::vector<std::string>& out,
                  const field::Strings& check) {
    section_.ReadList(key.name, out, check.expected);
  }
  void operator()(const Key& key, std::vector<std::string>& out,
                  const field::Names& check);
  void operator()(const Key& key, const field::Pair& out,
                  const field::UnitPair&) {
    section_.ReadPair(key.name, out.first, out.second);
  }
  template <typename Enum>
  void operator()(const Key& key, Enum& out, const field::Parsed<Enum>& check) {
    std::string name = check.name(out);
    section_.Read(key.name, name);
    try {
      out = check.parse(name);
    } catch (const Error& e) {
      section_.Fail(section_.Get(key.name), section_.Join(key.name), e.what());
    }
  }
  template <typename Enum>
  void operator()(const Key& key, std::vector<Enum>& out,
                  const field::Choices<Enum>& check) {
    std::vector<std::string> names;
    section_.ReadList(key.name, names, check.expected);
    const YAML::Node value = section_.Get(key.name);
    if (!value) return;
    out.clear();
    for (size_t i = 0; i < names.size(); ++i) {
      const std::optional<Enum> parsed = check.each.from_name(names[i]);
      if (!parsed) {
        section_.Fail(value[i], section_.Join(key.name),
                      check.each.refusal(names[i]));
      }
      out.push_back(*parsed);
    }
  }
  template <
      typename T, typename Check,
      typename = std::enable_if_t<std::is_base_of_v<field::Custom, Check>>>
  void operator()(const Key& key, T&& out, const Check& check) {
    check.Read(section_, key.name, out);
  }
  // A nested map; `present` (when given) is set when the key is given, even
  // as null (finetune.lora alone turns LoRA on with its defaults).
  template <typename Struct>
  void Section(const Key& key, Struct& fields, bool* present = nullptr) {
    if (present != nullptr && !Given(key)) return;
    if (present != nullptr) *present = true;
    YamlTableReader(section_.Sub(key.name)).ReadAll(fields);
  }
  template <typename Rows>
  void Map(const Key& key, Rows&& rows, bool* present = nullptr) {
    if (present != nullptr && !Given(key)) return;
    if (present != nullptr) *present = true;
    YamlTableReader(section_.Sub(key.name)).ReadRows(rows);
  }

 private:
  // Whether `key` is in the map, even as null.
  bool Given(const Key& key) const {
    const YAML::Node& node = section_.node();
    return node && node.IsMap() && node[key.name];
  }
  void RequireTableKeys(const std::vector<std::string>& names) const {
    section_.RequireKnownKeys({names.begin(), names.end()});
  }
  // A list key holds at most `max_items` items.
  void RequireAtMost(const Key& key, size_t items, int64_t max_items) const;

  SectionReader section_;
};

// Writes a table's struct (core/fields.h) as a YAML map, in the
// table's order: every member that is set (an optional with a value, a
// non-empty string or list, a section with keys, any other member).
// Numbers through YamlNumber, lists in flow style.
class YamlWriter {
 public:
  template <typename T, typename Check, typename... Extra>
  void operator()(const Key& key, const T& member, const Check& check,
                  const Extra&...) {
    std::optional<YAML::Node> value;
    if constexpr (std::is_base_of_v<field::Custom, Check>) {
      value = check.Write(member);
    } else {
      value = Encode(member, check);
    }
    if (value) node_[key.name] = *value;
  }
  // A section's method (rope_scaling's rope_type), written first; a row
  // that carries ForMethods is written only for the methods it lists.
  void operator()(const Key& key, RopeType method,
                  const field::Choice<RopeType>& check) {
    method_.Set(key, method);
    node_[key.name] = YAML::Node(check.name(method));
  }
  template <typename T, typename Check>
  void operator()(const Key& key, const T& member, const Check& check,
                  const ForMethods& only) {
    if (method_.Applies(key, only)) (*this)(key, member, check);
  }
  // A section is written as a map, or as null (SectionMethod).
  template <typename Struct>
  void Section(const Key& key, Struct& fields, bool* present = nullptr) {
    if (present != nullptr && !*present) return;
    YamlWriter writer;
    VisitFields(writer, fields);
    if (writer.method_.WrittenAsNull()) {
      node_[key.name] = YAML::Node(YAML::NodeType::Null);
      return;
    }
    Put(key, writer, present != nullptr);
  }
  template <typename Rows>
  void Map(const Key& key, Rows&& rows, bool* present = nullptr) {
    if (present != nullptr && !*present) return;
    YamlWriter writer;
    rows(writer);
    Put(key, writer, present != nullptr);
  }

  YAML::Node& node() { return node_; }

 private:
  // A section with no keys is left out, unless it says something by
  // being there.
  void Put(const Key& key, YamlWriter& section, bool even_empty) {
    if (section.node().size() == 0 && !even_empty) return;
    node_[key.name] = section.node();
  }

  template <typename T, typename Check>
  static std::optional<YAML::Node> Encode(const std::optional<T>& value,
                                          const Check& check) {
    if (!value) return std::nullopt;
    return Encode(*value, check);
  }
  // An empty list is left out where that is the key's default (names,
  // lengths, overrides), and written as [] where the default has elements
  // (the report's methods, skip and depths).
  template <typename T, typename Check>
  static std::optional<YAML::Node> Encode(const std::vector<T>& values,
                                          const Check& check) {
    constexpr bool kEmptyByDefault = !std::is_same_v<Check, field::Numbers> &&
                                     !std::is_same_v<Check, field::Choices<T>>;
    if (values.empty() && kEmptyByDefault) return std::nullopt;
    YAML::Node list(YAML::NodeType::Sequence);
    list.SetStyle(YAML::EmitterStyle::Flow);
    for (const T& value : values) {
      list.push_back(EncodeElement(value, check).value_or(YAML::Node("")));
    }
    return list;
  }
  template <typename T, typename Check>
  static std::optional<YAML::Node> EncodeElement(const T& value,
                                                 const Check& check) {
    return Encode(value, check);
  }
  template <typename Enum>
  static std::optional<YAML::Node> EncodeElement(
      const Enum& value, const field::Choices<Enum>& check) {
    return YAML::Node(check.each.name(value));
  }
  template <typename Enum>
  static std::optional<YAML::Node> Encode(const Enum& value,
                                          const field::Choice<Enum>& check) {
    return YAML::Node(check.name(value));
  }
  template <typename Enum>
  static std::optional<YAML::Node> Encode(const Enum& value,
                                          const field::Parsed<Enum>& check) {
    return YAML::Node(check.name(value));
  }
  static std::optional<YAML::Node> Encode(const field::Pair& pair,
                                          const field::UnitPair&) {
    YAML::Node list(YAML::NodeType::Sequence);
    list.SetStyle(YAML::EmitterStyle::Flow);
    list.push_back(YamlNumber(pair.first));
    list.push_back(YamlNumber(pair.second));
    return list;
  }
  template <typename Check>
  static std::optional<YAML::Node> Encode(double value, const Check&) {
    return YamlNumber(value);
  }
  template <typename Check>
  static std::optional<YAML::Node> Encode(const std::string& value,
                                          const Check&) {
    if (value.empty()) return std::nullopt;
    return YAML::Node(value);
  }
  template <typename T, typename Check,
            typename = std::enable_if_t<std::is_integral_v<T>>>
  static std::optional<YAML::Node> Encode(T value, const Check&) {
    return YAML::Node(value);
  }

  SectionMethod method_;  // the section's, once its row is seen
  YAML::Node node_{YAML::NodeType::Map};
};

// A table's struct as the text of a YAML file, through `writer` (a
// YamlWriter, or one that writes some sections its own way).
template <typename Struct, typename Writer = YamlWriter>
std::string YamlFileText(Struct fields, Writer writer = Writer()) {
  VisitFields(writer, fields);
  YAML::Emitter out;
  out << writer.node();
  return std::string(out.c_str()) + "\n";
}

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_CONFIG_YAML_H_
