#include "tools/commands.h"

namespace rotor {
namespace tools {

const std::vector<Command>& Commands() {
  static const std::vector<Command> commands = {
      {"prepare", "turn text files into train/validation token files",
       RunPrepareCommand},
  };
  return commands;
}

}  // namespace tools
}  // namespace rotor
