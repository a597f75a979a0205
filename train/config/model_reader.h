// The one reader of a model's keys, for both files that hold them: a YAML
// `model:` section (train/config/model_yaml.cc) and a Hugging Face
// config.json (train/config/hf_config.cc). It visits the tables of
// model_config.h; each format supplies only a Node, its view of one value:
//
//   bool Present() const;     // given and not null
//   bool IsMap() const;  bool IsList() const;
//   size_t size() const;  Node At(size_t i) const;      // list elements
//   template <typename F> void ForEachEntry(F f) const;  // f(key, key, value)
//   template <typename T> std::optional<T> Decode() const;
//                             // int64_t, double, bool or std::string
//   std::string Describe() const;  // "a map", "a list" or "'value'"
//   std::string Position() const;  // ":LINE:COL", or "" when unknown
//
// Errors read "FILE:LINE:COL: model.KEY: problem" (YAML) or
// "FILE: KEY: problem" (config.json). Keys are read in the file's order
// (Amend reads the amendments' keys the base has first, in the table's
// order, then the others in the file's order); what depends on several keys
// (head_dim from hidden_size, rope_scaling after its rope_type, the checks of
// FindModelConfigProblem) is done after all are read, and its errors point at
// the key's value.
#ifndef ROTOR_TRAIN_CONFIG_MODEL_READER_H_
#define ROTOR_TRAIN_CONFIG_MODEL_READER_H_

#include <algorithm>
#include <any>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "core/fields.h"
#include "core/limits.h"
#include "nn/rope_methods.h"
#include "train/config/extension_lint.h"
#include "train/config/model_config.h"
#include "train/config/overrides.h"
#include "train/io/message.h"

namespace rotor::train {

// Which file a model is read from: a rotor YAML `model:` section (every key
// must be known; errors name "model.KEY"), or a Hugging Face config.json
// (errors name the JSON key; its bookkeeping keys such as
// transformers_version are accepted, and other unknown keys are listed in
// `ignored` rather than refused, as transformers keeps them unused).
enum class ModelConfigDialect { kRotorYaml, kHfConfigJson };

template <typename Node>
class ModelReader {
 public:
  // `overridden` (when given): the key paths ("model.KEY") overrides set;
  // an error about one of their values names the override.
  ModelReader(std::string file, ModelConfigDialect dialect,
              std::vector<std::string>* ignored,
              const OverriddenKeys* overridden = nullptr)
      : file_(std::move(file)),
        dialect_(dialect),
        key_prefix_(dialect == ModelConfigDialect::kRotorYaml ? "model." : ""),
        ignored_(ignored),
        overridden_(overridden) {}

  ModelConfig Parse(const Node& model) {
    ModelConfig config;
    ReadKeys(model, config);
    return Complete(config);
  }

  // `base` (a model folder's config.json) amended by the keys of
  // `amendments` (a map, or absent): a key given replaces the base's value
  // (null: the table's default; rope_scaling as a whole), the others keep
  // the base's. original_max_position_embeddings, for a method that reads
  // it, is the base's pre-training length: a rope_scaling given without
  // one takes it, and the amendments may give no other value. A problem
  // with a value of the base names the file without a line, as none of
  // its lines holds it.
  ModelConfig Amend(const Node& amendments, const ModelConfig& base,
                    PretrainingLength pretraining) {
    ModelConfig config = base;
    if (amendments.Present()) {
      // The keys the base has are read first, in the table's order (a
      // problem with one of them is named before one with a new key).
      SetRows set;
      VisitFields(set, config);
      ModelConfig given;
      ReadKeys(amendments, given, set.names);
      CopyRows(given, config, given_);
    }
    model_ = Node();
    pretraining.inherited_when_absent = true;  // InheritOriginal
    pretraining_ = pretraining;
    return Complete(config);
  }

