#include "tools/commands.h"

#include <iostream>

namespace rotor {
namespace tools {

int RunDemoCommand(const std::vector<std::string>& args) {
  std::cout << "demo: not written yet\n";
  return 1;
}

}  // namespace tools
}  // namespace rotor
