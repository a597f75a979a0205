#include "tools/commands.h"

namespace rotor {
namespace tools {

const std::vector<Command>& Commands() {
  static const std::vector<Command> commands = {
      {"prepare", "turn text files into train/validation token files",
       RunPrepareCommand},
      {"rope", "show a config's RoPE frequencies, scaling and cos/sin",
       RunRopeCommand},
  };
  return commands;
}

}  // namespace tools
}  // namespace rotor
