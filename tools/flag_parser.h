// A small parser for "--name value" / "--name=value" flags and positional
// arguments, shared by rotor's subcommands. Mistakes throw UsageError, which
// the commands report with a pointer to --help and exit status 2.
#ifndef ROTOR_TOOLS_FLAG_PARSER_H_
#define ROTOR_TOOLS_FLAG_PARSER_H_

#include <cstdint>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace rotor {
namespace tools {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class FlagParser {
 public:
  // `value_flags` take a value; `bool_flags` do not (e.g. --help, --json).
  FlagParser(const std::vector<std::string>& args,
             const std::set<std::string>& value_flags,
             const std::set<std::string>& bool_flags);

  bool Has(const std::string& flag) const { return values_.count(flag) > 0; }
  std::string String(const std::string& flag,
                     const std::string& fallback = "") const;
  // Throws UsageError if the flag is absent.
  std::string Required(const std::string& flag) const;
  int64_t Int(const std::string& flag, int64_t fallback, int64_t min) const;
  double Double(const std::string& flag, double fallback, double min,
                double max) const;
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_;
};

}  // namespace tools
}  // namespace rotor

#endif  // ROTOR_TOOLS_FLAG_PARSER_H_
