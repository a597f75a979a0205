#include "train/io/json.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/error.h"

namespace rotor::train {

JsonValue JsonValue::Bool(bool value) {
  JsonValue v;
  v.type_ = Type::kBool;
  v.bool_ = value;
  return v;
}

JsonValue JsonValue::Integer(int64_t value) {
  JsonValue v;
  v.type_ = Type::kNumber;
  v.text_ = std::to_string(value);
  return v;
}

JsonValue JsonValue::Unsigned(uint64_t value) {
  JsonValue v;
  v.type_ = Type::kNumber;
  v.text_ = std::to_string(value);
  return v;
}

JsonValue JsonValue::Number(double value) {
  ROTOR_CHECK(std::isfinite(value), "JSON cannot represent the number ", value,
              " (only finite numbers)");
  // The shortest %.Ng form that reads back as the same double, so 0.05 is
  // written "0.05" rather than "0.050000000000000003".
  char buffer[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value) break;
  }
  JsonValue v;
  v.type_ = Type::kNumber;
  v.text_ = buffer;
  return v;
}

JsonValue JsonValue::String(std::string value) {
  JsonValue v;
  v.type_ = Type::kString;
  v.text_ = std::move(value);
  return v;
}

JsonValue JsonValue::Array() {
  JsonValue v;
  v.type_ = Type::kArray;
  return v;
}

JsonValue JsonValue::Object() {
  JsonValue v;
  v.type_ = Type::kObject;
  return v;
}

const char* JsonValue::TypeName(Type type) {
  switch (type) {
    case Type::kNull:
      return "null";
    case Type::kBool:
      return "bool";
    case Type::kNumber:
      return "number";
    case Type::kString:
      return "string";
    case Type::kArray:
      return "array";
    case Type::kObject:
      return "object";
  }
  return "?";
}

namespace {

void CheckType(JsonValue::Type actual, JsonValue::Type expected) {
  ROTOR_CHECK(actual == expected, "JSON: expected type ",
              JsonValue::TypeName(expected), ", got ",
              JsonValue::TypeName(actual));
}

bool IsIntegerText(const std::string& text) {
  return text.find_first_of(".eE") == std::string::npos;
}

}  // namespace

bool JsonValue::AsBool() const {
  CheckType(type_, Type::kBool);
  return bool_;
}

double JsonValue::AsDouble() const {
  CheckType(type_, Type::kNumber);
  return std::strtod(text_.c_str(), nullptr);
}

int64_t JsonValue::AsInt64() const {
  CheckType(type_, Type::kNumber);
  ROTOR_CHECK(IsIntegerText(text_), "JSON: expected an integer, got ", text_);
  errno = 0;
  const long long value = std::strtoll(text_.c_str(), nullptr, 10);
  ROTOR_CHECK(errno == 0, "JSON: integer ", text_, " is out of range");
  return value;
}

uint64_t JsonValue::AsUint64() const {
  CheckType(type_, Type::kNumber);
  ROTOR_CHECK(IsIntegerText(text_) && text_[0] != '-',
              "JSON: expected a non-negative integer, got ", text_);
  errno = 0;
  const unsigned long long value = std::strtoull(text_.c_str(), nullptr, 10);
  ROTOR_CHECK(errno == 0, "JSON: integer ", text_, " is out of range");
  return value;
}

const std::string& JsonValue::AsString() const {
  CheckType(type_, Type::kString);
  return text_;
}

const std::vector<JsonValue>& JsonValue::items() const {
  CheckType(type_, Type::kArray);
  return items_;
}

void JsonValue::Append(JsonValue value) {
  CheckType(type_, Type::kArray);
  items_.push_back(std::move(value));
}

const std::vector<std::pair<std::string, JsonValue>>& JsonValue::members()
    const {
  CheckType(type_, Type::kObject);
  return members_;
}

void JsonValue::Set(const std::string& key, JsonValue value) {
  CheckType(type_, Type::kObject);
  for (auto& member : members_) {
    if (member.first == key) {
      member.second = std::move(value);
      return;
    }
  }
  members_.emplace_back(key, std::move(value));
}

const JsonValue* JsonValue::Find(std::string_view key) const {
  if (type_ != Type::kObject) return nullptr;
  for (const auto& member : members_) {
    if (member.first == key) return &member.second;
  }
  return nullptr;
}

