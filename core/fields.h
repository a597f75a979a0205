// The vocabulary of rotor's config tables: each config struct declares its
// keys once, in a function beside it,
//
//   template <typename Visitor>
//   void VisitFields(Visitor& v, LoggingSection& s) {
//     v(Key{"log_every_n_steps", "steps between log lines"},
//       s.log_every_n_steps, field::Int{1});
//     v(Key{"progress", "a live progress line on a terminal"}, s.progress,
//       field::Flag{});
//   }
//
// and every format is a visitor over that function: the YAML reader and
// writer (train/config/yaml.h), the config.json reader and writer
// (train/config/hf_config.cc), the key lists of "unknown key" messages and
// the documentation test (tests/train/config/fields_test.cc). A row names
// the key (its YAML spelling, which for model keys is Hugging Face's
// config.json spelling too), the member it fills, and what the value may be:
// one of the checks below, each of which fixes the message a reader gives
// for a value outside it. Nothing here knows YAML or JSON.
//
// Adding a key takes two edits: the struct member, and its row (plus the
// code that uses it). This is gemma.cpp's VisitFields/ForEach and
// llama.cpp's LLM_KV_NAMES with get_key, kept in rotor's strict style.
// It sits in core/ and includes only std headers (as gemma.cpp's
// io/fields.h sits below gemma/configs.h), so a table can live beside its
// struct in any layer: rope_scaling's in nn/rope_scaling.h.
#ifndef ROTOR_CORE_FIELDS_H_
#define ROTOR_CORE_FIELDS_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace rotor {

// A key of a config map.
struct Key {
  const char* name;  // YAML key (and config.json key, for model keys)
  const char* help;  // one line: what it sets
  // A second spelling read as the same key (config.json's `dtype` for
  // torch_dtype, rope_scaling's legacy `type`), never written.
  const char* alias = nullptr;
};

namespace field {

// An integer in [min, max]; "must be >= MIN, got V", "must be <= MAX
// (rotor's limit), got V".
struct Int {
  int64_t min;
  int64_t max = std::numeric_limits<int64_t>::max();
};
// Any integer (a model decides what it means: max_window_layers).
struct AnyInt {};
// A non-negative 64-bit integer (seeds).
struct Unsigned {};
// A finite number in [min, max]; "must be in [MIN, MAX], got V".
struct Real {
  double min = -std::numeric_limits<double>::max();
  double max = std::numeric_limits<double>::max();
};
// A finite number in (min, max]; "must be in (MIN, MAX], got V".
struct RealAbove {
  double min;
  double max;
};
// Any number, infinities included: the struct's own check
// (FindRopeConfigProblem) judges it together with the keys it depends on.
struct AnyReal {};
// A finite number > 0; "must be a finite number > 0, got V".
struct PositiveReal {};
// A number >= min, +infinity included: a measurement that may pass a
// double's range (a perplexity exp(loss)); "must be >= MIN, got V". JSON
// has no infinity: it is written as null, and null reads back as +infinity
// (a NaN, from a model that diverged, as "nan": train/io/json.h).
struct RealAtLeast {
  double min;
};
// Exactly 0, for what rotor does not have; "must be 0 (WHY), got V".
struct Zero {
  const char* why;
};
// A list of numbers, checked as AnyReal each.
struct Reals {};
// Two numbers in [0, 1) (AdamW's betas), kept in two members.
struct UnitPair {};
struct Pair {
  double& first;
  double& second;
};
// true or false.
struct Flag {};
// A non-empty string (a path, a folder).
struct Text {};
// A token id in [0, kMaxVocabSize); the vocabulary check is the struct's.
struct TokenId {};
// One token id or a non-empty list of them (eos_token_id).
struct TokenIds {};
// A list of positive integers (lengths) of at most `max_items`; "lists N
// items, more than rotor's limit of MAX".
struct Ints {
  const char* expected;  // "positive integers", for the message
  int64_t max_items;
};
// A list of numbers (depths) of at most `max_items`, judged by the struct's
// check.
struct Numbers {
  const char* expected;
  int64_t max_items;
};
// A list of names, each of `allowed` at most once; `if_empty` (when given)
// is the message for an empty list.
struct Names {
  const std::vector<std::string>& (*allowed)();
  const char* expected;  // "module names", for "expected a list of ..."
  const char* if_empty = nullptr;
};
// A list of plain strings (key=value overrides).
struct Strings {
  const char* expected;
};

// A name standing for an enum value: `name` and `from_name` convert, and
// `refusal` is the message for a name that is none of them ("'gpt2' is not
// supported (...)"). `expected` describes a value that is no name at all.
template <typename Enum>
struct Choice {
  const char* (*name)(Enum);
  std::optional<Enum> (*from_name)(const std::string&);
  std::string (*refusal)(const std::string& given);
  const char* expected = "a name";
};
// A name read by `parse`, which throws naming the accepted ones.
template <typename Enum>
struct Parsed {
  const char* (*name)(Enum);
  Enum (*parse)(const std::string&);
};
// A list of Choice names (the report's methods).
template <typename Enum>
struct Choices {
  Choice<Enum> each;
  const char* expected;
};

// The names a checked value may take without being stored (hidden_act:
// silu; rotor has no other): `refusal` as in Choice.
struct Accepted {
  std::vector<std::string> names;
  std::string (*refusal)(const std::string& given);
};

// The base of a check with its own YAML form (train.resume,
// train.activation_checkpointing): it reads and writes the value itself,
// through members Read(const SectionReader&, const char* key, T&) and
// std::optional<YAML::Node> Write(const T&) defined beside its table.
struct Custom {};

}  // namespace field

