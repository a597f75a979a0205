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
//   or, for a value given on the command line,
//     "command-line override section.key: problem".
#ifndef ROTOR_TRAIN_CONFIG_YAML_H_
#define ROTOR_TRAIN_CONFIG_YAML_H_

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "train/config/model_config.h"
#include "train/config/train_config.h"  // kMaxConfigBytes

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
// the way; the value is read as YAML, so lists work: train.betas=[0.9,0.99])
// and returns the key path "a.b.c". Throws rotor::Error for a malformed
// assignment.
std::string ApplyYamlOverride(YAML::Node& root, const std::string& assignment);
// Applies every override in order and returns their key paths. A key path
// given twice is an error naming it (one of the two values would be lost).
std::set<std::string> ApplyYamlOverrides(
    YAML::Node& root, const std::vector<std::string>& assignments);

// "a map", "a list" or the scalar in quotes, for "expected X, got Y".
std::string DescribeYaml(const YAML::Node& node);

// A number as the YAML writers emit it: the shortest text that reads back
// as the same double (0.1, not yaml-cpp's 0.10000000000000001), and .inf,
// -.inf or .nan for the others. Integers keep their own overloads.
YAML::Node YamlNumber(double value);

// One scalar read as T (int64_t, uint64_t, double, bool or std::string), or
// nullopt when `node` is not a scalar of that type ("-1" is no uint64_t).
// Every config reader decodes through it, so "expected an integer" means the
// same in every file.
template <typename T>
std::optional<T> DecodeScalar(const YAML::Node& node);

// Reads one section (a YAML map) strictly. Absent and null keys leave the
// output untouched (its default).
class SectionReader {
 public:
  // `path` is the section's key path ("train"; "" for the top level);
  // `overridden` the key paths that came from the command line.
  SectionReader(const YAML::Node& node, std::string path,
                const std::string& file,
                const std::set<std::string>& overridden);

  // Rejects keys not in `known`, listing the known ones.
  void RequireKnownKeys(const std::set<std::string>& known) const;

  // An integer in [min_value, max_value].
  void Read(const char* key, int64_t& out, int64_t min_value,
            int64_t max_value = INT64_MAX) const;
  void Read(const char* key, uint64_t& out) const;
  void Read(const char* key, double& out, double min_value,
            double max_value) const;
  void Read(const char* key, bool& out) const;
  void Read(const char* key, std::string& out) const;  // non-empty
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
  const std::set<std::string>& overridden_;
};

// The LoRA keys r, alpha, dropout and target_modules of map `lora` (the
// training config's finetune.lora, the report's finetune.lora), checked
// (train/config/train_config.h LoraConfig); sets out.enabled. The caller
// checks for unknown keys.
void ReadLoraKeys(const SectionReader& lora, LoraConfig& out);
// The list `trainable` of `section`: each of embed_tokens, norm, lm_head
// at most once.
void ReadTrainableNames(const SectionReader& section,
                        std::vector<std::string>& out);

// How ParseModelConfig reads a map: a rotor YAML `model:` section (every key
// must be known; errors name "model.KEY" at its line), or a Hugging Face
// config.json converted to YAML by train/config/hf_config.cc (errors name
// the JSON key; the bookkeeping keys HF writes, such as
// transformers_version, are accepted, and unknown keys are listed in
// `ignored` rather than refused, as transformers itself keeps them unused).
enum class ModelConfigDialect { kRotorYaml, kHfConfigJson };

// The `model:` map's parser and writer (train/config/model_config.cc), for
// the files that hold a model section.
ModelConfig ParseModelConfig(
    const YAML::Node& model, const std::string& file,
    ModelConfigDialect dialect = ModelConfigDialect::kRotorYaml,
    std::vector<std::string>* ignored = nullptr);
YAML::Node ModelConfigToYaml(const ModelConfig& model);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_CONFIG_YAML_H_
