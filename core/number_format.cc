#include "core/number_format.h"

#include <cstdio>

namespace rotor {

std::string FullDigits(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.17g", value);
  return buffer;
}

}  // namespace rotor