const JsonValue& JsonValue::Get(std::string_view key) const {
  CheckType(type_, Type::kObject);
  const JsonValue* value = Find(key);
  ROTOR_CHECK(value != nullptr, "JSON: missing key \"", key, "\"");
  return *value;
}

void AppendJsonString(std::string& out, std::string_view value) {
  out += '"';
  for (const char c : value) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escape[8];
          std::snprintf(escape, sizeof(escape), "\\u%04x",
                        static_cast<unsigned char>(c));
          out += escape;
        } else {
          out += c;  // bytes >= 0x80 (UTF-8) pass through unchanged
        }
    }
  }
  out += '"';
}

void JsonValue::DumpTo(std::string& out, int indent, int depth) const {
  const auto newline = [&](int level) {
    if (indent < 0) return;
    out += '\n';
    out.append(static_cast<size_t>(indent * level), ' ');
  };
  switch (type_) {
    case Type::kNull:
      out += "null";
      return;
    case Type::kBool:
      out += bool_ ? "true" : "false";
      return;
    case Type::kNumber:
      out += text_;
      return;
    case Type::kString:
      AppendJsonString(out, text_);
      return;
    case Type::kArray:
      out += '[';
      for (size_t i = 0; i < items_.size(); ++i) {
        if (i > 0) out += ',';
        newline(depth + 1);
        items_[i].DumpTo(out, indent, depth + 1);
      }
      if (!items_.empty()) newline(depth);
      out += ']';
      return;
    case Type::kObject:
      out += '{';
      for (size_t i = 0; i < members_.size(); ++i) {
        if (i > 0) out += ',';
        newline(depth + 1);
        AppendJsonString(out, members_[i].first);
        out += indent < 0 ? ":" : ": ";
        members_[i].second.DumpTo(out, indent, depth + 1);
      }
      if (!members_.empty()) newline(depth);
      out += '}';
      return;
  }
}

std::string JsonValue::Dump(int indent) const {
  std::string out;
  DumpTo(out, indent, 0);
  return out;
}

// Recursive-descent parser over the grammar of RFC 8259.
class JsonParser {
 public:
  JsonParser(std::string_view text, std::string_view source)
      : text_(text), source_(source) {}

  JsonValue ParseDocument() {
    SkipWhitespace();
    JsonValue value = ParseValue(0);
    SkipWhitespace();
    if (pos_ != text_.size()) Fail("unexpected text after the JSON value");
    return value;
  }

 private:
  // Deep enough for any real file, shallow enough to never overflow the stack.
  static constexpr int kMaxDepth = 128;

  [[noreturn]] void Fail(const std::string& what) const {
    throw Error(StrCat(source_, ": invalid JSON at byte ", pos_, ": ", what));
  }

  void SkipWhitespace() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
            text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool Consume(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  void Expect(char c, const char* context) {
    if (!Consume(c)) {
      Fail(pos_ < text_.size() ? StrCat("expected '", c, "' ", context,
                                        ", found '", text_[pos_], "'")
                               : StrCat("expected '", c, "' ", context,
                                        ", found the end of the text"));
    }
  }

  void ExpectWord(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) {
      Fail(StrCat("expected '", word, "'"));
    }
    pos_ += word.size();
  }

  JsonValue ParseValue(int depth) {
    if (depth > kMaxDepth) Fail(StrCat("nested deeper than ", kMaxDepth));
    if (pos_ >= text_.size())
      Fail("expected a value, found the end of the text");
    const char c = text_[pos_];
    if (c == '{') return ParseObject(depth);
    if (c == '[') return ParseArray(depth);
    if (c == '"') return JsonValue::String(ParseString());
    if (c == 't') {
      ExpectWord("true");
      return JsonValue::Bool(true);
    }
    if (c == 'f') {
      ExpectWord("false");
      return JsonValue::Bool(false);
    }
    if (c == 'n') {
      ExpectWord("null");
      return JsonValue();
    }
    if (c == '-' || (c >= '0' && c <= '9')) return ParseNumber();
    Fail(StrCat("unexpected character '", c, "'"));
  }