  // Reads the keys `model` gives into `config`, each checked on its own
  // (type and range); nothing is required or derived (a --rope-from file
  // gives only some keys). rope_scaling waits for ReadRopeScaling.
  // The keys named in `first` are read first, in its order.
  void ReadKeys(const Node& model, ModelConfig& config,
                const std::vector<std::string>& first = {}) {
    model_ = model;
    if (!model.IsMap()) {
      Fail(model, "model",
           "expected a map of model settings, got " + model.Describe());
    }
    struct Entry {
      size_t rank;
      std::string key;
      Node key_node, value;
    };
    std::vector<Entry> entries;
    model.ForEachEntry(
        [&](const std::string& key, const Node& key_node, const Node& value) {
          const size_t rank =
              std::find(first.begin(), first.end(), key) - first.begin();
          entries.push_back({rank, key, key_node, value});
        });
    // Sorted by index: assigning a YAML node would rewrite the node it
    // refers to.
    std::vector<size_t> order(entries.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return entries[a].rank < entries[b].rank;
    });
    for (const size_t i : order) {
      const Entry& entry = entries[i];
      target_ = entry.key;
      value_ = &entry.value;
      found_ = false;
      VisitFields(*this, config);
      if (!found_ && entry.value.Present()) Unknown(entry.key, entry.key_node);
    }
    target_.clear();
  }
  // The sections ReadKeys saw (rope_scaling): each read after the keys
  // around it.
  void ReadRopeScaling(ModelConfig& config) {
    reading_sections_ = true;
    VisitFields(*this, config);
    reading_sections_ = false;
  }
  // Whether ReadKeys read `key` (given, not null).
  bool Given(const std::string& key) const { return marks_.count(key) > 0; }

  // The table's rows: the one named target_ reads its value.
  template <typename T, typename Check>
  void operator()(const Key& key, T& member, const Check& check,
                  const OnlyFor& = {}) {
    if (!Matches(key) || !value_->Present()) return;
    marks_[key.name] = *value_;
    Read(*value_, target_, member, check);
  }
  // A section's map is kept for ReadRopeScaling, then read there.
  template <typename Struct>
  void Section(const Key& key, Struct& fields) {
    if (reading_sections_) {
      const auto it = sections_.find(key.name);
      if (it != sections_.end()) ReadSection(key, it->second, fields);
      return;
    }
    if (!Matches(key) || !value_->Present()) return;
    marks_[key.name] = *value_;
    sections_.emplace(key.name, *value_);
  }

 private:
  // What Parse and Amend do after reading the keys: the required and
  // derived ones, rope_scaling, the checks of FindModelConfigProblem.
  ModelConfig Complete(ModelConfig& config) {
    if (config.rope.max_position_embeddings == 0) {
      Fail(model_, "max_position_embeddings",
           "required but missing (the context length the model was trained "
           "for)");
    }
    const std::string head_dim_origin = ResolveHeadDim(config);
    ReadRopeScaling(config);
    CheckPretrainingLength(config);
    ApplyTopLevelOriginal(config);
    InheritOriginal(config);
    // rotor rotates a leading share of the channels; HF's three classes
    // always rotate all of them (their rotate_half spans the head).
    if (dialect_ == ModelConfigDialect::kHfConfigJson &&
        config.rope.partial_rotary_factor != 1.0) {
      Fail(MarkFor("partial_rotary_factor"), "partial_rotary_factor",
           StrCat("must be 1 for model_type ", ModelTypeName(config.model_type),
                  " (HF's Llama, Mistral and Qwen2 rotate every channel), "
                  "got ",
                  config.rope.partial_rotary_factor));
    }
    if (auto problem = FindModelConfigProblem(config)) {
      std::string message = problem->message;
      if (problem->key == "head_dim") message += head_dim_origin;
      Fail(MarkFor(problem->key.substr(0, problem->key.find('['))),
           problem->key, message);
    }
    return config;
  }

  // Whether `key` is the one being read (given, even as null).
  bool Matches(const Key& key) {
    if (!Named(key, target_)) return false;
    found_ = true;
    given_.insert(key.name);
    return true;
  }
  static bool Named(const Key& key, const std::string& name) {
    return name == key.name || (key.alias != nullptr && name == key.alias);
  }

  void Unknown(const std::string& key, const Node& key_node) {
    if (dialect_ == ModelConfigDialect::kHfConfigJson) {
      if (kHfBookkeepingKeys.count(key) == 0 && ignored_ != nullptr) {
        ignored_->push_back(key);
      }
      return;
    }
    std::string known;
    for (const std::string& name : KeyNamesOf<ModelConfig>()) {
      known += (known.empty() ? "" : ", ") + name;
    }
    Fail(key_node, key, "unknown key (model keys: " + known + ")");
  }

