// The subcommands of build/rotor. To add one: write tools/<name>_command.cc
// with a function `int Run<Name>Command(const std::vector<std::string>&)`,
// declare it here and list it in Commands() (tools/commands.cc).
#ifndef ROTOR_TOOLS_COMMANDS_H_
#define ROTOR_TOOLS_COMMANDS_H_

#include <functional>
#include <string>
#include <vector>

namespace rotor {
namespace tools {

struct Command {
  std::string name;
  std::string summary;
  // Receives the arguments after the command name; returns the exit status.
  std::function<int(const std::vector<std::string>& args)> run;
};

const std::vector<Command>& Commands();

// tools/prepare_command.cc
int RunPrepareCommand(const std::vector<std::string>& args);
int RunTrainCommand(const std::vector<std::string>& args);
int RunEvalCommand(const std::vector<std::string>& args);
int RunGenerateCommand(const std::vector<std::string>& args);

// tools/extend_report_command.cc
int RunExtendReportCommand(const std::vector<std::string>& args);

// tools/rope_command.cc
int RunRopeCommand(const std::vector<std::string>& args);

}  // namespace tools
}  // namespace rotor

#endif  // ROTOR_TOOLS_COMMANDS_H_
