#include "tools/commands.h"

namespace rotor {
namespace tools {

const std::vector<Command>& Commands() {
  static const std::vector<Command> commands = {
      {"demo", "train a small MLP on XOR with the autograd core",
       RunDemoCommand},
  };
  return commands;
}

}  // namespace tools
}  // namespace rotor