  // head_dim as given, or hidden_size / num_attention_heads; returns how it
  // was derived, for messages about it.
  std::string ResolveHeadDim(ModelConfig& config) {
    if (config.rope.head_dim != 0) return "";
    if (!config.hidden_size || !config.num_attention_heads) {
      Fail(model_, "head_dim",
           "required but missing: give head_dim, or hidden_size and "
           "num_attention_heads");
    }
    const Node hidden = MarkFor("hidden_size");
    if (*config.hidden_size % *config.num_attention_heads != 0) {
      Fail(hidden, "hidden_size",
           StrCat(*config.hidden_size,
                  " is not divisible by num_attention_heads ",
                  *config.num_attention_heads, "; give head_dim explicitly"));
    }
    config.rope.head_dim = *config.hidden_size / *config.num_attention_heads;
    marks_["head_dim"] = hidden;
    if (config.rope.head_dim > limits::kMaxHeadDim) {
      Fail(hidden, "hidden_size",
           StrCat(*config.hidden_size, " / num_attention_heads ",
                  *config.num_attention_heads, " gives head_dim ",
                  config.rope.head_dim, ", more than rotor's limit of ",
                  limits::kMaxHeadDim));
    }
    return StrCat(" (head_dim = hidden_size ", *config.hidden_size,
                  " / num_attention_heads ", *config.num_attention_heads, ")");
  }

  // A section of a method and its keys (rope_scaling): the method's row
  // first (the first of the table; it decides which rows apply), then
  // every key, refused when no row has it, or when its row's ForMethods
  // leaves the method out.
  template <typename Struct>
  void ReadSection(const Key& section, const Node& node, Struct& fields) {
    const std::vector<std::string> names = KeyNamesOf<Struct>();
    const std::string& method_key = names.front();
    if (!node.IsMap()) {
      Fail(node, section.name,
           StrCat("expected a map with ", method_key, " and its keys, got ",
                  node.Describe()));
    }
    MethodRow method{this, node, section.name, {}, {}};
    VisitFields(method, fields);
    const std::set<std::string> others(names.begin() + 1, names.end());
    node.ForEachEntry(
        [&](const std::string& key, const Node& key_node, const Node& value) {
          const std::string path = StrCat(section.name, ".", key);
          SectionRow row{this, key, path, key_node, value, method};
          VisitFields(row, fields);
          if (!row.found) {
            Fail(key_node, path,
                 StrCat("unknown key (", section.name, " keys: ", method_key,
                        ", ", JoinKeys({others.begin(), others.end()}), ")"));
          }
        });
  }

  // Reads a section's method row: rope_type, or its legacy name `type`
  // (the row's alias); both must agree.
  struct MethodRow {
    ModelReader* reader;
    const Node& node;
    const std::string& section;
    std::string name;  // as given
    SectionMethod method;
    template <typename T, typename Check, typename... Extra>
    void operator()(const Key&, T&, const Check&, const Extra&...) {}
    void operator()(const Key& row, RopeType& member,
                    const field::Choice<RopeType>& check) {
      member = reader->ReadMethod(node, section, row, check, &name);
      method.Set(row, member);
    }
  };

  // Reads the one row of a section named `key`; the method's row was read.
  struct SectionRow {
    ModelReader* reader;
    const std::string& key;
    const std::string& path;
    const Node& key_node;
    const Node& value;
    const MethodRow& method_row;
    bool found = false;
    void operator()(const Key& row, RopeType&, const field::Choice<RopeType>&) {
      found = found || Named(row, key);
    }
    template <typename T, typename Check>
    void operator()(const Key& row, T& member, const Check& check,
                    const ForMethods& only) {
      if (key != row.name) return;
      found = true;
      const SectionMethod& method = method_row.method;
      if (!method.Applies(row, only)) {
        reader->Fail(key_node, path,
                     StrCat("does not apply to ", method.row(), " '",
                            method_row.name, "' (its keys: ",
                            JoinKeys(RopeScalingKeys(method.type())), ")"));
      }
      if (!value.Present()) return;
      reader->marks_[path] = value;
      reader->Read(value, path, member, check);
    }
  };

