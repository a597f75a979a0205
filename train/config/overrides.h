// Command-line overrides ("key.path=value") in config messages: the key
// paths they set, the override that gave a value, and how a message names
// it. Shared by the YAML reader (train/config/yaml.h) and the model reader
// (train/config/model_reader.h).
#ifndef ROTOR_TRAIN_CONFIG_OVERRIDES_H_
#define ROTOR_TRAIN_CONFIG_OVERRIDES_H_

#include <map>
#include <string>

#include "train/io/message.h"

namespace rotor::train {

// The key paths that overrides set ("key.path=value" on the command line,
// or a report's base.overrides), each with its override as typed: a
// problem with a value they gave names the override, since its text has no
// line in the file.
using OverriddenKeys = std::map<std::string, std::string>;

// The override that gave the value at `key_path` ("model.eos_token_id[1]"):
// one of that path or of a section above it, or, when the value has no
// place in the file (`placed` false: a map an override made on its way to
// its key), one of a key below it. nullptr for a value of the file.
inline const std::string* OverrideOf(const OverriddenKeys& overridden,
                                     const std::string& key_path, bool placed) {
  const auto starts = [](const std::string& text, const std::string& head) {
    return text.compare(0, head.size(), head) == 0;
  };
  for (const auto& [path, assignment] : overridden) {
    if (key_path == path || starts(key_path, path + ".") ||
        starts(key_path, path + "[") ||
        (!placed && starts(path, key_path + "."))) {
      return &assignment;
    }
  }
  return nullptr;
}

// "override 'ASSIGNMENT'": how a message names an override (where a file's
// message names its line and column).
inline std::string OverrideName(const std::string& assignment) {
  return "override '" + PrintableExcerpt(assignment) + "'";
}

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_CONFIG_OVERRIDES_H_
