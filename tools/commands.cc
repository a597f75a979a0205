#include "tools/commands.h"

namespace rotor {
namespace tools {

const std::vector<Command>& Commands() {
  static const std::vector<Command> commands = {
  };
  return commands;
}

}  // namespace tools
}  // namespace rotor
