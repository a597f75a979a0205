#include "train/config/yaml.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <sstream>
#include <type_traits>

#include "core/error.h"
#include "core/limits.h"
#include "core/suggest.h"
#include "train/io/atomic_file.h"
#include "train/io/message.h"

namespace rotor::train {

namespace {

// yaml-cpp keeps both entries of a repeated key (node[key] finds the first,
// a loop over the map sees both), so one of the two values would be lost
// without a word: reject repeated keys anywhere in the file, or in an
// override's value (`override`: its text names it instead of a line).
void RejectDuplicateKeys(const YAML::Node& node, const std::string& path,
                         const std::string& file, bool override = false) {
  if (node.IsSequence()) {
    for (const YAML::Node& item : node) {
      RejectDuplicateKeys(item, path, file, override);
    }
    return;
  }
  if (!node.IsMap()) return;
  std::map<std::string, int> first_line;
  for (const auto& entry : node) {
    const std::string key = entry.first.Scalar();
    const std::string key_path = path.empty() ? key : path + "." + key;
    const YAML::Mark mark = entry.first.Mark();
    const auto [first, inserted] = first_line.emplace(key, mark.line + 1);
    if (!inserted) {
      throw Error(override
                      ? StrCat(file, ": ", PrintableExcerpt(key_path),
                               ": duplicate key")
                      : StrCat(file, ":", mark.line + 1, ":", mark.column + 1,
                               ": ", PrintableExcerpt(key_path),
                               ": duplicate key (first given on line ",
                               first->second, ")"));
    }
    RejectDuplicateKeys(entry.second, key_path, file, override);
  }
}

// Refuses the first control character of a config's text other than tab,
// line feed and carriage return, at its line and column: YAML allows none
// (yaml-cpp drops a NUL and the byte after it without a word).
void RejectControlCharacters(const std::string& text, const std::string& file) {
  int line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      line_start = i + 1;
    } else if (c != '\t' && c != '\r' &&
               FindControlCharacter(std::string_view(&c, 1)) == 0) {
      throw Error(StrCat(file, ":", line, ":", i - line_start + 1,
                         ": a control character (", HexByte(c),
                         "), which YAML text cannot hold"));
    }
  }
}

// Walks the parser's events (nothing is built, no alias is expanded) and
// refuses what a rotor config never needs:
// - anchors and aliases: a few of them nest into an exponentially large tree
//   (the "billion laughs");
// - a second document ("---" after the first), which YAML::Load would ignore
//   without a word;
// - a quoted string never closed: yaml-cpp ends it at the end of the text
//   (`output_dir: "abc` reads as "abc ").
class ConfigEventChecker : public YAML::EventHandler {
 public:
  // `positions`: errors name the line and column in `file` (for an
  // override, `file` names it and its text has no lines).
  ConfigEventChecker(const std::string& text, const std::string& file,
                     bool positions)
      : text_(text), file_(file), positions_(positions) {}