  // The method of a section, from its row `key` or the row's alias; both
  // given must agree.
  RopeType ReadMethod(const Node& node, const std::string& section,
                      const Key& key, const field::Choice<RopeType>& check,
                      std::string* name) {
    const std::string path = section + ".";
    std::optional<Node> type_node;
    std::string type_key;
    node.ForEachEntry([&](const std::string& entry, const Node&,
                          const Node& value) {
      if (!Named(key, entry) || !value.Present()) return;
      if (type_node &&
          Decode<std::string>(*type_node, path + type_key, check.expected) !=
              Decode<std::string>(value, path + entry, check.expected)) {
        Fail(value, path + entry,
             StrCat("'", Excerpt(*value.template Decode<std::string>()),
                    "' contradicts ", type_key, " '",
                    Excerpt(*type_node->template Decode<std::string>()), "' (",
                    key.alias, " is the legacy name of ", key.name,
                    ", and readers differ in which they take): delete "
                    "one, or give both the same method"));
      }
      type_node = value;
      type_key = entry;
    });
    if (!type_node) {
      Fail(node, path + key.name,
           StrCat("required but missing (one of ", RopeTypeNames(), ")"));
    }
    *name = Decode<std::string>(*type_node, path + type_key, check.expected);
    const std::optional<RopeType> type = check.from_name(*name);
    if (!type) Fail(*type_node, path + type_key, check.refusal(*name));
    marks_[path + key.name] = *type_node;
    return *type;
  }

  // Phi-3 configs give original_max_position_embeddings at the top level.
  // It sets L0 for the methods that read it (yarn, llama3, longrope; the
  // others ignore it, as HF does). HF's standardize_rope_params lets it win
  // over rope_scaling's silently; rotor refuses two different values.
  void ApplyTopLevelOriginal(ModelConfig& config) {
    const std::optional<int64_t> top_level =
        config.top_level_original_max_position_embeddings;
    config.top_level_original_max_position_embeddings.reset();
    RopeScalingConfig& rope = config.rope;
    if (!top_level || !RopeMethodOf(rope.rope_type).reads_original_length()) {
      return;
    }
    const std::optional<int64_t> nested = rope.original_max_position_embeddings;
    if (nested && *nested != *top_level) {
      Fail(MarkFor("original_max_position_embeddings"),
           "original_max_position_embeddings",
           StrCat(*top_level,
                  " contradicts rope_scaling.original_max_position_"
                  "embeddings ",
                  *nested, "; give one of them"));
    }
    rope.original_max_position_embeddings = *top_level;
    marks_["rope_scaling.original_max_position_embeddings"] =
        MarkFor("original_max_position_embeddings");
  }

  // Amend: with a rope_scaling the amendments give, for a method that
  // reads original_max_position_embeddings, the value they give (nested,
  // else at the top level) must be the base's pre-training length (the
  // context-extension lint's check): YaRN's ramp and attention factor, and
  // what an export writes, would be those of another model.
  void CheckPretrainingLength(const ModelConfig& config) {
    const RopeScalingConfig& rope = config.rope;
    if (!pretraining_ || given_.count("rope_scaling") == 0 ||
        !RopeMethodOf(rope.rope_type).reads_original_length()) {
      return;
    }
    const bool nested = Given("rope_scaling.original_max_position_embeddings");
    const std::optional<int64_t> given =
        nested ? rope.original_max_position_embeddings
               : config.top_level_original_max_position_embeddings;
    if (!given) return;
    const char* key = nested ? "rope_scaling.original_max_position_embeddings"
                             : "original_max_position_embeddings";
    if (const std::optional<std::string> problem =
            PretrainingLengthProblem(*given, *pretraining_)) {
      Fail(MarkFor(key), key, *problem);
    }
  }

  // Amend: a rope_scaling the amendments give, for a method that reads
  // original_max_position_embeddings, without one (nested or at the top
  // level, or given as null), measures from the base's pre-training
  // length, as axolotl does; its value has no line in the file.
  void InheritOriginal(ModelConfig& config) {
    RopeScalingConfig& rope = config.rope;
    if (!pretraining_ || given_.count("rope_scaling") == 0 ||
        rope.original_max_position_embeddings ||
        !RopeMethodOf(rope.rope_type).reads_original_length()) {
      return;
    }
    rope.original_max_position_embeddings = pretraining_->tokens;
    marks_.emplace("rope_scaling.original_max_position_embeddings", Node());
  }

