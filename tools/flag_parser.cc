#include "tools/flag_parser.h"

#include <cmath>
#include <cstdlib>
#include <sstream>

namespace rotor {
namespace tools {

FlagParser::FlagParser(const std::vector<std::string>& args,
                       const std::set<std::string>& value_flags,
                       const std::set<std::string>& bool_flags) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.rfind("--", 0) != 0 || arg == "--") {
      positional_.push_back(arg);
      continue;
    }
    std::string name = arg;
    std::string value;
    bool has_inline_value = false;
    if (const size_t equals = arg.find('='); equals != std::string::npos) {
      name = arg.substr(0, equals);
      value = arg.substr(equals + 1);
      has_inline_value = true;
    }
    if (bool_flags.count(name)) {
      if (has_inline_value) {
        throw UsageError(name + " takes no value");
      }
      values_[name] = "true";
    } else if (value_flags.count(name)) {
      if (!has_inline_value) {
        if (i + 1 >= args.size()) throw UsageError(name + " needs a value");
        value = args[++i];
      }
      values_[name] = value;
    } else {
      throw UsageError("unknown flag " + name);
    }
  }
}

std::string FlagParser::String(const std::string& flag,
                               const std::string& fallback) const {
  const auto it = values_.find(flag);
  return it == values_.end() ? fallback : it->second;
}

std::string FlagParser::Required(const std::string& flag) const {
  const auto it = values_.find(flag);
  if (it == values_.end()) throw UsageError(flag + " is required");
  return it->second;
}

int64_t FlagParser::Int(const std::string& flag, int64_t fallback,
                        int64_t min) const {
  const auto it = values_.find(flag);
  if (it == values_.end()) return fallback;
  char* end = nullptr;
  const long long value = std::strtoll(it->second.c_str(), &end, 10);
  if (it->second.empty() || *end != '\0') {
    throw UsageError(flag + " expects an integer, got '" + it->second + "'");
  }
  if (value < min) {
    throw UsageError(flag + " must be >= " + std::to_string(min) + ", got " +
                     it->second);
  }
  return value;
}

double FlagParser::Double(const std::string& flag, double fallback, double min,
                          double max) const {
  const auto it = values_.find(flag);
  if (it == values_.end()) return fallback;
  char* end = nullptr;
  const double value = std::strtod(it->second.c_str(), &end);
  if (it->second.empty() || *end != '\0' || !std::isfinite(value)) {
    throw UsageError(flag + " expects a number, got '" + it->second + "'");
  }
  if (value < min || value > max) {
    std::ostringstream range;  // shortest form: 1e-09, not 0.000000
    range << "[" << min << ", " << max << "]";
    throw UsageError(flag + " must be in " + range.str() + ", got " +
                     it->second);
  }
  return value;
}

}  // namespace tools
}  // namespace rotor