  JsonValue ParseObject(int depth) {
    JsonValue object = JsonValue::Object();
    ++pos_;  // '{'
    SkipWhitespace();
    if (Consume('}')) return object;
    while (true) {
      SkipWhitespace();
      if (pos_ >= text_.size() || text_[pos_] != '"') {
        Fail("expected a string key in the object");
      }
      const size_t key_pos = pos_;
      std::string key = ParseString();
      if (object.Find(key) != nullptr) {
        pos_ = key_pos;
        Fail(StrCat("duplicate key \"", key, "\""));
      }
      SkipWhitespace();
      Expect(':', "after an object key");
      SkipWhitespace();
      object.members_.emplace_back(std::move(key), ParseValue(depth + 1));
      SkipWhitespace();
      if (Consume('}')) return object;
      Expect(',', "or '}' in the object");
    }
  }

  JsonValue ParseArray(int depth) {
    JsonValue array = JsonValue::Array();
    ++pos_;  // '['
    SkipWhitespace();
    if (Consume(']')) return array;
    while (true) {
      SkipWhitespace();
      array.items_.push_back(ParseValue(depth + 1));
      SkipWhitespace();
      if (Consume(']')) return array;
      Expect(',', "or ']' in the array");
    }
  }

  static void AppendUtf8(std::string& out, uint32_t code_point) {
    if (code_point < 0x80) {
      out += static_cast<char>(code_point);
    } else if (code_point < 0x800) {
      out += static_cast<char>(0xC0 | (code_point >> 6));
      out += static_cast<char>(0x80 | (code_point & 0x3F));
    } else if (code_point < 0x10000) {
      out += static_cast<char>(0xE0 | (code_point >> 12));
      out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code_point & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (code_point >> 18));
      out += static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code_point & 0x3F));
    }
  }

  uint32_t ParseHex4() {
    if (pos_ + 4 > text_.size()) Fail("truncated \\u escape");
    uint32_t value = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[pos_++];
      value <<= 4;
      if (c >= '0' && c <= '9') {
        value |= static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        value |= static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        value |= static_cast<uint32_t>(c - 'A' + 10);
      } else {
        --pos_;
        Fail("bad hex digit in \\u escape");
      }
    }
    return value;
  }

  std::string ParseString() {
    ++pos_;  // opening quote
    std::string out;
    while (true) {
      if (pos_ >= text_.size()) Fail("unterminated string");
      const char c = text_[pos_];
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20) {
        Fail("control character in a string (must be escaped)");
      }
      if (c != '\\') {
        out += c;
        ++pos_;
        continue;
      }
      ++pos_;
      if (pos_ >= text_.size()) Fail("unterminated escape");
      const char escape = text_[pos_++];
      switch (escape) {
        case '"':
        case '\\':
        case '/':
          out += escape;
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          uint32_t code_point = ParseHex4();
          if (code_point >= 0xD800 && code_point < 0xDC00) {
            // A high surrogate must be followed by \u and a low surrogate.
            if (text_.substr(pos_, 2) != "\\u") Fail("unpaired surrogate");
            pos_ += 2;
            const uint32_t low = ParseHex4();
            if (low < 0xDC00 || low >= 0xE000) Fail("unpaired surrogate");
            code_point =
                0x10000 + ((code_point - 0xD800) << 10) + (low - 0xDC00);
          } else if (code_point >= 0xDC00 && code_point < 0xE000) {
            Fail("unpaired surrogate");
          }
          AppendUtf8(out, code_point);
          break;
        }
        default:
          --pos_;
          Fail(StrCat("unknown escape '\\", escape, "'"));
      }
    }
  }

  JsonValue ParseNumber() {
    const size_t start = pos_;
    const auto digits = [&]() {
      const size_t from = pos_;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
        ++pos_;
      }
      return pos_ - from;
    };
    Consume('-');
    if (Consume('0')) {
      // no leading zeros: "0" alone, or "0." / "0e"
    } else if (digits() == 0) {
      Fail("expected digits in a number");
    }
    if (Consume('.') && digits() == 0) Fail("expected digits after '.'");
    if (Consume('e') || Consume('E')) {
      if (!Consume('+')) Consume('-');
      if (digits() == 0) Fail("expected digits in the exponent");
    }
    JsonValue number;
    number.type_ = JsonValue::Type::kNumber;
    number.text_ = std::string(text_.substr(start, pos_ - start));
    return number;
  }

  std::string_view text_;
  std::string_view source_;
  size_t pos_ = 0;
};

JsonValue ParseJson(std::string_view text, std::string_view source) {
  return JsonParser(text, source).ParseDocument();
}

}  // namespace rotor::train