  // The names of the rows of a struct that hold a value (every member but
  // an empty optional, every section), in the table's order: the keys a
  // writer writes.
  struct SetRows {
    std::vector<std::string> names;
    template <typename T, typename Check, typename... Extra>
    void operator()(const Key& key, const T& member, const Check&,
                    const Extra&...) {
      if (HasValue(member)) names.push_back(key.name);
    }
    template <typename Struct>
    void Section(const Key& key, Struct&) {
      names.push_back(key.name);
    }
    template <typename T>
    static bool HasValue(const std::optional<T>& member) {
      return member.has_value();
    }
    template <typename T>
    static bool HasValue(const T&) {
      return true;
    }
  };

  // Copies into `to` the rows of `from` named in `keys` (a section's name:
  // every row of it): a first visit of `from` takes their members'
  // addresses, a visit of `to` assigns them in the same order, each
  // any_cast checking that the two rows hold one type.
  template <typename Struct>
  static void CopyRows(Struct& from, Struct& to,
                       const std::set<std::string>& keys) {
    RowCopier copier{keys, {}};
    VisitFields(copier, from);
    copier.assigning = true;
    VisitFields(copier, to);
    ROTOR_CHECK(copier.next == copier.from.size(),
                "CopyRows: ", copier.from.size(), " rows taken, ", copier.next,
                " assigned");
  }
  struct RowCopier {
    const std::set<std::string>& keys;  // of the top level
    std::vector<std::any> from;         // T*, in the table's order
    bool assigning = false;
    size_t next = 0;
    bool whole_section = false;
    template <typename T, typename Check, typename... Extra>
    void operator()(const Key& key, T& member, const Check&, const Extra&...) {
      if (!whole_section && keys.count(key.name) == 0) return;
      if (!assigning) {
        from.push_back(&member);
        return;
      }
      T* const* source =
          next < from.size() ? std::any_cast<T*>(&from[next]) : nullptr;
      ROTOR_CHECK(source != nullptr, "CopyRows: row ", key.name,
                  " is not the one taken in its place");
      member = **source;
      ++next;
    }
    template <typename Struct>
    void Section(const Key& key, Struct& fields) {
      if (!whole_section && keys.count(key.name) == 0) return;
      const bool outer = whole_section;
      whole_section = true;
      VisitFields(*this, fields);
      whole_section = outer;
    }
  };

  // --- one value, by the member's type and the row's check ---

  // A name (T = std::string) holds no control character.
  template <typename T>
  T Decode(const Node& value, const std::string& key, const char* what) const {
    const std::optional<T> result = value.template Decode<T>();
    if (!result) {
      Fail(value, key, StrCat("expected ", what, ", got ", value.Describe()));
    }
    if constexpr (std::is_same_v<T, std::string>) {
      if (const std::optional<std::string> problem =
              ControlCharacterProblem(*result)) {
        Fail(value, key, *problem);
      }
    }
    return *result;
  }
  template <typename T, typename Check>
  void Read(const Node& value, const std::string& key, std::optional<T>& out,
            const Check& check) {
    T read{};
    Read(value, key, read, check);
    out = read;
  }
  void Read(const Node& value, const std::string& key, int64_t& out,
            const field::Int& check) {
    out = Decode<int64_t>(value, key, "a decimal integer");
    if (out < check.min) {
      Fail(value, key, StrCat("must be >= ", check.min, ", got ", out));
    }
    if (out > check.max) {
      Fail(value, key,
           StrCat("must be <= ", check.max, " (rotor's limit), got ", out));
    }
  }
  void Read(const Node& value, const std::string& key, int64_t& out,
            const field::AnyInt&) {
    out = Decode<int64_t>(value, key, "a decimal integer");
  }
  void Read(const Node& value, const std::string& key, int64_t& out,
            const field::TokenId&) {
    out = Decode<int64_t>(value, key, "a decimal integer");
    if (out < 0 || out >= limits::kMaxVocabSize) {
      Fail(value, key,
           StrCat("must be a token id in [0, ", limits::kMaxVocabSize,
                  "), got ", out));
    }
  }
  void Read(const Node& value, const std::string& key,
            std::vector<int64_t>& out, const field::TokenIds&) {
    out.clear();
    if (!value.IsList()) {
      Read(value, key, out.emplace_back(), field::TokenId{});
      return;
    }
    if (value.size() == 0) {
      Fail(value, key,
           "expected a token id or a list of them, got an empty list");
    }
    for (size_t i = 0; i < value.size(); ++i) {
      Read(value.At(i), StrCat(key, "[", i, "]"), out.emplace_back(),
           field::TokenId{});
    }
  }
  void Read(const Node& value, const std::string& key, double& out,
            const field::AnyReal&) {
    out = Decode<double>(value, key, "a number");
  }
  void Read(const Node& value, const std::string& key, double& out,
            const field::PositiveReal&) {
    out = Decode<double>(value, key, "a number");
    if (!(std::isfinite(out) && out > 0.0)) {
      Fail(value, key, StrCat("must be a finite number > 0, got ", out));
    }
  }
  void Read(const Node& value, const std::string& key, double& out,
            const field::Zero& check) {
    out = Decode<double>(value, key, "a number");
    if (out != 0.0) {
      Fail(value, key, StrCat("must be 0 (", check.why, "), got ", out));
    }
  }
  void Read(const Node& value, const std::string& key, std::vector<double>& out,
            const field::Reals&) {
    if (!value.IsList()) {
      Fail(value, key,
           StrCat("expected a list of numbers, got ", value.Describe()));
    }
    out.clear();
    for (size_t i = 0; i < value.size(); ++i) {
      out.push_back(
          Decode<double>(value.At(i), StrCat(key, "[", i, "]"), "a number"));
    }
  }
  void Read(const Node& value, const std::string& key, bool& out,
            const field::Flag&) {
    out = Decode<bool>(value, key, "true or false");
  }
  void Read(const Node& value, const std::string& key, std::string& out,
            const field::Accepted& check) {
    out = Decode<std::string>(value, key, "a name");
    if (std::find(check.names.begin(), check.names.end(), out) ==
        check.names.end()) {
      Fail(value, key, check.refusal(out));
    }
  }
  template <typename Enum>
  void Read(const Node& value, const std::string& key, Enum& out,
            const field::Choice<Enum>& check) {
    const std::string name = Decode<std::string>(value, key, check.expected);
    const std::optional<Enum> parsed = check.from_name(name);
    if (!parsed) Fail(value, key, check.refusal(name));
    out = *parsed;
  }