  void OnDocumentStart(const YAML::Mark& mark) override {
    if (++documents_ > 1) {
      Refuse(mark,
             "a second YAML document; a config file holds one document "
             "(remove the '---' and what follows it)");
    }
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    RefuseAnchor(mark, anchor);
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override {
    Refuse(mark, StrCat("an alias (*name): ", kNoAliases));
  }
  void OnScalar(const YAML::Mark& mark, const std::string&,
                YAML::anchor_t anchor, const std::string&) override {
    RefuseAnchor(mark, anchor);
    RefuseUnclosedQuote(mark);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&,
                       YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    RefuseAnchor(mark, anchor);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&,
                  YAML::anchor_t anchor, YAML::EmitterStyle::value) override {
    RefuseAnchor(mark, anchor);
  }
  void OnMapEnd() override {}

 private:
  static constexpr char kNoAliases[] =
      "rotor configs take no YAML anchors or aliases; write the values out";

  void RefuseAnchor(const YAML::Mark& mark, YAML::anchor_t anchor) {
    if (anchor != YAML::NullAnchor) {
      Refuse(mark, StrCat("an anchor (&name): ", kNoAliases));
    }
  }
  // A scalar that starts with a quote must have its closing quote in the
  // text: the first '"' not escaped by a backslash, or the first '\'' not
  // doubled.
  void RefuseUnclosedQuote(const YAML::Mark& mark) {
    const size_t start = static_cast<size_t>(mark.pos);
    if (mark.pos < 0 || start >= text_.size()) return;
    const char quote = text_[start];
    if (quote != '"' && quote != '\'') return;
    for (size_t i = start + 1; i < text_.size(); ++i) {
      if (quote == '"' && text_[i] == '\\') {
        ++i;
      } else if (text_[i] == quote) {
        if (quote == '"' || i + 1 == text_.size() || text_[i + 1] != quote) {
          return;
        }
        ++i;
      }
    }
    Refuse(mark, "a quoted string that is never closed");
  }
  [[noreturn]] void Refuse(const YAML::Mark& mark, const std::string& what) {
    if (!positions_) throw Error(StrCat(file_, ": ", what));
    throw Error(
        StrCat(file_, ":", mark.line + 1, ":", mark.column + 1, ": ", what));
  }

  const std::string& text_;
  const std::string& file_;
  bool positions_;
  int documents_ = 0;
};

void CheckConfigEvents(const std::string& yaml_text, const std::string& file,
                       bool positions = true) {
  std::istringstream stream(yaml_text);
  YAML::Parser parser(stream);
  ConfigEventChecker checker(yaml_text, file, positions);
  while (parser.HandleNextDocument(checker)) {
  }
}

// Where YAML would start a comment in the flow text `text` (a list or map
// on the command line): a '#' first or after a space, a tab or a flow
// indicator, outside quoted strings; npos when it has none. A quote opens
// a string where a token starts (after JSON's "key": too).
size_t FlowCommentStart(const std::string& text) {
  const auto after = [&](size_t i, const char* chars) {
    return i == 0 || std::strchr(chars, text[i - 1]) != nullptr;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '#' && after(i, " \t[]{},")) return i;
    const bool quote_opens =
        after(i, " \t[]{},") ||
        (text[i - 1] == ':' && i >= 2 && std::strchr("\"'", text[i - 2]));
    if ((c == '"' || c == '\'') && quote_opens) {
      // Skip to the closing quote (\" escapes in "...", '' in '...').
      for (++i; i < text.size(); ++i) {
        if (c == '"' && text[i] == '\\') {
          ++i;
        } else if (c == '\'' && text[i] == c && i + 1 < text.size() &&
                   text[i + 1] == c) {
          ++i;
        } else if (text[i] == c) {
          break;
        }
      }
    }
  }
  return std::string::npos;
}

// The node tree of `node` rebuilt in code: the same values and tags, and no
// marks, so no message names a line and column of an override's text.
YAML::Node Unplaced(const YAML::Node& node) {
  if (node.IsScalar()) {
    YAML::Node copy(node.Scalar());
    copy.SetTag(node.Tag());
    return copy;
  }
  if (node.IsSequence()) {
    YAML::Node copy(YAML::NodeType::Sequence);
    for (const YAML::Node& item : node) copy.push_back(Unplaced(item));
    return copy;
  }
  if (node.IsMap()) {
    YAML::Node copy(YAML::NodeType::Map);
    for (const auto& entry : node) {
      copy.force_insert(Unplaced(entry.first), Unplaced(entry.second));
    }
    return copy;
  }
  return YAML::Node(node.Type());
}

