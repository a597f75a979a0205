// Errors: rotor reports bad input (shapes, configs, files, flags) by throwing
// rotor::Error with a message that names the problem, e.g.
//   "Add: shapes [2, 3] and [4] cannot be broadcast together".
// The command-line program prints the message and exits with status 1.
#ifndef ROTOR_CORE_ERROR_H_
#define ROTOR_CORE_ERROR_H_

#include <sstream>
#include <stdexcept>
#include <string>

namespace rotor {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Concatenates anything that streams into std::ostream.
template <typename... Args>
std::string StrCat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

}  // namespace rotor

// Throws rotor::Error(StrCat(...)) unless `condition` holds.
#define ROTOR_CHECK(condition, ...)                       \
  do {                                                    \
    if (!(condition)) {                                   \
      throw ::rotor::Error(::rotor::StrCat(__VA_ARGS__)); \
    }                                                     \
  } while (0)

#endif  // ROTOR_CORE_ERROR_H_