// A problem found by a struct's check (FindTrainConfigProblem): the key path
// it concerns ("train.min_lr"), and what is wrong. `element` is the index in
// the key's list when the problem is one element (-1: the key itself).
struct ConfigProblem {
  std::string key;
  std::string message;
  int64_t element = -1;
};

// A row of a result record's table (train/eval/length_eval.h) in one of
// the record's two JSON forms only (train/io/json.h, RecordJson); a row
// without either is in both. StoredOnly: kept in the report's results files
// and read back. ShownOnly: a figure computed from the members, shown by
// rotor eval --json and never read. StoredLast: in both forms, and last in
// the stored one (the results files have kept each record's count there
// since they began; rotor eval --json shows it after the length).
struct StoredOnly {};
struct ShownOnly {};
struct StoredLast {};

// Every key name of a table, in its order.
struct KeyNames {
  std::vector<std::string> names;
  template <typename T, typename Check, typename... Extra>
  void operator()(const Key& key, T&&, const Check&, const Extra&...) {
    names.push_back(key.name);
  }
  template <typename Struct>
  void Section(const Key& key, Struct&, bool* = nullptr) {
    names.push_back(key.name);
  }
  template <typename Rows>
  void Map(const Key& key, Rows&&, bool* = nullptr) {
    names.push_back(key.name);
  }
};
// `visitor` after visiting the table of a default `Struct`.
template <typename Struct, typename Visitor>
Visitor VisitedOnDefaults(Visitor visitor) {
  Struct scratch;
  VisitFields(visitor, scratch);
  return visitor;
}
template <typename Struct>
std::vector<std::string> KeyNamesOf() {
  return VisitedOnDefaults<Struct>(KeyNames{}).names;
}

// Every key path of a table with its help line, in the table's order: a
// section or map, then its keys ("finetune.lora", "finetune.lora.r"). What
// `rotor keys` prints.
class KeyPaths {
 public:
  struct Entry {
    std::string path;
    const char* help;
  };
  std::vector<Entry> entries;

  template <typename T, typename Check, typename... Extra>
  void operator()(const Key& key, T&&, const Check&, const Extra&...) {
    Add(key);
  }
  template <typename Struct>
  void Section(const Key& key, Struct& fields, bool* = nullptr) {
    Add(key);
    prefix_.push_back(key.name);
    VisitFields(*this, fields);
    prefix_.pop_back();
  }
  template <typename Rows>
  void Map(const Key& key, Rows&& rows, bool* = nullptr) {
    Add(key);
    prefix_.push_back(key.name);
    rows(*this);
    prefix_.pop_back();
  }

 private:
  void Add(const Key& key) {
    std::string path;
    for (const std::string& part : prefix_) path += part + ".";
    entries.push_back({path + key.name, key.help});
  }
  std::vector<std::string> prefix_;
};
template <typename Struct>
std::vector<KeyPaths::Entry> KeyPathsOf() {
  return VisitedOnDefaults<Struct>(KeyPaths()).entries;
}

}  // namespace rotor

#endif  // ROTOR_CORE_FIELDS_H_