// An override's value (`text`, non-empty) as its node; `where` names the
// override and `key_path` its key in errors.
YAML::Node OverrideValue(const std::string& text, const std::string& where,
                         const std::string& key_path) {
  const std::string whole =
      " (an override's value is the whole text after its first '=')";
  if (const std::optional<std::string> problem =
          ControlCharacterProblem(text)) {
    throw Error(StrCat(where, ": ", key_path, ": ", *problem));
  }
  YAML::Node value;
  std::string invalid;
  try {
    CheckConfigEvents(text, where, /*positions=*/false);
    value = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    invalid = e.msg;
  }
  const bool flow = text[0] == '[' || text[0] == '{';
  const size_t comment = flow             ? FlowCommentStart(text)
                         : text[0] == '#' ? 0
                                          : text.find(" #");
  if (comment != std::string::npos) {
    throw Error(StrCat(where,
                       ": YAML would not read the value as written: a '#' "
                       "first or after a space starts a YAML comment, which "
                       "would drop '",
                       PrintableExcerpt(text.substr(comment)), "'", whole));
  }
  if (!invalid.empty()) {
    throw Error(StrCat(where, ": the value is not valid YAML: ", invalid));
  }
  if (flow) {
    RejectDuplicateKeys(value, key_path, where, /*override=*/true);
    return Unplaced(value);
  }
  if (value.IsNull() &&
      (text == "null" || text == "Null" || text == "NULL" || text == "~")) {
    return YAML::Node(YAML::NodeType::Null);
  }
  if (value.IsScalar() && value.Tag() == "?" && value.Scalar() == text) {
    return YAML::Node(text);
  }
  std::string why = StrCat("it reads ", DescribeYaml(value),
                           "; write a list or map as [...] or {...}");
  if (std::isspace(static_cast<unsigned char>(text.front())) ||
      std::isspace(static_cast<unsigned char>(text.back()))) {
    why = "it drops the spaces around it";
  } else if (text[0] == '"' || text[0] == '\'') {
    why = "it takes the quotes off; give the value without them";
  }
  throw Error(StrCat(where, ": YAML would not read the value as written: ", why,
                     whole));
}

}  // namespace