  // The value of `key`; for a key that is absent, the map it is missing
  // from.
  Node MarkFor(const std::string& key) const {
    auto it = marks_.find(key);
    if (it != marks_.end()) return it->second;
    const size_t dot = key.rfind('.');
    if (dot != std::string::npos) return MarkFor(key.substr(0, dot));
    return model_;
  }

  // At the override that gave the value, or at its place in the file,
  // then naming the overrides of model keys that may have led to it.
  [[noreturn]] void Fail(const Node& at, const std::string& key,
                         const std::string& message) const {
    const std::string position = at.Position();
    const std::string* assignment =
        overridden_ == nullptr
            ? nullptr
            : OverrideOf(*overridden_, key_prefix_ + key, !position.empty());
    std::string where = file_ + position;
    std::string after;
    if (assignment != nullptr) {
      where = OverrideName(*assignment);
    } else if (overridden_ != nullptr) {
      for (const auto& [path, text] : *overridden_) {
        if (path.rfind(key_prefix_, 0) == 0) after += " " + path;
      }
    }
    throw Error(StrCat(
        where, ": ", key_prefix_, PrintableExcerpt(key), ": ", message,
        after.empty() ? "" : " (after command-line overrides:" + after + ")"));
  }

  static std::string JoinKeys(const std::vector<std::string>& keys) {
    std::string joined;
    for (const std::string& key : keys) {
      joined += (joined.empty() ? "" : ", ") + key;
    }
    return joined.empty() ? "none" : joined;
  }

  // The keys of config.json that describe the file rather than the model.
  inline static const std::set<std::string> kHfBookkeepingKeys = {
      "architectures",    "transformers_version",   "_name_or_path",
      "use_cache",        "pretraining_tp",         "is_llama_config",
      "rope_interleaved", "transformers.js_config", "auto_map"};

  std::string file_;
  ModelConfigDialect dialect_;
  std::string key_prefix_;
  std::vector<std::string>* ignored_;
  const OverriddenKeys* overridden_;
  Node model_;
  std::string target_;  // the key being read, and its value
  const Node* value_ = nullptr;
  bool found_ = false;
  std::set<std::string> given_;           // the keys read (given, even as null)
  std::map<std::string, Node> sections_;  // a section's map, read later
  bool reading_sections_ = false;
  std::optional<PretrainingLength> pretraining_;  // Amend's base
  std::map<std::string, Node> marks_;
};

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_CONFIG_MODEL_READER_H_