YAML::Node LoadConfigYaml(const std::string& yaml_text,
                          const std::string& file) {
  ROTOR_CHECK(yaml_text.size() <= limits::kMaxConfigBytes, file, ": ",
              yaml_text.size(), " bytes, more than the limit of ",
              limits::kMaxConfigBytes, " bytes for a config file");
  RejectControlCharacters(yaml_text, file);
  YAML::Node root;
  try {
    CheckConfigEvents(yaml_text, file);
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw Error(StrCat(file, ":", e.mark.line + 1, ":", e.mark.column + 1,
                       ": not valid YAML: ", e.msg));
  }
  if (!root || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  RejectDuplicateKeys(root, "", file);
  return root;
}

std::string ReadConfigText(const std::string& path) {
  try {
    return ReadFile(path, limits::kMaxConfigBytes);
  } catch (const Error& e) {
    throw Error(StrCat("cannot read config file ", path, " (", e.what(), ")"));
  }
}

YAML::Node LoadConfigYamlFile(const std::string& path) {
  return LoadConfigYaml(ReadConfigText(path), path);
}

std::string ApplyYamlOverride(YAML::Node& root, const std::string& assignment) {
  const std::string where = OverrideName(assignment);
  const size_t equals = assignment.find('=');
  ROTOR_CHECK(equals != std::string::npos && equals > 0, where,
              " is not of the form key.path=value (e.g. train.lr=3e-4)");
  const std::string path = assignment.substr(0, equals);
  const std::string text = assignment.substr(equals + 1);
  if (const std::optional<std::string> problem =
          ControlCharacterProblem(path)) {
    throw Error(StrCat(where, ": the key path ", *problem));
  }
  std::vector<std::string> keys;
  for (size_t start = 0; start <= path.size();) {
    const size_t dot = std::min(path.find('.', start), path.size());
    keys.push_back(path.substr(start, dot - start));
    ROTOR_CHECK(!keys.back().empty(), where, " has an empty key in its path");
    start = dot + 1;
  }
  ROTOR_CHECK(!text.empty(), where,
              " has no value (key.path=null resets a key to its default)");
  const YAML::Node value = OverrideValue(text, where, path);
  // Walk (creating maps on the way) to the parent of the last key. Nodes are
  // handles, so assigning through `node` edits the tree.
  YAML::Node node = root;
  for (size_t i = 0; i + 1 < keys.size(); ++i) {
    YAML::Node child = node[keys[i]];
    if (!child || child.IsNull()) {
      node[keys[i]] = YAML::Node(YAML::NodeType::Map);
      child = node[keys[i]];
    }
    ROTOR_CHECK(child.IsMap(), where, ": ", keys[i], " is not a section");
    node.reset(child);
  }
  node[keys.back()] = value;
  return path;
}

OverriddenKeys ApplyYamlOverrides(YAML::Node& root,
                                  const std::vector<std::string>& assignments) {
  OverriddenKeys given;
  for (const std::string& assignment : assignments) {
    const std::string path = ApplyYamlOverride(root, assignment);
    const auto [first, inserted] = given.emplace(path, assignment);
    ROTOR_CHECK(inserted, "command-line override ", path, " is given twice ('",
                first->second, "' and '", assignment, "'); give it once");
  }
  return given;
}

YAML::Node YamlNumber(double value) {
  if (std::isnan(value)) return YAML::Node(".nan");
  if (std::isinf(value)) return YAML::Node(value > 0 ? ".inf" : "-.inf");
  char text[32];
  const std::to_chars_result end =
      std::to_chars(text, text + sizeof(text), value);
  return YAML::Node(std::string(text, end.ptr));
}

std::string YamlValue::Position() const {
  const YAML::Mark mark = node_.Mark();
  if (mark.is_null()) return "";
  return StrCat(":", mark.line + 1, ":", mark.column + 1);
}

std::string DescribeYaml(const YAML::Node& node) {
  if (node.IsMap()) return "a map";
  if (node.IsSequence()) return "a list";
  if (node.IsNull()) return "null";
  return "'" + PrintableExcerpt(node.Scalar()) + "'";
}

namespace {

// [+-]digits without a leading zero (0 itself aside): what rotor reads as
// an integer.
bool IsDecimalInteger(const std::string& text) {
  const size_t sign = !text.empty() && (text[0] == '+' || text[0] == '-');
  const size_t digits = text.size() - sign;
  if (digits == 0 || (digits > 1 && text[sign] == '0')) return false;
  return std::all_of(text.begin() + sign, text.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

template <typename T>
std::optional<T> DecodeScalar(const YAML::Node& node) {
  T value;
  if (!node.IsScalar() || !YAML::convert<T>::decode(node, value)) {
    return std::nullopt;
  }
  // A quoted scalar ("576") is text, not a number or a boolean.
  if constexpr (!std::is_same_v<T, std::string>) {
    if (node.Tag() == "!") return std::nullopt;
  }
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (!IsDecimalInteger(node.Scalar())) return std::nullopt;
  }
  if constexpr (std::is_unsigned_v<T> && !std::is_same_v<T, bool>) {
    if (node.Scalar().find('-') != std::string::npos) return std::nullopt;
  }
  return value;
}

template std::optional<int64_t> DecodeScalar(const YAML::Node&);
template std::optional<uint64_t> DecodeScalar(const YAML::Node&);
template std::optional<double> DecodeScalar(const YAML::Node&);
template std::optional<bool> DecodeScalar(const YAML::Node&);
template std::optional<std::string> DecodeScalar(const YAML::Node&);

SectionReader::SectionReader(const YAML::Node& node, std::string path,
                             const std::string& file,
                             const OverriddenKeys& overridden)
    : node_(node),
      path_(std::move(path)),
      file_(file),
      overridden_(overridden) {
  if (node_ && !node_.IsNull() && !node_.IsMap()) {
    Fail(node_, path_, "expected a map of settings");
  }
}

void SectionReader::RequireKnownKeys(const std::set<std::string>& known) const {
  if (!node_ || node_.IsNull()) return;
  for (const auto& entry : node_) {
    const std::string key = entry.first.Scalar();
    if (known.count(key)) continue;
    std::string list;
    for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
    Fail(entry.first, Join(key),
         "unknown key" +
             DidYouMean(key,
                        std::vector<std::string>(known.begin(), known.end())) +
             " (known keys: " + list + ")");
  }
}

void SectionReader::Read(const char* key, int64_t& out, int64_t min_value,
                         int64_t max_value) const {
  const YAML::Node value = Get(key);
  if (!value) return;
  const std::optional<int64_t> parsed = DecodeScalar<int64_t>(value);
  if (!parsed) {
    Fail(value, Join(key),
         "expected a decimal integer, got " + DescribeYaml(value));
  }
  if (*parsed < min_value) {
    Fail(value, Join(key), StrCat("must be >= ", min_value, ", got ", *parsed));
  }
  if (*parsed > max_value) {
    Fail(value, Join(key),
         StrCat("must be <= ", max_value, " (rotor's limit), got ", *parsed));
  }
  out = *parsed;
}

void SectionReader::Read(const char* key, uint64_t& out) const {
  const YAML::Node value = Get(key);
  if (!value) return;
  const std::optional<uint64_t> parsed = DecodeScalar<uint64_t>(value);
  if (!parsed) {
    Fail(value, Join(key),
         "expected a non-negative decimal integer, got " + DescribeYaml(value));
  }
  out = *parsed;
}

void SectionReader::Read(const char* key, double& out, double min_value,
                         double max_value) const {
  const YAML::Node value = Get(key);
  if (!value) return;
  const std::optional<double> parsed = DecodeScalar<double>(value);
  if (!parsed || !std::isfinite(*parsed)) {
    Fail(value, Join(key), "expected a number, got " + DescribeYaml(value));
  }
  if (*parsed < min_value || *parsed > max_value) {
    Fail(
        value, Join(key),
        StrCat("must be in [", min_value, ", ", max_value, "], got ", *parsed));
  }
  out = *parsed;
}

void SectionReader::Read(const char* key, bool& out) const {
  const YAML::Node value = Get(key);
  if (!value) return;
  const std::optional<bool> parsed = DecodeScalar<bool>(value);
  if (!parsed) {
    Fail(value, Join(key),
         "expected true or false, got " + DescribeYaml(value));
  }
  out = *parsed;
}

void SectionReader::Read(const char* key, std::string& out) const {
  const YAML::Node value = Get(key);
  if (!value) return;
  if (!value.IsScalar() || value.Scalar().empty()) {
    Fail(value, Join(key),
         "expected a non-empty string, got " + DescribeYaml(value));
  }
  if (const std::optional<std::string> problem =
          ControlCharacterProblem(value.Scalar())) {
    Fail(value, Join(key), *problem);
  }
  out = value.Scalar();
}

void SectionReader::ReadPair(const char* key, double& first,
                             double& second) const {
  const YAML::Node value = Get(key);
  if (!value) return;
  if (!value.IsSequence() || value.size() != 2) {
    Fail(value, Join(key),
         "expected a list of two numbers, got " + DescribeYaml(value));
  }
  double parsed[2];
  for (int i = 0; i < 2; ++i) {
    const std::optional<double> number = DecodeScalar<double>(value[i]);
    if (!number || !(*number >= 0.0 && *number < 1.0)) {
      Fail(value[i], Join(key),
           "expected numbers in [0, 1), got " + DescribeYaml(value[i]));
    }
    parsed[i] = *number;
  }
  first = parsed[0];
  second = parsed[1];
}

template <typename T>
void SectionReader::ReadListOf(const char* key, std::vector<T>& out,
                               const char* expected) const {
  const YAML::Node value = Get(key);
  if (!value) return;
  if (!value.IsSequence()) {
    Fail(
        value, Join(key),
        StrCat("expected a list of ", expected, ", got ", DescribeYaml(value)));
  }
  out.clear();
  for (const YAML::Node& item : value) {
    const std::optional<T> parsed = DecodeScalar<T>(item);
    if (!parsed) {
      Fail(item, Join(key),
           StrCat("expected a list of ", expected, ", got ",
                  DescribeYaml(item)));
    }
    if constexpr (std::is_same_v<T, std::string>) {
      if (const std::optional<std::string> problem =
              ControlCharacterProblem(*parsed)) {
        Fail(item, Join(key), *problem);
      }
    }
    out.push_back(*parsed);
  }
}

void SectionReader::ReadList(const char* key, std::vector<int64_t>& out,
                             const char* expected) const {
  ReadListOf(key, out, expected);
}
void SectionReader::ReadList(const char* key, std::vector<double>& out,
                             const char* expected) const {
  ReadListOf(key, out, expected);
}
void SectionReader::ReadList(const char* key, std::vector<std::string>& out,
                             const char* expected) const {
  ReadListOf(key, out, expected);
}

SectionReader SectionReader::Sub(const char* key) const {
  const YAML::Node sub =
      node_ && node_.IsMap() ? node_[key] : YAML::Node(YAML::NodeType::Null);
  return SectionReader(sub, Join(key), file_, overridden_);
}

YAML::Node SectionReader::Get(const char* key) const {
  if (!node_ || node_.IsNull()) return YAML::Node(YAML::NodeType::Undefined);
  const YAML::Node value = node_[key];
  if (!value || value.IsNull()) return YAML::Node(YAML::NodeType::Undefined);
  return value;
}

std::string SectionReader::Join(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

void SectionReader::Fail(const YAML::Node& at, const std::string& key_path,
                         const std::string& message) const {
  const bool placed = at.IsDefined() && !at.Mark().is_null();
  std::string where = file_;
  if (const std::string* assignment =
          OverrideOf(overridden_, key_path, placed)) {
    where = OverrideName(*assignment);
  } else if (placed) {
    where += StrCat(":", at.Mark().line + 1, ":", at.Mark().column + 1);
  }
  throw Error(StrCat(where, ": ", PrintableExcerpt(key_path), ": ", message));
}

YAML::Node NodeOfProblem(const YAML::Node& root, const ConfigProblem& problem) {
  YAML::Node node = root;
  std::stringstream path(problem.key);
  for (std::string key; std::getline(path, key, '.');) {
    if (!node.IsMap()) break;
    const YAML::Node child = static_cast<const YAML::Node&>(node)[key];
    if (!child || child.IsNull()) break;
    node.reset(child);
  }
  if (problem.element >= 0 && node.IsSequence() &&
      static_cast<size_t>(problem.element) < node.size()) {
    node.reset(node[static_cast<size_t>(problem.element)]);
  }
  return node;
}

void YamlTableReader::RequireAtMost(const Key& key, size_t items,
                                    int64_t max_items) const {
  if (static_cast<uint64_t>(items) > static_cast<uint64_t>(max_items)) {
    section_.Fail(section_.Get(key.name), section_.Join(key.name),
                  StrCat("lists ", items, " items, more than rotor's limit of ",
                         max_items));
  }
}

void YamlTableReader::operator()(const Key& key, double& out,
                                 const field::RealAbove& check) {
  constexpr double kAny = std::numeric_limits<double>::max();
  section_.Read(key.name, out, -kAny, kAny);
  if (!(out > check.min && out <= check.max)) {
    section_.Fail(
        section_.Get(key.name), section_.Join(key.name),
        StrCat("must be in (", check.min, ", ", check.max, "], got ", out));
  }
}

void YamlTableReader::operator()(const Key& key, std::vector<std::string>& out,
                                 const field::Names& check) {
  section_.ReadList(key.name, out, check.expected);
  if (check.if_empty != nullptr && out.empty()) {
    section_.Fail(section_.Get(key.name), section_.Join(key.name),
                  check.if_empty);
  }
  const std::vector<std::string>& allowed = check.allowed();
  std::string allowed_list;
  for (const std::string& name : allowed) {
    allowed_list += (allowed_list.empty() ? "" : ", ") + name;
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < out.size(); ++i) {
    const YAML::Node at = section_.Get(key.name)[i];
    if (std::find(allowed.begin(), allowed.end(), out[i]) == allowed.end()) {
      section_.Fail(at, section_.Join(key.name),
                    StrCat("unknown name '", out[i], "' (expected some of ",
                           allowed_list, ")"));
    }
    if (!seen.insert(out[i]).second) {
      section_.Fail(at, section_.Join(key.name),
                    StrCat("'", out[i], "' is listed twice"));
    }
  }
}

}  // namespace rotor::train
